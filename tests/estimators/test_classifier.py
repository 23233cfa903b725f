"""AarenClassifier: inputs, labels, early classification, streaming, persistence and bad input."""

from __future__ import annotations

import io
import itertools
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenClassifier, NotFittedError
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,
}


def _panel(n: int = 24, n_channels: int = 2, length: int = 20, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Two classes that differ in the sign of channel 0's trend: learnable in a few epochs."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    t = np.linspace(-1, 1, length)
    X = rng.normal(scale=0.3, size=(n, n_channels, length))
    X[:, 0] += np.where(y == 1, 1.0, -1.0)[:, None] * t
    return X.astype(np.float32), y


def _unequal(n: int = 20, seed: int = 1) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = []
    for i in range(n):
        length = int(rng.integers(5, 25))
        t = np.linspace(-1, 1, length)
        s = rng.normal(scale=0.3, size=(2, length))
        s[0] += (1.0 if y[i] else -1.0) * t
        X.append(s)
    return X, y


@pytest.fixture(scope="module")
def fitted() -> tuple[AarenClassifier, np.ndarray, np.ndarray]:
    X, y = _panel()
    labels = np.where(y == 1, "up", "down")
    return AarenClassifier(max_epochs=30, **TINY).fit(X, labels), X, labels


@pytest.fixture(
    scope="module",
    params=[("aaren", "mean"), ("aaren", "last"), ("aaren", "attention"), ("transformer", "mean")],
)
def fitted_unequal(request: pytest.FixtureRequest) -> tuple[AarenClassifier, list[np.ndarray]]:
    backbone, readout = request.param
    X, y = _unequal()
    clf = AarenClassifier(max_epochs=3, backbone=backbone, readout=readout, **TINY).fit(X, y)
    return clf, X


# ------------------------------------------------------------------------------------------ basics
def test_learns_and_labels_like_sklearn(fitted):
    clf, X, labels = fitted
    assert list(clf.classes_) == ["down", "up"]
    assert clf.n_classes_ == 2 and clf.n_channels_ == 2
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    pred = clf.predict(X)
    assert pred.dtype.kind == "U" and set(pred) <= {"down", "up"}
    np.testing.assert_array_equal(pred, clf.classes_[proba.argmax(axis=1)])
    assert clf.score(X, labels) >= 0.9


def test_from_package_root():
    import aaren_ts

    assert aaren_ts.AarenClassifier is AarenClassifier


def test_input_containers_agree(fitted):
    """numpy3D, a list of arrays, df-list, pd-multiindex and nested_univ give the same probabilities."""
    from sktime.datatypes import convert_to

    clf, X, _ = fitted
    expected = clf.predict_proba(X)
    containers = [list(X), [pd.DataFrame(x.T) for x in X]]
    containers += [convert_to(X, to_type=m) for m in ("pd-multiindex", "nested_univ")]
    for container in containers:
        np.testing.assert_allclose(clf.predict_proba(container), expected, atol=1e-6)


def test_univariate_2d_input():
    X, y = _panel(n_channels=1)
    clf = AarenClassifier(max_epochs=2, **TINY).fit(X[:, 0], y)
    assert clf.n_channels_ == 1
    np.testing.assert_allclose(clf.predict_proba(X[:, 0]), clf.predict_proba(X), atol=1e-6)


def test_unequal_length_and_longer_test_series(fitted_unequal):
    clf, X = fitted_unequal
    proba = clf.predict_proba(X)
    # each series classified alone equals the padded batch: padding is masked
    for i in (0, 3, 7):
        np.testing.assert_allclose(clf.predict_proba([X[i]]), proba[i : i + 1], atol=1e-5)
    # test series longer than any training series (max 24) are fine
    long = [np.random.default_rng(2).normal(size=(2, 200)) for _ in range(3)]
    out = clf.predict_proba(long)
    assert out.shape == (3, 2) and np.isfinite(out).all()


def test_same_seed_same_predictions():
    X, y = _panel()
    first = AarenClassifier(max_epochs=3, dropout=0.2, **TINY).fit(X, y)
    b = AarenClassifier(max_epochs=3, dropout=0.2, **TINY).fit(X, y).predict_proba(X)
    params = {**TINY, "random_state": 1}
    other = AarenClassifier(max_epochs=3, dropout=0.2, **params).fit(X, y)
    np.testing.assert_array_equal(first.predict_proba(X), b)
    # (the random kernels alone tell this panel's classes apart with probabilities that round to 0
    # and 1 whatever the seed: the other seed shows in the network)
    assert not torch.allclose(first.module_.head[1].weight, other.module_.head[1].weight)


def _split_sizes(clf: AarenClassifier) -> tuple[int, int]:
    """The numbers of training and validation series of the last epoch."""
    history = clf.net_.history
    n_valid = sum(history[-1, "batches", :, "valid_batch_size"]) if "valid_loss" in history[-1] else 0
    return sum(history[-1, "batches", :, "train_batch_size"]), n_valid


def test_by_default_all_training_data_train_for_max_epochs():
    X, y = _panel(n=40)
    clf = AarenClassifier(max_epochs=3, **TINY).fit(X, y)
    assert _split_sizes(clf) == (40, 0)
    assert len(clf.net_.history) == 3
    assert "early_stopping" not in [name for name, _ in clf.net_.callbacks]


def test_a_patience_alone_holds_out_a_tenth_and_stops():
    X, y = _panel(n=40)
    # a learning rate too small to improve the validation loss by skorch's threshold: it stops after patience
    clf = AarenClassifier(max_epochs=20, patience=2, **{**TINY, "lr": 1e-9}).fit(X, y)
    assert _split_sizes(clf) == (36, 4)
    assert "early_stopping" in [name for name, _ in clf.net_.callbacks]
    assert len(clf.net_.history) == 3


def test_validation_fraction_alone_monitors_without_stopping():
    X, y = _panel(n=40)
    clf = AarenClassifier(max_epochs=3, validation_fraction=0.25, **{**TINY, "lr": 1e-9}).fit(X, y)
    assert _split_sizes(clf) == (30, 10)
    assert "valid_acc" in clf.net_.history[-1]
    assert len(clf.net_.history) == 3


def test_early_stopping_on_too_few_series_warns_and_trains_every_epoch():
    X, y = _panel(n=6)
    with pytest.warns(UserWarning, match=r"early stopping \(a patience\), but 6 training series are too few"):
        clf = AarenClassifier(max_epochs=2, patience=30, **TINY).fit(X, y)
    assert _split_sizes(clf) == (6, 0)
    assert len(clf.net_.history) == 2


def test_validation_split_and_early_stopping_use_training_data_only():
    X, y = _panel(n=40)
    clf = AarenClassifier(max_epochs=4, validation_fraction=0.25, patience=2, **TINY)
    clf.fit(X, y)
    history = clf.net_.history
    assert "valid_loss" in history[-1]
    n_valid = sum(history[-1, "batches", :, "valid_batch_size"])
    n_train = sum(history[-1, "batches", :, "train_batch_size"])
    assert (n_train, n_valid) == (30, 10)
    names = [name for name, _ in clf.net_.callbacks]
    assert "early_stopping" in names
    assert "progress_bar" not in names


def test_verbose_and_user_callbacks(capsys):
    from skorch.callbacks import EpochTimer

    X, y = _panel()
    user_cb = EpochTimer()
    clf = AarenClassifier(max_epochs=2, verbose=2, callbacks=[("timer", user_cb)], **TINY).fit(X, y)
    names = [name for name, _ in clf.net_.callbacks]
    assert "timer" in names
    assert "progress_bar" not in names  # the output is captured, not a terminal: no bar redrawn in place
    assert clf.callbacks[0][1] is user_cb  # the parameter itself is not mutated (cloned)
    captured = capsys.readouterr()
    assert "epoch" in captured.out  # skorch's epoch table...
    assert "\x1b[" not in captured.out + captured.err  # ...without colour codes
    AarenClassifier(max_epochs=2, verbose=1, **TINY).fit(X, y)
    captured = capsys.readouterr()  # verbose=1: a line a stage on standard error, no table
    assert captured.out == "" and "AarenClassifier.fit: network 1 of 1: 2 epochs" in captured.err


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_verbose_on_a_terminal_shows_a_bar_and_a_coloured_table(monkeypatch):
    out, err = _Terminal(), _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    X, y = _panel(n=40)
    clf = AarenClassifier(max_epochs=2, verbose=1, validation_fraction=0.25, **TINY).fit(X, y)
    assert "progress_bar" not in [name for name, _ in clf.net_.callbacks]
    assert "AarenClassifier.fit: done: 100%" in err.getvalue()  # one bar, over every network's epochs
    assert out.getvalue() == ""
    err.truncate(0)
    clf = AarenClassifier(max_epochs=2, verbose=2, validation_fraction=0.25, **TINY).fit(X, y)
    assert "progress_bar" in [name for name, _ in clf.net_.callbacks]
    assert "it/s" in err.getvalue()  # skorch's bar over each epoch's batches
    assert "valid_loss" in out.getvalue() and "\x1b[" in out.getvalue()  # skorch's colours mark the best


def test_silent_by_default(capsys):
    X, y = _panel()
    AarenClassifier(max_epochs=2, **TINY).fit(X, y).predict(X)
    captured = capsys.readouterr()
    assert captured.out == ""


# ------------------------------------------------------------------------------ early classification
def test_staged_predict_proba_is_causal(fitted_unequal):
    clf, X = fitted_unequal
    stages = list(clf.staged_predict_proba(X))
    assert len(stages) == max(x.shape[1] for x in X)
    np.testing.assert_allclose(stages[-1], clf.predict_proba(X), atol=1e-6)
    for t in (1, 4):  # stage t == the model applied to the first t points only
        np.testing.assert_allclose(stages[t - 1], clf.predict_proba([x[:, :t] for x in X]), atol=1e-5)


# ------------------------------------------------------------------------------------ streaming
def _chunks(x: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    bounds = [0, *cuts, x.shape[1]]
    return [x[:, a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("chunking", ["ones", "uneven"])
def test_partial_update_equals_whole_series(fitted_unequal, chunking):
    clf, X = fitted_unequal
    X = X[:6]
    expected = clf.predict_proba(X)
    clf.reset_stream()
    if chunking == "ones":
        # equal-length prefixes step by step, then each series' own remainder
        longest = max(x.shape[1] for x in X)
        for t in range(longest):
            clf.partial_update([x[:, t : t + 1] for x in X])
    else:
        rng = np.random.default_rng(0)
        pieces = [_chunks(x, sorted(rng.choice(np.arange(1, x.shape[1]), 2, replace=False))) for x in X]
        for k in range(3):
            clf.partial_update([p[k] for p in pieces])
    np.testing.assert_allclose(clf.predict_proba(), expected, atol=1e-5)
    np.testing.assert_array_equal(clf.predict(), clf.classes_[expected.argmax(axis=1)])


def test_partial_update_numpy_chunks_and_reset(fitted):
    clf, X, _ = fitted
    expected = clf.predict_proba(X[:4])
    clf.reset_stream()
    assert clf.n_streams_ == 0
    for a, b in ((0, 1), (1, 8), (8, 9), (9, 20)):
        clf.partial_update(X[:4, :, a:b])
    assert clf.n_streams_ == 4
    np.testing.assert_allclose(clf.predict_proba(), expected, atol=1e-5)
    # after a reset the next call starts new streams (another count is fine)
    clf.reset_stream().partial_update(X[:2])
    np.testing.assert_allclose(clf.predict_proba(), expected[:2], atol=1e-5)
    clf.reset_stream()


def test_no_streams_is_a_clear_error(fitted):
    clf, X, _ = fitted
    clf.reset_stream()
    with pytest.raises(ValueError, match="no ongoing streams"):
        clf.predict_proba()
    clf.partial_update([X[0][:, :3], X[1][:, :0]])
    with pytest.raises(ValueError, match=r"streams \[1\] have not received"):
        clf.predict()
    clf.reset_stream()


def test_streaming_cost_is_constant_in_history():
    """Aaren streams keep O(1) state: the state's size does not grow with the history."""
    X, y = _panel()
    clf = AarenClassifier(max_epochs=1, **TINY).fit(X, y)
    clf.partial_update(X[:2, :, :1])
    size_1 = sum(t.numel() for t in clf.stream_state_tensors())
    for _ in range(50):
        clf.partial_update(X[:2, :, :5])
    assert sum(t.numel() for t in clf.stream_state_tensors()) == size_1


# ---------------------------------------------------------------------------------- persistence
def test_pickle_round_trip_with_stream(fitted):
    clf, X, _ = fitted
    clf.reset_stream().partial_update(X[:3, :, :7])
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clone.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(clone.predict_proba(), clf.predict_proba())
    clone.partial_update(X[:3, :, 7:])
    np.testing.assert_allclose(clone.predict_proba(), clf.predict_proba(X[:3]), atol=1e-5)
    clf.reset_stream()


def test_save_load_without_pickle(fitted, tmp_path):
    import zipfile

    clf, X, _ = fitted
    path = clf.save(tmp_path / "model")
    assert path.name == "model.zip"
    loaded = AarenClassifier.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    assert loaded.get_params() == {**clf.get_params(), "callbacks": None}
    # the weights file loads with torch's weights_only loader (no code execution)
    with zipfile.ZipFile(path) as archive, archive.open("aaren_ts_payload.pt") as f:
        payload = torch.load(f, weights_only=True)
    assert payload["estimator"] == "AarenClassifier"
    # sktime's generic loader finds the class and uses the same safe path
    from sktime.base import load

    np.testing.assert_array_equal(load(str(tmp_path / "model")).predict_proba(X), clf.predict_proba(X))


def test_a_file_saved_before_the_heads_prefix_factors_loads_with_factors_of_one_and_an_even_mix(
    fitted, tmp_path
):
    import zipfile

    clf, X, _ = fitted
    assert clf.random_kernels_ is not None
    path = clf.save(tmp_path / "model")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    payload = torch.load(io.BytesIO(members["aaren_ts_payload.pt"]), weights_only=True)
    del payload["state_dict"]["head_gain"]  # as the files written before the factors existed,
    del payload["state_dict"]["head_weight"]  # and before the mixture's weights,
    payload["state_dict"]["kernel_gain"] = payload["state_dict"]["kernel_gain"][-1]  # with one shared
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    members["aaren_ts_payload.pt"] = buffer.getvalue()
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    loaded = AarenClassifier.load(tmp_path / "old.zip")
    ones = torch.ones_like(clf.module_.head_gain)
    assert torch.equal(loaded.module_.head_gain, ones)
    assert torch.equal(loaded.module_.head_weight, torch.full_like(ones, 0.5))
    shared = clf.module_.kernel_gain[-1].expand_as(clf.module_.kernel_gain)
    assert torch.equal(loaded.module_.kernel_gain, shared)
    reference = pickle.loads(pickle.dumps(clf))
    reference.module_.set_head_gains(ones, 0.5)
    reference.module_.kernel_gain.copy_(shared)
    np.testing.assert_array_equal(loaded.predict_proba(X), reference.predict_proba(X))


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a file written by"):
        AarenClassifier.load(bad)


# ------------------------------------------------------------------------------------ bad input
def _snapshot(clf: AarenClassifier) -> tuple[dict, list[torch.Tensor]]:
    weights = {k: v.clone() for k, v in clf.net_.module_.state_dict().items()}
    return weights, clf.stream_state_tensors()


def _assert_unchanged(clf: AarenClassifier, before: tuple[dict, list[torch.Tensor]]) -> None:
    weights, stream = before
    after_w, after_s = _snapshot(clf)
    assert weights.keys() == after_w.keys()
    for k in weights:
        assert torch.equal(weights[k], after_w[k]), k
    assert len(stream) == len(after_s)
    for a, b in zip(stream, after_s, strict=True):
        assert torch.equal(a, b)


def _bad_inputs(X: np.ndarray) -> list[tuple[object, type[Exception], str]]:
    nan = X.copy()
    nan[0, 0, 3] = np.nan
    inf = X.copy()
    inf[1, 1, 2] = np.inf
    return [
        (nan, ValueError, "NaN"),
        (inf, ValueError, "inf"),
        (X[0, 0], ValueError, "dimension"),
        (X[..., None], ValueError, "dimension"),
        (X[:, :1], ValueError, "channel"),
        (X[:0], ValueError, "empty"),
        ([], ValueError, "empty"),
        (X.astype(str).astype(object) + "x", TypeError, "numbers"),
        ("abc", TypeError, "unsupported type"),
    ]


def test_bad_input_to_predict_and_stream_leaves_state(fitted):
    clf, X, _ = fitted
    clf.reset_stream().partial_update(X[:3, :, :5])
    before = _snapshot(clf)
    proba_before = clf.predict_proba()
    for bad, exc, match in _bad_inputs(X):
        for method in (clf.predict, clf.predict_proba, clf.partial_update):
            with pytest.raises(exc, match=match):
                method(bad)
        _assert_unchanged(clf, before)
    # partial_update with the wrong number of streams or channels
    with pytest.raises(ValueError, match="3 streams are ongoing"):
        clf.partial_update(X[:2, :, :4])
    with pytest.raises(ValueError, match="channel"):
        clf.partial_update(X[:3, :1, :4])
    _assert_unchanged(clf, before)
    np.testing.assert_array_equal(clf.predict_proba(), proba_before)
    clf.reset_stream()


def test_bad_input_to_fit_leaves_fitted_model(fitted):
    clf, X, labels = fitted
    clf.reset_stream().partial_update(X[:3, :, :5])
    before = _snapshot(clf)
    proba = clf.predict_proba(X)
    for bad, exc, match in _bad_inputs(X):
        if match == "channel":
            continue  # any channel count is fine for a new fit
        with pytest.raises(exc, match=match):
            clf.fit(bad, labels[: len(bad)] if hasattr(bad, "__len__") and len(bad) else labels)
        _assert_unchanged(clf, before)
    for bad_y, match in (
        (labels[:5], "labels"),
        (np.linspace(0, 1, len(X)), "Unknown label type"),
        (None, "requires y"),
    ):
        with pytest.raises(ValueError, match=match):
            clf.fit(X, bad_y)
        _assert_unchanged(clf, before)
    _assert_unchanged(clf, before)
    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    clf.reset_stream()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_heads": 3}, "n_heads"),
        ({"readout": "max"}, "readout"),
        ({"backbone": "lstm"}, "backbone"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_bad_hyper_parameters(params, match):
    X, y = _panel()
    with pytest.raises(ValueError, match=match):
        AarenClassifier(**{**TINY, **params}).fit(X, y)


def test_unfitted_raises_not_fitted():
    X, _ = _panel()
    for method in ("predict", "predict_proba", "partial_update"):
        with pytest.raises(NotFittedError, match="has not been fitted"):
            getattr(AarenClassifier(), method)(X)
    import sklearn.exceptions
    import sktime.exceptions

    assert issubclass(NotFittedError, sklearn.exceptions.NotFittedError)
    assert issubclass(NotFittedError, sktime.exceptions.NotFittedError)


def test_single_class_follows_sktime():
    """sktime's contract (ensembles sub-sample): warn and predict the one class; streaming refuses."""
    X, _ = _panel()
    y = np.full(len(X), "only")
    with pytest.warns(UserWarning, match="single label"):
        clf = AarenClassifier(**TINY).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), y)
    with pytest.raises(ValueError, match="single class"):
        clf.partial_update(X)


# ------------------------------------------------------------------------------------- main job
@pytest.mark.slow
def test_classify_job_runs_on_bundled_data(capsys, tmp_path):
    """`aaren-ts classify` on JapaneseVowels, which ships with sktime (an empty data home: no download)."""
    import argparse

    from aaren_ts.jobs import classify

    parser = argparse.ArgumentParser()
    classify.add_arguments(parser)
    args = parser.parse_args(
        ["--max-epochs", "2", "--device", "cpu", "--data-home", str(tmp_path), "--no-download"]
    )
    code = classify.run(args)
    out = capsys.readouterr().out
    assert code == 0
    assert "JapaneseVowels: 270 train / 370 test series, 12 channel(s)" in out
    assert "test accuracy" in out and "paper, Aaren: 96.65 %" in out
    assert "fit time" in out and "predict time" in out
