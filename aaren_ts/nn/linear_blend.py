"""A linear model of each window, fitted in closed form and blended into the networks' point forecasts.

A linear map of each instance-normalised window to the horizon (RLinear, Li et al., 2023: the window's
mean subtracted and its standard deviation divided out, one matrix shared by the channels) is a strong
forecaster on the long-horizon benchmarks, whose errors differ from the networks'. Such a
map is what a :class:`~aaren_ts.nn.forecast.ForecastNet` already computes beside its encoder: its
``skip`` acts on the same normalised window ``z``, and the forecast is ``(head(h) + skip(z)) * scale +
level``. So the blend ``(1 - s) * network + s * linear`` is again a network of the same architecture:
the encoder's head and the future-known covariates' coefficients multiplied by ``1 - s``, the skip
replaced by ``(1 - s) * skip + s * linear`` (:func:`blend_linear`). It streams, exports and saves as the
networks do, exactly, at no extra cost per observation.

:func:`fit_linear_map` fits the map by least squares on every full window of the training parts, in
the units the networks are trained in (each series standardised): a window's squared error is its
error in ``z``'s units times its squared scale, so the normal equations weigh each window by that
square. It scores as RLinear trained by gradient descent does, in a fraction of the time (the
documentation's design note :doc:`/design_notes/forecaster_linear_share` has the comparison).
Where the networks take future-known covariates (a calendar, say), the map is fitted with their
effects, per channel and horizon step as the networks' ``future_weight`` holds them, one least-squares
problem per step (a window's values alone do not tell the hour of the day its horizon falls on).
:func:`linear_share_errors` scores every share of the linear map on the held-out tails.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from aaren_ts.nn.ensemble import member_networks
from aaren_ts.nn.forecast_training import LOSS_POWER, tail_batches
from aaren_ts.nn.heads import DIRECT_GAIN

__all__ = [
    "LINEAR_RIDGE",
    "LINEAR_SHARES",
    "LinearMap",
    "blend_linear",
    "fit_linear_map",
    "linear_share_errors",
]

#: The ridge penalty on the map's weights, relative to the mean diagonal of the normal equations. Under
#: ``local_norm="standard"`` every window's ``z`` sums to zero, and under ``"last"`` its last value is
#: zero, so the equations are singular without it; it is small enough to leave the fit as it is.
LINEAR_RIDGE = 1e-3
#: The linear map's shares tried on the tails (0: the networks alone).
LINEAR_SHARES = np.linspace(0.0, 1.0, 11)
#: Windows per block of the normal equations' sums (bounds their memory at long horizons).
_BLOCK = 1024


class LinearMap(NamedTuple):
    """The linear map from a window's normalised values to the horizon, as the networks' ``skip``
    holds it: ``weight`` ``(T, P)`` and ``bias`` ``(T,)``; ``future`` ``(C, T, n_future)``, the
    future-known covariates' effects (as :meth:`~aaren_ts.nn.forecast.ForecastNet.future_coefficients`
    gives the networks'), or ``None`` (the map leaves them out)."""

    weight: torch.Tensor
    bias: torch.Tensor
    future: torch.Tensor | None = None


def fit_linear_map(
    module: nn.Module, series: Sequence[np.ndarray], n_train: Sequence[int], ridge: float = LINEAR_RIDGE
) -> LinearMap | None:
    """The least-squares linear map of every full window of the series' first ``n_train`` values.

    Parameters
    ----------
    module : ForecastNet or ForecastEnsemble
        The networks the map is for (their context length, horizon, channels, ``local_norm`` and
        future-known covariates).
    series : sequence of ndarray of shape (n_i, C + n_exog)
        Standardised series, the covariates after the channels.
    n_train : sequence of int
        How many of each series' first values the windows (inputs and targets) come from.
    ridge : float, default=LINEAR_RIDGE
        The ridge penalty on the weights, relative to the mean diagonal of the normal equations.

    Returns
    -------
    LinearMap or None
        The map, in float32; ``None`` where no window of ``P + T`` observed values exists.

    Notes
    -----
    Every channel's windows enter the same map (the networks' skip is shared by the channels); a
    window with a missing value in its inputs or targets is left out. Where the networks take
    future-known covariates, their effects (per channel and horizon step, added after the local
    level as the networks add theirs) are fitted jointly with the map, one least-squares problem
    per horizon step; a missing covariate counts as zero, as in the networks' forecasts.
    """
    net = member_networks(module)[0]
    p, t, c, n_future = net.context_length, net.horizon, net.n_channels, net.n_future
    sums = _NormalSums(p, t, c, n_future)
    for values, n in zip(series, n_train, strict=True):
        values = np.asarray(values)
        if n < p + t:
            continue
        part = torch.as_tensor(values[:n, :c], dtype=torch.float64).T  # (C, n)
        windows = part.unfold(1, p + t, 1)  # (C, n - P - T + 1, P + T)
        future = None
        if n_future:  # each window's covariates at its targets' steps: (n - P - T + 1, T, n_future)
            known = torch.as_tensor(values[p:n, c : c + n_future], dtype=torch.float64).nan_to_num(0.0)
            future = known.unfold(0, t, 1).transpose(1, 2)
        for first in range(0, windows.shape[1], _BLOCK):
            block = slice(first, first + _BLOCK)
            sums.add(net, windows[:, block], None if future is None else future[block])
    return sums.solve(ridge)


class _NormalSums:
    """The normal equations' sums of :func:`fit_linear_map`, window block by window block.

    Each window of a channel gives, for every horizon step ``h``, the equation ``y_h - level =
    scale * (w_h . z + b_h) + v_ch . f_h`` (``f_h``: the future-known covariates at that step): the
    error in ``z``'s units times the scale, as the networks' windows are weighed. Without covariates
    every step shares one Gram matrix.
    """

    def __init__(self, p: int, t: int, c: int, n_future: int) -> None:
        self.p, self.t, self.c, self.n_future = p, t, c, n_future
        f64 = torch.float64
        self.gram = torch.zeros(p + 1, p + 1, dtype=f64)  # sum of u u', u = scale * (z, 1)
        self.cross = torch.zeros(p + 1, t, dtype=f64)  # sum of u (y - level)
        if n_future:
            self.gram_uf = torch.zeros(t, p + 1, c, n_future, dtype=f64)  # per step: sum of u f'
            self.gram_ff = torch.zeros(t, c, n_future, n_future, dtype=f64)  # per step and channel
            self.cross_f = torch.zeros(t, c, n_future, dtype=f64)  # per step, channel: sum of f (y - level)

    def add(self, net: nn.Module, windows: torch.Tensor, future: torch.Tensor | None) -> None:
        """Add the windows ``(C, W, P + T)`` (and their covariates ``(W, T, n_future)``)."""
        p, c = self.p, self.c
        rows = windows.reshape(-1, windows.shape[-1])
        valid = torch.isfinite(rows).all(dim=1)  # (C * W,)
        rows = torch.where(valid[:, None], rows, 0.0)
        z, level, scale, _ = net.normalize(rows[:, :p])
        target = rows[:, p:] if level is None else rows[:, p:] - level
        u = torch.cat([z, torch.ones(len(rows), 1, dtype=torch.float64)], dim=1)
        if scale is not None:
            u = u * scale
        u, target = u * valid[:, None], target * valid[:, None]
        self.gram += u.T @ u
        self.cross += u.T @ target
        if future is None:
            return
        u, target, valid = u.unflatten(0, (c, -1)), target.unflatten(0, (c, -1)), valid.unflatten(0, (c, -1))
        self.gram_uf += torch.einsum("cwq,wtf->tqcf", u, future)
        self.gram_ff += torch.einsum("cw,wtf,wtg->tcfg", valid.double(), future, future)
        self.cross_f += torch.einsum("cwt,wtf->tcf", target, future)

    def solve(self, ridge: float) -> LinearMap | None:
        """The ridge solution (``None`` without a window)."""
        p, t, c, n_future = self.p, self.t, self.c, self.n_future
        if self.gram[p, p] == 0:
            return None
        gram = self.gram.clone()
        penalty = ridge * float(torch.diagonal(gram)[:p].mean())
        gram[:p, :p] += torch.eye(p, dtype=torch.float64) * max(penalty, 1e-12)
        if not n_future:
            solution = torch.linalg.lstsq(gram, self.cross).solution  # (P + 1, T)
            return LinearMap(solution[:p].T.float(), solution[p].float())
        # one system per horizon step: (map, bias, every channel's covariate effects)
        k = c * n_future
        system = torch.zeros(t, p + 1 + k, p + 1 + k, dtype=torch.float64)
        system[:, : p + 1, : p + 1] = gram
        system[:, : p + 1, p + 1 :] = self.gram_uf.flatten(2)
        system[:, p + 1 :, : p + 1] = self.gram_uf.flatten(2).transpose(1, 2)
        system[:, p + 1 :, p + 1 :] = _block_diagonal(self.gram_ff)
        rhs = torch.cat([self.cross.T, self.cross_f.flatten(1)], dim=1)[..., None]  # (T, P + 1 + k, 1)
        solution = torch.linalg.lstsq(system, rhs).solution[..., 0]  # (T, P + 1 + k)
        future = solution[:, p + 1 :].unflatten(1, (c, n_future)).transpose(0, 1)  # (C, T, n_future)
        return LinearMap(solution[:, :p].float(), solution[:, p].float(), future.float())


def _block_diagonal(blocks: torch.Tensor) -> torch.Tensor:
    """``(T, C, F, F)`` blocks to ``(T, C * F, C * F)`` block-diagonal matrices."""
    t, c, f, _ = blocks.shape
    out = torch.zeros(t, c, f, c, f, dtype=blocks.dtype)
    index = torch.arange(c)
    out[:, index, :, index, :] = blocks.transpose(0, 1)
    return out.reshape(t, c * f, c * f)


def blend_linear(module: nn.Module, linear: LinearMap, share: float) -> None:
    """Make every network of ``module`` forecast ``(1 - share) * its own + share * linear``, in place.

    The encoder's head and the future-known covariates' coefficients are multiplied by ``1 - share``
    (plus ``share`` times the map's own, where it has them) and the skip becomes ``(1 - share) * skip
    + share * linear`` (the forecast is affine in all three, and the local level and scale act on the
    head's and the skip's sum). The distribution head is left as it is.
    """
    keep = 1.0 - float(share)
    with torch.no_grad():
        for net in member_networks(module):
            net.head.weight.mul_(keep)
            net.head.bias.mul_(keep)
            net.skip.weight.mul_(keep).add_(float(share) * linear.weight.to(net.skip.weight))
            net.skip.bias.mul_(keep).add_(float(share) * linear.bias.to(net.skip.bias))
            if net.future_weight is not None:
                net.future_weight.mul_(keep)
                if linear.future is not None:  # (the weight is the coefficients over DIRECT_GAIN)
                    net.future_weight.add_(float(share) * linear.future.to(net.future_weight) / DIRECT_GAIN)


def linear_share_errors(
    module: nn.Module,
    linear: LinearMap,
    series: Sequence[np.ndarray],
    n_train: Sequence[int],
    device: torch.device | str,
    loss: str = "mse",
    shares: np.ndarray = LINEAR_SHARES,
    batch_size: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """Each series' (channel's) held-out tail error of the blend at every share of the linear map.

    The tails are streamed as :func:`~aaren_ts.nn.forecast_training.held_out_errors` streams them;
    the blend's forecast is the lerp of the networks' and the linear map's (what :func:`blend_linear`
    makes of the networks), scored in ``loss``.

    Returns
    -------
    errors : ndarray of shape (len(shares), n_series, C)
        The sums of the errors over every scored value.
    count : ndarray of int of shape (n_series, C)
        How many values each sum holds.
    """
    power = LOSS_POWER[loss]
    c = member_networks(module)[0].n_channels
    errors = np.zeros((len(shares), len(series), c))
    count = np.zeros((len(series), c), dtype=np.int64)
    linear_module = copy.deepcopy(module)  # (the same encoders: the networks' states serve it too)
    blend_linear(linear_module, linear, 1.0)
    was_training = module.training
    module.eval()
    linear_module.eval()
    with torch.no_grad():
        for batch in tail_batches(module, series, n_train, device, batch_size):
            scored = batch.scored(n_train)[:, :, None, None]
            target = torch.where(scored, batch.after[..., :c], float("nan"))
            valid = torch.isfinite(target)
            own, lin = batch.forecast(module).loc, batch.forecast(linear_module).loc
            for i, share in enumerate(shares):
                diff = torch.where(valid, torch.lerp(own, lin, float(share)) - target.nan_to_num(), 0.0)
                errors[i, batch.chunk] = diff.abs().pow(power).double().sum((1, 2)).cpu().numpy()
            count[batch.chunk] = valid.sum((1, 2)).cpu().numpy()
    module.train(was_training)
    return errors, count
