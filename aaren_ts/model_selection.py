"""Rolling-origin cross-validation of a forecaster over one series or a panel, in one call.

:func:`cross_validation` backtests any sktime forecaster (an :class:`~aaren_ts.AarenForecaster`, or
a baseline to compare it with) and returns its forecasts next to the truth as one long table, the
way ``statsforecast``'s and ``neuralforecast``'s ``cross_validation`` do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

__all__ = ["cross_validation"]


def cross_validation(
    forecaster: Any,
    y: pd.Series | pd.DataFrame,
    X: pd.DataFrame | None = None,
    *,
    n_windows: int,
    fh: int | Sequence[int] | ForecastingHorizon,
    step_length: int | None = None,
    refit: bool = False,
    coverage: float | Sequence[float] | None = None,
) -> pd.DataFrame:
    """Forecast ``n_windows`` rolling windows at the end of every series and put the truth beside.

    The windows sit at the end of each series: the last one forecasts the last ``max(fh)``
    observations, and each earlier one starts ``step_length`` observations before the next. A clone
    of ``forecaster`` is fitted once on the observations before the first cutoff; then, window after
    window, it forecasts ``fh`` and moves on to the next cutoff by streaming the ``step_length``
    observations in between through ``update(y, X, update_params=False)``. For an
    :class:`~aaren_ts.AarenForecaster` that costs O(1) per observation and series: the recurrent
    states move on, nothing is retrained or re-encoded. With ``refit=True`` a fresh clone is fitted
    on everything before each cutoff instead (the classical, costly protocol). ``forecaster`` itself
    is left untouched. (A forecaster without an ``update`` of its own is streamed with sktime's
    config ``remember_data=True``, so that its forecasts take the streamed observations in.)

    Unlike sktime's :func:`sktime.forecasting.model_evaluation.evaluate`, which takes a splitter
    object and returns one row of scores per fold (the data, if asked for, as nested objects), this
    function places the windows for you from the end of every series of a panel, as statsforecast
    does, and returns the forecasts themselves in a flat table, ready for any metric, plot or
    ``groupby``. ``evaluate(..., strategy="no-update_params")`` is sktime's counterpart of
    ``refit=False``.

    Parameters
    ----------
    forecaster : sktime forecaster
        The forecaster to evaluate (not fitted, or fitted: it is cloned either way).
    y : pandas Series or DataFrame
        One series (any sktime time index: integer, datetime or period), or a panel or hierarchy in
        sktime's ``pd-multiindex`` / ``pd_multiindex_hier`` format (the last index level is time),
        sorted by time within each series. Series may differ in length; every window is placed from
        each series' own end.
    X : pandas DataFrame, optional
        Covariates with (at least) the rows of ``y``; the forecaster gets the rows of the
        observations it fits or streams, and the rows of the steps it forecasts.
    n_windows : int
        Number of forecast origins (cutoffs), at least 1.
    fh : int, list of int or ForecastingHorizon
        Steps ahead to forecast from each cutoff, relative to it; an int ``h`` means ``1, ..., h``.
    step_length : int, optional
        Observations between two consecutive cutoffs; default ``max(fh)``, so that every observation
        of the last ``n_windows * max(fh)`` is forecast once.
    refit : bool, default=False
        ``False``: fit once, then stream each step through ``update(..., update_params=False)``.
        ``True``: fit a fresh clone at every cutoff.
    coverage : float or list of float, optional
        Nominal coverages in (0, 1) of prediction intervals to add (``predict_interval``), e.g. 0.9.

    Returns
    -------
    pandas DataFrame
        One row per series, cutoff and forecast step (and channel, if ``y`` has several columns),
        with the columns: the panel's index levels (named as in ``y``, ``"series"`` when unnamed;
        none for a single series), ``"channel"`` (multivariate ``y`` only), ``"window"`` (0 to
        ``n_windows - 1``), ``"cutoff"`` (time of the last observation the forecaster had seen),
        ``"time"``, ``"y"`` (the truth), ``"y_pred"``, and ``"lower_<c>"``/``"upper_<c>"`` per
        coverage ``c`` (``"lower_0.9"``).

    Raises
    ------
    TypeError
        If ``y`` or ``X`` is not pandas, or an argument has the wrong type.
    ValueError
        If an argument is out of range, a series is too short for the windows asked for (the
        series is named), a series is not sorted by time, or ``X`` lacks rows of ``y``.

    See Also
    --------
    sktime.forecasting.model_evaluation.evaluate : sktime's backtest with a splitter and scores.

    Examples
    --------
    >>> from sktime.datasets import load_airline
    >>> from sktime.forecasting.naive import NaiveForecaster
    >>> from aaren_ts.model_selection import cross_validation
    >>> y = load_airline()
    >>> cv = cross_validation(NaiveForecaster(sp=12), y, n_windows=3, fh=12)
    >>> cv.shape
    (36, 5)
    >>> list(cv.columns)
    ['window', 'cutoff', 'time', 'y', 'y_pred']
    """
    frame, series_name = _as_frame(y)
    n_windows, steps, step_length, refit, coverages = _check_arguments(
        n_windows, fh, step_length, refit, coverage
    )
    if X is not None:
        _check_covariates(X, frame)
    h = int(steps.max())
    fh_rel = ForecastingHorizon(steps, is_relative=True)
    parts = _series_parts(frame)
    cutoffs = _cutoff_positions(parts, n_windows, h, step_length)

    def take(data: pd.DataFrame | None, index: pd.Index) -> pd.DataFrame | None:
        return None if data is None else data.loc[index]

    def as_input(data: pd.DataFrame) -> pd.DataFrame | pd.Series:
        return data if series_name is _NOT_A_SERIES else data.iloc[:, 0].rename(series_name)

    tables = []
    model = None
    for window in range(n_windows):
        cut = cutoffs[:, window]
        seen = _rows(parts, np.zeros_like(cut), cut)
        if refit or model is None:
            model = _fresh_clone(forecaster, streamed=not refit)
            model.fit(as_input(frame.loc[seen]), X=take(X, seen), fh=fh_rel)
        else:
            new = _rows(parts, cutoffs[:, window - 1], cut)
            model.update(as_input(frame.loc[new]), X=take(X, new), update_params=False)
        ahead = take(X, _rows(parts, cut, cut + h))
        pred = _as_frame(model.predict(fh=fh_rel, X=ahead))[0]
        intervals = model.predict_interval(fh=fh_rel, X=ahead, coverage=coverages) if coverages else None
        last_seen = [part[c - 1] for part, c in zip(parts, cut, strict=True)]
        tables.append(_window_table(frame, pred, intervals, coverages, last_seen, window))
    return _finish(pd.concat(tables), frame)


# ---------------------------------------------------------------------------------------- helpers
_NOT_A_SERIES = object()


def _fresh_clone(forecaster: Any, streamed: bool) -> Any:
    """An unfitted clone; one that will be streamed and has no ``update`` of its own remembers data.

    sktime's default ``update(..., update_params=False)`` moves only the cutoff; a forecaster
    without its own ``_update`` then forecasts from the data it stored, which it keeps only with
    the config ``remember_data=True`` (sktime's default before version 1.3).
    """
    model = forecaster.clone()
    if streamed and getattr(type(model), "_update", None) is BaseForecaster._update:
        model.set_config(remember_data=True)
    return model


def _rows(parts: list[pd.Index], starts: np.ndarray, ends: np.ndarray) -> pd.Index:
    """The index of the observations at positions ``[start, end)`` of every series."""
    chosen = [part[s:e] for part, s, e in zip(parts, starts, ends, strict=True)]
    return chosen[0].append(chosen[1:]) if len(chosen) > 1 else chosen[0]


def _as_frame(y: Any) -> tuple[pd.DataFrame, Any]:
    """``y`` as a DataFrame, and the name to give a Series back (``_NOT_A_SERIES`` for a frame)."""
    if isinstance(y, pd.Series):
        return y.to_frame(name=0 if y.name is None else y.name), y.name
    if isinstance(y, pd.DataFrame):
        return y, _NOT_A_SERIES
    raise TypeError(f"cross_validation: y must be a pandas Series or DataFrame, got {type(y).__name__}")


def _check_arguments(
    n_windows: Any, fh: Any, step_length: Any, refit: Any, coverage: Any
) -> tuple[int, np.ndarray, int, bool, list[float]]:
    if isinstance(n_windows, bool) or not isinstance(n_windows, (int, np.integer)):
        raise TypeError(f"cross_validation: n_windows must be an int, got {type(n_windows).__name__}")
    if n_windows < 1:
        raise ValueError(f"cross_validation: n_windows must be at least 1, got {n_windows}")
    steps = _relative_steps(fh)
    if step_length is None:
        step_length = int(steps.max())
    elif isinstance(step_length, bool) or not isinstance(step_length, (int, np.integer)):
        raise TypeError(f"cross_validation: step_length must be an int, got {type(step_length).__name__}")
    elif step_length < 1:
        raise ValueError(f"cross_validation: step_length must be at least 1, got {step_length}")
    if not isinstance(refit, (bool, np.bool_)):
        raise TypeError(f"cross_validation: refit must be True or False, got {refit!r}")
    coverages: list[float] = []
    if coverage is not None:
        values = [coverage] if np.isscalar(coverage) else list(coverage)
        for c in values:
            if isinstance(c, (bool, str)) or not isinstance(c, (int, float, np.number)) or not 0 < c < 1:
                raise ValueError(f"cross_validation: every coverage must be a number in (0, 1), got {c!r}")
        coverages = [float(c) for c in values]
        if not coverages:
            raise ValueError("cross_validation: coverage is empty; pass None for no intervals")
    return int(n_windows), steps, int(step_length), bool(refit), coverages


def _relative_steps(fh: Any) -> np.ndarray:
    """The positive steps of ``fh`` (an int ``h`` meaning ``1..h``), sorted."""
    if isinstance(fh, ForecastingHorizon):
        if not fh.is_relative:
            raise ValueError("cross_validation: fh must be relative to the cutoff (is_relative=True)")
        steps = np.asarray(fh.to_numpy())
    elif isinstance(fh, (int, np.integer)) and not isinstance(fh, bool):
        steps = np.arange(1, int(fh) + 1)
    elif isinstance(fh, (list, tuple, range, np.ndarray, pd.Index)):
        steps = np.asarray(list(fh))
    else:
        raise TypeError(
            "cross_validation: fh must be an int, a list of ints or a ForecastingHorizon, "
            f"got {type(fh).__name__}"
        )
    if steps.size == 0 or steps.dtype.kind not in "iu" or (steps < 1).any():
        raise ValueError(f"cross_validation: fh must hold steps of 1 or more ahead of the cutoff, got {fh!r}")
    return np.unique(steps.astype(np.int64))


def _check_covariates(X: Any, frame: pd.DataFrame) -> None:
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"cross_validation: X must be a pandas DataFrame or None, got {type(X).__name__}")
    missing = ~frame.index.isin(X.index)
    if missing.any():
        raise ValueError(
            f"cross_validation: X lacks {int(missing.sum())} rows of y's index, "
            f"the first {frame.index[missing][0]!r}"
        )


def _series_parts(frame: pd.DataFrame) -> list[pd.Index]:
    """The index of every series of ``frame`` (one for a single series), each checked to be sorted."""
    index = frame.index
    if isinstance(index, pd.MultiIndex):
        ids = index.droplevel(-1)
        codes = pd.factorize(ids)[0]
        parts = [index[codes == k] for k in range(codes.max() + 1)] if len(index) else []
    else:
        parts = [index]
    for part in parts:
        times = part.get_level_values(-1) if isinstance(part, pd.MultiIndex) else part
        if not times.is_monotonic_increasing or times.has_duplicates:
            raise ValueError(f"cross_validation: {_label(part)} is not sorted by time without repeats")
    return parts


def _label(part: pd.Index) -> str:
    if isinstance(part, pd.MultiIndex) and len(part):
        key = part[0][:-1]
        return f"series {key[0] if len(key) == 1 else key!r}"
    return "y"


def _cutoff_positions(parts: list[pd.Index], n_windows: int, h: int, step_length: int) -> np.ndarray:
    """``(n_series, n_windows)`` observations before each cutoff, from the end of each series."""
    if not parts:
        raise ValueError("cross_validation: y is empty")
    back = h + step_length * np.arange(n_windows - 1, -1, -1)
    cutoffs = np.array([len(p) for p in parts])[:, None] - back[None, :]
    for part, first in zip(parts, cutoffs[:, 0], strict=True):
        if first < 1:
            need = int(back[0]) + 1
            raise ValueError(
                f"cross_validation: {_label(part)} has {len(part)} observations, too few for "
                f"n_windows={n_windows}, step_length={step_length} and max(fh)={h}: that needs at least "
                f"{need} (more, for the forecaster to learn something before the first cutoff)"
            )
    return cutoffs


def _window_table(
    frame: pd.DataFrame,
    pred: pd.DataFrame,
    intervals: pd.DataFrame | None,
    coverages: list[float],
    last_seen: list[Any],
    window: int,
) -> pd.DataFrame:
    """One window's forecasts in long form, with the truth at the forecast times."""
    if isinstance(pred.index, pd.MultiIndex):
        cutoff_of = {key[:-1]: key[-1] for key in last_seen}
        cutoff = [cutoff_of[key[:-1]] for key in pred.index]
    else:
        cutoff = [last_seen[0]] * len(pred)
    truth = frame.reindex(pred.index)
    table = []
    for column in frame.columns:
        part = pd.DataFrame(
            {
                "channel": column,
                "window": window,
                "cutoff": cutoff,
                "y": truth[column].to_numpy(),
                "y_pred": pred[column].to_numpy() if column in pred else pred.iloc[:, 0].to_numpy(),
            },
            index=pred.index,
        )
        for c in coverages:
            named = column in intervals.columns.get_level_values(0)
            block = intervals[column] if named else intervals.droplevel(0, axis=1)
            part[f"lower_{c:g}"] = block[(c, "lower")].to_numpy()
            part[f"upper_{c:g}"] = block[(c, "upper")].to_numpy()
        table.append(part)
    return pd.concat(table)


def _finish(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Move the (series and) time index into columns; drop ``channel`` for a single column."""
    names = list(table.index.names)
    if isinstance(table.index, pd.MultiIndex):
        unnamed = "series" if len(names) == 2 else None
        ids = [n if n is not None else unnamed or f"level_{i}" for i, n in enumerate(names[:-1])]
    else:
        ids = []
    table.index = table.index.set_names([*ids, "time"])
    table = table.reset_index()
    if len(frame.columns) == 1:
        table = table.drop(columns="channel")
    order = [*ids, *(["channel"] if "channel" in table else []), "window", "cutoff", "time"]
    rest = [c for c in table.columns if c not in order]
    return table[order + rest]
