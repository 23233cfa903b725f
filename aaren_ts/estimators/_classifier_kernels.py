"""The classifier's random kernels (:class:`~aaren_ts.nn.rocket.RandomKernelFeatures`): their
configuration from the training series, their biases, and the ridge classifier on their running means
that the network adds to its logits.

The ridge classifier (scikit-learn's ``RidgeClassifierCV``, its penalty chosen by leave-one-out
cross-validation over ten values from 1e-3 to 1e3, as MiniRocket does) is fitted on the proportions of
positive values after each training series' last step; with a ``prefix_weight`` ``w > 0`` also after
10 %, 20 %, ..., 90 % of each series, those rows weighing ``w`` together against ``1 - w`` for the
whole series, so that the scores are right early too. It is fitted once, before the network trains;
the network then learns with those scores fixed (times a learned factor) in its logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.rocket import N_KERNELS, default_dilations

__all__ = ["fit_kernel_head", "kernel_config"]

_PREFIXES = np.arange(1, 10) / 10.0  # the fractions of each series the prefix rows end at
_FEATURE_BYTES = 2**28  # indicators per batch when computing the training features (256 MiB)


def kernel_config(lengths: np.ndarray, n_features: int, seed: int | None) -> dict[str, Any] | None:
    """The :class:`~aaren_ts.nn.rocket.RandomKernelFeatures` arguments for training series of
    ``lengths`` and about ``n_features`` features (``0``: none): dilations up to the median length."""
    if not n_features:
        return None
    dilations = default_dilations(float(np.median(lengths)))
    n_biases = max(1, int(n_features) // (N_KERNELS * len(dilations)))
    return {"dilations": dilations, "n_biases": n_biases, "seed": int(seed or 0)}


@torch.no_grad()
def _running_means(
    module: ClassifierModule, values: np.ndarray, lengths: np.ndarray, fractions: np.ndarray
) -> np.ndarray:
    """The kernels' proportions of positive values after ``fractions`` of each series (rounded up,
    at least one step): ``(len(fractions), n_series, n_features)``."""
    kernels = module.kernels
    n, t_max, c = values.shape
    pad = kernels.receptive_field - 1
    steps = np.maximum(1, np.ceil(lengths[None, :] * fractions[:, None]).astype(np.int64))  # (P, n)
    out = np.empty((len(fractions), n, kernels.n_features), dtype=np.float32)
    batch = max(1, _FEATURE_BYTES // (4 * max(t_max, 1) * kernels.n_features))
    for start in range(0, n, batch):
        x = torch.as_tensor(values[start : start + batch])
        window = torch.cat([x.new_zeros(len(x), pad, c), x], dim=1)
        positive = kernels(window).cumsum(dim=1)  # (b, T, F); steps past a series' end are not read
        rows = torch.arange(len(x))
        for p in range(len(fractions)):
            at = torch.as_tensor(steps[p, start : start + batch])
            out[p, start : start + batch] = (positive[rows, at - 1] / at[:, None]).numpy()
    return out


def fit_kernel_head(
    module: ClassifierModule,
    values: np.ndarray,
    lengths: np.ndarray,
    codes: np.ndarray,
    prefix_weight: float,
    seed: int | None,
) -> None:
    """Set ``module``'s kernel biases from the standardised training series ``values`` ``(n, T, C)``
    (``lengths`` real steps each) and its kernel head to a ridge classifier of the class ``codes``."""
    from sklearn.linear_model import RidgeClassifierCV

    kernels = module.kernels
    generator = torch.Generator().manual_seed(int(seed or 0))
    kernels.fit_biases(torch.as_tensor(values), torch.as_tensor(lengths), generator)
    w = float(prefix_weight)
    fractions = np.concatenate([_PREFIXES, [1.0]]) if w > 0 else np.array([1.0])
    features = _running_means(module, values, lengths, fractions)
    weights = np.full(len(fractions), w / max(len(fractions) - 1, 1))
    weights[-1] = 1.0 - w if w > 0 else 1.0
    ridge = RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))
    ridge.fit(
        features.reshape(-1, kernels.n_features),
        np.tile(codes, len(fractions)),
        sample_weight=np.repeat(weights, len(codes)) * len(fractions),
    )
    coef, intercept = ridge.coef_, ridge.intercept_
    if coef.shape[0] == 1:  # two classes: one decision function, positive for the second
        coef, intercept = np.concatenate([-coef, coef]) / 2.0, np.array([-intercept[0], intercept[0]]) / 2.0
    module.set_kernel_head(torch.as_tensor(coef), torch.as_tensor(intercept))
