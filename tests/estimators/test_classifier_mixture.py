"""The share of the network in the classifier's mixture with the random kernels, chosen on held-out
series."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.estimators._classifier_kernels import (
    WHOLE_SERIES_MIN_WEIGHT,
    fit_mixture,
    kernel_config,
    mixture_split,
)
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.classify import ClassifierModule

N_CLASSES = 3


def _module() -> ClassifierModule:
    kernels = {"dilations": (1, 2), "n_biases": 1, "seed": 0, "prefix_lengths": (3, 6)}
    return ClassifierModule(2, N_CLASSES, EncoderConfig("aaren", 8, 2, 1, 16), random_kernels=kernels)


def _informed(codes: np.ndarray, strength: float, rng: np.random.Generator) -> np.ndarray:
    """Class scores ``(n, n_classes)`` that favour the true class by ``strength`` over noise."""
    return rng.normal(size=(len(codes), N_CLASSES)) + strength * np.eye(N_CLASSES)[codes]


def _probabilities(scores: np.ndarray) -> np.ndarray:
    return torch.softmax(torch.as_tensor(scores), dim=-1).numpy()


def test_the_better_informed_model_gets_the_weight_at_each_prefix_length() -> None:
    rng = np.random.default_rng(0)
    codes = rng.integers(N_CLASSES, size=300)
    # after the first prefix length the kernels know the class and the network guesses; after the
    # whole series, the other way round
    head = np.stack([_informed(codes, 0.0, rng), _informed(codes, 6.0, rng)])
    kernels = np.stack([_probabilities(_informed(codes, 6.0, rng)), np.full((300, N_CLASSES), 1 / 3)])
    module = _module()
    fit_mixture(module, head, kernels, codes)
    assert module.head_weight[0] <= 0.1 and module.head_weight[1] == 1.0
    assert module.head_gain[1] == 1.0  # (confident and right: not tempered)


def test_after_the_whole_series_the_network_keeps_at_least_the_floor_weight() -> None:
    # (the network the weights are chosen for trained on half of the series: after the whole series,
    # its weight is not let below the floor, and its scores are not tempered there)
    rng = np.random.default_rng(2)
    codes = rng.integers(N_CLASSES, size=300)
    head = np.stack([_informed(codes, 0.0, rng), 20.0 * _informed(codes, 0.0, rng)])
    kernels = np.stack([_probabilities(_informed(codes, 6.0, rng))] * 2)
    module = _module()
    fit_mixture(module, head, kernels, codes)
    assert module.head_weight[0] <= 0.1
    assert module.head_weight[1] == WHOLE_SERIES_MIN_WEIGHT and module.head_gain[1] == 1.0


def test_a_network_confident_and_often_wrong_is_tempered() -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(N_CLASSES, size=300)
    scores = _informed(codes, 1.0, rng)  # right more often than not, but far from always
    head = np.stack([20.0 * scores, scores])
    kernels = np.full((2, 300, N_CLASSES), 1 / 3)
    module = _module()
    fit_mixture(module, head, kernels, codes)
    assert module.head_gain[0] < 0.2 < module.head_gain[1]


def test_the_mixture_split_is_a_stratified_half_and_needs_two_series_per_class() -> None:
    codes = np.repeat(np.arange(N_CLASSES), [4, 6, 8])
    train, rows = mixture_split(codes, seed=0)
    assert sorted(np.concatenate([train, rows])) == list(range(len(codes)))
    np.testing.assert_array_equal(np.bincount(codes[rows]), [2, 3, 4])
    assert mixture_split(np.array([0, 0, 1]), seed=0) is None


def test_every_step_is_answered_by_a_map_fitted_on_at_most_that_many_steps() -> None:
    # (a stream's first steps once used the map of 5 % of the median length: running means of fewer
    # steps than it was fitted on, and confident answers)
    config = kernel_config(np.array([80, 100, 120]), 1000, seed=0)
    assert config["prefix_lengths"][:3] == (1, 5, 10) and config["prefix_lengths"][-1] == 100
    assert kernel_config(np.array([3, 3]), 1000, seed=0)["prefix_lengths"] == (1, 2, 3)


def test_weights_outside_zero_and_one_are_refused() -> None:
    module = _module()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        module.set_head_gains([1.0, 1.0], [0.5, 1.5])
    np.testing.assert_array_equal(module.head_weight.numpy(), [0.5, 0.5])


def test_fit_chooses_the_weights_on_held_out_series_and_the_answer_mixes_by_them() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    X = rng.normal(scale=1.0, size=(40, 2, 20)).astype(np.float32)
    X[:, 0, :5] += np.where(y == 1, 0.4, -0.4)[:, None]
    clf = AarenClassifier(
        d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=5, n_estimators=1, random_state=0
    )
    clf.fit(X, y)
    module = clf.module_
    weights = module.head_weight.numpy()
    assert ((weights >= 0) & (weights <= 1)).all() and not np.all(weights == 0.5)
    with torch.no_grad():
        values = (X.transpose(0, 2, 1) - clf.channel_mean_) / clf.channel_scale_
        z, _ = module.encode(torch.as_tensor(values), torch.ones(40, 20, dtype=torch.bool))
        last = z[:, -1].double()
        linear = module.head[1]
        own = last[:, : module.d_model] @ linear.weight.double().T + linear.bias.double()
        network = torch.softmax(module.head_gain[-1] * own, -1)
        kernels = torch.softmax(last[:, module.d_model : module.d_model + 2], -1)
    expected = weights[-1] * network + (1 - weights[-1]) * kernels
    np.testing.assert_allclose(clf.predict_proba(X), expected.numpy(), rtol=1e-5, atol=1e-6)
