"""Exogenous variables (``X``) of :class:`~aaren_ts.AarenForecaster`, aligned with each series' time steps.

sktime passes ``X`` beside ``y`` (same index structure: plain, or instance levels then time). The forecaster
needs, for every series, the covariates at given time steps: those of ``y``'s rows (they enter the tokens)
and, in ``predict``, those of the forecast steps (the future-known ones enter the forecast). Rows of ``X``
at other times are ignored; a missing row, a missing column or a NaN at a needed step is an error naming
the series and the time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from aaren_ts.estimators._forecast_checks import check_real_columns
from aaren_ts.estimators._panel import series_label

__all__ = ["covariate_columns", "covariates_at"]


def covariate_columns(X: pd.DataFrame, past_covariates: Sequence[Hashable] | None, where: str) -> pd.Index:
    """``X``'s columns in the forecaster's order: the future-known ones first, then ``past_covariates``."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"{where}: X must be a pandas DataFrame, got {type(X).__name__}")
    past = list(past_covariates or [])
    unknown = [c for c in past if c not in X.columns]
    if unknown:
        raise ValueError(f"{where}: past_covariates {unknown} are not columns of X {list(X.columns)}")
    future = [c for c in X.columns if c not in past]
    return pd.Index(future + past)


def covariates_at(
    X: pd.DataFrame | None,
    columns: pd.Index,
    ids: Sequence[Hashable],
    times: Sequence[pd.Index],
    where: str,
    is_panel: bool,
) -> list[np.ndarray]:
    """The values of ``columns`` of ``X`` at each series' ``times``: float64 ``(len(times[i]), n)`` each.

    Raises
    ------
    ValueError
        If ``X`` is missing, lacks a column, or has no row or a non-finite value at a needed step (the
        series and the time are named).
    TypeError
        If ``X`` is not a data frame or holds non-numbers.
    """
    if X is None:
        raise ValueError(
            f"{where}: X is required: the forecaster was fitted with exogenous variables {list(columns)}"
        )
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"{where}: X must be a pandas DataFrame, got {type(X).__name__}")
    missing = [c for c in columns if c not in X.columns]
    if missing:
        raise ValueError(f"{where}: X lacks the column(s) {missing} seen in fit")
    frame = X[list(columns)]
    check_real_columns(frame, "X", where, allow_bool=True)
    frame = frame.astype(np.float64)
    if is_panel != isinstance(frame.index, pd.MultiIndex):
        raise ValueError(
            f"{where}: X's index must have the same structure as y's "
            f"({'a MultiIndex' if is_panel else 'a single time index'})"
        )
    out = []
    for series_id, time in zip(ids, times, strict=True):
        if is_panel:
            key = series_id if isinstance(series_id, tuple) else (series_id,)
            try:
                part = frame.xs(key, level=list(range(len(key))), drop_level=True)
            except KeyError:
                raise ValueError(f"{where}: X has no rows for {series_label(series_id)}") from None
        else:
            part = frame
        if not part.index.is_unique:
            raise ValueError(f"{where}: X's time index for {series_label(series_id)} has duplicates")
        values = part.reindex(time).to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            what = (
                "no row" if time[row] not in part.index else f"a non-finite value in column {columns[col]!r}"
            )
            raise ValueError(
                f"{where}: X has {what} at {time[row]} for {series_label(series_id)} "
                "(covariates must be known at every step used)"
            )
        out.append(values)
    return out
