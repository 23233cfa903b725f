"""Where each series of a forecaster stands in time: its cutoff, and the checks that new data follow it.

The streaming engine counts steps; the forecaster maps them to each series' own time index. A series'
cutoff is the last time its stream has consumed, as a one-element index of the series' type
(integer, ``DatetimeIndex`` or ``PeriodIndex``, with its frequency). Array updates carry no time index:
they move a series ``pending`` steps on, and :meth:`SeriesCutoffs.sync` turns those into a cutoff.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts.engine.forecast import series_label

__all__ = ["SeriesCutoffs", "continuation", "in_zone_of", "relative_steps", "zoned_horizon"]


def _is_integer_index(index: pd.Index) -> bool:
    return not isinstance(index, pd.MultiIndex) and pd.api.types.is_integer_dtype(index.dtype)


class SeriesCutoffs:
    """Every series' cutoff, in the engine's row order."""

    def __init__(self) -> None:
        self.cutoffs: list[pd.Index | None] = []
        self.pending = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.cutoffs)

    def extend(self, n: int) -> None:
        """Room for ``n`` new series (no cutoff until :meth:`set`). Like :meth:`set` and :meth:`defer`,
        it replaces the attributes it changes by new objects (an enclosing call can keep the old ones)."""
        self.cutoffs = [*self.cutoffs, *([None] * n)]
        self.pending = np.concatenate([self.pending, np.zeros(n, dtype=np.int64)])

    def set(self, rows: Sequence[int], times: Sequence[pd.Index]) -> None:
        """The series at ``rows`` have consumed up to the last time of ``times`` (one index each)."""
        self.cutoffs, self.pending = list(self.cutoffs), self.pending.copy()
        for row, time in zip(rows, times, strict=True):
            self.cutoffs[row] = time[-1:]
            self.pending[row] = 0

    def defer(self, rows: np.ndarray, n_steps: int) -> None:
        """The series at ``rows`` moved ``n_steps`` steps on without a time index (array updates)."""
        self.pending = self.pending.copy()
        self.pending[rows] += n_steps

    def sync(self) -> bool:
        """Move every cutoff forward by its pending steps (one step of its series' frequency each);
        whether any moved."""
        moved = np.flatnonzero(self.pending)
        for row in moved:
            cutoff = self.cutoffs[row]
            if _is_integer_index(cutoff):
                self.cutoffs[row] = pd.Index([int(cutoff[0]) + int(self.pending[row])])
            else:
                fh = ForecastingHorizon([int(self.pending[row])], is_relative=True, freq=cutoff)
                self.cutoffs[row] = fh.to_absolute_index(cutoff)
            self.pending[row] = 0
        return len(moved) > 0

    def latest(self) -> pd.Index:
        """The latest cutoff over all series (sktime's ``cutoff``)."""
        self.sync()
        cutoffs = [c for c in self.cutoffs if c is not None]
        return max(cutoffs, key=lambda c: c[0])

    def to_plain(self) -> list[dict[str, Any]]:
        """The cutoffs as plain data (for weights-only persistence)."""
        self.sync()
        return [index_to_plain(c) for c in self.cutoffs]

    @classmethod
    def from_plain(cls, data: Sequence[dict[str, Any]]) -> SeriesCutoffs:
        cutoffs = cls()
        cutoffs.extend(len(data))
        cutoffs.cutoffs = [index_from_plain(c) for c in data]
        return cutoffs


def index_to_plain(index: pd.Index) -> dict[str, Any]:
    """A one-element time index as plain data (for weights-only persistence), its name included (as
    text where it is not a string or an int)."""
    value = index[0]
    freq = getattr(index, "freqstr", None)
    name = index.name if index.name is None or isinstance(index.name, str | int) else str(index.name)
    if isinstance(index, pd.PeriodIndex):
        return {"kind": "period", "value": str(value), "freq": freq, "name": name}
    if isinstance(index, pd.DatetimeIndex):
        tz = str(index.tz) if index.tz else None
        return {"kind": "datetime", "value": value.isoformat(), "freq": freq, "tz": tz, "name": name}
    return {"kind": "int", "value": int(value), "freq": None, "name": name}


def index_from_plain(data: dict[str, Any]) -> pd.Index:
    """The inverse of :func:`index_to_plain`."""
    name = data.get("name")  # (files saved before the name was kept: none)
    if data["kind"] == "period":
        return pd.PeriodIndex([data["value"]], freq=data["freq"], name=name)
    if data["kind"] == "datetime":
        index = pd.DatetimeIndex([pd.Timestamp(data["value"])], name=name)
        if data.get("tz"):
            index = index.tz_convert(data["tz"]) if index.tz is not None else index.tz_localize(data["tz"])
        if data["freq"]:
            index.freq = data["freq"]
        return index
    return pd.Index([data["value"]], name=name)


def in_zone_of(times: pd.Index, cutoff: pd.Index | None, where: str, what: str) -> pd.Index:
    """``times`` in the time zone of ``cutoff`` (the same instants, as pandas converts them); a mix of
    time-zone-aware and naive times is refused (``ValueError`` naming ``what``), as pandas refuses to
    compare them. Other indexes are returned as they are."""
    if not isinstance(times, pd.DatetimeIndex) or not isinstance(cutoff, pd.DatetimeIndex):
        return times
    if times.tz is None and cutoff.tz is not None:
        raise ValueError(
            f"{where}: {what} have no time zone, but the cutoff {cutoff[0]!r} has one: tz_localize them"
        )
    if times.tz is not None and cutoff.tz is None:
        raise ValueError(
            f"{where}: {what} have a time zone ({times.tz}), but the cutoff {cutoff[0]!r} has none: "
            "tz_localize(None) them, or fit on times with a zone"
        )
    if times.tz is not None and str(times.tz) != str(cutoff.tz):
        return times.tz_convert(cutoff.tz)
    return times


def zoned_horizon(fh: Any, cutoff: pd.Index, where: str) -> Any:
    """``fh`` with absolute times (a ``ForecastingHorizon`` or an index of them) in the time zone of
    ``cutoff`` (:func:`in_zone_of`); anything else as it is."""
    absolute = isinstance(fh, ForecastingHorizon) and not fh.is_relative
    times = fh.to_pandas() if absolute else fh
    if not isinstance(times, pd.DatetimeIndex):
        return fh
    zoned = in_zone_of(times, cutoff, where, "fh's times")
    return ForecastingHorizon(zoned, is_relative=False) if zoned is not times else fh


def relative_steps(fh: ForecastingHorizon, cutoff: pd.Index) -> np.ndarray:
    """The steps of ``fh`` after ``cutoff`` (1 = the next), refusing in-sample ones."""
    if fh.is_relative:
        steps = np.asarray(fh.to_numpy(), dtype=np.int64)
    else:
        steps = np.asarray(fh.to_relative(cutoff).to_numpy(), dtype=np.int64)
    if (steps < 1).any():
        raise ValueError(
            f"fh contains in-sample step(s) {steps[steps < 1].tolist()}; AarenForecaster forecasts only "
            "steps after the cutoff (1, 2, ...)"
        )
    return steps


def absolute_times(fh: ForecastingHorizon, steps: np.ndarray, cutoff: pd.Index) -> pd.Index:
    """The time index of ``steps`` after ``cutoff`` (integer indexes: plain arithmetic)."""
    if fh.is_relative and _is_integer_index(cutoff):  # as sktime's would give
        return pd.Index(int(cutoff[0]) + steps)
    return fh.to_absolute_index(cutoff)


def continuation(
    time: pd.Index, cutoff: pd.Index, strict: bool, where: str, series_id: Hashable
) -> np.ndarray | None:
    """Which steps of ``time`` come after ``cutoff``, checked to continue it without a gap.

    ``strict`` also rejects steps at or before ``cutoff`` (an overlap); otherwise they are skipped (the
    state has consumed them already; their values cannot be checked, history is not stored). Returns
    ``None`` when nothing comes after the cutoff.
    """
    who = series_label(series_id)
    try:
        if _is_integer_index(time) and _is_integer_index(cutoff):  # plain arithmetic (a panel's usual case)
            steps = time.to_numpy(dtype=np.int64) - int(cutoff[0])
        else:
            steps = np.asarray(
                ForecastingHorizon(time, is_relative=False, freq=cutoff).to_relative(cutoff).to_numpy(),
                dtype=np.int64,
            )
    except Exception as err:  # index of another type or frequency than the stream's
        raise ValueError(
            f"{where}: {who}'s index ({type(time).__name__}) cannot be placed after its cutoff "
            f"{cutoff[0]!r}: {err}"
        ) from err
    if strict and steps[0] <= 0:
        raise ValueError(
            f"{where}: {who} overlaps the observations already seen: it starts at {time[0]!r}, "
            f"not after its cutoff {cutoff[0]!r}"
        )
    keep = steps > 0
    if not keep.any():
        return None
    expected = np.arange(1, int(keep.sum()) + 1)
    if not np.array_equal(steps[keep], expected):
        first_bad = int(np.argmax(steps[keep] != expected))
        raise ValueError(
            f"{where}: {who} leaves a gap after its cutoff {cutoff[0]!r}: observation "
            f"{time[keep][first_bad]!r} is {int(steps[keep][first_bad])} steps after it, expected "
            f"{int(expected[first_bad])} (mark missing observations with NaN)"
        )
    return keep
