"""What training a :class:`~aaren_ts.nn.forecast.ForecastNet` needs beside the network: the point
forecast's losses, the training loss that adds the distribution head's, and the held-out judgement of
each series against the naive forecast."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from aaren_ts.nn.ensemble import MemberForecasts
from aaren_ts.nn.forecast import ENCODE_CHUNK, Forecast, ForecastNet, WindowHistory
from aaren_ts.nn.heads import make_head

__all__ = [
    "LOSS_POWER",
    "NAIVE_MARGIN",
    "NAIVE_T",
    "POINT_LOSSES",
    "ForecastLoss",
    "HeldOutErrors",
    "TailBatch",
    "held_out_errors",
    "masked_mae",
    "masked_mse",
    "tail_batches",
]

# A series (channel) keeps the trained network only if the network's error on its held-out tail (in the
# training loss) is at least this fraction below the (seasonal) naive forecast's; otherwise it forecasts
# with the naive method (the network's initialisation, see `held_out_errors`). On a series with nothing
# to learn the network fits noise that a short validation tail cannot tell from a gain; real series
# clear the margin easily (the design note ``design_notes/forecaster_naive_fallback`` has the figures).
NAIVE_MARGIN = 0.1

# ... and only if that gain is also significant: at least this many standard errors of the difference
# of the errors (a one-sided Diebold-Mariano test at 5 %; :class:`HeldOutErrors`): the margin alone
# lets the network keep a series whose tail it forecast better by chance.
NAIVE_T = 1.645


class TailBatch(NamedTuple):
    """One batch of :func:`tail_batches`: the series streamed up to the first forecast that reaches a
    held-out tail, and what follows, on one device.

    Attributes
    ----------
    chunk : list of int
        The batch's series indices.
    start : int
        How many steps of each series were streamed into ``state`` and ``history``: the batch's
        earliest forecast origin that reaches a tail (``min(n_train) - 1``).
    before : Tensor
        ``(B, start, width)``: those steps' values (what a forecast partner streams first).
    state, history
        The network's state and window history after them (``None`` where ``start == 0``).
    x : Tensor
        ``(B, N, width)``: the rest of each series, padded with NaN.
    lengths : Tensor
        ``(B,)``: each series' real steps in ``x``.
    after : Tensor
        ``(B, N, T, width)``: the values of the ``T = horizon`` steps after every step of ``x``.
    future : Tensor or None
        The future-known covariates among them (``None`` without).
    """

    chunk: list[int]
    start: int
    before: torch.Tensor
    state: list[Any] | None
    history: WindowHistory | None
    x: torch.Tensor
    lengths: torch.Tensor
    after: torch.Tensor
    future: torch.Tensor | None

    def origins(self, n_train: Sequence[int]) -> torch.Tensor:
        """``(B,)``: the step of ``x`` after which each series' first forecast that reaches its tail is
        issued (its training part's last step)."""
        return torch.tensor([n_train[k] - 1 - self.start for k in self.chunk], device=self.x.device)

    def scored(self, n_train: Sequence[int]) -> torch.Tensor:
        """``(B, N)``: the steps of ``x`` whose forecasts reach the series' tail (from its
        :meth:`origins` to its last step)."""
        steps = torch.arange(self.x.shape[1], device=self.x.device)[None, :]
        return (steps >= self.origins(n_train)[:, None]) & (steps < self.lengths[:, None])

    def forecast(self, module: ForecastNet, **kwargs: Any) -> Forecast:
        """``module``'s forecasts after every step of ``x``, continuing from ``state`` and ``history``
        (``kwargs``: the module's other arguments, as ``naive`` or ``max_std``)."""
        return module(self.x, self.state, self.history, lengths=self.lengths, future=self.future, **kwargs)


def tail_batches(
    module: ForecastNet,
    series: Sequence[np.ndarray],
    n_train: Sequence[int],
    device: torch.device | str,
    batch_size: int = 64,
) -> Iterator[TailBatch]:
    """The series that have a held-out tail (``len(series[k]) > n_train[k] >= 1``), in batches, as the
    held-out judgements stream them whole (:class:`TailBatch`).

    Each batch's steps before its earliest forecast that reaches a tail are streamed (in blocks of
    :data:`~aaren_ts.nn.forecast.ENCODE_CHUNK` steps, reading only the network's state) so that the
    judgements forecast only from there on: the forecasts after every step of a long series
    (``N * horizon * C`` values each) do not fit in memory (Weather, 42,000 steps of 21 channels,
    720 steps ahead: 2.5 GB per array).
    ``module`` must be in evaluation mode, under ``torch.no_grad()``.
    """
    horizon, c = module.horizon, module.n_channels
    for first in range(0, len(series), batch_size):
        stop = min(len(series), first + batch_size)
        chunk = [k for k in range(first, stop) if len(series[k]) > n_train[k] >= 1]
        if not chunk:
            continue
        start = min(n_train[k] for k in chunk) - 1
        lengths = torch.tensor([len(series[k]) - start for k in chunk])
        longest = int(lengths.max())
        padded = torch.full((len(chunk), start + longest + horizon, series[chunk[0]].shape[1]), float("nan"))
        for i, k in enumerate(chunk):
            padded[i, : len(series[k])] = torch.as_tensor(series[k], dtype=torch.float32)
        before = padded[:, :start].to(device)
        state, history = None, None
        for block in range(0, start, ENCODE_CHUNK):
            _, state, history = module(
                before[:, block : block + ENCODE_CHUNK],
                state=state,
                history=history,
                last_only=True,
                return_state=True,
            )
        rest = padded[:, start:]
        after = rest[:, 1:].unfold(1, horizon, 1).transpose(-1, -2)[:, :longest].to(device)
        future = after[..., c : c + module.n_future] if module.n_future else None
        x = rest[:, :longest].to(device)
        yield TailBatch(chunk, start, before, state, history, x, lengths.to(device), after, future)


class HeldOutErrors(NamedTuple):
    """What :func:`held_out_errors` returns, each ``(n_series, C)``.

    Attributes
    ----------
    error, naive_error : ndarray
        Sums of the network's and the naive forecast's errors over every scored value, per channel.
    count : ndarray of int
        How many values each sum holds.
    variance : ndarray
        The long-run variance of ``error - naive_error`` (Newey and West's estimator, as the
        Diebold-Mariano test uses it): the sum of the per-origin differences ``d_t`` (each forecast
        origin's errors summed over the horizon) has the variance ``n * (g_0 + 2 sum_k (1 - k / h)
        g_k)``, ``g_k`` the autocovariance of ``d`` at lag ``k < h``, as the forecasts of ``h`` steps
        from neighbouring origins share ``h - 1`` target values. Zero where nothing is scored.
    """

    error: np.ndarray
    naive_error: np.ndarray
    count: np.ndarray
    variance: np.ndarray

    def improvement_t(self) -> np.ndarray:
        """The network's gain over the naive forecast in standard errors (the Diebold-Mariano
        statistic, positive where the network's error is lower). Where the difference does not vary,
        it is infinite with the gain's sign, and 0 without a gain."""
        gain = self.naive_error - self.error
        root = np.sqrt(self.variance)
        steady = np.where(gain > 0, np.inf, np.where(gain < 0, -np.inf, 0.0))
        return np.divide(gain, root, out=steady, where=root > 0)

    def falls_back(self) -> np.ndarray:
        """Which series (channels) forecast with the naive method: bool ``(n_series, C)``.

        A series keeps the network where its error on its tail is at least ``NAIVE_MARGIN`` below
        the naive forecast's. All tails pooled must also show a gain of at least ``NAIVE_T`` standard
        errors (their variances summed); where they do not, a series keeps the network only if its
        own tail shows that much (:meth:`improvement_t`): a short tail has too few independent
        forecasts to show a gain the network has. A series without a tail follows the pooled verdict
        (all False when no series has a tail). The evidence, and the rules tried and not kept, are in
        the documentation's design note ``design_notes/forecaster_naive_fallback``.
        """
        scored = self.count > 0
        if not scored.any():
            return np.zeros(self.error.shape, dtype=bool)
        clear = self.error < (1.0 - NAIVE_MARGIN) * self.naive_error
        pooled = self.pooled_gain()
        keep = clear if pooled else clear & (self.improvement_t() >= NAIVE_T)
        return np.where(scored, ~keep, not pooled)

    def pooled_gain(self) -> bool:
        """Whether all tails pooled show the network's gain over the naive forecast: an error at least
        ``NAIVE_MARGIN`` below the naive forecast's, by at least ``NAIVE_T`` standard errors (their
        variances summed). False where nothing is scored."""
        scored = self.count > 0
        error, naive_error = self.error[scored].sum(), self.naive_error[scored].sum()
        return bool(
            scored.any()
            and error < (1.0 - NAIVE_MARGIN) * naive_error
            and naive_error - error >= NAIVE_T * np.sqrt(self.variance[scored].sum())
        )

    def naive_share(self) -> np.ndarray:
        """The naive forecast's share in each series' (channel's) point forecast, ``(n_series, C)`` in
        [0, 1]: 0 where it keeps the network (:meth:`falls_back`); where it falls back, the naive
        forecast's inverse-error weight against the network's, ``error / (error + naive_error)`` (Bates
        and Granger's combination, on the tail errors in the training loss), if the pooled tails show
        the network's gain (:meth:`pooled_gain`), and 1 (the naive forecast alone) if they do not.

        Where the panel shows that the network learns, a series whose own tail did not clear the bar
        is often one whose tail was too short to show the network's gain, not one the network cannot
        forecast: weighing the two forecasts by their tail errors hedges that verdict, and still gives
        the naive forecast most of the weight where the network was clearly worse (measured in the
        documentation's design note ``design_notes/forecaster_naive_fallback``).
        """
        fallen = self.falls_back()
        if not self.pooled_gain():
            return fallen.astype(np.float64)
        total = self.error + self.naive_error
        weight = np.divide(self.error, total, out=np.ones_like(total), where=total > 0)
        return np.where(fallen, weight, 0.0)


def _long_run_variance(d: torch.Tensor, valid: torch.Tensor, lags: int) -> torch.Tensor:
    """``n * LRV`` of each row of ``d`` ``(B, N, C)`` over its ``valid`` entries (a contiguous run of
    forecast origins), Bartlett-weighted autocovariances up to lag ``lags`` (Newey-West)."""
    n = valid.sum(1, keepdim=True).clamp_min(1).to(d.dtype)
    centred = torch.where(valid, d - torch.where(valid, d, 0.0).sum(1, keepdim=True) / n, 0.0)
    total = (centred * centred).sum(1)
    for k in range(1, min(lags, d.shape[1] - 1) + 1):
        total = total + 2.0 * (1.0 - k / (lags + 1)) * (centred[:, k:] * centred[:, :-k]).sum(1)
    return total.clamp_min(0.0)


def held_out_errors(
    module: ForecastNet,
    series: Sequence[np.ndarray],
    n_train: Sequence[int],
    device: torch.device | str,
    loss: str = "mse",
    batch_size: int = 64,
) -> HeldOutErrors:
    """Each series' forecast errors on its held-out tail, of ``module`` and of the naive forecast, and
    the variance of their difference.

    Every series is streamed from its start, as it will be after ``fit``; the forecasts issued from
    the end of its training part on (after step ``n_train - 1``) are scored on the values of the
    tail they reach, so each forecast sees the whole history before it.

    Parameters
    ----------
    module : ForecastNet
        The trained network (run in eval mode, unchanged).
    series : sequence of ndarray of shape (n_i, C + n_exog)
        Whole standardised series (training part, then tail), covariates after the channels.
    n_train : sequence of int
        Length of each series' training part; a series with no tail (``n_train == n_i``) scores
        nothing.
    device : torch.device or str
        Where to run.
    loss : {"mse", "mae"}, default="mse"
        Squared or absolute errors.
    batch_size : int, default=64
        Series per forward pass.

    Returns
    -------
    HeldOutErrors
        The sums of errors, their counts and the variance of the difference, per series and channel.
    """
    power = LOSS_POWER[loss]
    c = module.n_channels
    n = len(series)
    error, naive_error, variance = np.zeros((n, c)), np.zeros((n, c)), np.zeros((n, c))
    count = np.zeros((n, c), dtype=np.int64)
    was_training = module.training
    module.eval()
    with torch.no_grad():
        for batch in tail_batches(module, series, n_train, device, batch_size):
            chunk = batch.chunk
            scored = batch.scored(n_train)[:, :, None, None]
            target = torch.where(scored, batch.after[..., :c], float("nan"))
            valid = torch.isfinite(target)
            flags = torch.ones(len(chunk), c, dtype=torch.bool, device=device)
            per_origin = []
            for naive, sums in ((None, error), (flags, naive_error)):
                loc = batch.forecast(module, naive=naive).loc
                diff = torch.where(valid, loc - target.nan_to_num(), 0.0).abs().pow(power).double()
                per_origin.append(diff.sum(2))  # (B, N, C): each origin's errors over the horizon
                sums[chunk] = diff.sum((1, 2)).cpu().numpy()
            count[chunk] = valid.sum((1, 2)).cpu().numpy()
            d = per_origin[0] - per_origin[1]
            lrv = _long_run_variance(d, valid.any(2), module.horizon - 1)
            variance[chunk] = lrv.cpu().numpy()
    module.train(was_training)
    return HeldOutErrors(error, naive_error, count, variance)


def masked_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the finite entries of ``target`` (NaN marks a future not observed)."""
    valid = torch.isfinite(target)
    diff = torch.where(valid, pred - torch.nan_to_num(target), torch.zeros_like(pred))
    return (diff**2).sum() / valid.sum().clamp_min(1)


def masked_mae(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error over the finite entries of ``target`` (NaN marks a future not observed)."""
    valid = torch.isfinite(target)
    diff = torch.where(valid, pred - torch.nan_to_num(target), torch.zeros_like(pred))
    return diff.abs().sum() / valid.sum().clamp_min(1)


def masked_smape(
    pred: torch.Tensor, target: torch.Tensor, offset: torch.Tensor, log_scale: torch.Tensor
) -> torch.Tensor:
    """Mean symmetric absolute percentage error (0 to 2) over the finite entries of ``target``, of
    forecasts ``pred`` ``(B, N, T, C)`` of standardised values mapped back to each series' own scale.

    A series' channel on its own scale is ``scale * (z + offset)``, so its error is ``2 |pred - z| /
    (|pred + offset| + |z + offset|)`` (``offset`` ``(B, C)``: the channel's mean over its scale); one
    on the log scale (``log_scale`` ``(B, C)`` above 0: the scale of its logarithm) is ``exp(mean +
    log_scale * z)``, and its error ``2 tanh(log_scale |pred - z| / 2)``."""
    valid = torch.isfinite(target)
    truth = torch.nan_to_num(target)
    offset, log_scale = offset[:, None, None, :], log_scale[:, None, None, :]
    gap = (pred - truth).abs()
    own = 2.0 * gap / ((pred + offset).abs() + (truth + offset).abs()).clamp_min(_SMAPE_FLOOR)
    relative = torch.where(log_scale > 0, 2.0 * torch.tanh(0.5 * log_scale * gap), own)
    return torch.where(valid, relative, torch.zeros_like(pred)).sum() / valid.sum().clamp_min(1)


_SMAPE_FLOOR = 1e-3  # (the sMAPE's denominator at least this, in units of the series' scale)

#: The point forecast's training losses by name: the mean of the squared errors or of the absolute
#: errors (which aims at the median, what sMAPE, MASE and MAPE reward), on the standardised values,
#: or the sMAPE on each series' own scale (:func:`masked_smape`).
POINT_LOSSES = {"mse": masked_mse, "mae": masked_mae, "smape": masked_smape}
#: The power of the error each loss judges forecasts by where only errors are at hand (the tails'
#: judgements): the sMAPE's, relative to each series' level, as the absolute error.
LOSS_POWER = {"mse": 2, "mae": 1, "smape": 1}


class ForecastLoss:
    """Training loss of :class:`~aaren_ts.nn.forecast.ForecastNet` (skorch's ``criterion``): the point
    forecast's MSE, MAE or sMAPE (its targets then carry each series' levels beside their values).

    The distribution head learns from its own loss (:meth:`~aaren_ts.nn.heads.DistributionHead.loss`:
    the Gaussian negative log-likelihood, the pinball loss, ...) on the errors of the point forecast
    (held fixed), added as ``loss - loss.detach()``: its gradient reaches only the head, and the value,
    hence the validation loss early stopping watches, is the point forecast's loss alone. The head's
    loss counts the steps from the ``full_window``-th of a segment on: before, the window is padded
    (its standard deviation, the head's unit, is meaningless) and the forecast is from a few
    observations; those errors would otherwise set the spread's floor for every step (on a series
    driven by a known input, the intervals came out four times too wide). The point forecast's loss
    counts every step: the forecasts from a few observations are training signal (the design note
    ``design_notes/forecaster_loss`` compares the alternatives).

    Parameters
    ----------
    full_window : int, default=1
        Number of observations from which a step's window is full (``context_length``).
    distribution : str, default="normal"
        The network's distribution head (its loss is a function of the forecasts alone).
    point_loss : {"mse", "mae", "smape"} or sequence of them, default="mse"
        The point forecast's loss (``POINT_LOSSES``). A sequence gives each member of an ensemble
        its own (member ``k`` trains on entry ``k``, :class:`~aaren_ts.nn.ensemble.MemberForecasts`);
        a combined forecast (an ensemble in evaluation mode: its validation loss) is scored by the
        first.

    Notes
    -----
    A plain callable, not a ``torch.nn.Module``: it has no parameters, so skorch moves nothing of it
    to a device and data-parallel training (Accelerate) has nothing of it to wrap.
    """

    def __init__(
        self, full_window: int = 1, distribution: str = "normal", point_loss: str | Sequence[str] = "mse"
    ) -> None:
        self.full_window = full_window
        names = (point_loss,) if isinstance(point_loss, str) else tuple(point_loss)
        self.point_losses = tuple(POINT_LOSSES[name] for name in names)
        self.head = make_head(distribution, 1, 1, 1).requires_grad_(False)

    def __call__(self, pred: Forecast | MemberForecasts, target: torch.Tensor | dict) -> torch.Tensor:
        if isinstance(pred, MemberForecasts):  # an ensemble in training: each member's own loss
            losses = [
                self._loss(pred.member(k), target, self.point_losses[k % len(self.point_losses)])
                for k in range(len(pred.loc))
            ]
            return torch.stack(losses).mean()
        return self._loss(pred, target, self.point_losses[0])

    def _loss(self, pred: Forecast, target: torch.Tensor | dict, point_loss: Any) -> torch.Tensor:
        levels = ()
        if isinstance(target, dict):  # (SegmentDataset's items with each series' levels)
            target, levels = target["values"], (target["offset"], target["log_scale"])
        if point_loss is masked_smape and not levels:
            raise ValueError("the smape loss needs each series' levels with its targets")
        skip = min(self.full_window - 1, target.shape[1] - 1)
        tail = target[:, skip:]
        valid = torch.isfinite(tail)
        loc = pred.loc[:, skip:].detach()
        truth = torch.where(valid, tail, loc)  # (a missing target: no error, no gradient)
        head_loss = self.head.loss(loc, pred.params[:, skip:], truth)
        head_loss = torch.where(valid, head_loss, 0.0).sum() / valid.sum().clamp_min(1)
        point = (
            point_loss(pred.loc, target, *levels)
            if point_loss is masked_smape
            else point_loss(pred.loc, target)
        )
        return point + (head_loss - head_loss.detach())
