"""AarenClassifier with ``n_estimators > 1``: the mean of its members' class distributions, each member's
network and kernels those of the classifier seeded ``random_state + 1000 k`` (their mixtures chosen
against one network on half of the series), in every computation path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.estimators._persistence import save_archive
from aaren_ts.estimators._skorch import savable_params
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.ensemble import ClassifierEnsemble, EnsembleState, member_kernels
from aaren_ts.nn.rocket import RandomKernelFeatures

SMALL = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 3, "n_random_features": 500}


@pytest.fixture(scope="module")
def data() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(3)
    lengths = rng.integers(12, 30, size=48)
    X = [rng.normal(size=(2, n)).astype("float32") for n in lengths]
    y = np.array(["a" if x[0, :6].mean() > 0 else "b" for x in X])
    return X, y


@pytest.fixture(scope="module")
def ensemble(data: tuple[list[np.ndarray], np.ndarray]) -> AarenClassifier:
    X, y = data
    return AarenClassifier(n_estimators=2, random_state=0, **SMALL).fit(X, y)


MIXTURE = ("head_gain", "head_weight")  # a member's factor and weight against its kernels


def test_each_member_is_trained_as_a_classifier_of_its_own_and_the_mixtures_share_one_half_network(
    data: tuple[list[np.ndarray], np.ndarray], ensemble: AarenClassifier, capsys: pytest.CaptureFixture
) -> None:
    X, y = data
    assert isinstance(ensemble.module_, ClassifierEnsemble)
    alone = [AarenClassifier(n_estimators=1, random_state=s, **SMALL).fit(X, y) for s in (0, 1000)]
    first, second = (m.state_dict() for m in ensemble.module_.members)
    # member 0 is the classifier a single one would be, its mixture included
    own = alone[0].module_.state_dict()
    assert first.keys() == own.keys()
    for name in own:
        torch.testing.assert_close(first[name], own[name], rtol=0, atol=0, msg=name)
    # member 1's network and kernels are those of the classifier seeded 1000; its mixture is chosen
    # against the network on half of the series that member 0 trained, not against one of its own
    other = alone[1].module_.state_dict()
    for name in other:
        if name not in MIXTURE:
            torch.testing.assert_close(second[name], other[name], rtol=0, atol=0, msg=name)
    weights = second["head_weight"].numpy()
    assert ((weights >= 0) & (weights <= 1)).all() and weights[-1] >= 0.5
    assert not np.allclose(alone[0].predict_proba(X), alone[1].predict_proba(X))  # (two different members)
    capsys.readouterr()
    AarenClassifier(n_estimators=2, random_state=0, verbose=1, **SMALL).fit(X, y)
    assert capsys.readouterr().err.count("to weigh the kernels:") == 1
    # member k's kernels are drawn from its own seed; the first member's are the classifier's own
    assert ensemble.random_kernels_["seed"] == 0
    rows = ensemble.net_.history[:, "member"]
    assert sorted(set(rows)) == [0, 1] and len(rows) == 2 * SMALL["max_epochs"]


def test_the_ensemble_answers_the_mean_of_its_members_answers(
    data: tuple[list[np.ndarray], np.ndarray], ensemble: AarenClassifier
) -> None:
    X, _ = data
    members = []
    for member in ensemble.module_.members:
        alone = AarenClassifier(n_estimators=1, random_state=0, **SMALL).fit(*data)
        alone.module_.load_state_dict(member.state_dict())
        alone.reset_stream()
        members.append(alone)
    mean = (members[0].predict_proba(X) + members[1].predict_proba(X)) / 2
    np.testing.assert_allclose(ensemble.predict_proba(X), mean, atol=1e-12)
    staged = list(ensemble.staged_predict_proba(X[:5]))
    staged_alone = [list(a.staged_predict_proba(X[:5])) for a in members]
    for t in (0, 5, len(staged) - 1):
        np.testing.assert_allclose(staged[t], (staged_alone[0][t] + staged_alone[1][t]) / 2, atol=1e-12)


def test_streams_of_an_ensemble_match_the_batch_answer_and_survive_save_and_load(
    tmp_path: Path, data: tuple[list[np.ndarray], np.ndarray], ensemble: AarenClassifier
) -> None:
    X, _ = data
    clf = ensemble
    clf.reset_stream()
    clf.partial_update([x[:, :7] for x in X[:6]])
    clf.save(tmp_path / "mid")
    clf.partial_update([x[:, 7:] for x in X[:6]])
    np.testing.assert_allclose(clf.predict_proba(), clf.predict_proba(X[:6]), atol=1e-5)
    loaded = AarenClassifier.load(tmp_path / "mid")
    assert loaded.n_estimators == 2 and isinstance(loaded.module_, ClassifierEnsemble)
    loaded.partial_update([x[:, 7:] for x in X[:6]])
    np.testing.assert_array_equal(loaded.predict_proba(), clf.predict_proba())
    clf.reset_stream()


def test_a_saved_ensemble_whose_members_disagree_on_the_time_points_seen_is_refused(
    data: tuple[list[np.ndarray], np.ndarray], ensemble: AarenClassifier
) -> None:
    X, _ = data
    clf = ensemble
    clf.reset_stream()
    clf.partial_update([x[:, :5] for x in X[:3]])
    tensors = clf.streams_.tensors()
    state = clf.streams_.state
    assert isinstance(state, EnsembleState) and len(state.members) == 2
    second_seen = next(i for i, t in enumerate(tensors) if t is state.members[1].seen)
    altered = [t.clone() for t in tensors]
    altered[second_seen] += 1
    before = clf.predict_proba()
    with pytest.raises(ValueError, match="disagree on the time points"):
        clf.streams_.restore(altered, 3)
    np.testing.assert_array_equal(clf.predict_proba(), before)  # the streams as they were
    clf.reset_stream()


def test_a_file_saved_before_n_estimators_existed_loads_as_one_network(
    tmp_path: Path, data: tuple[list[np.ndarray], np.ndarray]
) -> None:
    X, y = data
    one = AarenClassifier(n_estimators=1, random_state=0, **SMALL).fit(X, y)
    params = savable_params(one.get_params(deep=False))
    del params["n_estimators"]  # (as files saved before the parameter existed hold them)
    path = save_archive(
        tmp_path / "old", AarenClassifier, params, one.module_.state_dict(), one._fitted_attributes()
    )
    loaded = AarenClassifier.load(path)
    assert loaded.n_estimators == 1 and isinstance(loaded.module_, ClassifierModule)
    np.testing.assert_array_equal(loaded.predict_proba(X), one.predict_proba(X))


def test_the_ensemble_module_needs_two_members_and_draws_each_members_kernels() -> None:
    config = {"dilations": (1, 2), "n_biases": 1, "seed": 4, "prefix_lengths": (3, 6)}
    params = {"n_channels": 2, "n_classes": 3, "encoder": EncoderConfig("aaren", 8, 2, 1, 16)}
    with pytest.raises(ValueError, match="at least 2 members"):
        ClassifierEnsemble(1, random_kernels=config, **params)
    module = ClassifierEnsemble(3, random_kernels=config, **params).eval()
    for k, member in enumerate(module.members):
        drawn = RandomKernelFeatures(2, (1, 2), 1, seed=4 + 1000 * k)
        torch.testing.assert_close(member.kernels.channels, drawn.channels)
    assert member_kernels(config, 2) == {**config, "seed": 2004} and member_kernels(None, 1) is None
    x = torch.randn(2, 9, 2)
    mask = torch.ones(2, 9, dtype=torch.bool)
    with torch.no_grad():
        z, state = module.encode(x, mask)
        proba = torch.softmax(module.logits(z), dim=-1)
        members = [torch.softmax(m.logits(m.encode(x, mask)[0]), dim=-1) for m in module.members]
    torch.testing.assert_close(proba, torch.stack(members).mean(dim=0))
    torch.testing.assert_close(proba[:, -1], torch.softmax(module.logits(module.current_features(state)), -1))


def test_an_ensemble_decides_early_on_the_mean_of_its_members_distributions(
    data: tuple[list[np.ndarray], np.ndarray], ensemble: AarenClassifier
) -> None:
    X, _ = data
    labels, decided_at = ensemble.predict_early(X[:12])
    staged = np.stack(list(ensemble.staged_predict_proba(X[:12])))  # (T, n, n_classes)
    threshold = ensemble.probability_threshold_  # ("auto", chosen at fit)
    for i, x in enumerate(X[:12]):
        confident = np.flatnonzero(staged[: x.shape[1], i].max(axis=1) >= threshold)
        t = confident[0] if len(confident) else x.shape[1] - 1
        assert decided_at[i] == t + 1
        assert labels[i] == ensemble.classes_[staged[t, i].argmax()]


@pytest.mark.parametrize(
    "variant",
    [
        {"n_random_features": 0},
        {"readout": "attention"},
        {"readout": "last", "backbone": "transformer", "n_random_features": 0},
        {"prefix_weight": 0.5},
    ],
    ids=["no-kernels", "attention-readout", "transformer", "prefix-loss"],
)
def test_every_variant_of_an_ensemble_streams_as_it_classifies_whole_series(
    variant: dict, data: tuple[list[np.ndarray], np.ndarray]
) -> None:
    X, y = data
    params = {**SMALL, "max_epochs": 2, "n_random_features": 300, **variant}
    clf = AarenClassifier(n_estimators=2, random_state=1, **params).fit(X, y)
    alone = [AarenClassifier(n_estimators=1, random_state=s, **params).fit(X, y) for s in (1, 1001)]
    if clf.random_kernels_ is not None:  # (the mixture of member 1 is chosen against member 0's half network)
        alone[1].module_.set_head_gains(*(clf.module_.members[1].get_buffer(b) for b in MIXTURE))
    whole = clf.predict_proba(X[:6])
    mean = (alone[0].predict_proba(X[:6]) + alone[1].predict_proba(X[:6])) / 2
    np.testing.assert_allclose(whole, mean, rtol=1e-6)  # (float32 probabilities, any thread count)
    clf.partial_update([x[:, :4] for x in X[:6]]).partial_update([x[:, 4:] for x in X[:6]])
    np.testing.assert_allclose(clf.predict_proba(), whole, atol=1e-5)
