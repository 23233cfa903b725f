"""The classifier's random kernels (:class:`~aaren_ts.nn.rocket.RandomKernelFeatures`): their
configuration from the training series, their biases, and the ridge classifiers on their running means
whose class distribution is mixed with the network's.

One ridge classifier (scikit-learn's ``RidgeClassifierCV``, computed by :mod:`._ridge`, its penalty
chosen by leave-one-out cross-validation over MiniRocket's ten values from 1e-3 to 1e3 [1]_) per
prefix length: one step, then 5 %, 10 %, ..., 95 % of the median training length, fitted on the running
means after that many steps of each training series (or all of a shorter one), and the whole series
for the last. A stream uses the map of the longest prefix length it has reached, so an early answer
comes from a classifier trained on prefixes that long, as per-prefix classifiers do (TEASER [2]_,
MiniRocket trained per prefix), while its state stays one running sum per class and prefix length. A
map before the whole series reads either all the features or only those of the kernels that fit in its
prefix, whichever classifies the training series' prefixes better out of fold (:func:`_prefix_map`).

The maps are fitted once, before the network trains, each with the factor that turns its scores into
logits: the one that minimises the cross-entropy of its out-of-fold scores (5-fold, stratified). The
network trains on its own; the classifier's answer is a weighted mean of the two class distributions,
the network's scores tempered, with the factor and weight of each prefix length chosen on half of the
training series, held out from a network and ridge classifiers fitted on the other half
(:func:`fit_network_share`), the network's weight after the whole series at least
``WHOLE_SERIES_MIN_WEIGHT`` (:func:`fit_mixture`).

The evidence behind these choices is in the design notes :doc:`/design_notes/classifier_prefix_maps`,
:doc:`/design_notes/classifier_mixture` and :doc:`/design_notes/classifier_kernels`.

References
----------
.. [1] A. Dempster, D. F. Schmidt and G. I. Webb, "MiniRocket: A very fast (almost) deterministic
   transform for time series classification", Proceedings of the 27th ACM SIGKDD Conference on
   Knowledge Discovery and Data Mining, pp. 248-257, 2021.
.. [2] P. Schäfer and U. Leser, "TEASER: early and accurate time series classification", Data Mining
   and Knowledge Discovery, 34(5), pp. 1336-1362, 2020.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from aaren_ts.estimators.classification._ridge import GramRidge, RidgeFit
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.rocket import KERNEL_LENGTH, N_KERNELS, default_dilations

__all__ = [
    "WHOLE_SERIES_MIN_WEIGHT",
    "KernelHalf",
    "fit_head_gains",
    "fit_kernel_head",
    "fit_mixture",
    "fit_network_share",
    "held_out_staged_proba",
    "kernel_config",
    "mixture_split",
    "prefix_steps",
    "raise_to_floor",
]

_PREFIXES = np.arange(1, 21) / 20.0  # the prefix lengths, as fractions of the median training length
_MAX_SLOTS = 32  # the kernels' dilation slots (default_dilations), as MiniRocket's
_FEATURE_BYTES = 2**28  # indicators per batch when computing the training features (256 MiB)
_GAINS = np.geomspace(0.1, 1000.0, 81)  # the factors tried on the out-of-fold scores
_HEAD_GAINS = np.geomspace(0.01, 1.0, 41)  # the factors tried on the network's scores after a prefix
_HEAD_BATCH = 256  # training series per forward pass when scoring the network's prefixes
_WEIGHTS = np.linspace(0.0, 1.0, 11)  # the network's weights in the mixture tried (fit_mixture)
_ALIGNMENT = "centred"  # which responses the kernels count at each step (RandomKernelFeatures)
#: The network's least weight in the mixture after the whole series (fit_mixture).
WHOLE_SERIES_MIN_WEIGHT = 0.5


class KernelHalf(NamedTuple):
    """The kernels' ridge classifiers fitted on half of the training series (:func:`fit_kernel_head`):
    ``weight`` ``(n_prefixes, n_classes, n_features)``, ``bias`` ``(n_prefixes, n_classes)`` and
    ``gain`` ``(n_prefixes,)`` as :meth:`~aaren_ts.nn.classify.ClassifierModule.set_kernel_head`
    takes them, and their class distributions ``probabilities`` ``(n_prefixes, n_rows, n_classes)``
    on the other half's series after each prefix length."""

    weight: Any
    bias: Any
    gain: Any
    probabilities: Any


def kernel_config(lengths: np.ndarray, n_features: int, seed: int | None) -> dict[str, Any] | None:
    """The ``random_kernels`` of :class:`~aaren_ts.nn.classify.ClassifierModule` for training series of
    ``lengths`` and about ``n_features`` features (``0``: none): dilations up to the longest training
    series in MiniRocket's 32 slots (as MiniRocket's on series padded to one length; fewer slots when
    fewer than 32 thresholds per kernel are asked), MiniRocket's pooling of the responses centred on
    the steps seen (``alignment="centred"``, :mod:`aaren_ts.nn.rocket`), and the prefix lengths of the
    ridge classifiers, fractions of the median length.

    See :doc:`/design_notes/classifier_kernels` and :doc:`/design_notes/classifier_prefix_maps` for
    the evidence behind the dilations, the feature count and the prefix grid."""
    if not n_features:
        return None
    median = float(np.median(lengths))
    # MiniRocket's slots: 32, or one per threshold where fewer than 32 thresholds per kernel are asked
    slots = min(_MAX_SLOTS, max(1, int(n_features) // N_KERNELS))
    dilations = default_dilations(float(np.max(lengths)), slots)
    n_biases = max(1, int(n_features) // (N_KERNELS * len(dilations)))
    prefixes = tuple(sorted({1, *(max(1, int(np.ceil(f * median))) for f in _PREFIXES)}))
    return {
        "dilations": dilations,
        "n_biases": n_biases,
        "seed": int(seed or 0),
        "alignment": _ALIGNMENT,
        "prefix_lengths": prefixes,
    }


@torch.no_grad()
def _running_means(module: ClassifierModule, values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The kernels' proportions of positive values after ``steps[p, i]`` steps of series ``i``
    (``steps`` ``(P, n_series)``, each from 1 to the series' length): ``(P, n_series, n_features)``."""
    kernels = module.kernels
    n, t_max, c = values.shape
    pad = kernels.receptive_field - 1
    out = np.empty((len(steps), n, kernels.n_features), dtype=np.float32)
    batch = max(1, _FEATURE_BYTES // (4 * max(t_max, 1) * kernels.n_features))
    for start in range(0, n, batch):
        x = torch.as_tensor(values[start : start + batch])
        window = torch.cat([x.new_zeros(len(x), pad, c), x], dim=1)
        at = torch.as_tensor(steps[:, start : start + batch]).T  # (b, P)
        means = kernels.prefix_counts(window, at) / at[..., None]  # (b, P, F)
        out[:, start : start + batch] = means.transpose(0, 1).numpy()
    return out


def _cross_entropies(scores: np.ndarray, codes: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The mean cross-entropy of class scores ``(n, n_classes)`` times each of ``gains``."""
    logits = gains[:, None, None] * scores[None]
    log_norm = np.logaddexp.reduce(logits, axis=2)
    return (log_norm - logits[:, np.arange(len(codes)), codes]).mean(axis=1)


def _cross_entropy(scores: np.ndarray, codes: np.ndarray, gain: float) -> float:
    """The mean cross-entropy of class scores ``(n, n_classes)`` times ``gain``."""
    return float(_cross_entropies(scores, codes, np.array([gain]))[0])


def _gain(scores: np.ndarray, codes: np.ndarray, gains: np.ndarray = _GAINS) -> float:
    """The factor among ``gains`` on class scores ``(n, n_classes)`` that minimises their
    cross-entropy."""
    return float(gains[int(np.argmin(_cross_entropies(scores, codes, gains)))])


def _held_out_scores(
    ridge: GramRidge, codes: np.ndarray, alpha: float, seed: int | None
) -> np.ndarray | None:
    """Each series' class scores ``(n, n_classes)`` from a ridge classifier (penalty ``alpha``) fitted
    without it on the rows of ``ridge``: 5-fold stratified; ``None`` where a class has fewer than two
    series."""
    from sklearn.model_selection import StratifiedKFold

    n_splits = min(5, int(np.bincount(codes).min()))
    if n_splits < 2:
        return None
    scores = np.zeros((len(codes), int(codes.max()) + 1))
    folds = StratifiedKFold(n_splits, shuffle=True, random_state=int(seed or 0))
    for train, held_out in folds.split(codes, codes):
        scores[held_out] = ridge.scores(ridge.fit(train, codes[train], alpha), held_out)
    return scores


def fit_kernel_head(
    module: ClassifierModule,
    values: np.ndarray,
    lengths: np.ndarray,
    codes: np.ndarray,
    seed: int | None,
    split: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray | None:
    """Set ``module``'s kernel biases from the standardised training series ``values`` ``(n, T, C)``
    (``lengths`` real steps each), its kernel maps to ridge classifiers of the class ``codes`` (one per
    prefix length) and their factor.

    Returns the ridge classifiers fitted on the series ``train`` of ``split = (train, rows)``
    (:func:`mixture_split`) and their class distributions on the series ``rows`` after each prefix
    length (:class:`KernelHalf`); ``None`` where ``split`` is (a class has fewer than two series)."""
    kernels = module.kernels
    generator = torch.Generator().manual_seed(int(seed or 0))
    kernels.fit_biases(torch.as_tensor(values), torch.as_tensor(lengths), generator)
    features = _running_means(module, values, prefix_steps(module, lengths))
    prefixes = module.kernel_prefixes.cpu().numpy()
    weights, biases, gains = [], [], []
    half = KernelHalf([], [], [], [])
    for p, part in enumerate(features):
        whole = p == len(features) - 1  # (the last map reads whole series)
        columns, ridge, fit, held_out = _prefix_map(part, codes, _fitting(kernels, prefixes[p], whole), seed)
        coef, intercept = ridge.coefficients(fit)
        weights.append(np.zeros((len(coef), kernels.n_features)))
        weights[-1][:, columns] = coef
        biases.append(intercept)
        gains.append(1.0 if held_out is None else _gain(held_out, codes))
        if split is not None:
            train, rows = split
            half_fit = ridge.fit(train, codes[train], fit.alpha)
            coef, intercept = ridge.coefficients(half_fit)
            scores = ridge.scores(half_fit, rows)
            half.weight.append(np.zeros_like(weights[-1]))
            half.weight[-1][:, columns] = coef
            half.bias.append(intercept)
            half.gain.append(_gain(scores, codes[rows]))
            half.probabilities.append(_softmax(half.gain[-1] * scores))
    weight, bias = np.stack(weights), np.stack(biases)  # (P, n_classes, F), (P, n_classes)
    module.set_kernel_head(torch.as_tensor(weight), torch.as_tensor(bias), gains)
    return None if split is None else KernelHalf(*(np.stack(part) for part in half))


def _fitting(kernels: Any, steps: int, whole: bool) -> np.ndarray | None:
    """The features whose kernel fits in ``steps`` steps (receptive field ``8 d + 1`` at most
    ``steps``; the smallest dilation's always), as a boolean mask; ``None`` for the map of whole
    series or where every kernel fits."""
    if whole:
        return None
    fields = np.array([(KERNEL_LENGTH - 1) * d + 1 for d in kernels.dilations])
    fits = fields <= max(int(steps), int(fields.min()))
    if fits.all():
        return None
    return np.repeat(fits, N_KERNELS * kernels.n_biases)


def _prefix_map(
    features: np.ndarray, codes: np.ndarray, fitting: np.ndarray | None, seed: int | None
) -> tuple[Any, GramRidge, RidgeFit, np.ndarray | None]:
    """The ridge classifier of one prefix length: on all ``features`` or, where ``fitting`` is given,
    on those columns only if their out-of-fold cross-entropy (:func:`_held_out_scores`, each with the
    factor that fits it best) is lower; its penalty chosen by leave-one-out cross-validation. Returns
    the columns read (a slice or a mask), the :class:`GramRidge` of those columns, the classifier
    fitted on every row and its out-of-fold scores (``None`` where a class has fewer than two
    series).

    After a prefix shorter than a kernel's reach, that kernel's running mean reads mostly the zeros
    before the series' start, so the classifier of the kernels that fit can be the better one (see
    :doc:`/design_notes/classifier_prefix_maps`)."""
    candidates = [slice(None)] if fitting is None else [slice(None), fitting]
    best = None
    for columns in candidates:
        ridge = GramRidge(features[:, columns])
        fit = ridge.fit(np.arange(len(codes)), codes)
        held_out = _held_out_scores(ridge, codes, fit.alpha, seed)
        loss = 0.0 if held_out is None else _cross_entropy(held_out, codes, _gain(held_out, codes))
        if best is None or loss < best[0]:
            best = (loss, (columns, ridge, fit, held_out))
        if held_out is None:
            break  # (nothing to compare on)
    return best[1]


def mixture_split(codes: np.ndarray, seed: int | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The training series the mixture's weights are chosen on and those the models it compares are
    fitted on for that: a stratified half each; ``None`` where a class has fewer than two series.
    (Choosing on both halves in turn was tried: :doc:`/design_notes/classifier_mixture`.)"""
    from sklearn.model_selection import StratifiedKFold

    if np.bincount(codes).min() < 2:
        return None
    folds = StratifiedKFold(2, shuffle=True, random_state=int(seed or 0))
    return next(folds.split(np.zeros(len(codes)), codes))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@torch.no_grad()
def _head_scores(module: ClassifierModule, values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The network's own class scores (its head's, before any factor) ``(P, n, n_classes)`` after
    ``steps[p, i]`` steps of series ``i`` (each from 1 to the series' length), in eval mode."""
    was_training = module.training
    module.eval()
    linear = module.head[1]
    out = np.empty((len(steps), len(values), module.n_classes))
    for start in range(0, len(values), _HEAD_BATCH):
        at = torch.as_tensor(steps[:, start : start + _HEAD_BATCH])  # (P, b)
        x = torch.as_tensor(values[start : start + _HEAD_BATCH, : int(at.max())])
        mask = torch.arange(x.shape[1])[None, :] < at.max(dim=0).values[:, None]
        z, _ = module.encode(x.to(linear.weight.device), mask.to(linear.weight.device))
        rows = torch.arange(x.shape[0])
        for p in range(len(steps)):
            own = z[rows, at[p] - 1, : module.d_model].double().cpu()
            out[p, start : start + _HEAD_BATCH] = (
                own @ linear.weight.double().cpu().T + linear.bias.double().cpu()
            ).numpy()
    module.train(was_training)
    return out


def fit_head_gains(
    module: ClassifierModule, values: np.ndarray, lengths: np.ndarray, codes: np.ndarray
) -> None:
    """Set the factor on the trained network's class scores at each prefix length of the kernels' maps
    but the last (whole series, 1): the one, at most 1, that minimises their cross-entropy on the
    training series' prefixes of that length.

    The network trains on whole series, so after a prefix its answer can be confident and wrong.
    Fitted on the training series themselves, the factor is optimistic (the network has seen them,
    whole), so it only ever tempers: at most 1 (see :doc:`/design_notes/classifier_mixture`).
    """
    steps = prefix_steps(module, lengths)[:-1]
    if not len(steps):  # (series of one step: the whole series is the only prefix)
        module.set_head_gains([1.0])
        return
    scores = _head_scores(module, values, steps)
    gains = [_gain(scores[p], codes, _HEAD_GAINS) for p in range(len(steps))]
    module.set_head_gains([*gains, 1.0])


def prefix_steps(module: ClassifierModule, lengths: np.ndarray) -> np.ndarray:
    """``(n_prefixes, n)``: the steps of each series at each prefix length of the kernels' maps (the
    whole series for the last)."""
    prefixes = module.kernel_prefixes.cpu().numpy()
    steps = np.minimum(prefixes[:, None], lengths[None, :])
    steps[-1] = lengths
    return steps


def fit_mixture(
    module: ClassifierModule, head_scores: np.ndarray, kernel_probabilities: np.ndarray, codes: np.ndarray
) -> None:
    """Set the factor on the network's class scores and the weight of its class distribution in the
    mixture, at each prefix length of the kernels' maps, from out-of-fold scores: the network's,
    ``head_scores`` ``(n_prefixes, n, n_classes)`` (:func:`fit_network_share`), and the kernels'
    distributions ``kernel_probabilities`` (same shape, :func:`fit_kernel_head`). At each prefix
    length, the pair (factor at most 1, weight in 0, 0.1, ..., 1) of the mixture with the lowest Brier
    score on them.

    The factor tempers the network where it is confident and wrong (a network trained on whole series,
    after a prefix); the weight gives each prefix length the share of the better-informed model.

    After the whole series the network keeps a weight of at least ``WHOLE_SERIES_MIN_WEIGHT`` (with
    its scores as they are where the weight chosen was lower): the network the weight is chosen for
    trained on half of the series, and a network gains more from twice the data than ridge
    classifiers do, so the choice undervalues the one trained on all of them. See
    :doc:`/design_notes/classifier_mixture` for the evidence behind the criterion, the floor and the
    untempered scores.
    """
    onehot = np.eye(head_scores.shape[-1])[codes]  # (n, n_classes)
    gains, weights = [], []
    for own, kernels in zip(head_scores, kernel_probabilities, strict=True):
        network = _softmax(_HEAD_GAINS[:, None, None] * own[None])  # (G, n, n_classes)
        mixed = _WEIGHTS[:, None, None, None] * network[None] + (1 - _WEIGHTS)[:, None, None, None] * kernels
        brier = ((mixed - onehot) ** 2).sum(axis=-1).mean(axis=-1)  # (W, G)
        w, g = np.unravel_index(np.argmin(brier), brier.shape)
        gains.append(float(_HEAD_GAINS[g]))
        weights.append(float(_WEIGHTS[w]))
    raise_to_floor(gains, weights, WHOLE_SERIES_MIN_WEIGHT)
    module.set_head_gains(gains, weights)


def raise_to_floor(gains: Any, weights: Any, floor: float) -> None:
    """Raise the network's weight after the whole series (the last of ``weights``, one per prefix
    length) to ``floor`` where it is lower, its factor (the last of ``gains``) then 1: its scores
    untempered, as :func:`fit_mixture` leaves them at ``WHOLE_SERIES_MIN_WEIGHT``. In place, on lists
    or tensors."""
    if weights[-1] < floor:
        gains[-1], weights[-1] = 1.0, floor


def fit_network_share(
    network: ClassifierModule,
    half_network: Callable[[], ClassifierModule],
    values: np.ndarray,
    lengths: np.ndarray,
    codes: np.ndarray,
    split: tuple[np.ndarray, np.ndarray] | None,
    kernel_half: KernelHalf | None,
) -> None:
    """Set the trained ``network``'s factor and weight at each prefix length of the kernels' maps, from
    the kernels' distributions on the series ``rows`` of ``split = (train, rows)`` (``kernel_half``,
    :func:`fit_kernel_head`) and the scores there of ``half_network()``, a network of the same
    architecture trained on the series ``train`` (:func:`fit_mixture`); where ``split`` is ``None``
    (a class has fewer than two series), the factor fitted on the training series and an even
    mixture (:func:`fit_head_gains`), without calling ``half_network``.

    The members of an ensemble share one such network (the estimator trains it once): it stands for
    "a network trained on half of the series"; each member's weights are still chosen against its own
    kernels' distributions."""
    if split is None or kernel_half is None:
        fit_head_gains(network, values, lengths, codes)
        return
    _, rows = split
    steps = prefix_steps(network, lengths)[:, rows]
    head_scores = _head_scores(half_network(), values[rows], steps)
    fit_mixture(network, head_scores, kernel_half.probabilities, codes[rows])


@torch.no_grad()
def held_out_staged_proba(
    network: ClassifierModule,
    half_network: ClassifierModule,
    kernel_half: KernelHalf,
    values: np.ndarray,
    lengths: np.ndarray,
) -> np.ndarray:
    """The class probabilities after every step ``(n, T, n_classes)`` of held-out series ``values``
    (``lengths`` real steps each) from the classifier as it would be had it trained on the other half
    of the series: ``network``'s architecture, kernels and mixture (:func:`fit_mixture`) with the
    weights of ``half_network`` and the ridge classifiers of ``kernel_half``, computed as prediction
    computes them (steps past a series' end repeat its last)."""
    model = copy.deepcopy(network).eval()
    unexpected = model.load_state_dict(half_network.state_dict(), strict=False).unexpected_keys
    if unexpected:  # (the half network is the same architecture without the kernels)
        raise RuntimeError(f"the half network has parameters the classifier lacks: {unexpected}")
    model.set_kernel_head(
        torch.as_tensor(kernel_half.weight), torch.as_tensor(kernel_half.bias), kernel_half.gain
    )
    device = model.head[1].weight.device
    out = np.empty((len(values), values.shape[1], model.n_classes))
    for start in range(0, len(values), _HEAD_BATCH):
        x = torch.as_tensor(values[start : start + _HEAD_BATCH], device=device)
        at = torch.as_tensor(lengths[start : start + _HEAD_BATCH], device=device)
        t_max = int(at.max())
        mask = torch.arange(t_max, device=device)[None, :] < at[:, None]
        z, _ = model.encode(x[:, :t_max], mask)
        proba = torch.softmax(model.logits(z), dim=-1).double().cpu().numpy()
        out[start : start + _HEAD_BATCH, :t_max] = proba
        out[start : start + _HEAD_BATCH, t_max:] = proba[:, -1:]
    return out
