"""Online re-calibration of forecast intervals from realised errors: adaptive conformal inference.

A forecast distribution's central ``coverage`` interval reaches from its quantile at ``Phi(-z)`` to
the one at ``Phi(z)``, ``z`` the standard normal quantile of ``(1 + coverage) / 2`` (for a Gaussian:
``mean +- z * std``). With adaptive conformal inference (ACI; Gibbs and Candes, "Adaptive conformal
inference under distribution shift", NeurIPS 2021) each stream corrects that ``z`` from the errors it
has seen: for a grid of nominal coverages and for every horizon step and channel, it keeps a working
miscoverage level ``a`` and, each time an observation shows whether the interval issued ``h`` steps
earlier missed it, moves ``a <- a + rate * (a_nominal - missed)``. A stream whose intervals miss too
often widens them; one whose intervals always cover narrows them, so long-run coverage holds even
when the noise level drifts. Any coverage between the grid's is read by interpolating the corrected
``z`` in the nominal ``z`` (monotone, so quantiles never cross).

Judging the interval issued ``h`` steps ago needs that forecast: a stream keeps the last ``horizon``
forecasts (location and the distribution head's parameters), ``O(horizon**2 * channels)`` numbers,
independent of its length, in a ring. The miss is judged with the stream's current level (the one its
newest interval uses), by the observation's two-sided tail probability under the judged forecast
(:meth:`~aaren_ts.nn.heads.DistributionHead.p_value`): missed at level ``a`` when it is below ``a``.

:func:`calibration_step` is the one implementation of a step, for a batch of streams; it is
functional, so the ONNX export traces it too. :class:`Calibration` holds the state of many streams and
advances it through chunks of observations; on CPU, for the Gaussian head, it runs the same step
through a C kernel (``_aci_step.c``) tested equal to :func:`calibration_step`.

The forecaster starts the levels at their nominal values and moves them through each series'
validation tail in ``fit`` (held-out errors), rather than setting them once by split conformal on the
tails (the design note :doc:`/design_notes/forecaster_calibration` says why).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from aaren_ts.engine._native import ACI_STEP_FAILURES, load_aci_step
from aaren_ts.nn.heads import DistributionHead, NormalHead
from aaren_ts.utils.normal import CALIBRATION_COVERAGES, MIN_LEVEL, gaussian_z, interpolate_z, level_z

__all__ = [
    "CALIBRATION_COVERAGES",
    "Calibration",
    "aci_update",
    "calibration_step",
    "gaussian_z",
    "level_z",
    "nominal_levels",
]


def nominal_levels(device: torch.device | str | None = None) -> torch.Tensor:
    """``(L, 1, 1)`` nominal miscoverage levels of :data:`CALIBRATION_COVERAGES`."""
    return torch.tensor([1.0 - c for c in CALIBRATION_COVERAGES], device=device)[:, None, None]


def aci_update(
    levels: torch.Tensor, p_value: torch.Tensor, valid: torch.Tensor, rate: float, inplace: bool = False
) -> torch.Tensor:
    """One ACI step: ``levels + rate * (nominal - missed)`` where ``valid``, the levels elsewhere.

    ``levels`` is ``(..., L, T, C)``; ``p_value`` (the two-sided p-value of each judged observation)
    and ``valid`` (1.0 where an observation judged an issued interval) broadcast against it. An
    interval of level ``a`` missed when ``p_value < max(a, MIN_LEVEL)`` (a level above 1 misses
    whatever is observed, as a level of 1 does: no upper bound is needed). ``inplace`` updates
    ``levels`` itself: with many streams the levels are the calibration's largest tensor, and
    allocating a new one at every step costs more than the arithmetic.
    """
    step = valid * rate
    missed = torch.lt(p_value, levels).logical_or_(p_value < MIN_LEVEL)
    nominal = nominal_levels(levels.device)
    if inplace:  # (missed is 0 or 1, so both forms round alike: the paths agree bit for bit)
        return levels.addcmul_(nominal, step).addcmul_(missed, step, value=-1.0)
    return torch.addcmul(levels, nominal, step).sub_(missed * step)


def calibration_step(
    levels: torch.Tensor,
    issued: torch.Tensor,
    n_issued: torch.Tensor,
    y: torch.Tensor,
    loc: torch.Tensor,
    params: torch.Tensor,
    advanced: torch.Tensor,
    rate: float,
    head: DistributionHead,
    known: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One observation for each of ``R`` streams: the new ``(levels, issued, n_issued)``.

    Parameters
    ----------
    levels : torch.Tensor
        ``(R, L, T, C)`` working miscoverage levels.
    issued : torch.Tensor
        ``(R, T, T, C, 1 + K)`` ring of the last ``T`` forecasts (location, then the head's ``K``
        parameters); the ``k``-th forecast a stream issued is in slot ``k % T``.
    n_issued : torch.Tensor
        ``(R,)`` int64: forecasts each stream has issued.
    y : torch.Tensor
        ``(R, C)`` the new observations (NaN: missing, judges nothing).
    loc, params : torch.Tensor
        ``(R, T, C)`` and ``(R, T, C, K)``: the forecast issued after the observation.
    advanced : torch.Tensor
        ``(R,)`` bool: which streams take a step (the others are returned as they are).
    rate : float
        The ACI step (``0``: the new forecast is filed, the levels stay).
    head : DistributionHead
        The forecasts' family (its :meth:`~aaren_ts.nn.heads.DistributionHead.p_value`).
    known : torch.Tensor, optional
        ``(R, T, C)`` added to the location of the forecast of horizon ``h + 1`` judged now (the
        covariates' effect known at this step, left out of the stored forecasts).
    """
    n_rows, horizon, channels = loc.shape
    width = issued.shape[-1]
    h = torch.arange(horizon, device=loc.device)
    if rate > 0:
        # the forecast of horizon h + 1 was issued h steps before the newest: slot (n - 1 - h) % T
        slots = (n_issued[:, None] - 1 - h[None, :]) % horizon  # (R, T)
        index = slots[:, None, :, None, None].expand(-1, 1, -1, channels, width)
        judged = issued.gather(1, index)[:, 0]  # (R, T, C, 1 + K), horizon step h at position h
        judged_loc = judged[..., 0] if known is None else judged[..., 0] + known
        p_value = head.p_value(judged_loc, judged[..., 1:], y[:, None, :])  # (R, T, C)
        valid = advanced[:, None, None] & (h[None, :, None] < n_issued[:, None, None])
        valid = valid & torch.isfinite(y)[:, None, :]
        levels = aci_update(levels, p_value[:, None], valid[:, None].to(levels.dtype), rate)
    # the new forecast goes into slot n % T of each advanced stream: one row of the
    # (stream x slot, horizon x channel x parameter) view
    flat = issued.reshape(n_rows * horizon, horizon * channels * width)
    rows = torch.arange(n_rows, device=loc.device) * horizon + n_issued % horizon
    new = torch.cat([loc[..., None], params], dim=-1).reshape(n_rows, -1).to(issued.dtype)
    new = torch.where(advanced[:, None], new, flat.index_select(0, rows))
    issued = flat.index_copy(0, rows, new).reshape(issued.shape)
    return levels, issued, n_issued + advanced.long()


def _aci_kernel(calibration: Calibration, loc: torch.Tensor, head: DistributionHead) -> ctypes.CDLL | None:
    """The C step where it applies (the Gaussian head, CPU, float32, contiguous state; built and not
    opted out)."""
    if type(head) is not NormalHead or loc.device.type != "cpu":
        return None
    state = (calibration.levels, calibration.issued)
    if any(t.dtype != torch.float32 or not t.is_contiguous() for t in state):
        return None
    return load_aci_step()


@dataclass
class Calibration:
    """ACI state of a batch of streams.

    Attributes
    ----------
    levels : torch.Tensor
        ``(n_streams, L, horizon, n_channels)`` working miscoverage level of each nominal coverage of
        :data:`CALIBRATION_COVERAGES` (starts at ``1 - coverage``).
    issued : torch.Tensor
        ``(n_streams, horizon, horizon, n_channels, 1 + K)``: a ring of the forecasts issued after
        each of the last ``horizon`` steps (standardised units), the location and the head's ``K``
        parameters side by side (the forecast an observation judges is then one memory read); the
        ``k``-th forecast a stream issued is in slot ``k % horizon``.
    n_issued : torch.Tensor
        ``(n_streams,)`` how many forecasts each stream has issued (its next one goes to slot
        ``n_issued % horizon``).
    """

    levels: torch.Tensor
    issued: torch.Tensor
    n_issued: torch.Tensor

    @classmethod
    def fresh(
        cls, n: int, horizon: int, n_channels: int, device: torch.device | str, n_params: int = 1
    ) -> Calibration:
        """Nominal levels and no forecast issued yet, for ``n`` streams (``n_params``: the head's)."""
        issued = torch.zeros((n, horizon, horizon, n_channels, 1 + n_params), device=device)
        issued[..., 1:] = 1.0
        return cls(
            levels=nominal_levels(device)[None].expand(n, -1, horizon, n_channels).clone(),
            issued=issued,
            n_issued=torch.zeros(n, dtype=torch.long, device=device),
        )

    def tensors(self) -> list[torch.Tensor]:
        return [self.levels, self.issued, self.n_issued]

    def take(self, rows: torch.Tensor) -> Calibration:
        return Calibration(*(t[rows] for t in self.tensors()))

    def put(self, rows: torch.Tensor, part: Calibration) -> None:
        for full, new in zip(self.tensors(), part.tensors(), strict=True):
            full[rows] = new

    def cat(self, other: Calibration) -> Calibration:
        return Calibration(*(torch.cat([a, b]) for a, b in zip(self.tensors(), other.tensors(), strict=True)))

    def saved(self, streams: torch.Tensor | None, n_steps: int) -> Callable[[], None]:
        """How to put back what :meth:`advance` of ``streams`` (``None``: every stream) by at most
        ``n_steps`` steps changes: their levels, the counters and the ring slots those steps fill."""
        levels, issued, n_issued = self.levels, self.issued, self.n_issued.clone()
        rows = torch.arange(len(n_issued), device=n_issued.device) if streams is None else streams
        horizon = issued.shape[1]
        steps = torch.arange(min(int(n_steps), horizon), device=n_issued.device)
        slots = (n_issued[rows, None] + steps[None, :]) % horizon
        old_levels = levels.clone() if streams is None else levels[rows]
        old_issued = issued[rows[:, None], slots]

        def put_back() -> None:
            if streams is None:
                levels.copy_(old_levels)
            else:
                levels[rows] = old_levels
            issued[rows[:, None], slots] = old_issued
            self.levels, self.issued, self.n_issued = levels, issued, n_issued

        return put_back

    def newest_first(self) -> torch.Tensor:
        """The stored forecasts ``(n_streams, horizon, horizon, n_channels, 1 + K)``, newest first."""
        horizon = self.issued.shape[1]
        back = torch.arange(horizon, device=self.n_issued.device)
        slots = (self.n_issued[:, None] - 1 - back[None, :]) % horizon  # (n, T)
        rows = torch.arange(len(slots), device=slots.device)[:, None]
        return self.issued[rows, slots]

    def advance(
        self,
        y: torch.Tensor,
        loc: torch.Tensor,
        params: torch.Tensor,
        lengths: torch.Tensor,
        rate: float,
        head: DistributionHead,
        known: torch.Tensor | None = None,
        streams: torch.Tensor | None = None,
    ) -> None:
        """Move on, in place, through observations ``y`` ``(R, N, C)`` and the forecasts issued after each.

        ``loc`` ``(R, N, T, C)`` and ``params`` ``(R, N, T, C, K)`` are the forecasts issued after every
        step of ``y``; row ``r`` has ``lengths[r]`` real steps. Each observation judges the interval
        issued ``h`` steps before it for every ``h`` (missing observations judge nothing) and moves the
        levels by ``rate`` (``0``: only the issued forecasts move on, as through a training part).
        ``known`` ``(R, N, T, C)``, if given, is added to the location of the forecast of horizon
        ``h + 1`` judged at each step. ``streams`` ``(R,)``, if given, are the distinct streams of
        this calibration that the rows belong to (``None``: every stream, in order); the others are
        left as they are.
        """
        if rate <= 0:
            self._file(loc, params, lengths, streams)
            return
        lib = _aci_kernel(self, loc, head)
        if lib is not None:
            # the C step, one time step at a time and in place (also for a subset of the streams):
            # any chunking of a stream moves its levels exactly alike
            for j in range(loc.shape[1]):
                part = None if known is None else known[:, j]
                step = (y[:, j], loc[:, j], params[:, j, ..., 0], lengths > j)
                self._advance_one_native(lib, *step, rate, part, streams)
            return
        part = self if streams is None else self.take(streams)
        state = part.tensors()
        for j in range(loc.shape[1]):
            effect = None if known is None else known[:, j]
            state = calibration_step(
                *state, y[:, j], loc[:, j], params[:, j], lengths > j, rate, head, effect
            )
        if streams is None:
            self.levels, self.issued, self.n_issued = state
        else:
            self.put(streams, Calibration(*state))

    def _file(
        self, loc: torch.Tensor, params: torch.Tensor, lengths: torch.Tensor, streams: torch.Tensor | None
    ) -> None:
        """File the newest ``horizon`` forecasts of each row into its ring, levels unchanged."""
        n_rows, _, horizon, _ = loc.shape
        lengths = lengths.long()
        rows = torch.arange(n_rows, device=loc.device)
        last = torch.arange(horizon, device=loc.device)[None, :] + (lengths[:, None] - horizon)  # (R, T)
        keep = last >= 0
        row_of, step_of = rows[:, None].expand_as(last)[keep], last[keep]
        stream_of = row_of if streams is None else streams[row_of]
        slots = (self.n_issued[stream_of] + step_of) % horizon
        new = torch.cat([loc[row_of, step_of][..., None], params[row_of, step_of]], dim=-1)
        self.issued[stream_of, slots] = new.to(self.issued.dtype)
        moved = lengths if streams is None else torch.zeros_like(self.n_issued).index_add(0, streams, lengths)
        self.n_issued = self.n_issued + moved

    def _advance_one_native(
        self,
        lib: ctypes.CDLL,
        y: torch.Tensor,
        loc: torch.Tensor,
        scale: torch.Tensor,
        advanced: torch.Tensor,
        rate: float,
        known: torch.Tensor | None,
        streams: torch.Tensor | None,
    ) -> None:
        """:func:`calibration_step` of the Gaussian head through the C step (``_aci_step.c``), in place:
        one pass per stream.

        ``y`` ``(R, C)``, forecasts (mean, standard deviation) and ``known`` ``(R, T, C)``, ``advanced``
        ``(R,)``; ``streams`` as in :meth:`advance`.
        """
        n_rows, horizon, channels = loc.shape
        y, loc, scale = (t.float().contiguous() for t in (y, loc, scale))
        advanced = advanced.to(torch.bool).contiguous()
        if known is not None:
            known = known.float().contiguous()
        if streams is not None:
            streams = streams.to(torch.int64).contiguous()
        n_issued = self.n_issued.contiguous()  # (held: the kernel reads it through a pointer)
        nominal = nominal_levels().flatten()
        status = lib.aaren_aci_step(
            len(n_issued), n_rows, horizon, channels, nominal.numel(),
            self.levels.data_ptr(), self.issued.data_ptr(), n_issued.data_ptr(),
            None if streams is None else streams.data_ptr(), advanced.data_ptr(),
            y.data_ptr(), loc.data_ptr(), scale.data_ptr(), None if known is None else known.data_ptr(),
            nominal.data_ptr(), rate, MIN_LEVEL, int(rate > 0),
        )  # fmt: skip
        if status == -1:
            raise MemoryError(ACI_STEP_FAILURES[-1])
        if status != 0:
            raise ValueError(ACI_STEP_FAILURES.get(status, f"the calibration step failed ({status})"))
        if streams is None:
            self.n_issued = n_issued + advanced.long()
        else:
            self.n_issued = n_issued.index_add(0, streams, advanced.long())

    def z(self, coverage: Sequence[float] | np.ndarray) -> np.ndarray:
        """Calibrated half-widths ``(n_streams, len(coverage), horizon, n_channels)`` in standard deviations.

        The corrected ``z`` of the tracked coverages, made non-decreasing in coverage, interpolated
        linearly in the nominal ``z`` (and scaled by the nearest tracked ratio outside their range).
        """
        return interpolate_z(level_z(self.levels.cpu().numpy()), coverage)
