"""Fuzzing what is restored: mutated forecaster archives and OnnxStreamer state files.

Hypothesis mutates the tensors of a saved forecaster (its streams, counters, scaling and weights)
and the arrays of a streamer's saved state: rows or axes dropped or added, other dtypes, NaN, infinite,
negative and huge values, tensors swapped. Each mutated file is loaded and its streams continued in a
worker subprocess (:mod:`tests.engine._restore_worker`, one for the module, fed file after file), so a
crash fails the test instead of killing pytest. Every file must give either a ``ValueError`` at load,
or finite forecasts with ordered quantiles after the continued steps, equal to the untouched model's
when the mutation changed nothing. Mutations that no stream can hold (a wrong shape or dtype, an
infinite value, NaN where no missing value can be, a negative or impossible counter, a value beyond
the float32 range the network computes in) must be refused at load.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed')
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from aaren_ts import AarenForecaster  # noqa: E402
from aaren_ts.onnx import OnnxStreamer  # noqa: E402
from tests._params import TINY_FORECASTER  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    **TINY_FORECASTER,
    "interval_calibration": "aci",
}
FILES_PER_EXAMPLE = 8
# (no shrinking: a failure names the mutation and the tensor already, and each shrink step is a load)
FUZZ = settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SHAPES = ("drop row", "add row", "shrink axis", "add axis", "flatten")
VALUES = ("nan", "inf", "-inf", "negative", "huge")
KINDS = (*SHAPES, "dtype", *VALUES, "swap")
DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_)


# ------------------------------------------------------------------------ mutations
def mutate(a: np.ndarray, m: dict[str, Any]) -> np.ndarray:
    """``a`` changed by the mutation ``m`` (shape, dtype or one value; ``swap`` is applied by the caller)."""
    a = np.array(a, copy=True)
    kind = m["kind"]
    if a.ndim == 0 and kind in SHAPES:
        return a.reshape(1, 1)
    if kind == "drop row":
        return a[:-1]
    if kind == "add row":
        return np.concatenate([a, a[:1]]) if a.ndim else a[None]
    if kind == "shrink axis":
        axis = m["axis"] % max(a.ndim, 1)
        return np.delete(a, -1, axis=axis) if a.ndim and a.shape[axis] > 0 else a[None]
    if kind == "add axis":
        return a[..., None]
    if kind == "flatten":
        return a.reshape(-1) if a.ndim != 1 else a[:, None]
    if kind == "dtype":
        choices = [d for d in DTYPES if np.dtype(d) != a.dtype]
        return a.astype(choices[m["dtype"] % len(choices)])
    if a.size == 0:
        return a
    flat = a.reshape(-1)
    at = int(m["where"] * flat.size) % flat.size
    if a.dtype == np.bool_:
        flat[at] = not flat[at]
    elif a.dtype.kind in "iu":
        flat[at] = {"negative": -5, "huge": 2**62}.get(kind, flat[at])
    else:
        finite_max = float(np.finfo(a.dtype).max)
        value = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "huge": min(1e30, finite_max)}.get(kind)
        flat[at] = -abs(flat[at]) - 1.0 if kind == "negative" else value
    return a


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def mutations() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kind": st.sampled_from(KINDS),
            "target": st.integers(0, 10**6),
            "other": st.integers(0, 10**6),
            "axis": st.integers(0, 5),
            "dtype": st.integers(0, 10),
            "where": st.floats(0.0, 1.0, exclude_max=True),
        }
    )


# ------------------------------------------------------------------------ the files
def _read_payload(path: Path) -> tuple[dict[str, bytes], str, dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    name = next(n for n in entries if n != "_metadata")
    return entries, name, torch.load(io.BytesIO(entries[name]), weights_only=True)


def _write_payload(path: Path, entries: dict[str, bytes], name: str, payload: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    with zipfile.ZipFile(path, "w") as archive:
        for entry, data in {**entries, name: buffer.getvalue()}.items():
            archive.writestr(entry, data)


class ArchiveTargets:
    """The tensors of a saved forecaster a mutation can reach, each with what a mutation of it must give."""

    def __init__(self, payload: dict[str, Any], n_state: int) -> None:
        attributes = payload["attributes"]
        self.names = [f"streams[{k}]" for k in range(len(attributes["streams"]))]
        self.names += [
            "n_seen",
            "n_observed",
            "mean",
            "scale",
            *(f"weight {k}" for k in payload["state_dict"]),
        ]
        self.history = f"streams[{n_state}]"  # the window history: NaN marks values not yet observed

    @staticmethod
    def get(payload: dict[str, Any], name: str) -> np.ndarray:
        if name.startswith("streams["):
            return payload["attributes"]["streams"][int(name[8:-1])].numpy()
        if name.startswith("weight "):
            return payload["state_dict"][name[7:]].numpy()
        return payload["attributes"][name].numpy()

    @staticmethod
    def set(payload: dict[str, Any], name: str, value: np.ndarray) -> None:
        tensor = torch.from_numpy(np.ascontiguousarray(value))
        if name.startswith("streams["):
            payload["attributes"]["streams"][int(name[8:-1])] = tensor
        elif name.startswith("weight "):
            payload["state_dict"][name[7:]] = tensor
        else:
            payload["attributes"][name] = tensor

    def must_refuse(self, name: str, kind: str, original: np.ndarray) -> bool:
        """Whether no stream can hold ``original`` mutated by ``kind`` (it must then be refused)."""
        if original.dtype == np.bool_ and kind not in (*SHAPES, "dtype"):
            return False  # (a flipped flag)
        if kind in (*SHAPES, "dtype", "inf", "huge") and not name.startswith("weight"):
            return name != "mean" or kind != "huge"  # (a huge mean is a series in huge units)
        if name.startswith("weight"):
            return kind in (*SHAPES, "dtype", "nan", "inf", "-inf")
        if kind == "nan":
            return name != self.history
        if kind == "negative":
            return original.dtype.kind in "iu" or name == "scale"
        return False


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Any]:
    """A saved calibrated forecaster of three series, its ONNX export and a saved streamer state."""
    folder = tmp_path_factory.mktemp("fuzz")
    rng = np.random.default_rng(0)
    frames = {
        f"s{k}": pd.DataFrame({"y": 100.0 * (k + 1) + 10.0 * rng.normal(size=60).cumsum()}, index=range(60))
        for k in range(3)
    }
    forecaster = AarenForecaster(**TINY).fit(pd.concat(frames, names=["series", "time"]))
    archive = forecaster.save(folder / "model")
    onnx = forecaster.to_onnx(folder / "model.onnx")
    streamer = OnnxStreamer(onnx)
    mean = forecaster.engine_.mean[:, None, :1]
    streamer.partial_update(mean + rng.normal(size=(3, 2, 1)))
    state = folder / "state.npz"
    streamer.save_state(state)
    steps = mean + 5.0 * rng.normal(size=(3, 4, 1))
    n_state = len(forecaster.stream_state_tensors()) - 7  # before history (2), forecast (2), calibration (3)
    return {"archive": archive, "onnx": onnx, "state": state, "steps": steps, "n_state": n_state}


class Worker:
    """The worker subprocess: one request at a time; a crash ends the test with the file that caused it."""

    def __init__(self, steps: np.ndarray, onnx: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.engine._restore_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        self.ask({"steps": steps.tolist(), "onnx": os.fspath(onnx)})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait(timeout=30)
            stderr = self.process.stderr.read() if self.process.stderr else ""
            pytest.fail(f"the worker died (exit status {code}) on {request}:\n{stderr[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def worker(files) -> Any:
    running = Worker(files["steps"], files["onnx"])
    yield running
    running.close()


def _check(
    answer: dict[str, Any], reference: dict[str, Any], unchanged: bool, refuse: bool, what: str
) -> None:
    """One mutated file's outcome against the rules of the module docstring."""
    if answer["outcome"] == "refused":
        assert answer["type"] == "ValueError", f"{what}: refused with {answer}"
        assert len(answer["message"]) > 20, f"{what}: an unhelpful message {answer}"
        assert not unchanged, f"{what}: an unchanged file was refused: {answer}"
        return
    assert not refuse, f"{what}: must be refused at load, got {answer['outcome']}: {answer}"
    if answer["outcome"] == "failed later":  # the steps refused (state unchanged) by a scaling they fit
        assert answer["type"] == "ValueError" and "overflow" in answer["message"], f"{what}: {answer}"
        return
    assert answer["outcome"] == "ok", f"{what}: loaded, then {answer}"
    point, quantiles = np.asarray(answer["predict"]), np.asarray(answer["quantiles"])
    assert np.isfinite(point).all() and np.isfinite(quantiles).all(), f"{what}: non-finite forecasts"
    assert (np.diff(quantiles, axis=-1) >= 0).all(), f"{what}: crossing quantiles {quantiles}"
    if unchanged:
        np.testing.assert_array_equal(point, reference["predict"], err_msg=what)
        np.testing.assert_array_equal(quantiles, reference["quantiles"], err_msg=what)


def _batch(
    worker: Worker, kind: str, reference: dict[str, Any], files: list[tuple[Path, bool, bool, str]]
) -> None:
    for path, unchanged, refuse, what in files:
        _check(worker.ask({"kind": kind, "path": os.fspath(path)}), reference, unchanged, refuse, what)


@pytest.mark.slow
def test_the_worker_continues_untouched_files_like_the_models_themselves(files, worker) -> None:
    forecaster = AarenForecaster.load(files["archive"])
    forecaster.partial_update_array(files["steps"])
    answer = worker.ask({"kind": "archive", "path": os.fspath(files["archive"])})
    np.testing.assert_array_equal(answer["predict"], forecaster.predict_array())
    streamer = OnnxStreamer(files["onnx"]).load_state(files["state"])
    streamer.partial_update(files["steps"])
    answer = worker.ask({"kind": "state", "path": os.fspath(files["state"])})
    np.testing.assert_allclose(answer["quantiles"], streamer.predict_quantiles([0.1, 0.5, 0.9]), rtol=0)


def _mutated(
    originals: dict[str, np.ndarray], names: list[str], m: dict[str, Any]
) -> tuple[dict[str, np.ndarray], str, np.ndarray]:
    """The arrays after ``m``, the name of the one it targets, and that one's original."""
    name = names[m["target"] % len(names)]
    arrays = dict(originals)
    if m["kind"] == "swap":
        other = names[m["other"] % len(names)]
        arrays[name], arrays[other] = originals[other], originals[name]
    else:
        arrays[name] = mutate(originals[name], m)
    return arrays, name, originals[name]


@FUZZ
@given(batch=st.lists(mutations(), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
def test_mutated_forecaster_archives_are_refused_or_continue_soundly(files, worker, batch) -> None:
    entries, entry, payload = _read_payload(files["archive"])
    targets = ArchiveTargets(payload, files["n_state"])
    stream_names = [n for n in targets.names if not n.startswith("weight")]
    originals = {name: targets.get(payload, name) for name in targets.names}
    reference = worker.ask({"kind": "archive", "path": os.fspath(files["archive"])})
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        for k, m in enumerate(batch):
            if m["kind"] == "huge" and m["target"] % len(targets.names) >= len(stream_names):
                m = {**m, "kind": "nan"}  # (the weights' magnitudes are the model's own; see the docstring)
            names = stream_names if m["kind"] == "swap" else targets.names
            arrays, name, original = _mutated(originals, names, m)
            crafted = _read_payload(files["archive"])[2]
            for key, value in arrays.items():
                targets.set(crafted, key, value)
            path = Path(folder) / f"case{k}.zip"
            _write_payload(path, entries, entry, crafted)
            unchanged = all(_same(arrays[n], originals[n]) for n in originals)
            refuse = not unchanged and m["kind"] != "swap" and targets.must_refuse(name, m["kind"], original)
            cases.append((path, unchanged, refuse, f"{m['kind']} of {name}"))
        _batch(worker, "archive", reference, cases)


def _state_must_refuse(name: str, kind: str, original: np.ndarray, mutated: np.ndarray) -> bool:
    if name == "__n_seen__" and kind == "dtype" and mutated.dtype.kind in "iu":
        return False  # (the same count in another integer type)
    if original.dtype == np.bool_ and kind not in (*SHAPES, "dtype"):
        return False  # (a flipped flag)
    if kind in (*SHAPES, "dtype", "inf", "huge"):
        return name != "series_mean" or kind != "huge"
    if kind == "nan":
        return name != "history_values"
    if kind == "negative":
        return original.dtype.kind in "iu" or name == "series_scale"
    return False


@FUZZ
@given(batch=st.lists(mutations(), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
def test_mutated_streamer_states_are_refused_or_continue_soundly(files, worker, batch) -> None:
    with np.load(files["state"]) as saved:
        originals = {name: saved[name] for name in saved.files}
    names = sorted(originals)
    reference = worker.ask({"kind": "state", "path": os.fspath(files["state"])})
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        for k, m in enumerate(batch):
            arrays, name, original = _mutated(originals, names, m)
            path = Path(folder) / f"case{k}.npz"
            np.savez(path, **arrays)
            unchanged = all(_same(arrays[n], originals[n]) for n in originals)
            refuse = (
                not unchanged
                and m["kind"] != "swap"
                and _state_must_refuse(name, m["kind"], original, arrays[name])
            )
            cases.append((path, unchanged, refuse, f"{m['kind']} of {name}"))
        _batch(worker, "state", reference, cases)
