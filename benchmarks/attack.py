"""Attack both estimators and OnnxStreamer as a careless or hostile user would, and count the outcomes.

Every case runs in a worker subprocess (one per category, restarted after a crash), so a segmentation
fault or an abort is counted as a crash instead of ending the run. Each outcome is one of:

* ``clear``: a ``ValueError`` or ``TypeError`` whose message names the problem (matches the case's
  pattern), the object left as it was;
* ``obscure``: any other exception, or a message that does not name the problem;
* ``silent wrong``: no error, but a non-finite result, or a result that changed where it should not;
* ``crash``: the worker died by a signal;
* ``state lost``: the object changed although its input was refused, an update was lost under
  concurrency, or an interrupted save left no loadable file;
* ``correct``: a case that should succeed did, with the right result.

Usage: ``python benchmarks/attack.py`` (about two minutes on two cores). Prints a Markdown table per
category and writes it, with every case's outcome, to ``benchmarks/results/attack.md``.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

OUTCOMES = ["clear", "obscure", "silent wrong", "crash", "state lost", "correct"]
CATEGORIES = {
    "shapes": "bad shapes and dtypes",
    "values": "non-finite and overflowing values",
    "archives": "crafted archives",
    "files": "crafted ONNX and state files",
    "threads": "concurrency",
    "saves": "interrupted saves",
    "times": "irregular time indexes",
    "api": "API misuse (coverage, alpha, horizon, fh, order of calls)",
}
TINY = {
    "d_model": 8,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 16,
    "context_length": 6,
    "max_epochs": 1,
    "device": "cpu",
    "random_state": 0,
    "horizon": 3,
}
CLASSIFIER = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 1, "random_state": 0}


# ------------------------------------------------------------------------ data and fixtures
def _panel(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frames = {
        f"s{k}": pd.DataFrame({"y": 100.0 * (k + 1) + 10.0 * rng.normal(size=n).cumsum()}, index=range(n))
        for k in range(3)
    }
    return pd.concat(frames, names=["series", "time"])


def _series(n: int = 60) -> pd.DataFrame:
    return pd.DataFrame({"y": 100.0 + np.random.default_rng(1).normal(size=n).cumsum()})


def _classes() -> tuple[np.ndarray, np.ndarray]:
    return np.random.default_rng(0).normal(size=(20, 2, 10)) * 3.0 + 50.0, np.arange(20) % 2


def prepare(folder: Path) -> None:
    """Fit the models once and write what the workers load: archives, ONNX files, a streamer state."""
    from aaren_ts import AarenClassifier, AarenForecaster
    from aaren_ts.onnx import OnnxStreamer

    panel = AarenForecaster(**TINY, interval_calibration="aci").fit(_panel())
    panel.save(folder / "panel")
    panel.to_onnx(folder / "panel.onnx")
    AarenForecaster(**TINY).fit(_series()).save(folder / "single")
    X, y = _classes()
    classifier = AarenClassifier(**CLASSIFIER).fit(X, y)
    classifier.save(folder / "classifier")
    classifier.to_onnx(folder / "classifier.onnx")
    streamer = OnnxStreamer(folder / "panel.onnx")
    streamer.partial_update(panel.engine_.mean[:, None, :1])
    streamer.save_state(folder / "state.npz")


class Fixtures:
    """What a case works on, loaded afresh on demand (a case may change it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def panel(self) -> Any:
        from aaren_ts import AarenForecaster

        return AarenForecaster.load(self.folder / "panel.zip")

    def single(self) -> Any:
        from aaren_ts import AarenForecaster

        return AarenForecaster.load(self.folder / "single.zip")

    def classifier(self) -> Any:
        from aaren_ts import AarenClassifier

        return AarenClassifier.load(self.folder / "classifier.zip")

    def streamer(self, kind: str = "panel") -> Any:
        from aaren_ts.onnx import OnnxStreamer

        return OnnxStreamer(self.folder / f"{kind}.onnx")


# ------------------------------------------------------------------------ judging outcomes
def _snapshot(obj: Any) -> list[np.ndarray]:
    """Everything of ``obj``'s streams, to tell whether a refused call changed it."""
    if hasattr(obj, "stream_state_tensors"):
        arrays = [t.detach().cpu().numpy().copy() for t in obj.stream_state_tensors()]
        return [*arrays, np.asarray(obj.engine_.n_seen).copy(), np.asarray([str(obj.cutoff)])]
    if hasattr(obj, "state") and callable(obj.state):
        return [*obj.state().values(), np.asarray(obj.n_seen)]
    return [np.asarray(obj.predict_proba(_classes()[0][:2]))]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        for x, y in zip(a, b, strict=True)
    )


def _finite(value: Any) -> bool:
    if isinstance(value, pd.DataFrame | pd.Series):
        value = value.to_numpy(dtype=np.float64)
    if isinstance(value, tuple):
        return all(_finite(v) for v in value)
    arr = np.asarray(value)
    return arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


def refused(call: Callable[[], Any], pattern: str, obj: Any = None) -> tuple[str, str]:
    """The outcome of ``call``, which must raise a ``ValueError``/``TypeError`` matching ``pattern``
    and leave ``obj`` (if given) as it was."""
    before = None if obj is None else _snapshot(obj)
    try:
        result = call()
    except (ValueError, TypeError) as err:
        message = f"{type(err).__name__}: {err}"
        if obj is not None and not _same(_snapshot(obj), before):
            return "state lost", message
        return ("clear" if re.search(pattern, str(err), re.IGNORECASE) else "obscure"), message
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {err}"
    finite = "finite" if _finite(result) else "NON-FINITE"
    return "silent wrong", f"accepted ({finite} result)"


def _refuses(call: Callable[[], Any]) -> tuple[str, str]:
    return refused(call, "real|complex|numbers")


def works(call: Callable[[], Any], check: Callable[[Any], bool] = _finite) -> tuple[str, str]:
    """The outcome of ``call``, which must succeed with a result passing ``check``."""
    try:
        result = call()
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {err}"
    return ("correct", "as expected") if check(result) else ("silent wrong", "a wrong or non-finite result")


# ------------------------------------------------------------------------ the cases
def cases_shapes(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    f, s, c, st, ct = fx.panel(), fx.single(), fx.classifier(), fx.streamer(), fx.streamer("classifier")
    X, _ = _classes()
    one = pd.DataFrame({"y": [101.0]}, index=[60])
    out = {
        "array: wrong channels": lambda: refused(
            lambda: f.partial_update_array(np.ones((3, 1, 2))), "shape", f
        ),
        "array: 4-D": lambda: refused(lambda: f.partial_update_array(np.ones((3, 1, 1, 1))), "shape", f),
        "array: too few series": lambda: refused(lambda: f.partial_update_array(np.ones((2, 1))), "shape", f),
        "array: empty steps": lambda: refused(lambda: f.partial_update_array(np.ones((3, 0, 1))), "shape", f),
        "fit: 3-D (1, 144, 1)": lambda: refused(
            lambda: type(s)(**TINY).fit(np.ones((1, 144, 1))), "n_timepoints|layout"
        ),
        "fit: empty frame": lambda: refused(
            lambda: type(s)(**TINY).fit(_series().iloc[:0]), "empty|observation"
        ),
        "update: two columns for one": lambda: refused(
            lambda: s.partial_update(pd.DataFrame({"y": [1.0], "z": [1.0]}, index=[60])), "column", s
        ),
        "classifier: wrong channels": lambda: refused(lambda: c.predict_proba(X[:, :1]), "channel"),
        "classifier: 4-D": lambda: refused(lambda: c.predict_proba(X[..., None]), "dimension|3D|shape"),
        "classifier: empty": lambda: refused(lambda: c.predict_proba(X[:0]), "empty"),
        "streamer: wrong shape": lambda: refused(lambda: st.partial_update(np.ones((2, 1, 1))), "shape", st),
        "classifier streamer: wrong channels": lambda: refused(
            lambda: ct.partial_update(np.ones((2, 3, 4))), "shape", ct
        ),
    }
    for kind, values in {
        "complex": np.array([1 + 2j]),
        "bool": np.array([True]),
        "str": np.array(["101"]),
        "object": np.array([101.0], dtype=object),
    }.items():
        out[f"array: {kind}"] = lambda v=values: refused(
            lambda: f.partial_update_array(np.repeat(v[None, :, None], 3, 0)), "real numbers", f
        )
        out[f"pandas update: {kind}"] = lambda v=values: refused(
            lambda: s.partial_update(pd.DataFrame({"y": v}, index=[60])), "real numbers|dtype", s
        )
        out[f"classifier: {kind}"] = lambda v=values: (works if v.dtype == object else _refuses)(
            lambda: c.predict_proba(np.broadcast_to(v[0], X.shape).astype(v.dtype))
        )  # (an object array of numbers is numbers)
        out[f"streamer: {kind}"] = lambda v=values: refused(
            lambda: st.partial_update(np.broadcast_to(v[0], (3, 1, 1)).astype(v.dtype)), "real numbers", st
        )
    out["pandas fit: bool"] = lambda: refused(
        lambda: type(s)(**TINY).fit(_series() > 100), "real numbers|bool"
    )
    del one
    return out


def cases_values(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    f, s, c, st, ct = fx.panel(), fx.single(), fx.classifier(), fx.streamer(), fx.streamer("classifier")
    X, _ = _classes()
    out: dict[str, Callable[[], tuple[str, str]]] = {}
    for value in (np.inf, -np.inf, 1e22, 1e38, 1e300):
        step = np.full((3, 1, 1), 100.0)
        step[1] = value
        out[f"array: {value:g}"] = lambda v=step: refused(
            lambda: f.partial_update_array(v), "infinite|overflow", f
        )
        frame = pd.DataFrame({"y": [value]}, index=[60])
        out[f"pandas: {value:g}"] = lambda v=frame: refused(lambda: s.partial_update(v), "inf|overflow", s)
        out[f"streamer: {value:g}"] = lambda v=step: refused(
            lambda: st.partial_update(v), "non-finite|overflow", st
        )
        out[f"classifier: X * {value:g}"] = lambda v=value: refused(
            lambda: c.predict_proba(X * v), "inf|overflow|standard deviations"
        )
        out[f"classifier streamer: {value:g}"] = lambda v=value: refused(
            lambda: ct.partial_update(np.full((2, 2, 3), v)), "non-finite|overflow|standard deviations", ct
        )
    out["array: NaN is a missing value"] = lambda: works(
        lambda: f.partial_update_array(np.full((3, 1, 1), np.nan)).predict_array()
    )
    out["streamer: NaN"] = lambda: refused(
        lambda: st.partial_update(np.full((3, 1, 1), np.nan)), "non-finite", st
    )
    out["classifier: NaN"] = lambda: refused(lambda: c.predict_proba(np.where(X > 50, np.nan, X)), "NaN")
    out["fit: all NaN"] = lambda: refused(lambda: type(s)(**TINY).fit(_series() * np.nan), "NaN|observ")
    out["fit: constant series"] = lambda: works(
        lambda: type(s)(**TINY).fit(_series() * 0 + 5).predict(fh=[1])
    )
    out["fit: values 1e300"] = lambda: refused(lambda: type(s)(**TINY).fit(_series() * 1e298), "rescale")
    return out


def _payload_edit(source: Path, target: Path, edit: Callable[[dict], None], compress: bool = False) -> None:
    import torch

    with zipfile.ZipFile(source) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    name = next(n for n in entries if n != "_metadata")
    payload = torch.load(io.BytesIO(entries[name]), weights_only=True)
    edit(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    entries[name] = buffer.getvalue()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(target, "w", compression=method) as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)


def _streams(index: int, change: Callable[[Any], Any]) -> Callable[[dict], None]:
    def edit(payload: dict) -> None:
        streams = payload["attributes"]["streams"]
        streams[index] = change(streams[index].clone())

    return edit


def _first(value: float) -> Callable[[Any], Any]:
    def change(t: Any) -> Any:
        t.view(-1)[0] = value
        return t

    return change


def cases_archives(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    import torch

    from aaren_ts import AarenForecaster

    source = fx.folder / "panel.zip"
    work = Path(tempfile.mkdtemp())
    steps = fx.panel().engine_.mean[:, None, :1] + 1.0

    def load_and_step(path: Path) -> Any:
        f = AarenForecaster.load(path)
        f.partial_update_array(steps)
        return f.predict_quantiles_array([0.1, 0.5, 0.9])

    def crafted(
        name: str, edit: Callable[[dict], None], compress: bool = False
    ) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.zip"
            _payload_edit(source, path, edit, compress)
            return refused(lambda: load_and_step(path), "saved|damaged|altered|compressed|weight|must be")

        return run

    def raw(name: str, data: bytes) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.zip"
            path.write_bytes(data)
            return refused(lambda: load_and_step(path), "not a file written|damaged|truncated|unexpected")

        return run

    good = source.read_bytes()
    bomb = io.BytesIO()
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(bomb, "w") as out:
        for name in archive.namelist():
            out.writestr(name, archive.read(name))
        out.writestr("extra", b"0" * 1000)
    return {
        "ring shrunk": crafted("ring", _streams(-2, lambda t: t[:, :1].clone())),
        "negative issued count": crafted("neg", _streams(-1, lambda t: t * 0 - 3)),
        "issued count beyond seen": crafted("big", _streams(-1, lambda t: t + 10**9)),
        "NaN encoder state": crafted("nan", _streams(0, _first(np.nan))),
        "encoder state 1e30": crafted("huge", _streams(2, _first(1e30))),
        "negative forecast spread": crafted("spread", _streams(-4, lambda t: -t)),
        "levels NaN": crafted("levels", _streams(-3, _first(np.nan))),
        "history +inf": crafted("hist", _streams(3, _first(np.inf))),
        "encoder state float16": crafted("f16", _streams(0, lambda t: t.half())),
        "weight shape": crafted(
            "wshape",
            lambda p: p["state_dict"].update({k: v[:-1] for k, v in list(p["state_dict"].items())[:1]}),
        ),
        "weight dtype": crafted(
            "wdtype",
            lambda p: p["state_dict"].update({k: v.double() for k, v in list(p["state_dict"].items())[:1]}),
        ),
        "weights NaN": crafted(
            "wnan",
            lambda p: p["state_dict"].update({k: v * np.nan for k, v in list(p["state_dict"].items())[:1]}),
        ),
        "missing attribute": crafted("missing", lambda p: p["attributes"].pop("mean")),
        "counters float": crafted(
            "float", lambda p: p["attributes"].update(n_seen=p["attributes"]["n_seen"] * 1.5)
        ),
        "scale negative": crafted("scale", lambda p: p["attributes"].update(scale=-p["attributes"]["scale"])),
        "series ids of another length": crafted("ids", lambda p: p["attributes"]["series_ids"].append("x")),
        "params wrong type": crafted("params", lambda p: p["params"].update(horizon="three")),
        "compressed payload": crafted("zip", lambda p: None, compress=True),
        "truncated": raw("truncated", good[: len(good) // 2]),
        "extra member": raw("extra", bomb.getvalue()),
        "not a zip": raw("text", b"hello" * 100),
        "untouched (control)": lambda: works(lambda: load_and_step(source)),
        "torch tensor in place of a list": crafted(
            "tensor", lambda p: p["attributes"].update(streams=torch.zeros(3))
        ),
    }


def cases_files(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    from aaren_ts.onnx import OnnxStreamer

    work = Path(tempfile.mkdtemp())
    onnx = (fx.folder / "panel.onnx").read_bytes()

    def onnx_case(name: str, data: bytes) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.onnx"
            path.write_bytes(data)

            def use() -> Any:
                streamer = OnnxStreamer(path)
                streamer.partial_update(np.full((3, 1, 1), 100.0))
                return streamer.predict()

            return refused(use, "damaged|checksum|not an ONNX|altered|consistent|format")

        return run

    flipped = bytearray(onnx)
    flipped[len(onnx) // 2] ^= 0x10
    with np.load(fx.folder / "state.npz") as saved:
        good = {k: saved[k] for k in saved.files}

    def state_case(
        name: str, change: Callable[[dict], None], kind: str = "panel"
    ) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            arrays = {k: v.copy() for k, v in good.items()}
            change(arrays)
            path = work / f"{name}.npz"
            np.savez(path, **arrays)
            streamer = fx.streamer(kind)
            streamer.partial_update(np.full((3, 1, 1), 100.0))

            def use() -> Any:
                streamer.load_state(path)
                streamer.partial_update(np.full((3, 1, 1), 100.0))
                return streamer.predict_quantiles([0.1, 0.5, 0.9])

            return refused(use, "saved state|holds|disagree|differs|dtype|count|no stream|readable", streamer)

        return run

    def set_first(name: str, value: float) -> Callable[[dict], None]:
        def change(arrays: dict) -> None:
            arrays[name].reshape(-1)[0] = value

        return change

    def pickled(arrays: dict) -> None:
        arrays["levels"] = np.array([object()], dtype=object)

    return {
        "onnx: a bit flipped": onnx_case("flip", bytes(flipped)),
        "onnx: truncated": onnx_case("trunc", onnx[: len(onnx) // 2]),
        "onnx: not onnx": onnx_case("text", b"hello" * 100),
        "onnx: empty": onnx_case("empty", b""),
        "onnx: spec edited": onnx_case("spec", onnx.replace(b'"horizon": 3', b'"horizon": 4')),
        "state: NaN encoder": state_case("nan", set_first("encoder.0.a", np.nan)),
        "state: levels 1e30": state_case("levels", set_first("levels", 1e30)),
        "state: issued count +7": state_case("count", lambda a: a.update(n_issued=a["n_issued"] + 7)),
        "state: negative spread": state_case(
            "spread", lambda a: a.update({"output.params": -a["output.params"]})
        ),
        "state: other scaling": state_case("scale", lambda a: a.update(series_scale=a["series_scale"] * 2)),
        "state: n_seen -1": state_case("seen", lambda a: a.update(__n_seen__=np.asarray(-1))),
        "state: dtype": state_case("dtype", lambda a: a.update(levels=a["levels"].astype(np.float64))),
        "state: a stream dropped": state_case("rows", lambda a: a.update(levels=a["levels"][:-1])),
        "state: object array": state_case("pickle", pickled),
        "state: history inf": state_case("hist", set_first("history_values", np.inf)),
        "state: of the classifier": state_case(
            "clf", lambda a: a.clear() or a.update(seen=np.ones(2, np.int64))
        ),
    }


def _hammer(calls: list[Callable[[], Any]]) -> None:
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> None:
        barrier.wait()
        call()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def cases_threads(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    def forecaster_updates() -> tuple[str, str]:
        f, reference = fx.panel(), fx.panel()
        step = f.engine_.mean[:, None, :1] + 1.0
        for _ in range(4 * 20):
            reference.partial_update_array(step)
        _hammer([lambda: [f.partial_update_array(step) for _ in range(20)] for _ in range(4)])
        same = np.array_equal(f.predict_array(), reference.predict_array()) and np.array_equal(
            f.engine_.n_seen, reference.engine_.n_seen
        )
        return ("correct", "equal to sequential") if same else ("state lost", "differs from sequential")

    def forecaster_pandas() -> tuple[str, str]:
        s = fx.single()
        errors: list[str] = []

        def one(k: int) -> None:
            try:
                s.partial_update(pd.DataFrame({"y": [101.0]}, index=[60]))
            except ValueError as err:
                errors.append(str(err))

        _hammer([lambda k=k: one(k) for k in range(4)])
        ok = s.n_seen_ == 61 and len(errors) == 3
        return ("correct", "one taken, three refused") if ok else ("state lost", f"n_seen {s.n_seen_}")

    def predictions_during_updates() -> tuple[str, str]:
        f = fx.panel()
        reference = copy.deepcopy(f)
        step = f.engine_.mean[:, None, :1] + 1.0
        seen = [reference.predict_array()]
        for _ in range(20):
            seen.append(reference.partial_update_array(step).predict_array())
        reads: list[np.ndarray] = []
        _hammer(
            [lambda: [f.partial_update_array(step) for _ in range(10)]] * 2
            + [lambda: [reads.append(f.predict_array()) for _ in range(30)]]
        )
        torn = sum(not any(np.array_equal(r, s) for s in seen) for r in reads)
        return ("correct", f"{len(reads)} reads") if torn == 0 else ("silent wrong", f"{torn} torn reads")

    def streamer_updates(kind: str) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            st, reference = fx.streamer(kind), fx.streamer(kind)
            values = np.full((3, 1, 1), 100.0) if kind == "panel" else np.full((2, 2, 1), 50.0)
            for _ in range(4 * 15):
                reference.partial_update(values)
            _hammer([lambda: [st.partial_update(values) for _ in range(15)] for _ in range(4)])
            same = st.n_seen == reference.n_seen and _same(_snapshot(st), _snapshot(reference))
            return ("correct", "equal to sequential") if same else ("state lost", f"n_seen {st.n_seen}")

        return run

    def disjoint() -> tuple[str, str]:
        a, b, reference = fx.panel(), fx.panel(), fx.panel()
        step = a.engine_.mean[:, None, :1] + 2.0
        for _ in range(10):
            reference.partial_update_array(step)
        _hammer([lambda e=e: [e.partial_update_array(step) for _ in range(10)] for e in (a, b)])
        same = all(np.array_equal(e.predict_array(), reference.predict_array()) for e in (a, b))
        return ("correct", "independent") if same else ("state lost", "interfered")

    return {
        "forecaster: 4 threads x 20 array updates": forecaster_updates,
        "forecaster: 4 threads racing one timestamp": forecaster_pandas,
        "forecaster: predictions during updates": predictions_during_updates,
        "streamer: 4 threads x 15 updates": streamer_updates("panel"),
        "classifier streamer: 4 threads x 15 updates": streamer_updates("classifier"),
        "two forecasters in two threads": disjoint,
    }


_SAVER = """
import sys, numpy as np
from aaren_ts import AarenForecaster
from aaren_ts.onnx import OnnxStreamer
kind, source, target = sys.argv[1:4]
f = AarenForecaster.load(source)
streamer = OnnxStreamer(source.replace(".zip", ".onnx")) if kind != "save" else None
print("ready", flush=True)
while True:
    if kind == "save":
        f.save(target)
    elif kind == "to_onnx":
        f.to_onnx(target)
    else:
        streamer.partial_update(f.engine_.mean[:, None, :1])
        streamer.save_state(target)
"""


def cases_saves(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    from aaren_ts import AarenForecaster
    from aaren_ts.onnx import OnnxStreamer

    work = Path(tempfile.mkdtemp())
    source = os.fspath(fx.folder / "panel.zip")
    loaders = {
        "save": (work / "model.zip", lambda p: AarenForecaster.load(p).predict_array()),
        "to_onnx": (work / "model.onnx", lambda p: OnnxStreamer(p).predict()),
        "save_state": (work / "state.npz", lambda p: fx.streamer().load_state(p).predict()),
    }

    def trial(kind: str, seed: int) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            target, load = loaders[kind]
            process = subprocess.Popen(
                [sys.executable, "-c", _SAVER, kind, source, os.fspath(target)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            process.stdout.readline()
            time.sleep(np.random.default_rng(seed).uniform(0.2, 1.5))
            process.send_signal(signal.SIGKILL)
            process.wait()
            if not target.exists():
                return "correct", "killed before the first save finished: nothing written"
            try:
                result = load(target)
            except Exception as err:
                return "state lost", f"the file left is unloadable: {type(err).__name__}: {err}"
            return ("correct", "loadable") if _finite(result) else ("silent wrong", "non-finite")

        return run

    return {f"{kind} killed #{k}": trial(kind, k) for kind in loaders for k in range(3)}


def cases_times(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    from aaren_ts import AarenForecaster

    rng = np.random.default_rng(0)
    values = 100.0 + rng.normal(size=60).cumsum()
    irregular = pd.DatetimeIndex(
        pd.Timestamp("2020") + pd.to_timedelta(np.sort(rng.choice(600, 60, False)), "h")
    )
    hourly = pd.date_range("2020", periods=60, freq="h")

    def fitted(index: pd.Index) -> Any:
        return AarenForecaster(**TINY).fit(pd.DataFrame({"y": values}, index=index))

    def datetime_panel() -> Any:
        frames = {k: pd.DataFrame({"y": values + 10.0 * i}, index=hourly) for i, k in enumerate("ab")}
        y = pd.concat(frames, names=["series", "time"])
        return AarenForecaster(**TINY).fit(y).predict(fh=[1, 2])

    s = fitted(hourly)
    return {
        "irregular DatetimeIndex": lambda: refused(
            lambda: fitted(irregular).predict(fh=[1]), "irregular|frequency|freq|regular"
        ),
        "duplicated timestamps": lambda: refused(
            lambda: fitted(hourly.insert(5, hourly[5])[:60]), "increasing|duplicate"
        ),
        "decreasing index": lambda: refused(lambda: fitted(hourly[::-1]), "increasing|sorted"),
        "a gap after the cutoff": lambda: refused(
            lambda: s.partial_update(pd.DataFrame({"y": [1.0]}, index=[hourly[-1] + pd.Timedelta("3h")])),
            "gap",
            s,
        ),
        "an overlap with the cutoff": lambda: refused(
            lambda: s.partial_update(pd.DataFrame({"y": [1.0]}, index=[hourly[-1]])), "overlap", s
        ),
        "an integer index after a datetime one": lambda: refused(
            lambda: s.partial_update(pd.DataFrame({"y": [1.0]}, index=[60])), "index|time|type|frequency", s
        ),
        "PeriodIndex": lambda: works(
            lambda: fitted(pd.period_range("2020", periods=60, freq="M")).predict(fh=[1])
        ),
        "hourly DatetimeIndex": lambda: works(lambda: s.predict(fh=[1, 2])),
        "panel with a DatetimeIndex": lambda: works(datetime_panel),
    }


def cases_api(fx: Fixtures) -> dict[str, Callable[[], tuple[str, str]]]:
    from aaren_ts import AarenClassifier, AarenForecaster

    s, st, c = fx.single(), fx.streamer(), fx.classifier()
    X, _ = _classes()
    out: dict[str, Callable[[], tuple[str, str]]] = {}
    for coverage in ([], "0.9", ["0.9"], 1.5, 0.0, float("nan"), None, True):
        out[f"predict_interval(coverage={coverage!r})"] = lambda v=coverage: refused(
            lambda: s.predict_interval(fh=[1], coverage=v), "coverage"
        )
    for alpha in ([], "0.1", 0.0, 1.0, [0.5, 2.0]):
        out[f"predict_quantiles(alpha={alpha!r})"] = lambda v=alpha: refused(
            lambda: s.predict_quantiles(fh=[1], alpha=v), "alpha"
        )
    out["predict_quantiles_array([0, 1])"] = lambda: refused(
        lambda: s.predict_quantiles_array([0.0, 1.0]), "alpha"
    )
    out["streamer predict_interval(1.0)"] = lambda: refused(lambda: st.predict_interval(1.0), "coverage")
    out["streamer predict_quantiles([])"] = lambda: refused(lambda: st.predict_quantiles([]), "alpha")
    out["horizon=100000"] = lambda: refused(
        lambda: AarenForecaster(**{**TINY, "horizon": 100_000}).fit(_series(144)), "horizon.*GB"
    )
    out["fh beyond the horizon"] = lambda: refused(lambda: s.predict(fh=[10]), "horizon")
    out["fh=0"] = lambda: refused(lambda: s.predict(fh=[0]), "fh|horizon|step|positive|future")
    out["fh negative"] = lambda: refused(lambda: s.predict(fh=[-1]), "fh|horizon|step|positive|future")
    out["predict before fit"] = lambda: refused(lambda: AarenForecaster(**TINY).predict(fh=[1]), "fit")
    out["partial_update before fit"] = lambda: refused(
        lambda: AarenForecaster(**TINY).partial_update(_series()), "fit"
    )
    out["unknown series id"] = lambda: refused(lambda: s.predict_array(series_ids=["nope"]), "unknown", s)
    out["d_model=-1"] = lambda: refused(
        lambda: AarenForecaster(**{**TINY, "d_model": -1}).fit(_series()), "d_model"
    )
    out["distribution='cauchy'"] = lambda: refused(
        lambda: AarenForecaster(**TINY, distribution="cauchy").fit(_series()), "distribution"
    )
    out["classifier: one class"] = lambda: refused(
        lambda: AarenClassifier(**CLASSIFIER).fit(X, np.zeros(20)), "class"
    )
    out["classifier: labels of another length"] = lambda: refused(
        lambda: AarenClassifier(**CLASSIFIER).fit(X, np.zeros(5)),
        "length|samples|instances|inconsistent|labels",
    )
    out["classifier predict_proba: finite for ordinary data"] = lambda: works(lambda: c.predict_proba(X))
    return out


CASES = {
    "shapes": cases_shapes,
    "values": cases_values,
    "archives": cases_archives,
    "files": cases_files,
    "threads": cases_threads,
    "saves": cases_saves,
    "times": cases_times,
    "api": cases_api,
}


# ------------------------------------------------------------------------ running
def worker(category: str, folder: Path, skip: int) -> None:
    """Run the cases of ``category`` from the ``skip``-th on, one JSON line before and after each."""
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    cases = CASES[category](Fixtures(folder))
    for k, (name, case) in enumerate(cases.items()):
        if k < skip:
            continue
        print(json.dumps({"start": name}), flush=True)
        try:
            outcome, detail = case()
        except Exception as err:  # the case's own set-up failed
            outcome, detail = "obscure", f"{type(err).__name__}: {err}"
        print(json.dumps({"case": name, "outcome": outcome, "detail": detail[:300]}), flush=True)
    print(json.dumps({"done": True}), flush=True)


def run_category(category: str, folder: Path) -> list[dict[str, str]]:
    """The outcome of every case of ``category``: workers restarted after each crash."""
    results: list[dict[str, str]] = []
    while True:
        process = subprocess.Popen(
            [sys.executable, __file__, "--worker", category, "--fixtures", os.fspath(folder), "--skip",
             str(len(results))],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        current, done = None, False
        for line in process.stdout:
            message = json.loads(line)
            if "start" in message:
                current = message["start"]
            elif "case" in message:
                results.append(message)
                current = None
            else:
                done = True
        code = process.wait()
        if done:
            return results
        if current is None:  # died outside a case: count nothing more
            return results
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        results.append({"case": current, "outcome": "crash", "detail": f"the worker died: {how}"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker")
    parser.add_argument("--fixtures")
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for attack.md (default benchmarks/results)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, Path(args.fixtures), args.skip)
        return
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
    from _common import markdown_table, results_dir

    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        prepare(Path(folder))
        outcomes = {category: run_category(category, Path(folder)) for category in CASES}
    header = ["category", "cases tried", "clear errors", "obscure errors", "silent wrong", "crashes",
              "state lost", "correct"]  # fmt: skip
    rows, totals = [], np.zeros(len(OUTCOMES) + 1, dtype=int)
    for category, results in outcomes.items():
        counts = [sum(r["outcome"] == o for r in results) for o in OUTCOMES]
        totals += [len(results), *counts]
        rows.append([CATEGORIES[category], len(results), *counts])
    rows.append(["**total**", *totals.tolist()])
    table = markdown_table(header, rows)
    details = [
        [category, r["case"], r["outcome"], r["detail"].replace("|", "/").replace("\n", " ")[:160]]
        for category, results in outcomes.items()
        for r in results
    ]
    report = (
        "# Attack on AarenForecaster, AarenClassifier and OnnxStreamer\n\n"
        f"`python benchmarks/attack.py`\n\n{table}\n\n## Every case\n\n"
        + markdown_table(["category", "case", "outcome", "detail"], details)
        + "\n"
    )
    path = results_dir(args.out) / "attack.md"
    path.write_text(report)
    print(table)
    print(f"\nevery case: {path}")


if __name__ == "__main__":
    main()
