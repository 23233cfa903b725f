"""The forecaster's combination with the Theta method: its parameters and the network's weight.

With ``combination="theta"``, :class:`~aaren_ts.AarenForecaster` forecasts every channel with a weighted
mean of the network's forecast and the Theta method's (:mod:`aaren_ts.statistical.theta`, streamed
beside the network by the engine, :meth:`~aaren_ts.engine.ForecastEngine.use_theta`). :func:`fit_combination`
fits the Theta method to each series' training part and chooses the weight on the validation tails
the network did not train on. Every forecast issued from a tail's origins, the streams' own (the
network's, or the naive one where the series falls back to it) and the Theta method's, is scored by the
training loss; each series' loss at each weight of a grid is divided by its loss at weight 1, and each
channel takes the weight with the lowest mean log ratio, one weight for the series that keep the network
and one for those that fall back. Each series counts alike, as in sMAPE, MASE and MAPE, rather than by
its pooled loss, which lets a few series with large errors choose. The weight is taken only where its
gain is at least ``NAIVE_T`` standard errors across the series (the naive fallback's own bar):
otherwise, and where fewer than two series' tails can weigh the group (a single series), the streams'
forecasts stay as they are. A series too short for a tail, in such a group, has had its network
checked by nothing: each of its channels takes the equal mean of the two (:data:`PRIOR_WEIGHT`) where
the partner forecasts the series' own history clearly better than the seasonal naive forecast the
network starts from (:func:`partner_beats_naive`), and keeps its own forecast where it does not (a
cycle the partner does not model, a series the partner cannot follow).

With ``combination="theta_ets"`` the partner is the mean of the Theta method and damped-trend
exponential smoothing, :mod:`aaren_ts.statistical.ets`, chosen and weighted the same way.

The measurements behind these choices, and the variants tried and not kept, are in the documentation's
design notes ``design_notes/forecaster_theta_combination`` and ``design_notes/forecaster_ets``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from aaren_ts.nn.forecast import ForecastNet
from aaren_ts.nn.forecast_training import LOSS_POWER, NAIVE_MARGIN, NAIVE_T, tail_batches
from aaren_ts.statistical.ets import ETSStreams, fit_ets
from aaren_ts.statistical.partner import PartnerStreams, stream_rows
from aaren_ts.statistical.theta import ThetaStreams, fit_theta

__all__ = ["PRIOR_WEIGHT", "WEIGHTS", "fit_combination", "partner_beats_naive"]

#: The network's weights tried (1: the network alone).
WEIGHTS = np.linspace(0.0, 1.0, 11)
#: The network's weight for a series without a tail in a group too small to weigh it: an equal mean.
PRIOR_WEIGHT = 0.5


def fit_combination(
    module: ForecastNet,
    series: Sequence[np.ndarray],
    n_train: Sequence[int],
    naive: np.ndarray,
    sp: int,
    device: torch.device | str,
    loss: str = "mse",
    ets: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, ETSStreams | None]:
    """The Theta method's smoothing parameters ``(n, C)`` and seasonal components ``(n, C, sp)`` of
    each standardised series (channels first), and the weight ``(n, C)`` of the forecast the streams
    make (the network's, blended with the naive one by its share ``naive`` ``(n, C)``, as
    :attr:`~aaren_ts.engine.ForecastEngine.naive`) in the combination: one
    per channel for the series that keep the network and one for those that fall back, chosen on their
    tails as the module's docstring says, and which channels have no tail in a group with fewer than two
    (bool ``(n, C)``; there the weight is :data:`PRIOR_WEIGHT` where :func:`partner_beats_naive`, else
    1). The Theta method the weights are chosen with is fitted on the training parts
    (``series[k][: n_train[k]]``), the one returned on the whole series. With ``ets``, the partner is
    the mean of the Theta method and damped-trend exponential smoothing
    (:func:`~aaren_ts.statistical.ets.fit_ets`, fitted in the same two ways), whose streams at the
    series' first steps (row ``series * C + channel``) come last (``None`` without ``ets``)."""
    c = module.n_channels
    parts = [np.asarray(v[:k, :c], dtype=np.float64) for v, k in zip(series, n_train, strict=True)]
    alpha, season = fit_theta([p[:, j] for p in parts for j in range(c)], sp)
    alpha, season = alpha.reshape(len(parts), c), season.reshape(len(parts), c, -1)
    smoothing = fit_ets([p[:, j] for p in parts for j in range(c)], sp, module.horizon) if ets else None
    power = LOSS_POWER[loss]
    losses = np.zeros((len(series), len(WEIGHTS), c))  # each series' tail loss by weight
    was_training = module.training
    module.eval()
    with torch.no_grad():
        for batch in tail_batches(module, series, n_train, device):
            chunk, x = batch.chunk, batch.x
            flags = torch.as_tensor(naive[chunk], device=x.device)
            loc = batch.forecast(module, naive=flags).loc
            loc = loc.double().cpu().numpy()  # (B, N, H, C)
            target = batch.after[..., :c].double().cpu().numpy()
            theta = _partner_forecasts(
                torch.cat([batch.before, x], dim=1)[..., :c].double().cpu().numpy(),
                alpha[chunk],
                season[chunk],
                module.horizon,
                None if smoothing is None else smoothing.take(stream_rows(chunk, c)),
                skip=batch.start,
            )
            scored = batch.scored(n_train).cpu().numpy()  # (B, N)
            valid = np.isfinite(target) & scored[..., None, None]
            for w, weight in enumerate(WEIGHTS):
                error = np.abs(weight * loc + (1.0 - weight) * theta - np.nan_to_num(target)) ** power
                losses[chunk, w] = np.where(valid & np.isfinite(error), error, 0.0).sum(axis=(1, 2))
    module.train(was_training)
    own = losses[:, -1:]  # (n, 1, C): the streams' own forecasts (weight 1)
    log_ratio = np.log(np.maximum(losses, 1e-300) / np.where(own > 0, own, 1.0))  # (n, W, C)
    weight = np.ones((len(series), c))
    prior = np.zeros((len(series), c), dtype=bool)
    fallen = np.asarray(naive) > 0
    for members in (~fallen, fallen):
        for j in range(c):
            ratios = log_ratio[members[:, j] & (own[:, 0, j] > 0), :, j]  # (m, W)
            if len(ratios) >= 2:
                weight[members[:, j], j] = _significant_weight(ratios)
            else:  # too few tails to weigh: the series without one take the prior
                prior[members[:, j] & ~(own[:, 0, j] > 0), j] = True
    for k in np.flatnonzero(prior.any(axis=1)):
        rows = stream_rows([k], c)
        helps = partner_beats_naive(
            np.asarray(series[k][:, :c], dtype=np.float64), alpha[k], season[k], sp, module.horizon, power,
            None if smoothing is None else smoothing.take(rows),
        )  # fmt: skip
        weight[k] = np.where(prior[k] & helps, PRIOR_WEIGHT, weight[k])
    # the weight chosen, the partner is fitted again on the whole series, tails included
    channels = [np.asarray(v[:, j], dtype=np.float64) for v in series for j in range(c)]
    alpha, season = fit_theta(channels, sp)
    smoothing = fit_ets(channels, sp, module.horizon) if ets else None
    return alpha.reshape(len(series), c), season.reshape(len(series), c, -1), weight, prior, smoothing


def partner_beats_naive(
    values: np.ndarray,
    alpha: np.ndarray,
    season: np.ndarray,
    sp: int,
    horizon: int,
    power: float,
    ets: ETSStreams | None = None,
) -> np.ndarray:
    """Whether the partner forecasts one series' history better than the seasonal naive forecast, per
    channel: bool ``(C,)``.

    Both forecast ``horizon`` steps from every origin of the second half of ``values`` ``(n, C)`` (at
    least two seasons in) whose horizon the history covers, and are scored by the mean of
    ``|error| ** power``; the partner (the Theta method with ``alpha`` ``(C,)`` and ``season``
    ``(C, sp)``, averaged with exponential smoothing's streams ``ets`` where given) wins where its score
    is clearly lower: by ``NAIVE_MARGIN`` at least, the naive fallback's own margin. False where no
    origin is scored."""
    n, c = values.shape
    start = max(2 * sp, n // 2)
    origins = np.arange(start, n - horizon + 1)  # (the number of values seen at each origin)
    if not len(origins):
        return np.zeros(c, dtype=bool)
    partner = _partner_forecasts(values[None], alpha[None], season[None], horizon, ets, skip=start - 1)[0]
    partner = partner[: len(origins)]  # (origins, horizon, C)
    steps = np.arange(horizon)
    future = values[origins[:, None] + steps]  # (origins, horizon, C)
    lag = sp if sp > 1 else 1
    naive = values[origins[:, None] - lag + steps % lag]
    scored = np.isfinite(future) & np.isfinite(naive) & np.isfinite(partner)
    score = [
        np.where(scored, np.abs(f - np.nan_to_num(future)) ** power, 0.0).sum(axis=(0, 1))
        for f in (partner, naive)
    ]
    return scored.any(axis=(0, 1)) & (score[0] < (1.0 - NAIVE_MARGIN) * score[1])


def _significant_weight(log_ratio: np.ndarray) -> float:
    """The weight of the grid whose mean log ratio of tail losses ``(m series, W)`` to the streams' own
    (the last column) is lowest, if that gain is at least ``NAIVE_T`` standard errors across the series;
    1 where there is no gain or one within chance (or fewer than two series)."""
    if len(log_ratio) < 2:
        return 1.0
    mean = log_ratio.mean(axis=0)
    best = len(WEIGHTS) - 1 - int(np.argmin(mean[::-1]))  # a tie: the larger weight
    if mean[best] >= 0.0:
        return 1.0
    spread = log_ratio[:, best].std(ddof=1) / np.sqrt(len(log_ratio))
    t = mean[best] / spread if spread > 0 else -np.inf
    return float(WEIGHTS[best]) if t <= -NAIVE_T else 1.0


def _partner_forecasts(
    values: np.ndarray,
    alpha: np.ndarray,
    season: np.ndarray,
    horizon: int,
    ets: ETSStreams | None,
    skip: int = 0,
) -> np.ndarray:
    """The partner's forecasts ``(B, N - skip, horizon, C)`` after every step of ``values`` ``(B, N, C)``
    from the ``skip``-th on (a NaN value is a gap the streams step over): the Theta
    method's streams with ``alpha`` ``(B, C)`` and ``season`` ``(B, C, sp)``, and exponential
    smoothing's ``ets`` (``B * C`` at their first step) if given. The streams see every step; the
    first ``skip`` steps' forecasts are not computed."""
    b, n, c = values.shape
    streams = PartnerStreams(ThetaStreams.empty(alpha.ravel(), season.reshape(b * c, -1)), ets)
    out = np.full((b, n - skip, horizon, c), np.nan)
    for t in range(n):
        streams.update(values[:, t].ravel())
        if t >= skip:
            out[:, t - skip] = streams.forecast(horizon).reshape(b, c, horizon).transpose(0, 2, 1)
    return out
