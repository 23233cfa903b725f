"""The Theta method as streams: a batch of series, each advanced one observation at a time in O(1).

The standard Theta method (Assimakopoulos and Nikolopoulos, 2000) forecasts the seasonally adjusted
series with the mean of two "theta lines": the linear trend (theta = 0) extrapolated, and simple
exponential smoothing (SES) of the line with doubled curvature (theta = 2). Hyndman and Billah (2003)
showed that this is SES with a drift of half the trend's slope: after ``n`` observations with SES level
``l_n``, smoothing parameter ``alpha`` and least-squares slope ``b_n``, the forecast ``h`` steps ahead is

    l_n + b_n / 2 * (h - 1 + 1 / alpha - (1 - alpha) ** n / alpha)

plus the seasonal component of the step it reaches. Both the level and the slope are running quantities:
the level is one recursion, and the slope follows from running means and co-moments of time and value
(updated as Welford's algorithm does), so every stream keeps a fixed handful of numbers whatever its
length, and streaming a series one value at a time gives the same forecasts as reading it at once.

What is fitted once, by :func:`fit_theta` on a series' training values, and then held: the smoothing
parameter (the one of a grid with the lowest in-sample one-step squared error) and the seasonal
component (additive, from a classical decomposition, where the autocorrelation at the seasonal lag is
significant at 90 %, as the M4 competition's Theta benchmark tests it; the forecaster applies it to the
values it models, the logarithms of a series whose seasonal swings grow with its level). A missing value
(NaN) advances the clock, so the seasonal phase stays right, and changes nothing else.

This module uses NumPy only: the torch-free ONNX streamer runs it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

__all__ = [
    "ALPHAS",
    "ThetaStreams",
    "fit_theta",
    "is_seasonal",
    "seasonal_component",
]

#: The smoothing parameters tried in :meth:`ThetaStreams.fit` (one-step squared error in-sample).
ALPHAS = np.round(np.arange(0.01, 1.0, 0.01), 2)
_Z90 = 1.6448536269514722  # the one-sided 95 % (two-sided 90 %) normal quantile of the M4 seasonality test


def is_seasonal(values: np.ndarray, sp: int) -> bool:
    """Whether the autocorrelation of ``values`` (gaps dropped) at lag ``sp`` is significant at 90 %:
    ``|r_sp| > z * sqrt((1 + 2 * sum_{k < sp} r_k ** 2) / n)``, and the series spans three seasons."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if sp <= 1 or len(x) < 3 * sp:
        return False
    centred = x - x.mean()
    denominator = float(centred @ centred)
    if denominator <= 0.0:
        return False
    r = np.array([centred[k:] @ centred[: len(x) - k] for k in range(1, sp + 1)]) / denominator
    limit = _Z90 * np.sqrt((1.0 + 2.0 * float(r[:-1] @ r[:-1])) / len(x))
    return bool(abs(r[-1]) > limit)


def seasonal_component(values: np.ndarray, sp: int) -> np.ndarray:
    """The additive seasonal component ``(sp,)`` of ``values`` by classical decomposition: the mean
    deviation from the centred moving average (of order ``sp``, ``2 x sp`` when even) at each position
    of the season, centred to sum to zero; position ``k`` is the steps ``t`` with ``t % sp == k``
    (``t`` from 0 at the series' first step). Zeros where the series is not seasonal
    (:func:`is_seasonal`)."""
    x = np.asarray(values, dtype=float)
    if not is_seasonal(x, sp):
        return np.zeros(max(int(sp), 1))
    filled = _interpolate(x)
    if sp % 2:
        weights = np.full(sp, 1.0 / sp)
    else:
        weights = np.r_[0.5, np.ones(sp - 1), 0.5] / sp
    trend = np.convolve(filled, weights, mode="valid")
    start = (len(weights) - 1) // 2
    deviation = np.full(len(x), np.nan)
    deviation[start : start + len(trend)] = x[start : start + len(trend)] - trend
    by_position = np.array([np.nanmean(deviation[k::sp]) for k in range(sp)])
    by_position = np.nan_to_num(by_position)
    return by_position - by_position.mean()


def fit_theta(series: Sequence[np.ndarray], sp: int) -> tuple[np.ndarray, np.ndarray]:
    """The parameters of one stream per 1-d array of ``series`` (NaN: a gap): the seasonal component
    ``(n, sp)`` (:func:`seasonal_component`), then the smoothing parameter ``(n,)`` of :data:`ALPHAS`
    with the lowest sum of squared one-step errors of the forecasts the stream makes along the series
    (from its third observation on), all series and smoothing parameters advanced at once."""
    sp = max(int(sp), 1)
    n, t_max = len(series), max((len(v) for v in series), default=0)
    season = np.stack([seasonal_component(v, sp) for v in series]) if n else np.zeros((0, sp))
    values = np.full((n, t_max), np.nan)
    for i, v in enumerate(series):
        values[i, : len(v)] = v
    trial = ThetaStreams.empty(np.repeat(ALPHAS, n), np.tile(season, (len(ALPHAS), 1)))
    sse = np.zeros(len(ALPHAS) * n)
    for t in range(t_max):
        x = np.tile(values[:, t], len(ALPHAS))
        error = x - trial.forecast(1)[:, 0]
        scored = np.isfinite(error) & (trial.count >= 2)
        sse += np.where(scored, error * error, 0.0)
        trial.update(x)
    alpha = ALPHAS[np.argmin(sse.reshape(len(ALPHAS), n), axis=0)] if n else np.zeros(0)
    return alpha, season


def _interpolate(x: np.ndarray) -> np.ndarray:
    """``x`` with its gaps filled by linear interpolation (ends held)."""
    known = np.isfinite(x)
    if known.all():
        return x
    steps = np.arange(len(x))
    return np.interp(steps, steps[known], x[known])


@dataclass
class ThetaStreams:
    """The Theta method's state for a batch of streams (row ``i``: one series, or one channel of one).

    Every array has one entry per stream (``season``: one row of ``sp`` values per stream).

    Attributes
    ----------
    alpha : ndarray
        The smoothing parameter, fitted and then held.
    season : ndarray of shape (n, sp)
        The additive seasonal component by position ``t % sp``, fitted and then held.
    level : ndarray
        The SES level of the seasonally adjusted values (NaN before the first observation).
    count : ndarray
        The observations seen.
    clock : ndarray
        The steps seen, gaps included (the next step is ``clock``).
    mean_t, mean_x, m_tt, m_tx : ndarray
        Running means of time and adjusted value, and the sums of squared deviations of time and of
        the products of deviations: the least-squares slope is ``m_tx / m_tt``.
    """

    alpha: np.ndarray
    season: np.ndarray
    level: np.ndarray
    count: np.ndarray
    clock: np.ndarray
    mean_t: np.ndarray
    mean_x: np.ndarray
    m_tt: np.ndarray
    m_tx: np.ndarray

    @classmethod
    def empty(cls, alpha: np.ndarray, season: np.ndarray) -> ThetaStreams:
        """Streams with the given parameters that have seen nothing."""
        n = len(alpha)
        zeros = np.zeros(n)
        return cls(
            alpha=np.asarray(alpha, dtype=float).copy(),
            season=np.asarray(season, dtype=float).reshape(n, -1).copy(),
            level=np.full(n, np.nan),
            count=np.zeros(n, dtype=np.int64),
            clock=np.zeros(n, dtype=np.int64),
            mean_t=zeros.copy(),
            mean_x=zeros.copy(),
            m_tt=zeros.copy(),
            m_tx=zeros.copy(),
        )

    def __len__(self) -> int:
        return len(self.alpha)

    def update(self, values: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Advance the streams ``rows`` (all: ``None``) by one step with ``values`` (NaN: a gap)."""
        at = slice(None) if rows is None else np.asarray(rows)
        clock = self.clock[at]
        phase = (clock % self.season.shape[1])[:, None]
        adjusted = np.asarray(values, dtype=float) - np.take_along_axis(self.season[at], phase, axis=1)[:, 0]
        seen = np.isfinite(adjusted)
        adjusted = np.where(seen, adjusted, 0.0)
        alpha, level, count = self.alpha[at], self.level[at], self.count[at]
        smoothed = np.where(count == 0, adjusted, alpha * adjusted + (1.0 - alpha) * level)
        k = count + seen
        t = clock.astype(float)
        mean_t, mean_x = self.mean_t[at], self.mean_x[at]
        dt, dx = t - mean_t, adjusted - mean_x
        share = np.where(seen, 1.0 / np.maximum(k, 1), 0.0)
        new_t, new_x = mean_t + dt * share, mean_x + dx * share
        self.level[at] = np.where(seen, smoothed, level)
        self.m_tt[at] = self.m_tt[at] + np.where(seen, dt * (t - new_t), 0.0)
        self.m_tx[at] = self.m_tx[at] + np.where(seen, dt * (adjusted - new_x), 0.0)
        self.mean_t[at], self.mean_x[at] = new_t, new_x
        self.count[at] = k
        self.clock[at] = clock + 1

    def slope(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The least-squares slope of the adjusted values on time of the streams ``rows`` (all:
        ``None``; 0 below two observations)."""
        at = slice(None) if rows is None else np.asarray(rows)
        m_tt, m_tx = self.m_tt[at], self.m_tx[at]
        return np.divide(m_tx, m_tt, out=np.zeros(len(m_tt)), where=m_tt > 0)

    def forecast(self, horizon: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The forecasts ``(R, horizon)`` from the last step of the streams ``rows`` (all: ``None``;
        NaN before a stream's first observation)."""
        at = slice(None) if rows is None else np.asarray(rows)
        h = np.arange(1, int(horizon) + 1, dtype=float)
        a = self.alpha[at][:, None]
        n = self.count[at][:, None].astype(float)
        drift = self.slope(rows)[:, None] / 2.0 * (h - 1.0 + (1.0 - (1.0 - a) ** n) / a)
        phase = (self.clock[at][:, None] + np.arange(int(horizon))) % self.season.shape[1]
        return self.level[at][:, None] + drift + np.take_along_axis(self.season[at], phase, axis=1)

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n: int, sp: int) -> ThetaStreams:
        """Streams from :meth:`arrays`' output, checked: ``n`` streams, a season of ``sp``, smoothing
        parameters in (0, 1), counts and clocks consistent, every number of a stream that has seen
        something finite. ``ValueError`` naming the first field that does not fit."""
        names = [f.name for f in fields(cls)]
        if sorted(arrays) != sorted(names):
            raise ValueError(f"the Theta streams need the arrays {names}, got {sorted(arrays)}")
        out = {}
        for name in names:
            value = np.asarray(arrays[name])
            integer = name in ("count", "clock")
            shape = (n, max(int(sp), 1)) if name == "season" else (n,)
            if value.shape != shape or value.dtype.kind != ("i" if integer else "f"):
                raise ValueError(
                    f"the Theta streams' {name} must be {'integers' if integer else 'floats'} of shape "
                    f"{shape}, got {value.dtype} {value.shape}"
                )
            out[name] = value.astype(np.int64 if integer else np.float64)
        streams = cls(**out)
        seen = streams.count > 0
        if not ((streams.alpha > 0) & (streams.alpha < 1)).all():
            raise ValueError("the Theta streams' smoothing parameters must lie in (0, 1)")
        if not ((streams.count >= 0) & (streams.clock >= streams.count)).all():
            raise ValueError("the Theta streams' counts must be non-negative and at most their clocks")
        numbers = np.stack([streams.level, streams.mean_t, streams.mean_x, streams.m_tt, streams.m_tx])
        if not (np.isfinite(streams.season).all() and np.isfinite(numbers[:, seen]).all()):
            raise ValueError("the Theta streams hold a value that is not finite")
        if (streams.m_tt[seen] < 0).any():
            raise ValueError("the Theta streams' sums of squared time deviations must be non-negative")
        return streams

    def take(self, rows: np.ndarray) -> ThetaStreams:
        """A copy of the streams ``rows``."""
        return ThetaStreams(**{f.name: getattr(self, f.name)[rows].copy() for f in fields(self)})

    def cat(self, other: ThetaStreams) -> ThetaStreams:
        """The streams of ``self`` then those of ``other`` (same season length)."""
        return ThetaStreams(
            **{f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)]) for f in fields(self)}
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The state as named arrays (what saving and restoring carry)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
