"""Panels of time series as lists of per-series arrays, and back to sktime's pandas mtypes.

sktime's ``pd-multiindex`` (Panel) and ``pd_multiindex_hier`` (Hierarchical) mtypes are data frames whose
row index has one or more *instance* levels followed by one *time* level. :class:`~aaren_ts.AarenForecaster`
works on each series' values as an array of shape ``(n_i, C)`` with its own time index;
:func:`split_series` takes a frame apart (keeping the order in which series first appear) and
:func:`panel_frame` builds one from per-series pieces. A plain (single-series) frame is a panel of one
series whose id is ``None``.

Every series' time index comes out of :func:`split_series` with its frequency: a ``DatetimeIndex``
without ``freq`` gets the one its timestamps follow, so that each series' cutoff (``time[-1:]``) can
be moved forward by whole steps. ``PeriodIndex`` carries its frequency; integer indexes need none.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.tseries.offsets import BaseOffset

from aaren_ts.engine.forecast import series_label

__all__ = ["SeriesPanel", "index_freq", "panel_frame", "series_label", "split_series"]


@dataclass
class SeriesPanel:
    """The series of a panel, in order of first appearance.

    Attributes
    ----------
    ids : list
        Series ids: the instance level's value (one instance level) or a tuple of the instance levels'
        values; ``[None]`` for a single series.
    times : list of pandas.Index
        Each series' time index.
    values : list of ndarray
        Each series' values, float64 ``(n_i, C)``, NaN where missing.
    columns : pandas.Index
        The columns (channels).
    level_names : list or None
        Names of the index levels (instance levels, then time), ``None`` for a single series.
    """

    ids: list[Hashable]
    times: list[pd.Index]
    values: list[np.ndarray]
    columns: pd.Index
    level_names: list[Hashable] | None

    @property
    def is_panel(self) -> bool:
        """Whether the data came as a panel or hierarchy (a MultiIndex frame)."""
        return self.level_names is not None


def split_series(y: pd.DataFrame, where: str, freq: BaseOffset | str | None = None) -> SeriesPanel:
    """Take ``y`` (a plain or MultiIndex frame) apart into its series.

    Parameters
    ----------
    y : pandas.DataFrame
        A single series (a plain index) or a panel or hierarchy (instance levels, then time).
    where : str
        The calling method, for error messages.
    freq : pandas offset or str, optional
        The frequency of the series seen before (a fitted forecaster's): a ``DatetimeIndex`` without
        ``freq`` whose timestamps follow it gets it; one too short to show its own frequency (fewer
        than three timestamps, as in a streaming update) gets it as well.

    Returns
    -------
    SeriesPanel
        The series; a ``DatetimeIndex`` time index with its frequency (a new index: ``y`` is not
        changed).

    Raises
    ------
    TypeError
        If ``y`` is not a data frame or holds non-numbers.
    ValueError
        If a series' time index is not strictly increasing, or is a ``DatetimeIndex`` of irregular
        timestamps (no frequency fits them), or ``y`` holds infinite values.
    """
    if not isinstance(y, pd.DataFrame):
        raise TypeError(f"{where}: y must be a pandas Series or DataFrame, got {type(y).__name__}")
    try:
        values = y.to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{where}: y must hold numbers ({err})") from err
    if not isinstance(y.index, pd.MultiIndex):
        _check_series(y.index, values, None, where)
        times = _with_frequencies([y.index], [None], freq, where)
        return SeriesPanel([None], times, [values], y.columns, None)
    instances = y.index.droplevel(-1)
    codes, uniques = pd.factorize(instances)
    if (codes < 0).any() or any(instances.get_level_values(k).isna().any() for k in range(instances.nlevels)):
        raise ValueError(
            f"{where}: y has a missing (NaN) series id in its index level(s) "
            f"{list(instances.names)}: every series needs an id"
        )
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    time_level = y.index.get_level_values(-1)[order]
    values = values[order]
    ids = [u if isinstance(u, tuple) or instances.nlevels == 1 else (u,) for u in uniques]
    times, parts = [], []
    for k, series_id in enumerate(ids):
        times.append(time_level[bounds[k] : bounds[k + 1]])
        parts.append(values[bounds[k] : bounds[k + 1]])
        _check_series(times[-1], parts[-1], series_id, where)
    times = _with_frequencies(times, ids, freq, where)
    return SeriesPanel(ids, times, parts, y.columns, list(y.index.names))


def index_freq(indexes: Sequence[pd.Index | None]) -> BaseOffset | None:
    """The frequency of the first of ``indexes`` that has one (``None`` if none has)."""
    for index in indexes:
        freq = getattr(index, "freq", None)
        if freq is not None:
            return freq
    return None


def _with_frequencies(
    times: list[pd.Index], ids: list[Hashable], known: BaseOffset | str | None, where: str
) -> list[pd.Index]:
    """``times`` with every ``DatetimeIndex`` given its frequency (new indexes for those changed).

    A series' own ``freq`` stays; otherwise ``known`` if the timestamps follow it, else the frequency
    inferred from them. A series of fewer than three timestamps shows none: it gets ``known``, else
    the frequency of the panel's other series.
    """
    out = list(times)
    short = []
    for k, time in enumerate(times):
        if not isinstance(time, pd.DatetimeIndex) or time.freq is not None:
            continue
        if len(time) < 3:
            short.append(k)
            continue
        regular = _following(time, known) if known is not None else None
        if regular is None:
            inferred = pd.infer_freq(time)
            regular = _following(time, inferred) if inferred is not None else None
            if regular is None:
                raise ValueError(_irregular_message(time, ids[k], where))
        out[k] = regular
    fallback = known if known is not None else index_freq(out)
    source = "of the series seen before" if known is not None else "of the other series"
    for k in short:
        time = times[k]
        if fallback is None:
            raise ValueError(
                f"{where}: the frequency of {series_label(ids[k])}'s timestamps cannot be told from "
                f"{len(time)} of them; give its DatetimeIndex a freq (e.g. with y.asfreq)"
            )
        regular = _following(time, fallback)
        if regular is None:
            raise ValueError(
                f"{where}: {series_label(ids[k])}'s timestamps {list(time)} do not follow the "
                f"frequency {_freq_name(fallback)} {source}"
            )
        out[k] = regular
    return out


def _following(time: pd.DatetimeIndex, freq: BaseOffset | str) -> pd.DatetimeIndex | None:
    """``time`` with frequency ``freq`` if its timestamps follow it, else ``None``."""
    try:
        grid = pd.date_range(time[0], periods=len(time), freq=freq, unit=time.unit, name=time.name)
    except ValueError:
        return None
    return grid if np.array_equal(grid.asi8, time.asi8) else None


def _freq_name(freq: BaseOffset | str) -> str:
    return getattr(freq, "freqstr", str(freq))


def _irregular_message(time: pd.DatetimeIndex, series_id: Hashable, where: str) -> str:
    """Why no frequency fits ``time``: where its timestamps leave the grid of its first three."""
    detail = ""
    start = pd.infer_freq(time[:3])
    if start is not None:
        grid = pd.date_range(time[0], periods=len(time), freq=start)
        off = int(np.argmax(grid != time))
        detail = (
            f" (at frequency {start}, the timestamp after {time[off - 1]} would be {grid[off]}, "
            f"not {time[off]})"
        )
    return (
        f"{where}: {series_label(series_id)} has irregular timestamps: no frequency fits them{detail}; "
        "give every series a regular time index, with NaN for missing observations "
        "(e.g. y.asfreq(freq) per series)"
    )


def _check_series(index: pd.Index, values: np.ndarray, series_id: Hashable, where: str) -> None:
    if np.isinf(values).any():
        row = int(np.argwhere(np.isinf(values))[0, 0])
        raise ValueError(
            f"{where}: {series_label(series_id)} holds an infinite value (at {index[row]!r}); "
            "use NaN for a missing observation"
        )
    if not index.is_monotonic_increasing or not index.is_unique:
        raise ValueError(f"{where}: {series_label(series_id)}'s time index must be strictly increasing")


def panel_frame(
    ids: Sequence[Hashable],
    times: Sequence[pd.Index],
    values: Sequence[np.ndarray],
    columns: pd.Index,
    level_names: list[Hashable] | None,
) -> pd.DataFrame:
    """A frame of the given series: plain for a single series (``level_names`` None), else MultiIndex."""
    if level_names is None:
        return pd.DataFrame(values[0], index=times[0], columns=columns)
    n_instance_levels = len(level_names) - 1
    lengths = [len(t) for t in times]
    levels = []
    for k in range(n_instance_levels):
        labels = [series_id[k] if n_instance_levels > 1 else series_id for series_id in ids]
        levels.append(pd.Index(labels).repeat(lengths))
    time = times[0].append(list(times[1:])) if len(times) > 1 else times[0]
    index = pd.MultiIndex.from_arrays([*levels, time], names=level_names)
    data = np.concatenate(values) if values else np.zeros((0, len(columns)))
    return pd.DataFrame(data, index=index, columns=columns)
