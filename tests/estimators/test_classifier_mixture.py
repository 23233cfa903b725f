"""The share of the network in the classifier's mixture with the random kernels, chosen on held-out
series."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.estimators.classification._kernels import (
    WHOLE_SERIES_MIN_WEIGHT,
    KernelHalf,
    _fitting,
    _prefix_map,
    fit_mixture,
    held_out_staged_proba,
    kernel_config,
    mixture_split,
)
from aaren_ts.estimators.classification._net import ClassifierNets
from aaren_ts.estimators.classification._training import HALF_NETWORK_EPOCH_FRACTION
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.classify import ClassifierModule
from tests._params import TINY_NETWORK

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
        values = ((X.transpose(0, 2, 1) - clf.channel_mean_) / clf.channel_scale_).astype(np.float32)
        z, _ = module.encode(torch.as_tensor(values), torch.ones(40, 20, dtype=torch.bool))
        last = z[:, -1].double()
        linear = module.head[1]
        own = last[:, : module.d_model] @ linear.weight.double().T + linear.bias.double()
        network = torch.softmax(module.head_gain[-1] * own, -1)
        kernels = torch.softmax(last[:, module.d_model : module.d_model + 2], -1)
    expected = weights[-1] * network + (1 - weights[-1]) * kernels
    np.testing.assert_allclose(clf.predict_proba(X), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_a_prefix_map_reads_only_the_kernels_that_fit_in_it_where_they_classify_better() -> None:
    from aaren_ts.nn.rocket import N_KERNELS, RandomKernelFeatures

    kernels = RandomKernelFeatures(2, dilations=(1, 2, 8), n_biases=1)  # receptive fields 9, 17, 65
    block = N_KERNELS  # features per dilation
    fitting = _fitting(kernels, 20, whole=False)
    np.testing.assert_array_equal(fitting, np.repeat([True, True, False], block))
    assert _fitting(kernels, 65, whole=False) is None  # (every kernel fits)
    assert _fitting(kernels, 20, whole=True) is None  # (the map of whole series reads every feature)
    np.testing.assert_array_equal(_fitting(kernels, 3, whole=False), np.repeat([True, False, False], block))

    rng = np.random.default_rng(0)
    codes = np.arange(60) % 2
    signal = rng.normal(size=(60, 3 * block)) * 0.3
    # the class shows in the kernels that fit; the others read noise ten times as loud
    informed = signal.copy()
    informed[:, :5] += np.where(codes == 1, 0.4, -0.4)[:, None]
    informed[:, 2 * block :] = rng.normal(size=(60, block)) * 3.0
    columns, ridge, fit, held_out = _prefix_map(informed, codes, fitting, seed=0)
    np.testing.assert_array_equal(columns, fitting)
    coef, intercept = ridge.coefficients(fit)
    assert coef.shape == (2, int(fitting.sum())) and intercept.shape == (2,)
    assert held_out.shape == (60, 2)
    # the class shows only in the kernels that do not fit: all features are read
    reversed_ = signal.copy()
    reversed_[:, 2 * block : 2 * block + 5] += np.where(codes == 1, 0.4, -0.4)[:, None]
    columns, ridge, fit, _ = _prefix_map(reversed_, codes, fitting, seed=0)
    assert columns == slice(None) and ridge.coefficients(fit)[0].shape == (2, 3 * block)


def test_fitted_prefix_maps_give_no_weight_to_the_kernels_they_leave_out() -> None:
    rng = np.random.default_rng(1)
    y = np.arange(40) % 2
    X = rng.normal(size=(40, 2, 80)).astype(np.float32)
    X[:, 0, :6] += np.where(y == 1, 0.8, -0.8)[:, None]
    clf = AarenClassifier(
        d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=2, n_estimators=1, random_state=0
    )
    clf.fit(X, y)
    module = clf.module_
    weight = module.kernel_weight.unflatten(0, (len(module.kernel_prefixes), 2)).numpy()
    for p, steps in enumerate(module.kernel_prefixes.tolist()[:-1]):
        fitting = _fitting(module.kernels, steps, whole=False)
        if fitting is not None and not np.any(weight[p][:, ~fitting]):
            break
    else:
        pytest.fail("no prefix map kept to the kernels that fit in it")
    assert np.any(weight[-1][:, ~_fitting(module.kernels, 1, whole=False)])  # (the whole series' reads all)
    clf.partial_update([x[:, :5] for x in X[:4]]).partial_update([x[:, 5:] for x in X[:4]])
    np.testing.assert_allclose(clf.predict_proba(), clf.predict_proba(X[:4]), atol=1e-5)


def test_the_half_data_network_trains_half_the_epochs_on_a_schedule_as_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(1)
    y = np.arange(24) % 2
    X = rng.normal(size=(24, 2, 16)).astype(np.float32)
    built = []
    build = ClassifierNets.build

    def spy(self: ClassifierNets, *args: object, **kwargs: object) -> object:
        built.append((kwargs.get("random_kernels", "fitted"), build(self, *args, **kwargs)))
        return built[-1][1]

    monkeypatch.setattr(ClassifierNets, "build", spy)
    small = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "n_random_features": 200}
    AarenClassifier(max_epochs=6, n_estimators=1, random_state=0, **small).fit(X, y)
    (half,) = [net for kernels, net in built if kernels is None]
    (own,) = [net for kernels, net in built if kernels is not None]
    assert len(own.history) == 6
    assert len(half.history) == round(6 * HALF_NETWORK_EPOCH_FRACTION) == 3
    schedules = [cb for _, cb in half.callbacks_ if type(cb).__name__ == "LRScheduler"]
    assert [cb.kwargs["T_max"] for cb in schedules] == [3]


def test_the_kernel_maps_fit_quietly_on_a_few_series_of_many_features():
    """A third of JapaneseVowels' training series (90, ships with sktime) against about 8,000 features:
    scikit-learn's ridge solves some out-of-fold fits' dual problems by least squares and says so (as a
    UserWarning, once per fit); a classifier's fit passes none of that on."""
    import warnings

    from aaren_ts.datasets import load_uea

    X, y = load_uea("JapaneseVowels", split="train", return_type="list")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AarenClassifier(**{**TINY_NETWORK, "n_estimators": 1, "max_epochs": 1}).fit(X[::3], y[::3])
    from_sklearn = [w for w in caught if "sklearn" in w.filename]
    assert from_sklearn == [], [str(w.message) for w in from_sklearn]


def test_the_held_out_model_is_the_classifier_with_the_half_networks_weights_and_maps() -> None:
    rng = np.random.default_rng(0)
    network = _module().eval()
    n_maps, n_features = network.kernel_bias.shape[0], network.kernels.n_features
    network.set_kernel_head(
        torch.as_tensor(rng.normal(size=(n_maps, N_CLASSES, n_features))),
        torch.as_tensor(rng.normal(size=(n_maps, N_CLASSES))),
        [0.5, 2.0],
    )
    network.set_head_gains([0.3, 1.0], [0.2, 0.7])
    # the half: other weights of the same architecture without the kernels, and other maps
    torch.manual_seed(1)
    half_network = ClassifierModule(2, N_CLASSES, EncoderConfig("aaren", 8, 2, 1, 16))
    half = KernelHalf(
        rng.normal(size=(n_maps, N_CLASSES, n_features)),
        rng.normal(size=(n_maps, N_CLASSES)),
        [1.5, 0.4],
        None,
    )
    values = rng.normal(size=(5, 9, 2)).astype(np.float32)
    lengths = np.array([9, 4, 1, 7, 9])
    staged = held_out_staged_proba(network, half_network, half, values, lengths)
    expected = _module().eval()
    expected.load_state_dict(network.state_dict())
    expected.load_state_dict(half_network.state_dict(), strict=False)
    expected.set_kernel_head(torch.as_tensor(half.weight), torch.as_tensor(half.bias), half.gain)
    assert not torch.equal(expected.kernel_weight, network.kernel_weight)
    with torch.no_grad():
        for i, length in enumerate(lengths):  # one series at a time, from its own steps only
            z, _ = expected.encode(
                torch.as_tensor(values[i : i + 1, :length]), torch.ones(1, length, dtype=torch.bool)
            )
            proba = torch.softmax(expected.logits(z), -1)[0].numpy()
            np.testing.assert_allclose(staged[i, :length], proba, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(
                staged[i, length:], np.broadcast_to(proba[-1], staged[i, length:].shape)
            )
    # the classifier itself is left as it was
    assert torch.equal(network.head_weight, torch.tensor([0.2, 0.7], dtype=torch.float64))
    assert not torch.equal(network.kernel_weight, expected.kernel_weight)
