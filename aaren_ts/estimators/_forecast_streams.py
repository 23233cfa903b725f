"""The streams of a fitted :class:`~aaren_ts.AarenForecaster`: one recurrent state per series, batched.

Every series (of a panel, or the one series) is a stream: the encoder's state after its observations,
the recent values its next windows need, its current forecast, its own scaling and its own cutoff. The
states of all series live in one batch (row ``i`` is series ``i``; with channel-independent tokens the
encoder's rows are ``(series, channel)`` pairs, channel fastest), so advancing any subset of series is
one gather, one batched computation and one scatter.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import torch

from aaren_ts.estimators._forecast_calibration import Calibration
from aaren_ts.estimators._forecast_module import ForecastNet, WindowHistory
from aaren_ts.estimators._stream_state import flatten_state, unflatten_state

__all__ = ["ForecastStreams"]


@dataclass
class ForecastStreams:
    """Batched stream states of a forecaster's series.

    Attributes
    ----------
    ids : list
        Series ids in row order (``[None]`` for a single series).
    cutoffs : list of pandas.Index
        Each series' cutoff as last set from a time index (one-element index), ``pending`` steps
        behind the last step its state has consumed (see :meth:`sync_cutoffs`).
    mean, scale : ndarray of shape (n_series, n_channels + n_exog)
        Each series' standardisation (of its channels, then of its covariates).
    n_seen : ndarray of shape (n_series,)
        Steps each stream has consumed (observed or missing).
    n_observed : ndarray of shape (n_series,)
        Steps with at least one observed value.
    pending : ndarray of shape (n_series,)
        Steps consumed through arrays (no time index) since ``cutoffs`` was last set.
    state : list
        The encoder's state, batched over series (or ``(series, channel)`` pairs).
    history : WindowHistory
        ``(n_series, H, n_channels)`` recent values for the next windows.
    forecast : torch.Tensor
        ``(n_series, horizon, n_channels)`` forecast at each series' cutoff, standardised.
    spread : torch.Tensor
        ``(n_series, horizon, n_channels)`` standard deviation of that forecast, standardised.
    rows_per_series : int
        Encoder state rows per series (the number of channels with channel-independent tokens, else 1).
    calibration : Calibration or None
        Each series' interval calibration (adaptive conformal inference), if the forecaster has one.
    """

    ids: list[Hashable]
    cutoffs: list[pd.Index]
    mean: np.ndarray
    scale: np.ndarray
    n_seen: np.ndarray
    n_observed: np.ndarray
    pending: np.ndarray
    state: list[Any]
    history: WindowHistory
    forecast: torch.Tensor
    spread: torch.Tensor
    rows_per_series: int
    calibration: Calibration | None = None

    def __post_init__(self) -> None:
        self.row_of = {series_id: i for i, series_id in enumerate(self.ids)}

    @classmethod
    def empty(
        cls, module: ForecastNet, device: torch.device | str, calibrated: bool = False
    ) -> ForecastStreams:
        """No series yet (``calibrated``: with an interval calibration per series)."""
        c = module.n_channels
        return cls(
            ids=[],
            cutoffs=[],
            mean=np.zeros((0, c + module.n_exog)),
            scale=np.ones((0, c + module.n_exog)),
            n_seen=np.zeros(0, dtype=np.int64),
            n_observed=np.zeros(0, dtype=np.int64),
            pending=np.zeros(0, dtype=np.int64),
            state=module.init_state(0, device),
            history=module.init_history(0, device),
            forecast=torch.zeros(0, module.horizon, c, device=device),
            spread=torch.ones(0, module.horizon, c, device=device),
            rows_per_series=module.n_channels if module.channel_independent else 1,
            calibration=Calibration.fresh(0, module.horizon, c, device) if calibrated else None,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def add(
        self,
        ids: Sequence[Hashable],
        mean: np.ndarray,
        scale: np.ndarray,
        module: ForecastNet,
        device: torch.device | str,
    ) -> np.ndarray:
        """Append fresh streams (nothing seen yet) for new series; return their rows."""
        n = len(ids)
        start = len(self.ids)
        fresh = flatten_state(module.init_state(n, device))
        tensors = []
        for old, new in zip(flatten_state(self.state), fresh, strict=True):
            if new.shape[1:] != old.shape[1:]:  # a grown KV cache: empty slots, masked out
                new = old.new_zeros((n * self.rows_per_series, *old.shape[1:]))
            tensors.append(torch.cat([old, new]))
        self.state = unflatten_state(self.state, tensors)
        history = module.init_history(n, device)
        self.history = WindowHistory(
            torch.cat([self.history.values, history.values]),
            torch.cat([self.history.observed, history.observed]),
        )
        self.forecast = torch.cat([self.forecast, self.forecast.new_zeros((n, *self.forecast.shape[1:]))])
        self.spread = torch.cat([self.spread, self.spread.new_ones((n, *self.spread.shape[1:]))])
        if self.calibration is not None:
            fresh_calibration = Calibration.fresh(n, module.horizon, module.n_channels, device)
            self.calibration = self.calibration.cat(fresh_calibration)
        self.ids.extend(ids)
        self.cutoffs.extend([None] * n)
        self.mean = np.concatenate([self.mean, mean])
        self.scale = np.concatenate([self.scale, scale])
        self.n_seen = np.concatenate([self.n_seen, np.zeros(n, dtype=np.int64)])
        self.n_observed = np.concatenate([self.n_observed, np.zeros(n, dtype=np.int64)])
        self.pending = np.concatenate([self.pending, np.zeros(n, dtype=np.int64)])
        self.row_of.update({series_id: start + i for i, series_id in enumerate(ids)})
        return np.arange(start, start + n)

    def sync_cutoffs(self) -> None:
        """Move every cutoff forward by its ``pending`` steps (one step of the series' frequency each)."""
        from sktime.forecasting.base import ForecastingHorizon

        for row in np.flatnonzero(self.pending):
            cutoff = self.cutoffs[row]
            fh = ForecastingHorizon([int(self.pending[row])], is_relative=True, freq=cutoff)
            self.cutoffs[row] = fh.to_absolute_index(cutoff)
            self.pending[row] = 0

    def _is_all(self, rows: torch.Tensor) -> bool:
        return len(rows) == len(self.ids) and bool(
            (rows == torch.arange(len(rows), device=rows.device)).all()
        )

    def _state_rows(self, rows: torch.Tensor) -> torch.Tensor:
        k = self.rows_per_series
        return (rows[:, None] * k + torch.arange(k, device=rows.device)).flatten()

    def take(self, rows: torch.Tensor) -> tuple[list[Any], WindowHistory]:
        """The encoder state and history of the series at ``rows`` (every series: no copy)."""
        if self._is_all(rows):
            return self.state, self.history
        state_rows = self._state_rows(rows)
        state = unflatten_state(self.state, [t[state_rows] for t in flatten_state(self.state)])
        return state, self.history.map(lambda t: t[rows])

    def put(self, rows: torch.Tensor, state: list[Any], history: WindowHistory) -> None:
        """Write the state and history of the series at ``rows`` back (from :meth:`take`'s layout)."""
        if self._is_all(rows):
            self.state, self.history = state, history  # every series, in order (the KV cache's case)
            return
        state_rows = self._state_rows(rows)
        for full, part in zip(flatten_state(self.state), flatten_state(state), strict=True):
            full[state_rows] = part
        self.history.values[rows] = history.values
        self.history.observed[rows] = history.observed

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of every stream (encoder state, history, forecast), for persistence."""
        history = [self.history.values, self.history.observed]
        calibration = [] if self.calibration is None else self.calibration.tensors()
        return [*flatten_state(self.state), *history, self.forecast, self.spread, *calibration]

    def load_tensors(self, template: list[Any], tensors: list[torch.Tensor]) -> None:
        """Inverse of :meth:`tensors`, given a state of the same structure as ``template``."""
        tensors = list(tensors)
        if self.calibration is not None:
            n_parts = len(fields(Calibration))
            self.calibration = Calibration(*tensors[-n_parts:])
            del tensors[-n_parts:]
        *state, values, observed, forecast, spread = tensors
        self.state = unflatten_state(template, state)
        self.history = WindowHistory(values, observed)
        self.forecast = forecast
        self.spread = spread
