"""Damped-trend exponential smoothing as streams: a batch of series, each advanced in O(1) per value.

The model is ETS(A,Ad,A) (Hyndman et al., 2008): additive errors, an additive damped trend and an
additive season of ``sp`` steps. With level ``l``, trend ``b``, seasonal values ``s`` (one per
position ``t % sp``), smoothing parameters ``alpha``, ``beta``, ``gamma`` and damping ``phi``, the
one-step forecast of step ``t`` and the update by its error ``e = y_t - yhat_t`` are

    yhat_t = l + phi * b + s[t % sp]
    l <- l + phi * b + alpha * e,    b <- phi * b + beta * e,    s[t % sp] <- s[t % sp] + gamma * e

and the forecast ``h`` steps ahead of the last step ``t`` is ``l + (phi + ... + phi ** h) * b + s[(t +
h) % sp]``. A missing value (NaN) is an error of 0: the state moves on by its own forecast.

What is fitted once, by :func:`fit_ets` on a series' training values, and then held: the initial state
(the seasonal values of a classical decomposition of the first four seasons, and the level and trend
of a straight line through the first values, seasonally adjusted) and the parameters: those of a grid
with the lowest in-sample squared error of the forecasts over the horizon the forecaster is trained
for, all series and grid points advanced at once (not the one-step errors a likelihood would score:
the documentation's design note ``design_notes/forecaster_ets`` gives the comparison). The forecaster
combines it with the Theta method (:mod:`aaren_ts.statistical.theta`) on the values it models.

This module uses NumPy only: the torch-free ONNX streamer runs it as it is.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from aaren_ts.statistical.theta import seasonal_component

__all__ = ["MAX_FORECASTS", "PARAMETER_GRID", "ETSStreams", "fit_ets"]

_ALPHAS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.98)
_BETAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)
_GAMMAS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
_PHIS = (0.8, 0.85, 0.9, 0.95, 0.98)
#: The ``(alpha, beta, gamma, phi)`` tried by :func:`fit_ets`: ``beta`` at most ``alpha`` and ``gamma``
#: at most ``1 - alpha`` (the usual bounds of the model's parameter space).
PARAMETER_GRID = np.unique(
    np.array(
        [
            (a, min(b, a), min(g, 1.0 - a), p)
            for a, b, g, p in itertools.product(_ALPHAS, _BETAS, _GAMMAS, _PHIS)
        ]
    ),
    axis=0,
)
_ROWS_PER_CHUNK = 1 << 17  # series x grid points advanced together while fitting (bounds the memory)
#: The most forecasts (origins times lead times) of one series :func:`fit_ets` scores: origins
#: evenly spread, at most ``MAX_FORECASTS // horizon`` of them.
MAX_FORECASTS = 1024


@dataclass
class ETSStreams:
    """ETS(A,Ad,A)'s state for a batch of streams (row ``i``: one series, or one channel of one).

    Attributes
    ----------
    alpha, beta, gamma, phi : ndarray
        The smoothing parameters of level, trend and season, and the trend's damping; fitted, then held.
    level, trend : ndarray
        The current level and trend.
    season : ndarray of shape (n, sp)
        The current seasonal values by position ``t % sp``.
    clock : ndarray
        The steps seen, gaps included (the next step is ``clock``).
    """

    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    phi: np.ndarray
    level: np.ndarray
    trend: np.ndarray
    season: np.ndarray
    clock: np.ndarray

    @classmethod
    def flat(cls, n: int, sp: int) -> ETSStreams:
        """``n`` streams that forecast 0 and keep doing so whatever they see (every smoothing
        parameter 0): the place-holders of series that joined after fitting."""
        zeros = np.zeros(n)
        return cls(
            alpha=zeros.copy(),
            beta=zeros.copy(),
            gamma=zeros.copy(),
            phi=np.ones(n),
            level=zeros.copy(),
            trend=zeros.copy(),
            season=np.zeros((n, max(int(sp), 1))),
            clock=np.zeros(n, dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.alpha)

    def update(self, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Advance the streams ``rows`` (all: ``None``) by one step with ``values`` (NaN: a gap); returns
        the one-step errors (0 at a gap)."""
        at = slice(None) if rows is None else np.asarray(rows)
        phase = (self.clock[at] % self.season.shape[1])[:, None]
        season = np.take_along_axis(self.season[at], phase, axis=1)[:, 0]
        level, damped = self.level[at], self.phi[at] * self.trend[at]
        error = np.asarray(values, dtype=float) - (level + damped + season)
        error = np.where(np.isfinite(error), error, 0.0)
        self.level[at] = level + damped + self.alpha[at] * error
        self.trend[at] = damped + self.beta[at] * error
        seasons = self.season[at]
        np.put_along_axis(seasons, phase, (season + self.gamma[at] * error)[:, None], axis=1)
        self.season[at] = seasons
        self.clock[at] = self.clock[at] + 1
        return error

    def forecast(self, horizon: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The forecasts ``(R, horizon)`` from the last step of the streams ``rows`` (all: ``None``)."""
        at = slice(None) if rows is None else np.asarray(rows)
        damping = np.cumsum(self.phi[at][:, None] ** np.arange(1, int(horizon) + 1), axis=1)
        phase = (self.clock[at][:, None] + np.arange(int(horizon))) % self.season.shape[1]
        season = np.take_along_axis(self.season[at], phase, axis=1)
        return self.level[at][:, None] + damping * self.trend[at][:, None] + season

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n: int, sp: int) -> ETSStreams:
        """Streams from :meth:`arrays`' output, checked: ``n`` streams, a season of ``sp``, parameters
        in the model's space (``0 <= beta <= alpha <= 1``, ``0 <= gamma <= 1 - alpha``, ``0 < phi <=
        1``), clocks non-negative, every number finite. ``ValueError`` naming what does not fit."""
        names = [f.name for f in fields(cls)]
        if sorted(arrays) != sorted(names):
            raise ValueError(
                f"the exponential smoothing streams need the arrays {names}, got {sorted(arrays)}"
            )
        out = {}
        for name in names:
            value = np.asarray(arrays[name])
            integer = name == "clock"
            shape = (n, max(int(sp), 1)) if name == "season" else (n,)
            if value.shape != shape or value.dtype.kind != ("i" if integer else "f"):
                raise ValueError(
                    f"the exponential smoothing streams' {name} must be "
                    f"{'integers' if integer else 'floats'} of shape {shape}, got {value.dtype} {value.shape}"
                )
            out[name] = value.astype(np.int64 if integer else np.float64)
        streams = cls(**out)
        numbers = [getattr(streams, name) for name in names if name != "clock"]
        if not all(np.isfinite(value).all() for value in numbers):
            raise ValueError("the exponential smoothing streams hold a value that is not finite")
        a, b, g, p = streams.alpha, streams.beta, streams.gamma, streams.phi
        if not (
            (a >= 0) & (a <= 1) & (b >= 0) & (b <= a) & (g >= 0) & (g <= 1 - a) & (p > 0) & (p <= 1)
        ).all():
            raise ValueError(
                "the exponential smoothing streams' parameters must satisfy 0 <= beta <= alpha <= 1, "
                "0 <= gamma <= 1 - alpha and 0 < phi <= 1"
            )
        if (streams.clock < 0).any():
            raise ValueError("the exponential smoothing streams' clocks must be non-negative")
        return streams

    def rescaled(self, scale: np.ndarray, shift: np.ndarray) -> ETSStreams:
        """The streams of the values ``x * scale + shift`` (one factor and shift per stream): the
        same parameters and clocks, the level, trend and seasonal values in the new units."""
        scale, shift = np.asarray(scale, dtype=float), np.asarray(shift, dtype=float)
        return ETSStreams(
            alpha=self.alpha.copy(),
            beta=self.beta.copy(),
            gamma=self.gamma.copy(),
            phi=self.phi.copy(),
            level=self.level * scale + shift,
            trend=self.trend * scale,
            season=self.season * scale[:, None],
            clock=self.clock.copy(),
        )

    def take(self, rows: np.ndarray) -> ETSStreams:
        """A copy of the streams ``rows``."""
        return ETSStreams(**{f.name: getattr(self, f.name)[rows].copy() for f in fields(self)})

    def cat(self, other: ETSStreams) -> ETSStreams:
        """The streams of ``self`` then those of ``other`` (same season length)."""
        return ETSStreams(
            **{f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)]) for f in fields(self)}
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The state as named arrays (what saving and restoring carry)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def fit_ets(series: Sequence[np.ndarray], sp: int, horizon: int = 1) -> ETSStreams:
    """One stream per 1-d array of ``series`` (NaN: a gap), at the series' first step, with the initial
    state described in the module's docstring and the parameters of :data:`PARAMETER_GRID` (no seasonal
    smoothing where ``sp`` is 1) with the lowest in-sample squared error of the forecasts 1 to
    ``horizon`` steps ahead, summed over origins evenly spread (:data:`MAX_FORECASTS`; every step's
    one-step error where ``horizon`` is 1)."""
    sp, horizon = max(int(sp), 1), max(int(horizon), 1)
    n, t_max = len(series), max((len(v) for v in series), default=0)
    initial = ETSStreams.flat(n, sp)
    values = np.full((n, t_max + horizon), np.nan)
    for i, v in enumerate(series):
        v = np.asarray(v, dtype=float)
        values[i, : len(v)] = v
        initial.level[i], initial.trend[i], initial.season[i] = _initial_state(v, sp)
    grid = PARAMETER_GRID if sp > 1 else PARAMETER_GRID[PARAMETER_GRID[:, 2] == 0.0]
    k = len(grid)
    stride = -(-t_max // max(1, MAX_FORECASTS // horizon)) if horizon > 1 else 1
    damping = np.cumsum(grid[:, 3:4] ** np.arange(1, horizon + 1), axis=1)  # (k, horizon)
    loss = np.zeros((n, k))
    per_chunk = max(1, _ROWS_PER_CHUNK // k)
    for start in range(0, n, per_chunk):
        chunk = np.arange(start, min(n, start + per_chunk))
        trial = initial.take(np.repeat(chunk, k))
        trial.alpha, trial.beta, trial.gamma, trial.phi = np.tile(grid, (len(chunk), 1)).T.copy()
        total = np.zeros((len(chunk), k))
        for t in range(t_max):
            # (the forecasts of every grid point at once: the damping is shared by a grid point's
            # rows and every stream's clock is t, so this is :meth:`ETSStreams.forecast` without
            # its per-row powers and gathers)
            if horizon > 1 and t % stride == 0:
                season = trial.season[:, (t + np.arange(horizon)) % sp].reshape(len(chunk), k, horizon)
                level = trial.level.reshape(len(chunk), k, 1)
                trend = trial.trend.reshape(len(chunk), k, 1)
                error = level + damping * trend + season - values[chunk, None, t : t + horizon]
                total += np.where(np.isfinite(error), error * error, 0.0).sum(axis=2)
            error = trial.update(np.repeat(values[chunk, t], k))
            if horizon == 1:
                total += (error * error).reshape(len(chunk), k)
        loss[chunk] = total
    best = grid[np.argmin(loss, axis=1)] if n else np.zeros((0, 4))
    initial.alpha, initial.beta, initial.gamma, initial.phi = best.T.copy()
    return initial


def _initial_state(x: np.ndarray, sp: int) -> tuple[float, float, np.ndarray]:
    """Level, trend and seasonal values ``(sp,)`` a stream of ``x`` starts from: the additive seasonal
    component of the first four seasons (:func:`~aaren_ts.statistical.theta.seasonal_component`: zeros
    where it is not significant), and the intercept and slope of the least-squares line through the
    first ``max(10, 2 * sp)`` values, seasonally adjusted."""
    season = seasonal_component(x[: 4 * sp], sp) if sp > 1 else np.zeros(1)
    head = x[: max(10, 2 * sp)]
    steps = np.flatnonzero(np.isfinite(head))
    if not len(steps):
        return 0.0, 0.0, season
    adjusted = head[steps] - season[steps % sp]
    if len(steps) < 2:
        return float(adjusted[0]), 0.0, season
    slope, intercept = np.polyfit(steps, adjusted, 1)
    return float(intercept), float(slope), season
