"""What both estimators share: one parameter table, one name per concept, safe persistence of streams."""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenClassifier, AarenForecaster, NotFittedError
from aaren_ts.estimators._params import SHARED_CONSTRAINTS
from aaren_ts.estimators._persistence import PAYLOAD_ENTRY
from tests._params import TINY_NETWORK


def _panel(n: int = 12, length: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    X = rng.normal(scale=0.3, size=(n, 2, length)).astype(np.float32)
    X[:, 0] += np.where(y == 1, 1.0, -1.0)[:, None] * np.linspace(-1, 1, length)
    return X, y


def _series(n: int = 80) -> pd.Series:
    t = np.arange(n)
    return pd.Series(np.sin(t / 4) + 0.05 * t, index=pd.RangeIndex(n), name="y")


@pytest.fixture(scope="module")
def classifier() -> tuple[AarenClassifier, np.ndarray]:
    X, y = _panel()
    return AarenClassifier(max_epochs=2, **TINY_NETWORK).fit(X, y), X


@pytest.fixture(scope="module", params=["aaren", "transformer"])
def forecaster(request: pytest.FixtureRequest) -> AarenForecaster:
    params = {
        **TINY_NETWORK,
        "backbone": request.param,
        "context_length": 6,
        "max_epochs": 1,
    }
    return AarenForecaster(horizon=3, **params).fit(_series()[:60])


# ------------------------------------------------------------------------------ one parameter table
def test_shared_parameters_have_one_name_and_one_check() -> None:
    clf, fc = set(AarenClassifier.get_param_names()), set(AarenForecaster.get_param_names())
    assert set(SHARED_CONSTRAINTS) == clf & fc


@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_every_parameter_is_checked_at_fit_naming_it(cls) -> None:
    names = sorted(cls.get_param_names())
    unchecked = []
    for name in names:
        est = cls(**{**TINY_NETWORK, name: object()})  # nothing accepts a bare object
        try:
            est.fit(*_panel()) if cls is AarenClassifier else est.fit(_series()[:40], fh=[1, 2])
        except (TypeError, ValueError) as err:
            if name not in str(err):
                unchecked.append((name, str(err)[:80]))
        else:
            unchecked.append((name, "accepted"))
    assert unchecked == []


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"num_threads": 0}, "num_threads"),
        ({"lr_schedule": "step"}, "lr_schedule"),
        ({"lr_decay": 1.5}, "lr_decay"),
        ({"dropout": 1.0}, "dropout"),
        ({"patience": 0}, "patience"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"n_heads": 3}, "n_heads"),
        ({"d_model": 32768}, "d_model"),
        ({"n_layers": 100_000}, "n_layers"),
        ({"patience": 2.5}, "patience"),
        ({"backbone": "lstm"}, "backbone"),
    ],
)
@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_bad_shared_parameter_is_named_by_both(cls, params, match) -> None:
    est = cls(**{**TINY_NETWORK, **params})
    with pytest.raises(ValueError, match=match):
        if cls is AarenClassifier:
            est.fit(*_panel())
        else:
            est.fit(_series(), fh=[1, 2])


@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_both_raise_one_not_fitted_error(cls) -> None:
    import sklearn.exceptions
    import sktime.exceptions

    with pytest.raises(NotFittedError) as info:
        cls().save("never")
    assert isinstance(info.value, sklearn.exceptions.NotFittedError)
    assert isinstance(info.value, sktime.exceptions.NotFittedError)


@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_num_threads_is_applied_and_restored(cls) -> None:
    before = torch.get_num_threads()
    with cls(num_threads=1)._torch_context():
        inside = torch.get_num_threads()
    assert inside == 1 and torch.get_num_threads() == before


# ------------------------------------------------------------------------ streams saved and loaded
def test_classifier_stream_saved_midway_continues_bit_identically(classifier, tmp_path) -> None:
    clf, X = classifier
    clf.reset_stream().partial_update(X[:3, :, :7])
    loaded = AarenClassifier.load(clf.save(tmp_path / "clf"))
    assert loaded.n_streams_ == 3
    for a, b in zip(loaded.stream_state_tensors(), clf.stream_state_tensors(), strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b)
    np.testing.assert_array_equal(loaded.predict_proba(), clf.predict_proba())
    loaded.partial_update(X[:3, :, 7:])
    clf.partial_update(X[:3, :, 7:])
    np.testing.assert_array_equal(loaded.predict_proba(), clf.predict_proba())
    clf.reset_stream()


def test_classifier_without_streams_saves_none(classifier, tmp_path) -> None:
    clf, _ = classifier
    loaded = AarenClassifier.load(clf.reset_stream().save(tmp_path / "clf"))
    assert loaded.n_streams_ == 0 and loaded.stream_state_tensors() == []
    with pytest.raises(ValueError, match="no ongoing streams"):
        loaded.predict_proba()


def test_forecaster_stream_saved_midway_continues_bit_identically(forecaster, tmp_path) -> None:
    y = _series()
    f = pickle.loads(pickle.dumps(forecaster)).partial_update(y[60:65])
    loaded = AarenForecaster.load(f.save(tmp_path / "f"))
    for a, b in zip(loaded.stream_state_tensors(), f.stream_state_tensors(), strict=True):
        assert torch.equal(a, b)
    loaded.partial_update(y[65:72])
    f.partial_update(y[65:72])
    pd.testing.assert_series_equal(loaded.predict(fh=[1, 2, 3]), f.predict(fh=[1, 2, 3]))


# ------------------------------------------------------------------------ crafted archives
class _Marker:
    """Unpickling this creates a file: proof that code from the archive ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _craft(source, target, replace: dict[str, bytes]) -> None:
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, replace.get(name, src.read(name)))


@pytest.mark.parametrize("which", ["classifier", "forecaster"])
def test_load_never_runs_code_from_the_archive(which, classifier, forecaster, tmp_path) -> None:
    est, cls = (classifier[0], AarenClassifier) if which == "classifier" else (forecaster, AarenForecaster)
    good = est.save(tmp_path / "good")
    marker = tmp_path / "code_ran"

    # 1. a malicious _metadata entry (sktime.base.load would unpickle it): load() never reads it
    evil_meta = tmp_path / "evil_meta.zip"
    _craft(good, evil_meta, {"_metadata": pickle.dumps(_Marker(str(marker)))})
    assert isinstance(cls.load(evil_meta), cls)
    assert not marker.exists()

    # 2. a payload that is a pickle executing code: refused by the weights-only reader
    evil_payload = tmp_path / "evil_payload.zip"
    buffer = tmp_path / "payload.pt"
    torch.save({"estimator": cls.__name__, "format_version": 1, "x": _Marker(str(marker))}, buffer)
    _craft(good, evil_payload, {PAYLOAD_ENTRY: buffer.read_bytes()})
    with pytest.raises(pickle.UnpicklingError):
        cls.load(evil_payload)
    assert not marker.exists()


def test_load_names_the_users_file_when_its_format_is_another(forecaster, tmp_path) -> None:
    good = forecaster.save(tmp_path / "good")
    with zipfile.ZipFile(good) as archive:
        payload = torch.load(
            archive.extract(PAYLOAD_ENTRY, tmp_path / "unpacked"), map_location="cpu", weights_only=True
        )
    payload["format_version"] = 2  # written by an older aaren_ts (two rings of issued forecasts)
    buffer = tmp_path / "old_payload.pt"
    torch.save(payload, buffer)
    old = tmp_path / "old.zip"
    _craft(good, old, {PAYLOAD_ENTRY: buffer.read_bytes()})
    with pytest.raises(ValueError, match=r"old\.zip' was saved in format version 2; .* or fit again"):
        AarenForecaster.load(old)
