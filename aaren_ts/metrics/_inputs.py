"""How :mod:`aaren_ts.metrics` reads its arguments: many series at once, as sktime ``pd-multiindex``
panels (aligned by series id and time) or as arrays (aligned by position), each checked and put in one
order (:func:`as_series`, :func:`align`, :func:`pair`, :func:`interval`), every refusal naming the
series and the time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pandas as pd

__all__ = [
    "Panel",
    "PanelSeries",
    "align",
    "as_series",
    "check_finite",
    "interval",
    "pair",
    "place",
    "series_name",
]

#: A panel: a pd-multiindex DataFrame (one column) or Series, a 2-D array (one row per series), or a
#: list of 1-D arrays.
Panel: TypeAlias = pd.DataFrame | pd.Series | np.ndarray | Sequence[Sequence[float]] | Sequence[np.ndarray]


_MAX_NAMED = 5


@dataclass(frozen=True)
class PanelSeries:
    """The series of one argument, in order: ids, values, and (for panels) their time indexes."""

    ids: list[Hashable]
    values: list[np.ndarray]
    times: list[np.ndarray] | None  # None: arrays, aligned by position

    @property
    def is_panel(self) -> bool:
        return self.times is not None


def _names(ids: Sequence[Hashable]) -> str:
    shown = ", ".join(str(i) for i in list(ids)[:_MAX_NAMED])
    more = len(ids) - _MAX_NAMED
    return shown + (f" (and {more} more)" if more > 0 else "")


def series_name(series_id: Hashable, is_panel: bool) -> str:
    return f"series {series_id}" if is_panel else f"the series in row {series_id}"


def place(series: PanelSeries, k: int, position: int) -> str:
    if series.times is None:
        return f"at position {position}"
    return f"at time {series.times[k][position]}"


def _from_panel(y: pd.DataFrame | pd.Series, role: str) -> PanelSeries:
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise ValueError(
                f"{role} has {y.shape[1]} columns; the M4 measures score one variable: pass a pd-multiindex "
                "DataFrame with one column (or select it)"
            )
        values = y.iloc[:, 0]
    else:
        values = y
    index = y.index
    if not isinstance(index, pd.MultiIndex) or index.nlevels != 2:
        raise ValueError(
            f"{role} must be a pd-multiindex panel: a DataFrame or Series indexed by a 2-level MultiIndex "
            f"(series id, time); got an index with {index.nlevels} level(s)"
        )
    try:
        numbers = values.to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{role} must hold numbers: {error}") from error
    if len(index) == 0:
        return PanelSeries([], [], [])
    codes, uniques = pd.factorize(index.get_level_values(0), sort=False)
    if (codes < 0).any():
        raise ValueError(f"{role} has a missing series id in its index")
    times_all = index.get_level_values(1).to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    ids, series, times = list(uniques), [], []
    for series_id, rows in zip(ids, np.split(order, bounds), strict=True):
        t = times_all[rows]
        try:
            by_time = np.argsort(t, kind="stable")
        except TypeError as error:
            raise ValueError(f"{role}: series {series_id} has time values that cannot be ordered") from error
        t = t[by_time]
        if len(t) > 1 and (t[1:] == t[:-1]).any():
            raise ValueError(f"{role}: series {series_id} has a repeated time value")
        series.append(numbers[rows][by_time])
        times.append(t)
    return PanelSeries(ids, series, times)


def _from_arrays(y: Panel, role: str) -> PanelSeries:
    if isinstance(y, np.ndarray) and y.ndim == 2:
        rows = list(y)
    elif isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype != object:
        rows = [y]
    elif isinstance(y, (list, tuple, np.ndarray)):
        rows = list(y)
        if rows and np.ndim(rows[0]) == 0:  # a flat list of numbers: one series
            rows = [np.asarray(rows)]
    else:
        raise TypeError(
            f"{role} must be a pd-multiindex DataFrame or Series, a 2-D array (one row per series) or a list "
            f"of 1-D arrays, got {type(y).__name__}"
        )
    values = []
    for i, row in enumerate(rows):
        try:
            array = np.asarray(row, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{role}: series {i} must hold numbers: {error}") from error
        if array.ndim != 1:
            raise ValueError(f"{role}: series {i} must be 1-D, got shape {array.shape}")
        values.append(array)
    return PanelSeries(list(range(len(values))), values, None)


def as_series(y: Panel, role: str) -> PanelSeries:
    if isinstance(y, (pd.DataFrame, pd.Series)):
        return _from_panel(y, role)
    return _from_arrays(y, role)


def check_finite(series: PanelSeries, role: str) -> None:
    for k, (series_id, values) in enumerate(zip(series.ids, series.values, strict=True)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            where = place(series, k, int(bad[0]))
            what = "NaN" if np.isnan(values[bad[0]]) else "an infinite value"
            raise ValueError(
                f"{role} has {what} in {series_name(series_id, series.is_panel)} {where} "
                f"({bad.size} such value(s) in that series)"
            )
        if values.size == 0:
            raise ValueError(f"{role}: {series_name(series_id, series.is_panel)} is empty")


def align(
    reference: PanelSeries, other: PanelSeries, ref_role: str, role: str, *, same_times: bool
) -> PanelSeries:
    """``other``'s series in ``reference``'s order; raises unless both hold the same series (and times)."""
    if reference.is_panel != other.is_panel:
        kinds = {True: "a pd-multiindex panel", False: "an array"}
        raise TypeError(
            f"{ref_role} is {kinds[reference.is_panel]} but {role} is {kinds[other.is_panel]}; pass both as "
            "panels (aligned by series id and time) or both as arrays (aligned by position)"
        )
    if not reference.is_panel:
        if len(other.ids) != len(reference.ids):
            raise ValueError(
                f"{role} has {len(other.ids)} series, {ref_role} {len(reference.ids)} "
                "(arrays are matched row by row)"
            )
        if same_times:
            for i, (a, b) in enumerate(zip(reference.values, other.values, strict=True)):
                if a.shape != b.shape:
                    raise ValueError(
                        f"{role}: the series in row {i} has {b.size} values, {ref_role} {a.size}"
                    )
        return other
    position = {series_id: k for k, series_id in enumerate(other.ids)}
    missing = [i for i in reference.ids if i not in position]
    if missing:
        raise ValueError(f"{role} has no series {_names(missing)}, which {ref_role} has")
    known = set(reference.ids)
    extra = [i for i in other.ids if i not in known]
    if extra:
        raise ValueError(f"{role} has series {_names(extra)}, which {ref_role} does not have")
    order = [position[i] for i in reference.ids]
    values = [other.values[k] for k in order]
    times = [other.times[k] for k in order]  # type: ignore[index]
    if same_times:
        for series_id, t_ref, t in zip(reference.ids, reference.times, times, strict=True):  # type: ignore[arg-type]
            if len(t_ref) != len(t) or (t_ref != t).any():
                ref_set, other_set = set(t_ref.tolist()), set(t.tolist())
                diff = [v for v in t_ref if v not in other_set] or [v for v in t if v not in ref_set]
                raise ValueError(
                    f"{role}: series {series_id} has time index {_span(t)}, {ref_role} {_span(t_ref)}"
                    + (f" (first time in one but not the other: {diff[0]})" if diff else "")
                )
    return PanelSeries(list(reference.ids), values, times)


def _span(times: np.ndarray) -> str:
    return f"[{times[0]} .. {times[-1]}] ({len(times)} values)" if len(times) else "(empty)"


def pair(y_true: Panel, y_pred: Panel, pred_role: str = "y_pred") -> tuple[PanelSeries, PanelSeries]:
    true = as_series(y_true, "y_true")
    if not true.ids:
        raise ValueError("y_true has no series")
    pred = align(true, as_series(y_pred, pred_role), "y_true", pred_role, same_times=True)
    check_finite(true, "y_true")
    check_finite(pred, pred_role)
    return true, pred


def interval(y_true: Panel, lower: Panel, upper: Panel) -> tuple[PanelSeries, PanelSeries, PanelSeries]:
    """The test values and an interval's bounds, aligned; raises where a lower bound exceeds its upper."""
    true, low = pair(y_true, lower, "lower")
    _, high = pair(y_true, upper, "upper")
    for k, (series_id, l_k, u_k) in enumerate(zip(true.ids, low.values, high.values, strict=True)):
        crossed = np.flatnonzero(l_k > u_k)
        if crossed.size:
            where = place(true, k, int(crossed[0]))
            raise ValueError(
                f"lower exceeds upper in {series_name(series_id, true.is_panel)} {where} "
                f"({l_k[crossed[0]]} > {u_k[crossed[0]]})"
            )
    return true, low, high
