"""Early classification: the loss on every prefix and the early-decision rule (batch and streams)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.engine.early import (
    THRESHOLD_GRID,
    ConfidenceRule,
    EarlyDecisions,
    best_threshold,
    decide_staged,
    harmonic_mean,
)
from aaren_ts.estimators.classification._early import AUTO_THRESHOLD_FLOOR
from aaren_ts.nn.classify import ClassificationLoss, StepLogits
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,
}


def _panel(n: int = 32, length: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two classes told apart by the sign of channel 0 in the first quarter: decidable early."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(scale=0.5, size=(n, 2, length))
    X[:, 0, : length // 4] += np.where(y == 1, 1.0, -1.0)[:, None]
    return X.astype(np.float32), np.where(y == 1, "up", "down")


@pytest.fixture(scope="module")
def early() -> tuple[AarenClassifier, np.ndarray, np.ndarray]:
    X, y = _panel()
    # (the random kernels alone tell this panel's classes apart after its first step, with a
    # probability that rounds to 1: the rule's behaviour across thresholds shows on the network's)
    clf = AarenClassifier(
        max_epochs=30, batch_size=8, prefix_weight=0.5, probability_threshold=0.7, n_random_features=0, **TINY
    )
    return clf.fit(X, y), X, y


# ------------------------------------------------------------------------------------- the loss
def test_prefix_loss_is_the_weighted_mean_of_final_and_per_step_cross_entropy():
    torch.manual_seed(0)
    steps = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    last = steps[torch.arange(3), mask.sum(1) - 1]
    target = torch.tensor([0, 3, 1])
    ce = torch.nn.functional.cross_entropy
    per_series = torch.stack(
        [ce(steps[i, : int(mask[i].sum())], target[i].repeat(int(mask[i].sum()))) for i in range(3)]
    )
    out = StepLogits(last, steps, mask)
    assert torch.allclose(ClassificationLoss()(out, target), ce(last, target))
    assert torch.allclose(ClassificationLoss()(last, target), ce(last, target))
    got = ClassificationLoss(prefix_weight=0.25)(out, target)
    assert torch.allclose(got, 0.75 * ce(last, target) + 0.25 * per_series.mean())
    # padded steps do not count, whatever their logits
    padded = steps.clone()
    padded[~mask] = 1e3
    assert torch.allclose(
        ClassificationLoss(prefix_weight=1.0)(StepLogits(last, padded, mask), target), per_series.mean()
    )


def test_prefix_loss_makes_early_prefixes_more_accurate():
    X, y = _panel(n=48, length=32, seed=3)
    X_test, y_test = _panel(n=48, length=32, seed=4)
    accuracy = {}
    # the network's own loss: without the random kernels' classifiers, and without the position,
    # with which the network trained on whole series alone is right about all of these test series
    # after 3 steps (it learns that the first quarter tells the class), leaving the loss nothing to show
    tiny = {**TINY, "n_random_features": 0, "position_frequencies": 0}
    for weight in (0.0, 0.8):
        clf = AarenClassifier(max_epochs=20, prefix_weight=weight, **tiny).fit(X, y)
        staged = list(clf.staged_predict_proba(X_test))
        accuracy[weight] = np.mean(clf.classes_[staged[8].argmax(1)] == y_test)
    assert accuracy[0.8] > accuracy[0.0]


def _step(state: EarlyDecisions, proba, real, seen, rule: ConfidenceRule) -> None:
    """The rule after one step, written step by step: the reference the chunked update must meet.
    ``proba`` ``(n, n_classes)``; ``real`` bool ``(n,)``; ``seen`` the time points seen after the step."""
    top, cls = proba.max(dim=-1)
    confident = top >= float(rule.probability_threshold)
    run = torch.where(confident & (cls == state.run_class), state.run + 1, confident.to(torch.int64))
    state.run = torch.where(real, run, state.run)
    state.run_class = torch.where(real, torch.where(confident, cls, -1), state.run_class)
    newly = real & (state.decided_at == 0) & (state.run >= int(rule.consecutive_predictions))
    state.decided_at = torch.where(newly, seen, state.decided_at)
    state.decided_class = torch.where(newly, cls, state.decided_class)


# ------------------------------------------------------------------------------------- the rule
def test_rule_checks_its_parameters():
    with pytest.raises(ValueError, match="probability_threshold"):
        ConfidenceRule(0.0)
    with pytest.raises(ValueError, match="consecutive_predictions"):
        ConfidenceRule(0.5, 0)


def test_rule_needs_the_same_confident_class_in_a_row():
    proba = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.1, 0.9], [0.5, 0.5], [0.05, 0.95]])
    for k, expected_at, expected_class in ((1, 1, 0), (2, 3, 1), (3, 0, -1)):
        state = EarlyDecisions(1)
        for t in range(4):
            one_step = proba[None, t : t + 1]  # a chunk of one step
            state.update_chunk(one_step, torch.tensor([[True]]), torch.tensor([t]), ConfidenceRule(0.8, k))
        assert int(state.decided_at) == expected_at
        assert int(state.decided_class) == expected_class


@pytest.mark.parametrize("k", [1, 2, 4])
def test_a_chunk_at_once_equals_step_by_step(k):
    gen = torch.Generator().manual_seed(k)
    n, t_max, n_classes = 16, 40, 3
    # peaked distributions, so that runs of confident steps of one class happen and break
    proba = torch.softmax(3 * torch.randn(n, t_max, n_classes, generator=gen), dim=-1)
    lengths = torch.randint(0, t_max + 1, (n,), generator=gen)
    real = torch.arange(t_max)[None, :] < lengths[:, None]
    rule = ConfidenceRule(0.6, k)
    stepwise = EarlyDecisions(n)
    for t in range(t_max):
        _step(stepwise, proba[:, t], real[:, t], real[:, : t + 1].sum(1), rule)
    for cuts in ((t_max,), (1,) * t_max, (7, 0, 13, 20)):
        chunked, start = EarlyDecisions(n), 0
        for size in cuts:
            sl = slice(start, start + size)
            chunked.update_chunk(proba[:, sl], real[:, sl], real[:, :start].sum(1), rule)
            start += size
        for name in ("decided_at", "decided_class"):
            assert torch.equal(getattr(chunked, name), getattr(stepwise, name)), (cuts, name)
        assert torch.equal(chunked.run, stepwise.run) and torch.equal(chunked.run_class, stepwise.run_class)
    assert (stepwise.decided_at > 0).sum() > 2


# ------------------------------------------------------------------------------- predict_early
def test_decision_is_the_prediction_on_the_prefix(early):
    clf, X, _ = early
    labels, decided_at = clf.predict_early(X)
    assert decided_at.dtype.kind == "i" and ((decided_at >= 1) & (decided_at <= X.shape[2])).all()
    assert (decided_at < X.shape[2]).any(), "the fixture should decide some series early"
    for i in range(len(X)):
        t = int(decided_at[i])
        assert labels[i] == clf.predict(X[i : i + 1, :, :t])[0]
        if t < X.shape[2]:  # decided early: confident after that prefix, not before
            staged = np.stack(list(clf.staged_predict_proba(X[i : i + 1])))[:, 0]
            assert staged[t - 1].max() >= clf.probability_threshold
            assert (staged[: t - 1].max(axis=1) < clf.probability_threshold).all()


def test_decision_time_grows_with_the_threshold(early):
    clf, X, _ = early
    times = []
    for threshold in (0.55, 0.7, 0.8, 0.9, 0.99, 1.0):
        times.append(clf.predict_early(X, probability_threshold=threshold)[1])
    for earlier, later in itertools.pairwise(times):
        assert (earlier <= later).all()
    assert times[0].mean() < times[-2].mean()


def test_more_consecutive_predictions_decide_later(early):
    clf, X, _ = early
    one = clf.predict_early(X)[1]
    three = clf.predict_early(X, consecutive_predictions=3)[1]
    assert (three >= np.minimum(one + 2, X.shape[2])).all()


def test_undecided_series_get_their_final_prediction_at_their_length(early):
    clf, X, _ = early
    ragged = [X[i, :, : 10 + i % 7] for i in range(8)]
    labels, decided_at = clf.predict_early(ragged, probability_threshold=1.0)
    never = decided_at == np.array([x.shape[1] for x in ragged])
    assert never.any()
    np.testing.assert_array_equal(
        labels[never], clf.predict([x for x, n in zip(ragged, never, strict=True) if n])
    )


@pytest.mark.parametrize("chunks", [(1,) * 24, (5, 0, 7, 12), (24,)])
def test_streams_decide_as_the_whole_series(early, chunks):
    clf, X, _ = early
    labels, decided_at = clf.predict_early(X)
    clf.reset_stream()
    start = 0
    for size in chunks:
        clf.partial_update(X[:, :, start : start + size])
        start += size
        got_labels, got_at = clf.predict_early()
        # (a series decided at its last time point may have been forced to: its stream is undecided)
        done = (decided_at <= start) & ((decided_at < X.shape[2]) | (got_at > 0))
        np.testing.assert_array_equal(got_at[done], decided_at[done])
        np.testing.assert_array_equal(got_labels[done], labels[done])
        assert (got_at[~done] == 0).all()
        np.testing.assert_array_equal(got_labels[~done], clf.predict()[~done])
    clf.reset_stream()


def test_ragged_streams_decide_as_the_whole_series(early):
    clf, X, _ = early
    ragged = [X[i, :, : 8 + 2 * i] for i in range(8)]
    labels, decided_at = clf.predict_early(ragged)
    clf.reset_stream()
    clf.partial_update([x[:, :5] for x in ragged]).partial_update([x[:, 5:] for x in ragged])
    got_labels, got_at = clf.predict_early()
    decided = got_at > 0
    np.testing.assert_array_equal(got_at[decided], decided_at[decided])
    np.testing.assert_array_equal(got_labels, labels)
    clf.reset_stream()


def test_saved_streams_keep_their_decisions(early, tmp_path):
    clf, X, _ = early
    labels, decided_at = clf.predict_early(X)
    clf.reset_stream()
    clf.partial_update(X[:, :, :9])
    loaded = AarenClassifier.load(clf.save(tmp_path / "early"))
    loaded.partial_update(X[:, :, 9:])
    clf.reset_stream()
    got_labels, got_at = loaded.predict_early()
    np.testing.assert_array_equal(got_at[got_at > 0], decided_at[got_at > 0])
    np.testing.assert_array_equal(got_labels, labels)


def test_bad_rule_parameters_are_clear_errors(early):
    clf, X, _ = early
    with pytest.raises(ValueError, match="probability_threshold"):
        AarenClassifier(probability_threshold=1.5, max_epochs=1, **TINY).fit(X, _panel()[1])
    with pytest.raises(ValueError, match="consecutive_predictions"):
        AarenClassifier(consecutive_predictions=0, max_epochs=1, **TINY).fit(X, _panel()[1])
    with pytest.raises(ValueError, match="probability_threshold"):
        clf.predict_early(X, probability_threshold=0.0)
    with pytest.raises(ValueError, match="only with X"):
        clf.reset_stream().partial_update(X[:, :, :3]).predict_early(probability_threshold=0.8)
    with pytest.raises(ValueError, match="no ongoing streams"):
        clf.reset_stream().predict_early()


# ------------------------------------------------------------------ the threshold chosen at fit
def test_decide_staged_is_the_rule_over_whole_series():
    rng = np.random.default_rng(0)
    proba = torch.softmax(torch.as_tensor(rng.normal(scale=2.0, size=(12, 9, 3))), dim=-1)
    lengths = torch.as_tensor(rng.integers(1, 10, size=12))
    rule = ConfidenceRule(0.6, 2)
    classes, decided_at = decide_staged(proba, lengths, rule)
    for i in range(12):  # the rule read off one series at a time, by hand
        top, cls = proba[i, : int(lengths[i])].max(dim=-1)
        expect = (int(cls[-1]), int(lengths[i]))
        for t in range(int(lengths[i])):
            window = range(t - rule.consecutive_predictions + 1, t + 1)
            if t + 1 >= rule.consecutive_predictions and all(
                top[s] >= rule.probability_threshold and cls[s] == cls[t] for s in window
            ):
                expect = (int(cls[t]), t + 1)
                break
        assert (int(classes[i]), int(decided_at[i])) == expect


def test_harmonic_mean_is_aeons():
    assert harmonic_mean(1.0, 0.0) == 1.0
    assert harmonic_mean(0.0, 1.0) == 0.0
    assert harmonic_mean(0.8, 0.2) == pytest.approx(0.8)
    assert harmonic_mean(0.9, 0.5) == pytest.approx(2 * 0.9 * 0.5 / 1.4)


def test_best_threshold_trades_accuracy_for_earliness():
    # ten series of two classes and 20 steps: the right class at 0.7 from the first step and 0.995
    # from the tenth; a wrong class at 0.9 for the first two steps in half of them
    n, t_max = 10, 20
    codes = torch.arange(n) % 2
    proba = torch.zeros(n, t_max, 2)
    right = torch.where(torch.arange(t_max) < 9, 0.7, 0.995)
    proba[torch.arange(n), :, codes] = right
    proba[torch.arange(n), :, 1 - codes] = 1 - right
    misled = (torch.arange(n) < 5).nonzero()[:, 0]
    proba[misled, :2] = 0.1
    proba[misled[:, None], torch.arange(2)[None, :], (1 - codes[misled])[:, None]] = 0.9
    lengths = torch.full((n,), t_max)
    threshold, score = best_threshold(proba, lengths, codes)
    # 0.5 .. 0.9 decide the misled series wrongly after one step (accuracy 0.5 at earliness 0.05:
    # HM 0.655); 0.95 .. 0.99 wait for the tenth step, right every time (earliness 0.5: HM 0.667)
    assert threshold == 0.98 and score == pytest.approx(harmonic_mean(1.0, 0.5))
    threshold, _ = best_threshold(proba, lengths, codes, thresholds=(0.5, 0.9))
    assert threshold == 0.5  # tied: the lower of the middle two


def test_auto_threshold_is_chosen_at_fit_on_held_out_series():
    X, y = _panel(n=40, length=16)
    clf = AarenClassifier(
        max_epochs=3, batch_size=8, prefix_weight=0.5, probability_threshold="auto",
        n_random_features=200, **TINY,
    )  # fmt: skip
    clf.fit(X, y)
    assert clf.probability_threshold_ in THRESHOLD_GRID and clf.probability_threshold_ >= AUTO_THRESHOLD_FLOOR
    labels, decided_at = clf.predict_early(X)
    same = clf.predict_early(X, probability_threshold=clf.probability_threshold_)
    np.testing.assert_array_equal(labels, same[0])
    np.testing.assert_array_equal(decided_at, same[1])
    # streams decide under the chosen threshold too
    clf.reset_stream().partial_update(X)
    np.testing.assert_array_equal(clf.predict_early()[1], decided_at)
    # a fixed threshold is kept as given; without random kernels nothing is held out
    fixed = AarenClassifier(max_epochs=1, probability_threshold=0.6, n_random_features=200, **TINY)
    assert fixed.fit(X, y).probability_threshold_ == 0.6
    alone = AarenClassifier(max_epochs=1, probability_threshold="auto", n_random_features=0, **TINY)
    assert alone.fit(X, y).probability_threshold_ == AUTO_THRESHOLD_FLOOR
    with pytest.raises(ValueError, match="probability_threshold"):
        AarenClassifier(probability_threshold="best", max_epochs=1, **TINY).fit(X, y)


def test_a_saved_classifier_keeps_the_threshold_chosen_at_fit(tmp_path):
    X, y = _panel(n=40, length=16)
    clf = AarenClassifier(max_epochs=2, batch_size=8, prefix_weight=0.5, n_random_features=200, **TINY).fit(
        X, y
    )
    clf.probability_threshold_ = 0.95  # (as a fit could have chosen; 0.75 is also the fallback)
    loaded = AarenClassifier.load(clf.save(tmp_path / "auto"))
    assert loaded.probability_threshold == "auto" and loaded.probability_threshold_ == 0.95
    for got, expected in zip(loaded.predict_early(X), clf.predict_early(X), strict=True):
        np.testing.assert_array_equal(got, expected)
    # a damaged value is refused; saved before "auto" (none saved): the parameter, or the floor
    with pytest.raises(ValueError, match="probability_threshold_"):
        loaded._saved_threshold(1.5)
    assert loaded._saved_threshold(None) == AUTO_THRESHOLD_FLOOR
    assert AarenClassifier(probability_threshold=0.6)._saved_threshold(None) == 0.6
