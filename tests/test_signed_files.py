"""Signed files: an archive, an ONNX export and a streamer's state signed with a key are read with that
key and refused, unread, once altered, when unsigned, or under another key; a signature is ignored
without a key."""

from __future__ import annotations

import secrets
import zipfile

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.estimators._persistence import PAYLOAD_ENTRY, SIGNATURE_ENTRY
from aaren_ts.utils.signing import MIN_KEY_BYTES, check_signature, key_bytes, signature
from tests._params import TINY_NETWORK

KEY = secrets.token_bytes(32)
OTHER = secrets.token_bytes(32)
TINY = {**TINY_NETWORK, "n_estimators": 1, "context_length": 8, "max_epochs": 1, "horizon": 3}


def _series() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"y": 50 + rng.normal(size=80).cumsum()})


@pytest.fixture(scope="module")
def forecaster() -> AarenForecaster:
    return AarenForecaster(**TINY).fit(_series(), fh=[1, 2, 3])


@pytest.fixture(scope="module")
def classifier() -> AarenClassifier:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 1, 16)), np.arange(12) % 2
    return AarenClassifier(**TINY_NETWORK, max_epochs=1, n_random_features=0).fit(X, y)


# ------------------------------------------------------------------------ the signature itself
def test_signature_depends_on_key_purpose_and_every_part() -> None:
    reference = signature(KEY, "purpose", [b"ab", b"c"])
    assert len(reference) == 64
    assert signature(KEY, "purpose", [b"ab", b"c"]) == reference
    for changed in (
        signature(OTHER, "purpose", [b"ab", b"c"]),
        signature(KEY, "another", [b"ab", b"c"]),
        signature(KEY, "purpose", [b"a", b"bc"]),  # the parts' boundaries count
        signature(KEY, "purpose", [b"ab", b"d"]),
    ):
        assert changed != reference
    check_signature(KEY, "purpose", [b"ab", b"c"], reference, "f")
    with pytest.raises(ValueError, match="does not match the signing key"):
        check_signature(OTHER, "purpose", [b"ab", b"c"], reference, "f")
    with pytest.raises(ValueError, match="is not signed"):
        check_signature(KEY, "purpose", [b"ab", b"c"], None, "f")


def test_short_or_mistyped_keys_are_refused() -> None:
    assert key_bytes("k" * MIN_KEY_BYTES) == b"k" * MIN_KEY_BYTES
    with pytest.raises(ValueError, match=f"at least {MIN_KEY_BYTES}"):
        key_bytes(b"short")
    with pytest.raises(TypeError, match="bytes or str"):
        key_bytes(1234)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ archives
@pytest.mark.parametrize("which", ["forecaster", "classifier"])
def test_signed_archive_round_trips_and_refuses_changes(which, request, tmp_path) -> None:
    model = request.getfixturevalue(which)
    path = model.save(tmp_path / "model", signing_key=KEY)
    with zipfile.ZipFile(path) as archive:
        assert SIGNATURE_ENTRY in archive.namelist()
    loaded = type(model).load(path, signing_key=KEY)
    if which == "forecaster":
        pd.testing.assert_frame_equal(loaded.predict(), model.predict())
    else:
        x = np.random.default_rng(1).normal(size=(3, 1, 16))
        np.testing.assert_array_equal(loaded.predict_proba(x), model.predict_proba(x))
    type(model).load(path)  # without a key the signature is not checked
    with pytest.raises(ValueError, match="does not match the signing key"):
        type(model).load(path, signing_key=OTHER)

    # the payload altered and the archive rebuilt as a careful attacker would (CRCs recomputed)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    payload = bytearray(members[PAYLOAD_ENTRY])
    payload[len(payload) // 2] ^= 0x01
    altered = tmp_path / "altered.zip"
    with zipfile.ZipFile(altered, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, bytes(payload) if name == PAYLOAD_ENTRY else data)
    with pytest.raises(ValueError, match="does not match the signing key"):
        type(model).load(altered, signing_key=KEY)

    unsigned = model.save(tmp_path / "unsigned")
    with pytest.raises(ValueError, match="is not signed"):
        type(model).load(unsigned, signing_key=KEY)


def test_a_signature_is_bound_to_the_estimator(forecaster, tmp_path) -> None:
    """A signed forecaster's payload under the classifier's name does not verify as a classifier."""
    path = forecaster.save(tmp_path / "model", signing_key=KEY)
    with pytest.raises(ValueError, match="does not match the signing key"):
        AarenClassifier.load(path, signing_key=KEY)


def test_a_bad_key_is_refused_before_anything_is_written(forecaster, tmp_path) -> None:
    with pytest.raises(ValueError, match="at least"):
        forecaster.save(tmp_path / "model", signing_key=b"short")
    assert not (tmp_path / "model.zip").exists()
    with pytest.raises(ValueError, match="signs the 'safe' format"):
        forecaster.save(tmp_path / "model", serialization_format="pickle", signing_key=KEY)


# ------------------------------------------------------------------------ ONNX exports and states
@pytest.fixture(scope="module")
def signed_export(forecaster, tmp_path_factory):
    pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
    pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript) is not installed')
    folder = tmp_path_factory.mktemp("signed")
    return forecaster.to_onnx(folder / "signed.onnx", signing_key=KEY), forecaster.to_onnx(
        folder / "plain.onnx"
    )


def test_signed_export_is_served_with_its_key_only(signed_export, forecaster, tmp_path) -> None:
    from aaren_ts.onnx import OnnxStreamer

    signed, plain = signed_export
    streamer = OnnxStreamer(signed, signing_key=KEY)
    np.testing.assert_allclose(streamer.predict()[:, 0], forecaster.predict()["y"].to_numpy(), rtol=1e-5)
    OnnxStreamer(signed)  # the checksum alone, as for any export
    with pytest.raises(ValueError, match="does not match the signing key"):
        OnnxStreamer(signed, signing_key=OTHER)
    with pytest.raises(ValueError, match="is not signed"):
        OnnxStreamer(plain, signing_key=KEY)


def test_altered_export_with_a_fresh_checksum_is_refused(signed_export, tmp_path) -> None:
    """An attacker who changes a weight and writes the checksum again passes the checksum, not the key."""
    import hashlib

    from aaren_ts.onnx import OnnxStreamer
    from aaren_ts.onnx._format import CHECKSUM_KEY, _checksum_entry

    data = bytearray(signed_export[0].read_bytes())
    key = _checksum_entry("0" * 64, CHECKSUM_KEY)[:-64]
    at = bytes(data).find(key) + len(key)
    data[len(data) // 3] ^= 0x01  # (in the weights: the metadata sits at the end)
    data[at : at + 64] = b"0" * 64
    data[at : at + 64] = hashlib.sha256(bytes(data)).hexdigest().encode()
    altered = tmp_path / "altered.onnx"
    altered.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match the signing key"):
        OnnxStreamer(altered, signing_key=KEY)


def test_signed_state_round_trips_and_refuses_changes(signed_export, tmp_path) -> None:
    from aaren_ts.onnx import OnnxStreamer

    streamer = OnnxStreamer(signed_export[0])
    streamer.partial_update(np.array([[51.0], [52.0]]))
    streamer.save_state(tmp_path / "state", signing_key=KEY)
    expected = streamer.predict()
    fresh = OnnxStreamer(signed_export[0]).load_state(tmp_path / "state", signing_key=KEY)
    np.testing.assert_array_equal(fresh.predict(), expected)
    OnnxStreamer(signed_export[0]).load_state(tmp_path / "state")  # a signature is ignored without a key

    with np.load(tmp_path / "state.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    first = streamer.spec.state[0]
    arrays[first] = arrays[first] + 1e-3  # plausible values: only the signature tells
    np.savez(tmp_path / "altered.npz", **arrays)
    untouched = OnnxStreamer(signed_export[0])
    before = untouched.state()
    with pytest.raises(ValueError, match="does not match the signing key"):
        untouched.load_state(tmp_path / "altered.npz", signing_key=KEY)
    assert all(np.array_equal(before[k], v) for k, v in untouched.state().items())

    streamer.save_state(tmp_path / "unsigned")
    with pytest.raises(ValueError, match="is not signed"):
        OnnxStreamer(signed_export[0]).load_state(tmp_path / "unsigned", signing_key=KEY)
