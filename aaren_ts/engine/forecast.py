"""The streaming engine of a forecasting network: one recurrent state per series, batched, and the work.

Every series (of a panel, or the one series) is a stream: the encoder's state after its observations,
the recent values its next windows need, its current forecast distribution, its own scaling and, with
online calibration, its interval calibration. The states of all series live in one batch (row ``i`` is
series ``i``; with channel-independent tokens the encoder's rows are ``(series, channel)`` pairs,
channel fastest), so advancing any subset of series is one gather, one batched computation and one
scatter. :class:`ForecastEngine` holds them and does what streams do: advance any subset (ragged, with
gaps), forecast (point, quantiles, variance), add series, and give and restore its tensors.

The engine works on arrays in the series' original units; it knows nothing of pandas, time indexes or
estimators. Every call that changes the streams checks its input first and changes nothing when it
refuses it, and holds :attr:`ForecastEngine.lock`, so concurrent calls from several threads are
serialised instead of losing observations. Those checks are in ``engine._input_checks``, the
combination with the naive and Theta methods in ``engine._combination``, and the forecasts computed
beside the streams without moving them in ``engine._windows``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import torch

from aaren_ts.engine._combination import (
    advance_theta,
    checked_naive,
    checked_theta,
    fallback_arguments,
    restored_theta,
    theta_arrays,
    theta_shift,
)
from aaren_ts.engine._input_checks import check_values, checked_log_target, checked_scaling, series_label
from aaren_ts.engine._quantiles import one_sigma_bounds, quantiles
from aaren_ts.engine._restore_checks import restore_streams
from aaren_ts.engine._streams import Streams
from aaren_ts.engine._undo import UndoLog, all_or_nothing
from aaren_ts.engine._windows import forecast_windows, stream_forecasts
from aaren_ts.engine.calibration import Calibration
from aaren_ts.engine.covariates import future_effect_at_steps
from aaren_ts.nn.forecast import ENCODE_CHUNK, Forecast, ForecastNet, WindowHistory
from aaren_ts.nn.state import flatten_state, unflatten_state
from aaren_ts.statistical.ets import ETSStreams
from aaren_ts.statistical.partner import PartnerStreams
from aaren_ts.utils.limits import MAX_STANDARDISED

__all__ = ["MAX_STANDARDISED", "ForecastEngine", "series_label"]

_ENCODE_TOKENS = 2**19  # series x steps per batch when encoding many series (bounds activation memory)
_CALIBRATION_VALUES = 2**22  # forecast values per batch when every step's forecast is kept (calibration)


#: The engine's attributes that hold one entry per series (what :meth:`ForecastEngine.add` replaces).
_PER_SERIES = (
    "ids", "row_of", "mean", "scale", "log_target", "naive", "spread", "naive_std", "max_std", "theta",
    "theta_weight", "n_seen", "n_observed", "state", "history", "forecast", "params", "calibration",
)  # fmt: skip


def _compact(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself, or a copy where it is a view of a much larger buffer (which it would keep alive)."""
    return t.clone() if t.untyped_storage().nbytes() > 2 * t.numel() * t.element_size() else t


class ForecastEngine(Streams):
    """The streams of a forecasting network, and the computations on them.

    Parameters
    ----------
    module : ForecastNet
        The trained network (put in eval mode; its weights are not changed).
    device : torch.device or str
        Where the states live and the network runs (see ``Streams`` in ``aaren_ts.engine._streams``).
    calibration_rate : float or None, default=None
        Step of each stream's online interval calibration (adaptive conformal inference); ``None``:
        intervals are the network's, uncalibrated.

    Attributes
    ----------
    ids : list
        Series ids in row order (``[None]`` for a single series).
    mean, scale : ndarray of shape (n_series, n_channels + n_exog)
        Each series' standardisation (of its channels, then of its covariates), on the model's scale.
    log_target : ndarray of shape (n_series, n_channels), bool
        The channels the model sees on the log scale (``aaren_ts.utils.log_target``). The engine works on
        the model's scale throughout: values given to :meth:`advance` and every forecast, quantile and
        standard deviation it returns are in the series' units for the other channels and in their
        logarithm for these; its caller maps them (the forecaster, the ONNX streamer).
    naive : ndarray of shape (n_series, n_channels), float
        The share, in [0, 1], of the (seasonal) naive forecast the network starts from (see
        :meth:`~aaren_ts.nn.forecast.ForecastNet.reset_to_naive`) in each channel's point forecast,
        the network's having the rest (0: the network's alone): set with :meth:`use_naive`, above 0
        where the network did not clearly beat the naive forecast on the series' held-out data. Their
        intervals are the network's distribution with its scale multiplied by ``spread``,
        or the naive method's own (``naive_std``), re-calibrated online.
    spread : ndarray of shape (n_series, n_channels)
        Factor on the scale of each series' forecast distribution (1: the network's), set with
        :meth:`use_naive`.
    naive_std : ndarray of shape (n_series, n_channels)
        Where positive, the standard deviation (standardised) of a channel's one-step naive errors: its
        forecast distribution is then the naive method's own
        (:meth:`~aaren_ts.nn.forecast.ForecastNet.naive_distribution`) instead of the network's; 0 keeps
        the network's. Set with :meth:`use_naive`.
    max_std : ndarray of shape (n_series, n_channels)
        Where positive, the standard deviation (standardised) at which a channel's one-step distribution
        from the network is capped, growing over the horizon as the naive method's (the ``max_std`` of
        :meth:`~aaren_ts.nn.forecast.ForecastNet.distribution`, applied before ``spread``); 0: no
        cap. Set with :meth:`use_naive`.
    theta : PartnerStreams or None
        With :meth:`use_theta`, the statistical partner's streams of every series' channels (the
        Theta method's, and exponential smoothing's where given; row ``series * n_channels +
        channel``), advanced with the network's.
    theta_weight : ndarray of shape (n_series, n_channels)
        The weight of each channel's own forecast (the network's, blended with the naive one by
        ``naive``)
        in its combination with the Theta method's (1: its own alone, the default); the combination
        shifts the whole forecast distribution (point, quantiles) by the same amount.
    n_seen : ndarray of shape (n_series,)
        Steps each stream has consumed (observed or missing).
    n_observed : ndarray of shape (n_series,)
        Steps with at least one observed value.
    state : list
        The encoder's state, batched over series (or ``(series, channel)`` pairs).
    history : WindowHistory
        ``(n_series, H, n_channels)`` recent values for the next windows.
    forecast : torch.Tensor
        ``(n_series, horizon, n_channels)`` each stream's current point forecast, standardised.
    params : torch.Tensor
        ``(n_series, horizon, n_channels, K)`` the distribution head's parameters of that forecast
        (``K`` = ``module.distribution_head.n_params``), standardised.
    calibration : Calibration or None
        Every stream's interval calibration, with a ``calibration_rate``.
    rows_per_series : int
        Encoder state rows per series (the number of channels with channel-independent tokens, else 1).
    """

    def __init__(
        self, module: ForecastNet, device: torch.device | str, calibration_rate: float | None = None
    ) -> None:
        super().__init__(module, device)
        self.calibration_rate = None if calibration_rate is None else float(calibration_rate)
        c, horizon = module.n_channels, module.horizon
        self.ids: list[Hashable] = []
        self.row_of: dict[Hashable, int] = {}
        self.mean = np.zeros((0, c + module.n_exog))
        self.scale = np.ones((0, c + module.n_exog))
        self.log_target = np.zeros((0, c), dtype=bool)
        self.naive = np.zeros((0, c))
        self.spread = np.ones((0, c))
        self.naive_std = np.zeros((0, c))
        self.max_std = np.zeros((0, c))
        self.theta: PartnerStreams | None = None
        self.theta_weight = np.ones((0, c))
        self.n_seen = np.zeros(0, dtype=np.int64)
        self.n_observed = np.zeros(0, dtype=np.int64)
        self.state = module.init_state(0, self.device)
        self.history = module.init_history(0, self.device)
        self.forecast = torch.zeros(0, horizon, c, device=self.device)
        self.head = module.distribution_head
        self.params = torch.ones(0, horizon, c, self.head.n_params, device=self.device)
        self.rows_per_series = c if module.channel_independent else 1
        self.calibration = (
            Calibration.fresh(0, horizon, c, self.device, self.head.n_params)
            if calibration_rate is not None
            else None
        )

    # ------------------------------------------------------------------ bookkeeping
    def __len__(self) -> int:
        return len(self.ids)

    n_channels = property(lambda self: self.module.n_channels, doc="Channels of every series.")
    horizon = property(lambda self: self.module.horizon, doc="Steps every forecast covers.")
    n_exog = property(lambda self: self.module.n_exog, doc="Covariates appended to every observation.")
    n_future = property(lambda self: self.module.n_future, doc="How many covariates are known ahead.")

    def rows_of(self, series_ids: Sequence[Hashable] | None, where: str) -> np.ndarray:
        """Rows of ``series_ids`` (every row, in order, for ``None``); ``ValueError`` on an unknown or
        repeated id."""
        if series_ids is None:
            return np.arange(len(self))
        try:
            rows = np.fromiter((self.row_of[i] for i in series_ids), dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"{where}: unknown {series_label(err.args[0])}; a new series starts through partial_update"
            ) from None
        except TypeError as err:  # an id that cannot be a key (a list, an array)
            raise TypeError(f"{where}: series ids must be hashable: {err}") from None
        if len(np.unique(rows)) != len(rows):
            raise ValueError(f"{where}: series_ids repeats a series")
        return rows

    def require_observed(self, rows: np.ndarray, where: str) -> None:
        """Refuse to forecast for a series at ``rows`` with no observed value yet (all NaN so far)."""
        unseen = rows[self.n_observed[rows] == 0]
        if len(unseen):
            raise ValueError(
                f"{where}: {series_label(self.ids[unseen[0]])} has no observed value yet (all NaN): "
                "nothing to forecast from" + (f" ({len(unseen)} such series)" if len(unseen) > 1 else "")
            )

    # ------------------------------------------------------------------ new series
    def add(
        self,
        ids: Sequence[Hashable],
        mean: np.ndarray,
        scale: np.ndarray,
        log_target: Any = None,
        undo: UndoLog | None = None,
    ) -> np.ndarray:
        """Append fresh streams (nothing seen yet) for new series scaled by ``mean``/``scale``
        ``(n, n_channels + n_exog)``, their channels on the log scale where ``log_target`` ``(n,
        n_channels)`` bool is true (``None``: none); return their rows. Every attribute changed is
        replaced by a new object, so ``undo`` (an enclosing call's log) can put the engine back."""
        module, device = self.module, self.device
        n = len(ids)
        if len(set(ids)) != n or any(i in self.row_of for i in ids):
            raise ValueError("add: the series ids must be new and distinct")
        mean, scale = checked_scaling(ids, self.n_channels + self.n_exog, mean, scale)
        log_target = checked_log_target(n, self.n_channels, log_target)
        with self.lock:
            if undo is not None:
                undo.keep(self, *_PER_SERIES)
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
            self.params = torch.cat([self.params, self.params.new_ones((n, *self.params.shape[1:]))])
            if self.calibration is not None:
                fresh_calibration = Calibration.fresh(
                    n, self.horizon, self.n_channels, device, self.head.n_params
                )
                self.calibration = self.calibration.cat(fresh_calibration)
            self.ids = [*self.ids, *ids]
            self.mean = np.concatenate([self.mean, mean])
            self.scale = np.concatenate([self.scale, scale])
            self.log_target = np.concatenate([self.log_target, log_target])
            self.naive = np.concatenate([self.naive, np.zeros((n, self.n_channels))])
            self.spread = np.concatenate([self.spread, np.ones((n, self.n_channels))])
            self.naive_std = np.concatenate([self.naive_std, np.zeros((n, self.n_channels))])
            self.max_std = np.concatenate([self.max_std, np.zeros((n, self.n_channels))])
            self.theta_weight = np.concatenate([self.theta_weight, np.ones((n, self.n_channels))])
            if self.theta is not None:  # (a new series forecasts with the network alone: weight 1)
                self.theta = self.theta.cat(self.theta.fresh(n * self.n_channels))
            self.n_seen = np.concatenate([self.n_seen, np.zeros(n, dtype=np.int64)])
            self.n_observed = np.concatenate([self.n_observed, np.zeros(n, dtype=np.int64)])
            self.row_of = {**self.row_of, **{series_id: start + i for i, series_id in enumerate(ids)}}
            return np.arange(start, start + n)

    def use_naive(self, naive: Any, spread: Any = None, naive_std: Any = None, max_std: Any = None) -> None:
        """Set the (seasonal) naive method's share in each series' (channel's) point forecast, ``naive``
        ``(n_series, n_channels)`` in [0, 1] (bool: True for 1, the naive forecast alone), the factor
        on each one's forecast spread, ``spread`` (same shape, positive; ``None``: 1), which take the
        naive method's own distribution, ``naive_std`` (same shape, non-negative, standardised;
        ``None``: 0, none), and the cap on each one's spread from the
        network, ``max_std`` (same shape, non-negative, standardised; ``None``: 0, none).

        Takes effect from each stream's next step (the current forecasts are left as they are).
        """
        checked = checked_naive(naive, spread, naive_std, max_std, (len(self), self.n_channels))
        with self.lock:
            self.naive, self.spread, self.naive_std, self.max_std = checked

    def use_theta(self, alpha: Any, season: Any, weight: Any, ets: ETSStreams | None = None) -> None:
        """Combine every series' forecasts with the Theta method's (``aaren_ts.statistical.theta``),
        with smoothing parameters ``alpha`` ``(n_series, n_channels)``, seasonal components ``season``
        ``(n_series, n_channels, sp)`` and the network's weights ``weight`` ``(n_series, n_channels)``
        in [0, 1]; with ``ets``, damped-trend exponential smoothing's streams at their first step (one
        per series and channel, channel fastest, ``aaren_ts.statistical.ets``), with the mean of the
        two (``PartnerStreams`` of ``aaren_ts.statistical.partner``). The streams start at the series'
        first values: this is called before the streams consume anything.
        """
        theta, weight = checked_theta(alpha, season, weight, ets, len(self), self.n_channels, self.n_seen)
        with self.lock:
            self.theta, self.theta_weight = theta, weight

    # ------------------------------------------------------------------ advancing
    def check_values(self, rows: np.ndarray, values: np.ndarray, where: str) -> None:
        """Refuse observations the streams at ``rows`` cannot take: ``ValueError`` naming the series.

        ``values`` ``(R, N, C + n_exog)`` in original units: NaN marks a missing observation; an
        infinite value, or one more than :data:`~aaren_ts.engine.MAX_STANDARDISED` standard deviations
        from its series' mean (the network's float32 arithmetic would overflow), is refused.
        """
        check_values(self.ids, self.mean, self.scale, rows, values, where)

    def advance(
        self,
        rows: np.ndarray,
        values: np.ndarray,
        lengths: np.ndarray | None = None,
        calibrate: bool = True,
        where: str = "advance",
        undo: UndoLog | None = None,
    ) -> None:
        """Advance the streams at ``rows`` through their new values, in blocks bounding memory; all or
        nothing: if anything raises (an interrupt included), every stream is as it was.

        Parameters
        ----------
        rows : ndarray of shape (R,)
            Distinct rows of the streams to advance (any order).
        values : ndarray of shape (R, N, n_channels + n_exog)
            New observations in original units, then the covariates at the same steps; NaN marks a
            missing observation (its token is not seen: the state carries over it).
        lengths : ndarray of shape (R,), optional
            Row ``i`` takes its first ``lengths[i]`` steps (the rest is padding); all ``N`` by default.
        calibrate : bool, default=True
            Move the interval calibrations' levels by the errors seen (``False``: the forecasts they
            judge move on, their levels stay, as through a series' training part).
        where : str
            The caller, named in error messages.
        undo : UndoLog, optional
            The log of an enclosing call to record how to undo the changes into (it then decides
            whether to roll them back); by default this call rolls its own back if it fails.

        Raises
        ------
        ValueError
            On values the streams cannot take (see :meth:`check_values`); nothing changes then.
        """
        rows = np.asarray(rows, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        n = values.shape[1]
        lengths = np.full(len(rows), n, dtype=np.int64) if lengths is None else np.asarray(lengths)
        within = np.arange(n)[None, :, None] < lengths[:, None, None]
        self.check_values(rows, np.where(within, values, np.nan), where)
        with self.lock, all_or_nothing(undo) as log:
            for group in self._row_groups(len(rows), n):
                self._advance_group(rows[group], values[group], lengths[group], calibrate, log)
            if self.theta is not None:
                log.keep(self, "theta")
                self.theta = self.theta.take(np.arange(len(self.theta)))  # (advanced in place)
                advance_theta(self.theta, rows, values[..., : self.n_channels], lengths)

    def _row_groups(self, n_rows: int, n_steps: int) -> list[np.ndarray]:
        """Positions of the rows to advance together (bounding the tokens, hence memory, per call)."""
        if not self.module.constant_state:  # a KV cache grows for every series at once: one call for all
            return [np.arange(n_rows)]
        steps = max(1, min(n_steps, ENCODE_CHUNK))
        per_group = max(1, _ENCODE_TOKENS // steps)
        if self.calibration is not None:  # every step's forecast is kept
            per_group = max(
                1, min(per_group, _CALIBRATION_VALUES // (steps * self.horizon * self.n_channels))
            )
        return np.array_split(np.arange(n_rows), max(1, -(-n_rows // per_group)))

    def _advance_group(
        self, rows: np.ndarray, raw: np.ndarray, lengths: np.ndarray, calibrate: bool, undo: UndoLog
    ) -> None:
        """Advance the streams at ``rows`` by ``raw`` ``(R, N, C)`` in one batched computation.

        Updates the states, histories, forecasts, interval calibrations (their levels only if
        ``calibrate``) and counters, recording in ``undo`` how to put each back first.
        """
        n = raw.shape[1]
        if not self.module.constant_state and len(rows) < len(self):
            # a KV cache: every series in row order, the others with nothing new (padding)
            full = np.full((len(self), n, raw.shape[2]), np.nan)
            full[rows] = raw
            full_lengths = np.zeros(len(self), dtype=np.int64)
            full_lengths[rows] = lengths
            self._advance_group(np.arange(len(self)), full, full_lengths, calibrate, undo)
            return
        if len(rows) > 1 and (np.diff(rows) < 0).any():  # in stream order: the states are read in sequence
            order = np.argsort(rows, kind="stable")
            rows, raw, lengths = rows[order], raw[order], lengths[order]
        within = np.arange(n)[None, :] < lengths[:, None]
        c = self.n_channels
        device = self.device
        x = (raw - self.mean[rows, None, :]) / self.scale[rows, None, :]
        x = torch.as_tensor(x, dtype=torch.float32, device=device)
        row_t = torch.as_tensor(rows, device=device)
        length_t = torch.as_tensor(lengths, device=device)
        module = self.module
        if module.training:  # (eval() walks every submodule: a measurable cost per streamed step)
            module.eval()
        every = len(rows) == len(self) and bool((rows == np.arange(len(rows))).all())
        state, history = self.take(row_t)
        forecast = self.forecast if every else self.forecast[row_t]
        params = self.params if every else self.params[row_t]
        # (the network returns new tensors: these stay the rows' values before, to put back on failure)
        before = (state, history, forecast, params)
        calibration = self.calibration  # advanced in place, at these rows
        if calibration is not None:
            undo.add(calibration.saved(None if every else row_t, n))
        fallback = fallback_arguments(self, rows)
        rate = float(self.calibration_rate or 0.0) if calibrate else 0.0
        with torch.no_grad():
            for start in range(0, n, ENCODE_CHUNK):
                chunk = (length_t - start).clamp(0, ENCODE_CHUNK)
                ragged = bool((chunk < min(ENCODE_CHUNK, n - start)).any())
                x_chunk = x[:, start : start + ENCODE_CHUNK]
                out, state, history = module(
                    x_chunk,
                    state=state,
                    history=history,
                    last_only=calibration is None,
                    return_state=True,
                    lengths=chunk if ragged else None,
                    **fallback,
                )
                if calibration is not None:  # judge the intervals issued before, keep every new one
                    observed, known = x_chunk[..., :c], None
                    if self.n_future:  # the future-known covariates' part of every judged forecast
                        future = x_chunk[..., c : c + self.n_future, None].transpose(-1, -2)
                        known = module.future_effect(future.expand(-1, -1, self.horizon, -1))
                    calibration.advance(
                        observed, out.loc, out.params, chunk, rate, self.head, known, None if every else row_t
                    )
                    last = (chunk - 1).clamp_min(0)
                    pick = torch.arange(len(rows), device=x.device)
                    out = Forecast(out.loc[pick, last][:, None], out.params[pick, last][:, None])
                if ragged:
                    advanced = (chunk > 0)[:, None, None]
                    forecast = torch.where(advanced, out.loc[:, 0], forecast)
                    params = torch.where(advanced[..., None], out.params[:, 0], params)
                else:
                    forecast, params = out.loc[:, 0], out.params[:, 0]
        undo.keep(self, "n_seen", "n_observed")
        if every:
            undo.keep(self, "state", "history", "forecast", "params")
        else:
            undo.add(lambda: self._put_rows(row_t, *before))
        self._put_rows(row_t, state, history.map(_compact), forecast, params)
        self.n_seen = self.n_seen.copy()  # (copies: the log keeps the arrays before)
        self.n_seen[rows] += lengths
        self.n_observed = self.n_observed.copy()
        self.n_observed[rows] += (np.isfinite(raw[..., :c]).any(axis=2) & within).sum(axis=1)

    def _put_rows(
        self,
        rows: torch.Tensor,
        state: list[Any],
        history: WindowHistory,
        forecast: torch.Tensor,
        params: torch.Tensor,
    ) -> None:
        """Write the state, history, forecast and its parameters of the series at ``rows`` (as
        :meth:`take` and the rows' gathered forecasts hold them)."""
        self._put(rows, state, history)
        if self._is_all(rows):
            self.forecast, self.params = forecast, params
        else:
            self.forecast[rows] = forecast
            self.params[rows] = params

    def _is_all(self, rows: torch.Tensor) -> bool:
        return len(rows) == len(self.ids) and bool(
            (rows == torch.arange(len(rows), device=rows.device)).all()
        )

    def _state_rows(self, rows: torch.Tensor) -> torch.Tensor:
        k = self.rows_per_series
        return (rows[:, None] * k + torch.arange(k, device=rows.device)).flatten()

    def take(self, rows: torch.Tensor) -> tuple[list[Any], WindowHistory]:
        """The encoder state and history of the series at ``rows``, as the network's ``forward`` takes
        them (every series, in order: the engine's own tensors, not copies)."""
        if self._is_all(rows):
            return self.state, self.history
        state_rows = self._state_rows(rows)
        state = unflatten_state(self.state, [t[state_rows] for t in flatten_state(self.state)])
        return state, self.history.map(lambda t: t[rows])

    def _put(self, rows: torch.Tensor, state: list[Any], history: WindowHistory) -> None:
        """Write the state and history of the series at ``rows`` back (from :meth:`take`'s layout)."""
        if self._is_all(rows):
            self.state, self.history = state, history  # every series, in order (the KV cache's case)
            return
        state_rows = self._state_rows(rows)
        for full, part in zip(flatten_state(self.state), flatten_state(state), strict=True):
            full[state_rows] = part
        self.history.values[rows] = history.values
        self.history.observed[rows] = history.observed

    # ------------------------------------------------------------------ forecasting
    def _original_units(self, values: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        """Standardised ``(n_series, horizon, C)`` values of ``rows`` in their own series' units."""
        c = self.n_channels
        if len(rows) < len(self):
            values = values[torch.as_tensor(rows, device=values.device)]
        out = values.detach().cpu().numpy().astype(np.float64)
        return out * self.scale[rows, None, :c] + self.mean[rows, None, :c]

    def future_effect(self, rows: np.ndarray, future: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """What future-known covariates add to the forecasts of ``rows``, ``(R, k, C)``, original units.

        ``future`` ``(R, k, n_future)`` holds their values (original units) at the forecast steps
        ``steps`` (0-based: ``(k,)`` shared by all rows, or ``(R, k)``).
        """
        return future_effect_at_steps(self.module, self.mean[rows], self.scale[rows], future, steps)

    def predict(self, rows: np.ndarray | None = None, combined: bool = True) -> np.ndarray:
        """Current point forecasts ``(R, horizon, C)`` of the streams at ``rows`` (all), original units
        (without the future-known covariates' effect: see :meth:`future_effect`); ``combined=False``:
        the network's (or naive method's) own, before the combination with the Theta method's."""
        with self.lock:
            rows = np.arange(len(self)) if rows is None else rows
            point = self._original_units(self.forecast, rows)
            return point + theta_shift(self, rows, point) if combined else point

    def predict_params(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The head's parameters ``(R, horizon, C, K)`` of the current forecasts, original units (the
        head's :attr:`~aaren_ts.nn.heads.DistributionHead.scaled` ones multiplied by the series' scale)."""
        with self.lock:
            rows = np.arange(len(self)) if rows is None else rows
            index = torch.as_tensor(rows, device=self.params.device)
            params = self.params[index].detach().cpu().numpy().astype(np.float64)
            scale = self.scale[rows, None, : self.n_channels, None]
            return params * np.where(np.asarray(self.head.scaled), scale, 1.0)

    def predict_quantiles(self, alpha: Sequence[float], rows: np.ndarray | None = None) -> np.ndarray:
        """Quantiles ``(R, horizon, C, len(alpha))`` of the streams' forecast distributions, original
        units (calibrated online with a ``calibration_rate``; without future covariates' effect)."""
        with self.lock:
            rows = np.arange(len(self)) if rows is None else rows
            return quantiles(self, alpha, rows)

    def one_sigma_bounds(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Bounds ``(R, 2, horizon, C)`` (lower, upper) of the central interval of one standard
        deviation's nominal coverage of the forecasts (calibrated if the streams are): half its width
        is the forecast's standard deviation (a Gaussian's own when not calibrated)."""
        with self.lock:
            rows = np.arange(len(self)) if rows is None else rows
            return one_sigma_bounds(self, rows)

    def stream_forecasts(self, row: int, values: np.ndarray, future: np.ndarray | None = None) -> np.ndarray:
        """The mean forecasts the stream at ``row`` would make after each of ``values`` ``(N, C +
        n_exog)``, ``(N, horizon, C)`` in original units, without advancing it (combined with the
        Theta method's as :meth:`predict` is). ``future`` ``(N, horizon, n_future)``: the future-known
        covariates at each forecast's steps (original units), whose effect the forecasts take."""
        return stream_forecasts(self, row, values, future)

    def forecast_windows(
        self, windows: np.ndarray, row: int = 0, batch_size: int = 256, future: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Point forecast and standard deviation ``(n, horizon, C)`` after each of the separate
        histories ``windows`` ``(n, length, C + n_exog)`` (original units of the series at ``row``, the
        covariates after the channels), each encoded from scratch, in batches; the streams are not
        touched (the network's spread, uncalibrated: half the width of its central interval of one
        standard deviation's coverage). ``future`` ``(n, horizon, n_future)``: the future-known
        covariates at each window's forecast steps (original units), whose effect the point forecast
        takes."""
        return forecast_windows(self, windows, row, batch_size, future)

    # ------------------------------------------------------------------ saving and restoring
    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of every stream (encoder state, history, forecast, its parameters, calibration)."""
        with self.lock:
            history = [self.history.values, self.history.observed]
            calibration = [] if self.calibration is None else self.calibration.tensors()
            return [*flatten_state(self.state), *history, self.forecast, self.params, *calibration]

    def theta_arrays(self) -> dict[str, np.ndarray] | None:
        """Copies of the Theta streams' arrays and of ``theta_weight`` (``None`` without
        :meth:`use_theta`)."""
        with self.lock:
            return None if self.theta is None else theta_arrays(self.theta, self.theta_weight)

    def restore_theta(self, arrays: dict[str, np.ndarray], n_seen: np.ndarray) -> None:
        """Load what :meth:`theta_arrays` gave into streams already :meth:`add`-ed, checked first
        (``PartnerStreams.from_arrays``, and each stream's clock against the
        ``n_seen`` steps its series has seen; ``ValueError`` naming what does not fit, and nothing
        changes)."""
        theta, weight = restored_theta(arrays, len(self), self.n_channels, n_seen)
        with self.lock:
            self.theta, self.theta_weight = theta, weight

    def restore(self, tensors: Sequence[torch.Tensor], n_seen: np.ndarray, n_observed: np.ndarray) -> None:
        """Load what :meth:`tensors` gave (and the counters) into streams already :meth:`add`-ed.

        Every tensor is checked against the streams this engine's network makes for the same number
        of series (structure, shape, dtype, finiteness where it matters) before anything changes, so a
        file that does not fit the model is refused instead of crashing or corrupting later steps.

        Raises
        ------
        ValueError
            Naming the first tensor or counter that does not fit.
        """
        with self.lock:
            restore_streams(self, tensors, n_seen, n_observed)
