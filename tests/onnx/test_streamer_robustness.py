"""OnnxStreamer under stress: threads sharing one streamer, values that would overflow, files whose
metadata or bytes were altered, quantiles that do not exist.

Two small models are exported once for the module (an export takes seconds): a forecaster of three
series with covariates (one known in the future) and online interval calibration, and a classifier.
"""

from __future__ import annotations

import base64
import io
import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed')

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.onnx import OnnxStreamer
from aaren_ts.onnx._format import CHECKSUM_KEY, SPEC_KEY, STATE_KEY, sealed_bytes
from aaren_ts.utils.files import temporaries
from aaren_ts.utils.limits import MAX_STANDARDISED
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,  # one network (the ensemble's own tests: test_forecaster_ensemble.py)
    "context_length": 8,
    "max_epochs": 1,
    "batch_size": 8,
    "horizon": 4,
}
SERIES = ["a", "b", "c"]
N_THREADS, N_CALLS = 4, 50


def _panel(n: int = 160) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three series in the hundreds (scales about 20-30), driven by a known and a past-only input."""
    rng = np.random.default_rng(0)
    t = np.arange(n)
    index = pd.MultiIndex.from_product([SERIES, t], names=["series", "time"])
    known = np.concatenate([np.sin(2 * np.pi * t / 9) for _ in SERIES])
    past = rng.normal(0, 1, 3 * n).cumsum() * 0.1
    level = np.repeat([100.0, 300.0, 500.0], n)
    y = level + 25 * np.sin(np.tile(t, 3) / 3) + 5 * known + rng.normal(0, 2, 3 * n)
    return pd.DataFrame({"y": y}, index=index), pd.DataFrame({"past": past, "known": known}, index=index)


@pytest.fixture(scope="module")
def forecaster_file(tmp_path_factory):
    y, X = _panel()
    est = AarenForecaster(**TINY, past_covariates=["past"], interval_calibration="aci").fit(y, X=X)
    return est.to_onnx(tmp_path_factory.mktemp("onnx") / "forecaster.onnx")


@pytest.fixture(scope="module")
def classifier_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2, 10)) * 3.0 + 50.0
    est = AarenClassifier(
        d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=1, n_estimators=1, random_state=0
    )
    return est.fit(X, np.arange(20) % 2).to_onnx(tmp_path_factory.mktemp("onnx") / "classifier.onnx")


def _step(streamer: OnnxStreamer) -> tuple[np.ndarray, np.ndarray]:
    """One ordinary observation of every stream (its series' mean) and of the covariates."""
    mean = streamer.state()["series_mean"]
    return mean[:, :1].copy(), mean[:, 1:].copy()


def _assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _hammer(calls) -> list[BaseException]:
    """Run every callable of ``calls`` (one list per thread) in its own thread, all released at once."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(own):
        start.wait()
        try:
            for call in own:
                call()
        except BaseException as err:  # reported by the test
            errors.append(err)

    threads = [threading.Thread(target=run, args=(own,)) for own in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


# ------------------------------------------------------------------------ threads
def test_concurrent_updates_of_one_forecaster_streamer_lose_nothing(forecaster_file):
    """Four threads update one streamer (the same observation each time, so the order cannot matter)
    while a fifth reads intervals: the result equals the sequential one, and every interval read is
    one the sequential run passes through (never a half-applied update)."""
    reference = OnnxStreamer(forecaster_file)
    y, X = _step(reference)
    seen = {_interval_key(reference)}
    for _ in range(N_THREADS * N_CALLS):
        reference.partial_update(y, X=X)
        seen.add(_interval_key(reference))

    shared = OnnxStreamer(forecaster_file)
    reads: list[bytes] = []
    updates = [[lambda: shared.partial_update(y, X=X)] * N_CALLS for _ in range(N_THREADS)]
    reader = [lambda: reads.append(_interval_key(shared))] * (2 * N_CALLS)
    assert _hammer([*updates, reader]) == []
    assert shared.n_seen == reference.n_seen == N_THREADS * N_CALLS
    _assert_same_state(shared.state(), reference.state())
    assert reads and set(reads) <= seen


def _future(streamer: OnnxStreamer) -> np.ndarray:
    """Ordinary future values of the known covariate, ``(n_streams, horizon, 1)``."""
    known = streamer.state()["series_mean"][:, 1 + streamer.spec.exog_columns.index("known")]
    return np.repeat(known[:, None, None], streamer.spec.horizon, axis=1)


def _interval_key(streamer: OnnxStreamer) -> bytes:
    lower, upper = streamer.predict_interval(0.8, X=_future(streamer))
    return lower.tobytes() + upper.tobytes()


def test_concurrent_updates_of_one_classifier_streamer_lose_nothing(classifier_file):
    rng = np.random.default_rng(1)
    chunk = rng.normal(size=(3, 2, 2)) * 3.0 + 50.0
    reference = OnnxStreamer(classifier_file)
    for _ in range(N_THREADS * 20):
        reference.partial_update(chunk)
    shared = OnnxStreamer(classifier_file)
    # the first update to take the lock starts the three streams; the others continue them
    assert _hammer([[lambda: shared.partial_update(chunk)] * 20 for _ in range(N_THREADS)]) == []
    assert shared.n_seen == reference.n_seen == N_THREADS * 20 * 2
    _assert_same_state(shared.state(), reference.state())
    np.testing.assert_array_equal(shared.predict_proba(), reference.predict_proba())


def test_a_reset_between_concurrent_updates_is_applied_whole(forecaster_file):
    """Resets racing with updates leave a state that some sequence of whole updates and resets gives:
    the exported state advanced by exactly ``n_seen`` observations."""
    reference = OnnxStreamer(forecaster_file)
    y, X = _step(reference)
    states = [reference.state()]
    for _ in range(N_CALLS):
        states.append(reference.partial_update(y, X=X).state())
    shared = OnnxStreamer(forecaster_file)
    updates = [[lambda: shared.partial_update(y, X=X)] * N_CALLS for _ in range(2)]
    resets = [lambda: shared.reset()] * 10
    assert _hammer([*updates, resets]) == []
    assert shared.n_seen <= N_CALLS * 2
    if shared.n_seen <= N_CALLS:
        _assert_same_state(shared.state(), states[shared.n_seen])


# ------------------------------------------------------------------------ altered files
def _proto(path):
    import onnx

    return onnx.load(path)


def _metadata(model) -> dict[str, str]:
    return {entry.key: entry.value for entry in model.metadata_props}


def _with_metadata(model, changes: dict[str, str | None]):
    """``model`` with its metadata entries changed (``None`` removes one), without its checksum."""
    entries = {**_metadata(model), **changes}
    entries.pop(CHECKSUM_KEY, None)
    del model.metadata_props[:]
    for key, value in entries.items():
        if value is not None:
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
    return model


def _weight_offset(path) -> int:
    """The offset, in the file, of the byte holding the sign and high exponent bits of a float32 in the
    middle of the largest weight tensor (flipping its bit 0x20 scales the weight by 2**±64, which the
    streamer of an unchecked file passes on to its forecasts)."""
    data = path.read_bytes()
    raw = max((t.raw_data for t in _proto(path).graph.initializer), key=len)
    assert len(raw) >= 64 and data.count(raw) == 1
    return data.find(raw) + (len(raw) // 2) // 4 * 4 + 3


def test_a_weight_with_a_flipped_bit_is_refused(forecaster_file, tmp_path):
    data = bytearray(forecaster_file.read_bytes())
    data[_weight_offset(forecaster_file)] ^= 0x20
    flipped = tmp_path / "flipped.onnx"
    flipped.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"flipped\.onnx is damaged or was altered after export: .* SHA-256"):
        OnnxStreamer(flipped)


def test_a_bit_flipped_anywhere_is_refused(forecaster_file, tmp_path):
    """Every one of 40 single-bit flips spread over the file (graph, weights, spec, state, checksum)
    is refused with a ValueError: none loads."""
    data = forecaster_file.read_bytes()
    rng = np.random.default_rng(3)
    checksum_at = data.find(CHECKSUM_KEY.encode())
    offsets = [*rng.integers(0, len(data), 36), checksum_at, checksum_at + 30, 0, len(data) - 1]
    for k, offset in enumerate(offsets):
        damaged = bytearray(data)
        damaged[offset] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"flip{k}.onnx"
        path.write_bytes(bytes(damaged))
        with pytest.raises(ValueError, match=r"damaged|not an ONNX model|not written by aaren_ts"):
            OnnxStreamer(path)


def test_a_file_of_the_previous_format_asks_to_export_again(forecaster_file, tmp_path):
    model = _proto(forecaster_file)
    spec = json.loads(_metadata(model)[SPEC_KEY])
    old = _with_metadata(model, {SPEC_KEY: json.dumps({**spec, "format_version": 1})})
    path = tmp_path / "old.onnx"
    path.write_bytes(old.SerializeToString())
    with pytest.raises(
        ValueError, match=r"format 1, which this version of aaren_ts no longer serves .* export it again"
    ):
        OnnxStreamer(path)


def test_a_file_without_its_checksum_is_refused(forecaster_file, tmp_path):
    path = tmp_path / "unsealed.onnx"
    path.write_bytes(_with_metadata(_proto(forecaster_file), {}).SerializeToString())
    with pytest.raises(ValueError, match="integrity checksum is missing"):
        OnnxStreamer(path)


def test_a_file_that_is_not_onnx_is_refused(tmp_path):
    path = tmp_path / "text.onnx"
    path.write_text("not a model")
    with pytest.raises(ValueError, match="is not an ONNX model written by to_onnx"):
        OnnxStreamer(path)


def test_a_resealed_file_loads(forecaster_file, tmp_path):
    """The checksum is the file's own: re-sealing the unchanged model gives a file that loads."""
    path = tmp_path / "resealed.onnx"
    path.write_bytes(sealed_bytes(_with_metadata(_proto(forecaster_file), {})))
    np.testing.assert_array_equal(
        OnnxStreamer(path).state()["output.loc"], OnnxStreamer(forecaster_file).state()["output.loc"]
    )


def _state_entry(model, change) -> str:
    """The model's initial-state entry after ``change(state)`` (a dict of arrays, changed in place)."""
    with np.load(io.BytesIO(base64.b64decode(_metadata(model)[STATE_KEY]))) as archive:
        state = {name: archive[name] for name in archive.files}
    change(state)
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _spec_entry(model, **changes) -> str:
    return json.dumps({**json.loads(_metadata(model)[SPEC_KEY]), **changes})


def _shorter_history(state):
    state["history_values"] = state["history_values"][:, 1:]
    state["history_observed"] = state["history_observed"][:, 1:]


def _history_in_float64(state):
    state["history_values"] = state["history_values"].astype(np.float64)


@pytest.mark.parametrize(
    ("spec", "state", "match"),
    [
        ({"observation": "obs"}, None, r"disagree on the inputs: the graph lacks \['obs'\] and has \['y'\]"),
        ({"n_channels": 2}, None, r"'series_mean' has per-stream shape \(3,\), its spec 4 channels"),
        ({"horizon": 5}, None, r"output.loc has shape \(3, 4, 1\); its spec says \(3, 5, 1\)"),
        ({"outputs": ["loc"]}, None, r"names the outputs \['loc'\]; a forecaster's are"),
        ({"series_ids": ["a", "b"]}, None, "lists 2 series; its initial state holds 3 streams"),
        (None, _shorter_history, r"'history_values' has 7 entries on axis 1; its metadata says 6"),
        (None, _history_in_float64, r"'history_values' is a tensor\(float\); its metadata says float64"),
    ],
    ids=["observation-name", "channels", "horizon", "outputs", "series", "static-dim", "dtype"],
)
def test_metadata_that_disagrees_with_the_graph_is_refused_at_load(
    forecaster_file, tmp_path, spec, state, match
):
    model = _proto(forecaster_file)
    changes = {}
    if spec is not None:
        changes[SPEC_KEY] = _spec_entry(model, **spec)
    if state is not None:
        changes[STATE_KEY] = _state_entry(model, state)
    path = tmp_path / "inconsistent.onnx"
    path.write_bytes(sealed_bytes(_with_metadata(model, changes)))  # sealed: the checksum matches
    with pytest.raises(ValueError, match=r"inconsistent\.onnx is not a consistent export: .*" + match):
        OnnxStreamer(path)


def _nan(name: str):
    def change(state):
        state[name] = state[name].copy()
        state[name].reshape(-1)[0] = np.nan

    return change


def _negative_scale(state):
    state["series_scale"] = -state["series_scale"]


@pytest.mark.parametrize(
    ("name", "change"),
    [("levels", _nan("levels")), ("output.loc", _nan("output.loc")), ("series_scale", _negative_scale)],
)
def test_embedded_streams_a_model_cannot_hold_are_refused_at_load(forecaster_file, tmp_path, name, change):
    model = _proto(forecaster_file)
    path = tmp_path / "crafted.onnx"  # sealed after the change: the checksum says nothing of tampering
    path.write_bytes(sealed_bytes(_with_metadata(model, {STATE_KEY: _state_entry(model, change)})))
    with pytest.raises(ValueError, match=rf"crafted\.onnx \(its embedded streams\): {re.escape(name)} "):
        OnnxStreamer(path)


def test_a_classifier_whose_classes_disagree_with_its_graph_is_refused(classifier_file, tmp_path):
    model = _proto(classifier_file)
    spec = json.loads(_metadata(model)[SPEC_KEY])
    changes = {SPEC_KEY: _spec_entry(model, classes=[*spec["classes"], 99])}
    path = tmp_path / "classes.onnx"
    path.write_bytes(sealed_bytes(_with_metadata(model, changes)))
    with pytest.raises(ValueError, match=r"'proba' has 2 entries on axis 1; its metadata says 3"):
        OnnxStreamer(path)


# ------------------------------------------------------------------------ values that would overflow
def _assert_unchanged(streamer: OnnxStreamer, before: dict, n_seen: int) -> None:
    assert streamer.n_seen == n_seen
    _assert_same_state(streamer.state(), before)


@pytest.mark.parametrize("value", [1e22, -1e38, 1e300])
def test_a_value_that_would_overflow_is_refused_naming_its_series(forecaster_file, value):
    streamer = OnnxStreamer(forecaster_file)
    y, X = _step(streamer)
    streamer.partial_update(y, X=X)
    before = streamer.state()
    steps = np.repeat(y[:, None], 3, axis=1)  # (3 series, 3 steps, 1 channel)
    steps[1, 2, 0] = value
    with pytest.raises(
        ValueError, match=r"y_new: the value -?1e\+\d+ \(series 'b', step 2, channel 0\) lies"
    ):
        streamer.partial_update(steps, X=np.repeat(X[:, None], 3, axis=1))
    _assert_unchanged(streamer, before, 1)


def test_a_covariate_that_would_overflow_is_refused_in_updates_and_forecasts(forecaster_file):
    streamer = OnnxStreamer(forecaster_file)
    y, X = _step(streamer)
    before = streamer.state()
    bad = X.copy()
    bad[2, streamer.spec.exog_columns.index("past")] = 1e25
    with pytest.raises(ValueError, match=r"X: the value 1e\+25 \(series 'c', step 0, covariate 'past'\)"):
        streamer.partial_update(y, X=bad)
    _assert_unchanged(streamer, before, 0)
    future = _future(streamer)
    future[0, 3, 0] = -1e30
    with pytest.raises(ValueError, match=r"\(series 'a', forecast step 4, covariate 'known'\)"):
        streamer.predict(X=future)


def test_the_bound_is_the_documented_number_of_standard_deviations(forecaster_file):
    """Just beyond MAX_STANDARDISED is refused; just within is taken, and the stream's forecasts and
    intervals stay finite through the 60 steps after it (the bound leaves float32 room)."""
    streamer = OnnxStreamer(forecaster_file)
    y, X = _step(streamer)
    scale = streamer.state()["series_scale"][:, :1]
    with pytest.raises(ValueError, match="takes at most 1e\\+12"):
        streamer.partial_update(y + 1.01 * MAX_STANDARDISED * scale, X=X)
    streamer.partial_update(y + 0.99 * MAX_STANDARDISED * scale, X=X)
    for _ in range(60):
        streamer.partial_update(y, X=X)
        lower, upper = streamer.predict_interval(0.9, X=_future(streamer))
        assert np.isfinite(streamer.predict(X=_future(streamer))).all()
        assert np.isfinite(lower).all() and np.isfinite(upper).all()


def test_a_classifier_value_that_would_overflow_is_refused(classifier_file):
    rng = np.random.default_rng(2)
    chunk = rng.normal(size=(3, 2, 4)) * 3.0 + 50.0
    streamer = OnnxStreamer(classifier_file)
    with pytest.raises(ValueError, match=r"X_new: the value .* \(stream 0, channel 0, time point 0\)"):
        streamer.partial_update(chunk * 1e30)  # no stream is started by a refused first call
    assert streamer.state() == {} and streamer.n_seen == 0
    streamer.partial_update(chunk)
    before = streamer.state()
    chunk[2, 1, 3] = 1e25
    with pytest.raises(ValueError, match=r"X_new: the value 1e\+25 \(stream 2, channel 1, time point 3\)"):
        streamer.partial_update(chunk)
    _assert_unchanged(streamer, before, 4)
    assert np.isfinite(streamer.predict_proba()).all()


@pytest.mark.parametrize(
    "values",
    [
        np.ones((3, 1), dtype=complex),
        np.ones((3, 1), dtype=bool),
        np.array([["1.0"], ["2.0"], ["3.0"]]),
        np.array([[1.0], [2.0], [None]], dtype=object),
        np.array([[1.0], [2.0], [3.0]], dtype=object),
        np.full((3, 1), np.datetime64("2024-01-01")),
    ],
    ids=["complex", "bool", "str", "object-None", "object-float", "datetime"],
)
def test_non_real_values_are_refused_with_a_type_error(forecaster_file, classifier_file, values):
    streamer = OnnxStreamer(forecaster_file)
    y, X = _step(streamer)
    before = streamer.state()
    dtype = re.escape(str(values.dtype))
    with pytest.raises(TypeError, match=rf"y_new must hold real numbers .* dtype {dtype}"):
        streamer.partial_update(values, X=X)
    with pytest.raises(TypeError, match=rf"X must hold real numbers .* dtype {dtype}"):
        streamer.partial_update(y, X=np.repeat(values, 2, axis=1))
    _assert_unchanged(streamer, before, 0)
    classifier = OnnxStreamer(classifier_file)
    with pytest.raises(TypeError, match=rf"X_new must hold real numbers .* dtype {dtype}"):
        classifier.partial_update(np.repeat(values[:, :, None], 2, axis=1))
    assert classifier.state() == {}


# ------------------------------------------------------------------------ quantiles that do not exist
@pytest.mark.parametrize(
    ("alpha", "error", "match"),
    [
        ([0.0, 0.5], ValueError, r"alpha must lie strictly between 0 and 1.* got \[0.0, 0.5\]"),
        ([0.5, 1.0], ValueError, "alpha must lie strictly between 0 and 1"),
        ([-0.1], ValueError, "alpha must lie strictly between 0 and 1"),
        ([float("nan")], ValueError, "alpha must lie strictly between 0 and 1"),
        ([1e-17, 0.5], ValueError, r"alpha must lie strictly between 0 and 1, at least 1e-16 from either"),
        ([], ValueError, "alpha is empty"),
        (["0.5"], TypeError, "alpha must hold real numbers"),
        ([True], TypeError, "alpha must hold real numbers"),
    ],
    ids=["zero", "one", "negative", "nan", "next-to-zero", "empty", "text", "bool"],
)
def test_quantiles_outside_the_open_unit_interval_are_refused(forecaster_file, alpha, error, match):
    streamer = OnnxStreamer(forecaster_file)
    with pytest.raises(error, match=match):
        streamer.predict_quantiles(alpha, X=_future(streamer))


def test_interval_coverage_must_lie_strictly_between_0_and_1(forecaster_file):
    streamer = OnnxStreamer(forecaster_file)
    future = _future(streamer)
    for coverage in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="coverage must lie strictly between 0 and 1"):
            streamer.predict_interval(coverage, X=future)
    for coverage in ("0.9", [0.8, 0.9]):
        with pytest.raises(TypeError, match="coverage must"):
            streamer.predict_interval(coverage, X=future)
    lower, upper = streamer.predict_interval(0.999, X=future)
    assert np.isfinite(lower).all() and np.isfinite(upper).all() and (lower < upper).all()
    quantiles = streamer.predict_quantiles(0.25, X=future)  # one probability, as the estimators take
    assert quantiles.shape == (3, TINY["horizon"], 1, 1) and np.isfinite(quantiles).all()


# ------------------------------------------------------------------------ saved streams
_STATE_SAVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from aaren_ts.onnx import OnnxStreamer

    streamer = OnnxStreamer(sys.argv[1])
    y = streamer.state()["series_mean"][:, None, :1].repeat(200, axis=1)
    X = streamer.state()["series_mean"][:, None, 1:].repeat(200, axis=1)
    streamer.partial_update(y, X=X)  # a state of some size (the calibration's rings filled)
    streamer.save_state(sys.argv[2])
    print("ready", flush=True)
    while True:
        streamer.partial_update(y[:, :1], X=X[:, :1])
        streamer.save_state(sys.argv[2])
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_save_state_killed_at_random_moments_leaves_a_loadable_state(forecaster_file, tmp_path):
    target = tmp_path / "streams.npz"
    rng = np.random.default_rng(11)
    for trial in range(4):
        saver = subprocess.Popen(
            [sys.executable, "-c", _STATE_SAVER, str(forecaster_file), str(target)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert saver.stdout.readline().strip() == "ready", saver.stderr.read()
            time.sleep(rng.uniform(0.0, 0.2))
        finally:
            saver.send_signal(signal.SIGKILL)
            saver.wait()
        assert saver.returncode == -signal.SIGKILL, f"trial {trial}: the saver ended before the kill"
        assert len(temporaries(target)) <= 1
        restored = OnnxStreamer(forecaster_file).load_state(target)
        assert restored.n_seen >= 200 and np.isfinite(restored.predict(X=_future(restored))).all()
    OnnxStreamer(forecaster_file).partial_update(*_step(OnnxStreamer(forecaster_file))).save_state(target)
    assert temporaries(target) == []


def test_a_damaged_state_file_is_refused_and_changes_nothing(forecaster_file, tmp_path):
    streamer = OnnxStreamer(forecaster_file)
    streamer.partial_update(*_step(streamer))
    streamer.save_state(tmp_path / "streams")  # numpy's rule: ".npz" appended
    data = (tmp_path / "streams.npz").read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    before = streamer.state()
    with pytest.raises(ValueError, match=r"truncated\.npz is not a readable state saved by save_state"):
        streamer.load_state(tmp_path / "truncated.npz")
    _assert_unchanged(streamer, before, 1)
    with pytest.raises(FileNotFoundError):
        streamer.load_state(tmp_path / "missing.npz")


def _altered(state: dict, name: str, edit) -> dict:
    changed = {k: v.copy() for k, v in state.items()}
    changed[name] = edit(changed[name])
    return changed


def _first(value):
    def edit(arr):
        arr.reshape(-1)[0] = value
        return arr

    return edit


@pytest.mark.parametrize(
    ("name", "edit", "match"),
    [
        ("encoder.0.a", _first(np.nan), r"encoder\.0\.a holds NaN, infinite or out-of-range"),
        ("encoder.0.m", _first(np.inf), r"encoder\.0\.m holds NaN"),
        ("levels", _first(1e30), r"levels holds NaN, infinite or out-of-range"),
        ("history_values", _first(np.inf), "history_values holds"),
        ("n_issued", lambda a: a + 7, "n_issued disagrees with the export's counts"),
        ("n_issued", lambda a: a * 0 - 5, "n_issued disagrees"),
        ("series_scale", lambda a: -a, "series_scale differs from this export's"),
        ("output.params", lambda a: -a, "output.params holds parameters of no 'normal' distribution"),
        ("output.loc", _first(1e300), r"output\.loc lies beyond"),
        ("issued", lambda a: a * np.array([1.0, -1.0], dtype=a.dtype), "issued holds parameters of no"),
        ("__n_seen__", lambda a: np.asarray([a]), "__n_seen__ is array"),
        ("__n_seen__", lambda a: np.asarray(2**62), "not a count of steps"),
    ],
)
def test_a_state_file_with_values_no_stream_has_is_refused(forecaster_file, tmp_path, name, edit, match):
    """Names, dtypes and shapes right, values impossible: refused naming the array, nothing changed."""
    streamer = OnnxStreamer(forecaster_file)
    streamer.partial_update(*_step(streamer))
    streamer.save_state(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as saved:
        arrays = {k: saved[k] for k in saved.files}
    np.savez(tmp_path / "altered.npz", **_altered(arrays, name, edit))
    before = streamer.state()
    with pytest.raises(ValueError, match=match):
        streamer.load_state(tmp_path / "altered.npz")
    _assert_unchanged(streamer, before, 1)
    assert OnnxStreamer(forecaster_file).load_state(tmp_path / "good.npz").n_seen == 1


@pytest.mark.parametrize(
    ("name", "edit", "match"),
    [
        ("seen", lambda a: a + 1, "seen disagrees with the"),
        ("output.proba", lambda a: a * 2, r"output\.proba is not a probability distribution"),
        ("encoder.0.c", _first(np.nan), r"encoder\.0\.c holds NaN"),
    ],
)
def test_a_classifier_state_with_values_no_stream_has_is_refused(
    classifier_file, tmp_path, name, edit, match
):
    streamer = OnnxStreamer(classifier_file)
    streamer.partial_update(np.full((2, 2, 3), 50.0))
    streamer.save_state(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as saved:
        arrays = {k: saved[k] for k in saved.files}
    np.savez(tmp_path / "altered.npz", **_altered(arrays, name, edit))
    with pytest.raises(ValueError, match=match):
        OnnxStreamer(classifier_file).load_state(tmp_path / "altered.npz")
    np.testing.assert_array_equal(
        OnnxStreamer(classifier_file).load_state(tmp_path / "good.npz").predict_proba(),
        streamer.predict_proba(),
    )


def test_a_compressed_state_file_is_refused_unread(forecaster_file, tmp_path):
    streamer = OnnxStreamer(forecaster_file)
    state = streamer.state()
    bomb = tmp_path / "bomb.npz"  # a few kilobytes that would inflate to 200 MB
    padding = np.zeros(50_000_000, dtype=np.float32)
    np.savez_compressed(bomb, **state, padding=padding, __n_seen__=np.asarray(0))
    assert bomb.stat().st_size < 1_000_000
    before = streamer.state()
    with pytest.raises(ValueError, match=r"is compressed .* refused unread"):
        streamer.load_state(bomb)
    assert all(np.array_equal(before[k], v) for k, v in streamer.state().items())


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timers")
def test_an_interrupt_during_an_update_leaves_the_streams_before_or_fully_advanced(forecaster_file):
    """Ctrl-C (a KeyboardInterrupt raised at a random moment of a many-step update, 20 trials): the
    streamer holds the state from before the call or the fully advanced one, never one between."""
    streamer = OnnxStreamer(forecaster_file)
    y, X = _step(streamer)
    n_steps = 200
    ys, Xs = np.repeat(y[:, None], n_steps, axis=1), np.repeat(X[:, None], n_steps, axis=1)
    before = streamer.state()
    tic = time.perf_counter()
    advanced = OnnxStreamer(forecaster_file).partial_update(ys, X=Xs).state()
    duration = time.perf_counter() - tic

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    rng = np.random.default_rng(0)
    outcomes = []
    try:
        for _ in range(20):
            trial = OnnxStreamer(forecaster_file)
            signal.setitimer(signal.ITIMER_REAL, float(rng.uniform(0.05, 1.2) * duration))
            try:
                trial.partial_update(ys, X=Xs)
                time.sleep(0.4 * duration)  # a late interrupt lands here
            except KeyboardInterrupt:
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0.0)
            state = trial.state()
            if all(np.array_equal(state[k], before[k]) for k in before):
                outcomes.append("before")
            elif all(np.array_equal(state[k], advanced[k]) for k in advanced):
                outcomes.append("advanced")
            else:
                outcomes.append("torn")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert "torn" not in outcomes, outcomes
    assert "before" in outcomes, outcomes  # the interrupts did land inside the calls
    assert trial.partial_update(y, X=X).n_seen >= 1  # and the streamer still works
