"""The factor on each series' forecast spread, chosen on its held-out tail by the interval score.

The distribution head is shared by every series and learns its spread in units of each token window's
standard deviation: a series whose errors are small next to its window's swings (a regular daily
cycle) gets intervals far too wide, one with erratic errors too narrow. After training, each series is
streamed through its validation tail with the point forecast it will use (the network's or the naive
one's); its spread factor is the one that minimises the mean interval score of its central
``SPREAD_COVERAGE`` intervals over every forecast issued there (every horizon step), times
``WIDENING``; then, as a tail of a few dozen values says little about a 95 % interval, it is pooled
with the panel's: the geometric mean of the series' factor (weight: its tail's observed values) and of
all series' on the same scale (weight ``POOLED_VALUES``; a series without a tail takes the panel's).
The engine multiplies the head's scale parameters by it (:attr:`~aaren_ts.engine.ForecastEngine.spread`), in
streams, save and load and ONNX alike, and the online calibration then corrects the levels from there.

Before the factor, the head's spread is capped at the (seasonal) naive method's: ``NAIVE_CAP`` times
the standard deviation of the channel's naive errors on its training part (at least ``CAP_PAIRS`` of
them), growing over the horizon as the naive method's does. A window whose swings are far wider than
the series' changes from one season to the next (on the log scale, a load whose nightly trough is a
tenth of its peak) would otherwise widen the interval with them. A channel that may take the naive
method's own intervals (below) is left uncapped.

A channel on the log scale (``target_transform``) is scored in the series' units, where its
intervals are judged: the exponential stretches the upper offsets and shrinks the lower ones, so the
factor best in log units is not the best after the map (:func:`best_spread_log`; the choice between
the head's intervals and the naive method's likewise), and the log-scale channels' factors are
pooled apart from the others' (a factor on the log of a series' values and one on the values
themselves are not alike).

The interval score of ``[loc + s l, loc + s u]`` (``l < 0 < u`` the head's offsets at ``s = 1``: a
head's quantiles around its location scale with its scale parameters) is convex and piecewise linear
in ``s``, so its minimum is found exactly: it is where the misses, weighted by their side's offset,
reach ``alpha / 2`` of the summed widths (for a Gaussian: the width-weighted share of misses is
``alpha``).

A channel whose point forecast is the naive one may take the naive method's own intervals instead
(:func:`tail_intervals`), where its tail holds at least :data:`NAIVE_INTERVAL_TAIL` observed values.

A channel alone on its scale (a single univariate series, or the one channel of a panel on the log
scale or off it: no other factor to pool its own with) leans on the naive method instead. Its factor
is the geometric mean of its own (share :data:`OWN_FACTOR_SHARE`) and of the one that gives its head's
intervals on its tail the mean width of the naive method's, which come from the whole training part's
errors rather than a few dozen tail values. Where its point forecast is the naive one, the head's
intervals are compared with the naive method's with factors fitted on the other half of the tail
(:func:`cross_fitted_score`): the factor fitted on the whole tail fits the very values it is compared
on. Panels with more than one channel on each scale are not affected.

The measurements behind these rules and constants are in the documentation's design note
``design_notes/forecaster_intervals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from aaren_ts.metrics import mean_interval_score
from aaren_ts.nn.forecast_training import tail_batches
from aaren_ts.utils.normal import gaussian_z

__all__ = [
    "CAP_PAIRS",
    "MAX_SPREAD",
    "MIN_SPREAD",
    "NAIVE_CAP",
    "NAIVE_INTERVAL_TAIL",
    "OWN_FACTOR_SHARE",
    "POOLED_VALUES",
    "SPREAD_COVERAGE",
    "WIDENING",
    "TailIntervals",
    "best_spread",
    "best_spread_log",
    "cross_fitted_score",
    "log_interval_score",
    "naive_error_std",
    "tail_intervals",
]

#: The coverage of the central interval whose score on the tail chooses the spread (M4's 95 %).
SPREAD_COVERAGE = 0.95
#: The factor on the tail-optimal spread (it fits the tail it was chosen on; what follows is wider).
WIDENING = 1.3
#: A lone channel's own tail factor's share (in logarithms) in its spread factor; the rest is the factor
#: that gives its head the naive method's width on its tail (a channel in a panel is pooled instead).
OWN_FACTOR_SHARE = 0.5
#: How many tail values the panel's common factor counts as: a series' factor is the geometric mean of
#: its own (weight ``n``, its tail's observed values) and the panel's (weight ``POOLED_VALUES``).
POOLED_VALUES = 20
#: The observed tail values a channel needs before its intervals may be the naive method's (on shorter
#: tails the choice follows chance).
NAIVE_INTERVAL_TAIL = 40
#: Bounds on a spread factor (a short or flat tail can make the optimum extreme by chance).
MIN_SPREAD, MAX_SPREAD = 0.05, 20.0
#: The cap on the head's spread, in units of the (seasonal) naive method's at the same step (before the
#: spread factor): a window whose own swings are far wider than the series' cycle-to-cycle changes (on
#: the log scale, a load whose nightly trough is a tenth of its peak) no longer widens the interval
#: with them.
NAIVE_CAP = 1.0
#: The training part's naive error pairs a channel needs before its spread is capped.
CAP_PAIRS = 20


def best_spread(lower: np.ndarray, upper: np.ndarray, error: np.ndarray, alpha: float) -> float:
    """The ``s >= 0`` that minimises the mean interval score of level ``1 - alpha`` of ``[s * lower,
    s * upper]`` for ``error`` (all ``(n,)``: the bounds as offsets from the point forecast, ``lower <=
    0 <= upper``, and the observations minus the point forecast). ``1.0`` when ``n == 0``.

    The score's slope in ``s`` is ``sum(upper - lower)`` less ``2 / alpha`` times the offset of every
    observation missed at ``s`` on its side; the minimum is where it turns non-negative.
    """
    if error.size == 0:
        return 1.0
    below, above = (error < 0) & (lower < 0), (error > 0) & (upper > 0)
    ratio = np.concatenate([error[below] / lower[below], error[above] / upper[above]])
    weight = (2.0 / alpha) * np.concatenate([-lower[below], upper[above]])
    order = np.argsort(-ratio, kind="stable")
    missed = np.cumsum(weight[order])  # the slope's negative part just below each ratio, largest first
    k = int(np.searchsorted(missed, float(np.sum(upper - lower))))
    return float(ratio[order][k]) if k < len(ratio) else 0.0


def log_interval_score(
    loc: np.ndarray, lower: np.ndarray, upper: np.ndarray, error: np.ndarray, scale: float, alpha: float
) -> float:
    """The mean interval score of level ``1 - alpha`` of ``[loc + lower, loc + upper]`` for ``loc +
    error`` on a log-scale channel, in the series' units divided by its level: the values are in
    standardised log units, ``scale`` the standardisation's (the level ``exp(mean)`` only scales the
    score; the largest ``loc`` is taken as 0 to keep the exponentials finite)."""
    base = scale * (loc - np.max(loc))
    return mean_interval_score(
        np.exp(base + scale * error), np.exp(base + scale * lower), np.exp(base + scale * upper), alpha
    )


def best_spread_log(
    loc: np.ndarray, lower: np.ndarray, upper: np.ndarray, error: np.ndarray, scale: float, alpha: float
) -> float:
    """:func:`best_spread` for a log-scale channel, scored in the series' units
    (:func:`log_interval_score`): the ``s`` in ``[MIN_SPREAD, MAX_SPREAD] / WIDENING`` that minimises
    the score of ``[loc + s * lower, loc + s * upper]``. ``1.0`` when ``n == 0``.

    The score is convex in ``s`` (each bound is the exponential of a linear function of it, each miss
    the positive part of one), so a golden-section search on ``log s`` finds its minimum.
    """
    if error.size == 0:
        return 1.0

    def score(log_s: float) -> float:
        s = np.exp(log_s)
        return log_interval_score(loc, s * lower, s * upper, error, scale, alpha)

    a, b = np.log(MIN_SPREAD / WIDENING), np.log(MAX_SPREAD / WIDENING)
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
    f1, f2 = score(x1), score(x2)
    while b - a > 1e-4:
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - ratio * (b - a)
            f1 = score(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + ratio * (b - a)
            f2 = score(x2)
    return float(np.exp(0.5 * (a + b)))


def _tail_factor(
    lower: np.ndarray, upper: np.ndarray, error: np.ndarray, base: np.ndarray, unit: float, alpha: float
) -> float:
    """A channel's own factor on tail forecasts (before pooling): the interval-score optimum
    (:func:`best_spread`, or :func:`best_spread_log` where ``unit > 0``) times :data:`WIDENING`."""
    if unit > 0:
        s = best_spread_log(base, lower, upper, error, unit, alpha)
    else:
        s = best_spread(lower, upper, error, alpha)
    return float(np.clip(WIDENING * s, MIN_SPREAD, MAX_SPREAD))


def _interval_score(
    lower: np.ndarray, upper: np.ndarray, error: np.ndarray, base: np.ndarray, unit: float, alpha: float
) -> float:
    """The mean interval score of ``[base + lower, base + upper]`` for ``base + error``: in the series'
    units where ``unit > 0`` (:func:`log_interval_score`), else as they are."""
    if unit > 0:
        return log_interval_score(base, lower, upper, error, unit, alpha)
    return mean_interval_score(error, lower, upper, alpha)


def _lean_on_naive(factor: np.ndarray | float, naive_factor: np.ndarray | float) -> np.ndarray:
    """A lone channel's factor: the geometric mean of its own ``factor`` (share
    :data:`OWN_FACTOR_SHARE`) and ``exp(naive_factor)``, the one that gives the head's intervals on
    its tail the naive method's mean width."""
    log = OWN_FACTOR_SHARE * np.log(factor) + (1.0 - OWN_FACTOR_SHARE) * np.asarray(naive_factor)
    return np.clip(np.exp(log), MIN_SPREAD, MAX_SPREAD)


def cross_fitted_score(
    lower: np.ndarray,
    upper: np.ndarray,
    error: np.ndarray,
    base: np.ndarray,
    origin: np.ndarray,
    unit: float,
    alpha: float,
    naive_factor: float | None = None,
) -> float:
    """The head's interval score on a tail with factors it was not chosen on: the forecasts issued
    from the first half of the tail's origins are scored with the factor of the second half's
    (:func:`_tail_factor`, leaning on ``exp(naive_factor)`` as a lone channel's does where given),
    and the other way round; the mean over all of them. Where one half is empty: the score with the
    whole tail's factor.

    All arrays ``(n,)``, as :func:`tail_intervals` scores a channel (the bounds as offsets at factor
    1, ``origin`` the index of the origin each forecast was issued from). A factor scored on the tail
    it was fitted on fits it better than what follows, so the comparison would favour the head."""

    def factor(part: np.ndarray | slice) -> float:
        s = _tail_factor(lower[part], upper[part], error[part], base[part], unit, alpha)
        return s if naive_factor is None else float(_lean_on_naive(s, naive_factor))

    first = origin < (int(origin.max()) + 1) // 2 if origin.size else origin.astype(bool)
    if first.all() or not first.any():
        s = factor(slice(None))
        return _interval_score(s * lower, s * upper, error, base, unit, alpha)
    total = 0.0
    for fit, score in ((first, ~first), (~first, first)):
        s = factor(fit)
        total += score.sum() * _interval_score(
            s * lower[score], s * upper[score], error[score], base[score], unit, alpha
        )
    return float(total / origin.size)


class TailIntervals(NamedTuple):
    """What :func:`tail_intervals` returns, each ``(n_series, C)``.

    Attributes
    ----------
    spread : ndarray
        The factor on each channel's spread (1 where no series has a tail).
    naive_std : ndarray
        Where positive, the standard deviation (standardised) of a channel's one-step naive errors on its
        training part: the channel takes the naive method's own distribution (its point forecast is the
        naive one, and those intervals scored better on its tail than the head's with its factor); 0
        keeps the head's.
    max_std : ndarray
        Where positive, the cap on the head's one-step standard deviation (standardised):
        :data:`NAIVE_CAP` times that of the channel's naive errors on its training part (at least
        :data:`CAP_PAIRS` of them); 0: no cap.
    """

    spread: np.ndarray
    naive_std: np.ndarray
    max_std: np.ndarray


def naive_error_std(values: np.ndarray, sp: int, min_pairs: int = 1) -> np.ndarray:
    """The root mean square of the (seasonal) naive method's one-step errors ``values[t] - values[t -
    sp]`` over ``values`` ``(n, C)``, per channel (NaN where fewer than ``min_pairs`` pairs are
    observed): the standard deviation the naive method's intervals grow from."""
    with np.errstate(invalid="ignore"):
        errors = values[sp:] - values[:-sp] if len(values) > sp else values[:0]
        squared = np.where(np.isfinite(errors), errors * errors, 0.0)
        count = np.isfinite(errors).sum(0)
        return np.where(count >= max(min_pairs, 1), np.sqrt(squared.sum(0) / np.maximum(count, 1)), np.nan)


def tail_intervals(
    module: torch.nn.Module,
    series: Sequence[np.ndarray],
    n_train: Sequence[int],
    naive: np.ndarray,
    device: torch.device | str,
    naive_point: np.ndarray | None = None,
    batch_size: int = 64,
    log_scale: np.ndarray | None = None,
) -> TailIntervals:
    """Each series' spread factor, chosen on its held-out tail (module docstring), and, for those whose
    point forecast is the naive one, the choice between the head's intervals and the naive method's own.

    ``series``, ``n_train`` and the streaming are those of
    :func:`~aaren_ts.nn.forecast_training.held_out_errors` (whole standardised series, covariates after
    the channels; the forecasts issued from the end of the training part on, scored on the tail values
    they reach); ``naive`` ``(n_series, C)`` is the naive forecast's share in each channel's point
    forecast (bool: 0 or 1, ``naive`` of :class:`~aaren_ts.engine.ForecastEngine`), ``naive_point``
    (default ``naive``) marks, above 0, every channel whose
    point forecast is (in part) the naive one (all of them when the network itself
    was reset to it). A channel without a tail takes the geometric mean of the factors of the channels on
    its scale (``log_scale``, below; of all channels when none on its scale has a tail, 1 when none has).
    A channel alone on its scale leans on the naive method's width instead (:data:`OWN_FACTOR_SHARE`),
    and its comparison below uses factors fitted on the other half of its tail (:func:`cross_fitted_score`).

    A channel of ``naive_point`` with at least :data:`NAIVE_INTERVAL_TAIL` observed tail values takes the
    naive method's distribution (Gaussian, standard deviation
    :func:`naive_error_std` of its training part, growing as
    :meth:`~aaren_ts.nn.forecast.ForecastNet.naive_distribution` says) where its interval score on the
    tail is below that of the head's intervals with the channel's final factor (chosen, in part, on the
    same tail: the comparison leans towards the head). A head without a Gaussian member
    (:meth:`~aaren_ts.nn.heads.DistributionHead.from_normal`) keeps its own intervals everywhere.

    ``log_scale`` ``(n_series, C)``, where positive, marks a channel the network sees on the log scale
    and holds its standardisation's scale: its factor and the choice of intervals are scored in the
    series' units (:func:`best_spread_log`), where its intervals are judged (an affine standardisation
    leaves the other channels' choices as they are in model units).
    """
    c = module.n_channels
    head = module.distribution_head
    alpha = 1.0 - SPREAD_COVERAGE
    log_scale = np.zeros((len(series), c)) if log_scale is None else np.asarray(log_scale)
    z = torch.tensor(float(gaussian_z(np.array([SPREAD_COVERAGE]))[0]), dtype=torch.float64)
    n = len(series)
    spread = np.ones((n, c))
    observed = np.zeros((n, c))  # each channel's observed tail values, where it has a factor
    candidates = (np.asarray(naive if naive_point is None else naive_point) > 0) & head.has_normal
    naive_std, max_std = np.zeros((n, c)), np.zeros((n, c))
    reference_std = np.zeros((n, c))  # every channel's naive one-step standard deviation (0: none)
    for k in range(n):
        train = np.asarray(series[k][: n_train[k], :c], dtype=np.float64)
        std = naive_error_std(train, module.sp)
        reference_std[k] = np.where(np.isfinite(std) & (std > 0), std, 0.0)
        if not head.has_normal:
            continue
        naive_std[k] = np.where(candidates[k], reference_std[k], 0.0)
        # a channel that may take the naive method's own intervals chooses between them and the head's
        # as they are (capped, the head's won that choice on random walks' tails and lost after them)
        tail = np.isfinite(np.asarray(series[k][n_train[k] :, :c], dtype=np.float64)).sum(0)
        free = (naive_std[k] > 0) & (tail >= NAIVE_INTERVAL_TAIL)
        std = naive_error_std(train, module.sp, min_pairs=CAP_PAIRS)
        max_std[k] = np.where(~free & np.isfinite(std) & (std > 0), NAIVE_CAP * std, 0.0)
    scored_tails: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}  # the candidates' bounds and errors
    # the naive interval's half width per unit of one-step standard deviation, by step
    half_width = float(z) * module.naive_growth(torch.float64).numpy()
    naive_factor = np.full((n, c), np.nan)  # log of the factor giving the head the naive method's width
    was_training = module.training
    module.eval()
    with torch.no_grad():
        for batch in tail_batches(module, series, n_train, device, batch_size):
            chunk = batch.chunk
            flags = torch.as_tensor(naive[chunk], device=device)
            cap = torch.as_tensor(max_std[chunk], dtype=torch.float32, device=device)
            pred = batch.forecast(module, naive=flags, max_std=cap)
            origins = batch.origins(n_train).tolist()
            for i, k in enumerate(chunk):
                # the forecasts that reach the tail (the last step's reach nothing)
                issued = slice(origins[i], len(series[k]) - 1 - batch.start)
                loc, params = pred.loc[i, issued].double(), pred.params[i, issued].double()
                lower = (head.quantile(loc, params, -z) - loc).cpu().numpy()  # (steps, T, C)
                upper = (head.quantile(loc, params, z) - loc).cpu().numpy()
                error = (batch.after[i, issued, :, :c].double() - loc).cpu().numpy()
                centre = loc.cpu().numpy()
                for j in range(c):
                    valid = np.isfinite(error[..., j])
                    if valid.any():
                        bounds = lower[..., j][valid], upper[..., j][valid]
                        base = centre[..., j][valid]
                        unit = float(log_scale[k, j])
                        spread[k, j] = _tail_factor(*bounds, error[..., j][valid], base, unit, alpha)
                        observed[k, j] = np.isfinite(series[k][n_train[k] :, j]).sum()
                        steps = np.broadcast_to(np.arange(module.horizon), valid.shape)[valid]
                        head_width = float(np.mean(bounds[1] - bounds[0]))
                        if reference_std[k, j] > 0 and head_width > 0:
                            naive_width = 2.0 * reference_std[k, j] * float(np.mean(half_width[steps]))
                            naive_factor[k, j] = np.log(naive_width / head_width)
                        if naive_std[k, j] > 0 and observed[k, j] >= NAIVE_INTERVAL_TAIL:
                            origin = np.broadcast_to(np.arange(valid.shape[0])[:, None], valid.shape)[valid]
                            scored_tails[k, j] = (*bounds, error[..., j][valid], steps, base, origin)
    module.train(was_training)
    scored = observed > 0
    if scored.any():
        log = np.log(spread)
        pooled = np.full((n, c), log[scored].mean())
        on_log = log_scale > 0
        for group in (on_log, ~on_log):  # (the two scales' factors pooled apart)
            if (scored & group).any():
                pooled[group] = log[scored & group].mean()
        weight = observed / (observed + POOLED_VALUES)
        spread = np.clip(np.exp(weight * log + (1.0 - weight) * pooled), MIN_SPREAD, MAX_SPREAD)
    else:
        spread = np.ones((n, c))
    # a channel alone on its scale has no panel to pool its factor with: it leans on the naive
    # method's width instead
    alone = np.zeros((n, c), dtype=bool)
    for group in (log_scale > 0, log_scale <= 0):
        if (scored & group).sum() == 1:
            alone |= scored & group
    alone &= np.isfinite(naive_factor)
    spread[alone] = _lean_on_naive(spread[alone], naive_factor[alone])
    chosen = np.zeros((n, c), dtype=bool)  # (a channel without a tail keeps the head's)
    for (k, j), (lower, upper, error, steps, base, origin) in scored_tails.items():
        half = naive_std[k, j] * half_width[steps]
        s, unit = spread[k, j], float(log_scale[k, j])
        if alone[k, j]:
            head_score = cross_fitted_score(
                lower, upper, error, base, origin, unit, alpha, naive_factor=naive_factor[k, j]
            )
        else:
            head_score = _interval_score(s * lower, s * upper, error, base, unit, alpha)
        chosen[k, j] = _interval_score(-half, half, error, base, unit, alpha) < head_score
    return TailIntervals(spread, np.where(chosen, naive_std, 0.0), max_std)
