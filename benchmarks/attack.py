"""Attack both estimators and OnnxStreamer as a careless or hostile user would, and count the outcomes.

Every case runs in a worker subprocess (one per category; with ``--quick`` one for all), restarted after
a crash or a hang, so a segmentation fault, an abort or a deadlock is counted as a crash instead of ending
the run. Each outcome is one of:

* ``clear``: a ``ValueError`` or ``TypeError`` (where sktime's contract says so, a
  ``NotImplementedError``) whose message names the problem (matches the case's pattern), the object left
  as it was; where a case times a refusal, one that takes more than 10 s or grows the process by more
  than 1 GB is not clear (it counts as obscure);
* ``obscure``: any other exception, or a message that does not name the problem;
* ``silent wrong``: no error, but a non-finite result, or a result that differs from the exact expectation;
* ``crash``: the worker died by a signal or stopped answering, or a forked child hung;
* ``state lost``: the object changed although its input was refused or its call interrupted, an update
  was lost under concurrency, or an interrupted save left no loadable file;
* ``correct``: a case that should succeed did, with the expected result (checked exactly).

Usage: ``python benchmarks/attack.py`` (several minutes on two cores); ``--quick`` runs one or two cases
of each category with the fewest trials and one network per model (about a minute), ``--categories``
some categories only. Prints a Markdown table per category and writes it, with every case's outcome, to
``benchmarks/results/attack.md``, and the counts and outcomes to ``attack.json`` beside it.
"""

from __future__ import annotations

import argparse
import base64
import copy
import io
import json
import os
import pickle
import queue
import re
import resource
import select
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
from typing import Any, ClassVar

import numpy as np
import pandas as pd

OUTCOMES = ["clear", "obscure", "silent wrong", "crash", "state lost", "correct"]
CATEGORIES = {
    "shapes": "bad shapes and dtypes",
    "values": "non-finite and overflowing values",
    "archives": "crafted archives",
    "files": "crafted ONNX and state files",
    "threads": "concurrency (writers and readers)",
    "saves": "interrupted saves",
    "times": "irregular time indexes and time zones",
    "api": "API misuse (coverage, alpha, horizon, fh, order of calls)",
    "transactions": "all or nothing (refused, failed and interrupted updates and refits)",
    "identity": "series ids, column names and row order",
    "bounds": "sizes past their bounds, decompression bombs",
    "numerics": "forks, extreme quantile levels, large offsets",
}
#: The cases ``--quick`` runs: one or two of each category.
QUICK = {
    "shapes": ["array: wrong channels", "pandas update: str"],
    "values": ["array: inf", "classifier: X * 1e+38", "classifier: fit on X * 1e300 (its spread overflows)"],
    "archives": [
        "NaN encoder state",
        "classifier: channel_scale negative",
        "signed: a weight altered, CRCs recomputed",
    ],
    "files": ["state: NaN encoder", "onnx: embedded levels NaN (resealed)"],
    "threads": [
        "readers: 7 threads read a forecaster while one streams",
        "forecaster: 4 threads x 20 array updates",
    ],
    "saves": ["save killed #0"],
    "times": ["tz: a naive update for an aware model", "tz: the next hour given in UTC"],
    "api": ["fh=0", "predict_quantiles(alpha=0.0)"],
    "transactions": [
        "panel: a new series with inf is refused, nothing added",
        "array update of 2000 series interrupted at random moments",
        "update refused after fine-tuning (a new series of 1e300): weights and streams kept",
        "forecaster: Ctrl-C in a refit's training (a callback raises it)",
        "forecaster: Ctrl-C in an update's fine-tuning (a callback raises it)",
        "classifier: Ctrl-C in a refit's training (a callback raises it)",
    ],
    "identity": [
        "aware Timestamp ids keep type and zone through save/load",
        "classifier: shuffled rows, same probabilities",
    ],
    "bounds": ["archive: n_layers=100000", "state file: a compressed member (a bomb)"],
    "numerics": ["fork after multi-threaded inference", "predict_quantiles(alpha=[1e-17])"],
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
#: What ``--quick`` fits instead: one network per model, few random kernels.
QUICK_SETTINGS = {"n_estimators": 1}
QUICK_CLASSIFIER = {"n_estimators": 1, "n_random_features": 840}
#: Seconds a worker may stay silent (one case running) before it counts as hung.
CASE_TIMEOUT = 600.0
#: A forked child that has not answered in this many seconds counts as hung.
FORK_TIMEOUT = 60.0
#: A timed refusal is clear only within these bounds.
REFUSAL_SECONDS, REFUSAL_BYTES = 10.0, 1e9


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


class Fixtures:
    """What a case works on: fitted models, saved and exported once (on first use, into ``folder``,
    which the workers share) and loaded afresh on demand (a case may change what it loads)."""

    def __init__(self, folder: Path, quick: bool = False) -> None:
        self.folder, self.quick = folder, quick

    def forecaster_params(self, **changes: Any) -> dict[str, Any]:
        return {**TINY, **(QUICK_SETTINGS if self.quick else {}), **changes}

    def classifier_params(self, **changes: Any) -> dict[str, Any]:
        return {**CLASSIFIER, **(QUICK_CLASSIFIER if self.quick else {}), **changes}

    def path(self, name: str) -> Path:
        """The fixture file ``name``, written first if no worker has written it yet."""
        path = self.folder / name
        if not path.exists():
            _BUILD[name](self)
        return path

    def panel(self) -> Any:
        from aaren_ts import AarenForecaster

        return AarenForecaster.load(self.path("panel.zip"))

    def single(self) -> Any:
        from aaren_ts import AarenForecaster

        return AarenForecaster.load(self.path("single.zip"))

    def classifier(self) -> Any:
        from aaren_ts import AarenClassifier

        return AarenClassifier.load(self.path("classifier.zip"))

    def streamer(self, kind: str = "panel") -> Any:
        from aaren_ts.onnx import OnnxStreamer

        return OnnxStreamer(self.path(f"{kind}.onnx"))


def _build_panel(fx: Fixtures) -> None:
    from aaren_ts import AarenForecaster

    AarenForecaster(**fx.forecaster_params(interval_calibration="aci")).fit(_panel()).save(
        fx.folder / "panel"
    )


def _build_single(fx: Fixtures) -> None:
    from aaren_ts import AarenForecaster

    AarenForecaster(**fx.forecaster_params()).fit(_series()).save(fx.folder / "single")


def _build_classifier(fx: Fixtures) -> None:
    from aaren_ts import AarenClassifier

    AarenClassifier(**fx.classifier_params()).fit(*_classes()).save(fx.folder / "classifier")


def _build_state(fx: Fixtures) -> None:
    streamer = fx.streamer()
    streamer.partial_update(fx.panel().engine_.mean[:, None, :1])
    streamer.save_state(fx.folder / "state.npz")


_BUILD: dict[str, Callable[[Fixtures], None]] = {
    "panel.zip": _build_panel,
    "single.zip": _build_single,
    "classifier.zip": _build_classifier,
    "panel.onnx": lambda fx: fx.panel().to_onnx(fx.folder / "panel.onnx"),
    "classifier.onnx": lambda fx: fx.classifier().to_onnx(fx.folder / "classifier.onnx"),
    "state.npz": _build_state,
}


class Shared:
    """One fixture for several cases of a category, loaded when a case first asks for it (so that a
    case list can be built, and a few of its cases run, without loading everything)."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load, self._value = load, None

    def __call__(self) -> Any:
        if self._value is None:
            self._value = self._load()
        return self._value


# ------------------------------------------------------------------------ judging outcomes
Snapshot = list[tuple[str, np.ndarray]]


def _weights(obj: Any) -> Snapshot:
    net = getattr(obj, "net_", None)
    if net is None:
        return []
    return [(f"weight {k}", t.detach().cpu().numpy().copy()) for k, t in net.module_.state_dict().items()]


def _snapshot(obj: Any) -> Snapshot:
    """Everything of ``obj`` a refused or interrupted call must leave as it was, part by part: a
    forecaster's streams, series, cutoffs and weights; a classifier's probabilities, standardisation and
    weights; a streamer's state."""
    from aaren_ts import AarenClassifier, AarenForecaster

    if isinstance(obj, AarenForecaster):
        streams = [(f"stream tensor {k}", t.detach().cpu().numpy().copy()) for k, t in
                   enumerate(obj.stream_state_tensors())]  # fmt: skip
        identity = [
            ("n_seen", np.asarray(obj.engine_.n_seen).copy()),
            ("series ids", np.asarray(repr(obj.series_ids_))),
            ("series cutoffs", np.asarray(repr(obj.series_cutoffs_.tolist()))),
            ("cutoff", np.asarray(repr(obj.cutoff))),
        ]
        return [*streams, *identity, *_weights(obj)]
    if isinstance(obj, AarenClassifier):
        fitted = [
            (name, np.asarray(getattr(obj, name))) for name in ("channel_mean_", "channel_scale_", "classes_")
        ]
        return [("probabilities", np.asarray(obj.predict_proba(_classes()[0]))), *fitted, *_weights(obj)]
    return [*obj.state().items(), ("n_seen", np.asarray(obj.n_seen))]


def _same(a: Snapshot, b: Snapshot) -> bool:
    return not _changed(a, b)


def _changed(a: Snapshot, b: Snapshot) -> str:
    """What differs between the snapshots ``a`` and ``b`` (empty if nothing): the parts, with the values
    of a small one."""
    if [name for name, _ in a] != [name for name, _ in b]:
        return "its parts themselves"
    parts = [
        (name, x, y)
        for (name, x), (_, y) in zip(a, b, strict=True)
        if not (x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
    ]
    if not parts:
        return ""
    name, x, y = parts[0]
    first = f"{name}: {x} -> {y}" if x.size <= 4 or x.dtype.kind == "U" else name
    return first + (f" and {len(parts) - 1} parts more" if len(parts) > 1 else "")


def _finite(value: Any) -> bool:
    if isinstance(value, pd.DataFrame | pd.Series):
        value = value.to_numpy(dtype=np.float64)
    if isinstance(value, tuple):
        return all(_finite(v) for v in value)
    arr = np.asarray(value)
    return arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


def refused(
    call: Callable[[], Any],
    pattern: str,
    obj: Any = None,
    kinds: tuple[type[BaseException], ...] = (ValueError, TypeError),
) -> tuple[str, str]:
    """The outcome of ``call``, which must raise one of ``kinds`` matching ``pattern`` and leave ``obj``
    (if given) as it was."""
    before = None if obj is None else _snapshot(obj)
    try:
        result = call()
    except kinds as err:
        message = f"{type(err).__name__}: {err}"
        if obj is not None and (change := _changed(before, _snapshot(obj))):
            return "state lost", f"refused, but it changed {change}; {message}"
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


def refused_or_finite(call: Callable[[], Any], pattern: str) -> tuple[str, str]:
    """The outcome of ``call``, which may refuse (naming ``pattern``) or give a finite result."""
    try:
        result = call()
    except (ValueError, TypeError) as err:
        return ("clear" if re.search(pattern, str(err), re.IGNORECASE) else "obscure"), f"{err}"
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {err}"
    return ("correct", "accepted, finite") if _finite(result) else ("silent wrong", "accepted, NON-FINITE")


def _memory() -> tuple[int, int]:
    """This process's virtual and resident size in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        virtual, resident = statm.read().split()[:2]
    page = resource.getpagesize()
    return int(virtual) * page, int(resident) * page


def bounded(case: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    """``case``'s outcome, timed and its memory watched: a refusal that takes more than
    ``REFUSAL_SECONDS`` or grows the resident size by more than ``REFUSAL_BYTES`` is not clear. For the
    duration the address space may grow by at most 2 GiB, so a call that would allocate without bound
    fails (and is counted) instead of exhausting the machine."""
    if not os.path.exists("/proc/self/statm"):  # not Linux: the time alone
        start = time.perf_counter()
        outcome, detail = case()
        elapsed = time.perf_counter() - start
        if outcome == "clear" and elapsed > REFUSAL_SECONDS:
            return "obscure", f"refused, but only after {elapsed:.1f} s: {detail}"
        return outcome, f"{detail} ({elapsed:.2f} s)"
    virtual, resident = _memory()
    peak, stop = [resident], threading.Event()

    def watch() -> None:
        while not stop.wait(0.005):
            peak[0] = max(peak[0], _memory()[1])

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = virtual + 2**31 if hard == resource.RLIM_INFINITY else min(virtual + 2**31, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    start = time.perf_counter()
    try:
        outcome, detail = case()
    finally:
        elapsed = time.perf_counter() - start
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        stop.set()
        watcher.join()
    grown = max(peak[0], _memory()[1]) - resident
    cost = f"{elapsed:.2f} s, {grown / 1e6:+.0f} MB resident"
    if outcome == "clear" and (elapsed > REFUSAL_SECONDS or grown > REFUSAL_BYTES):
        return "obscure", f"refused, but only after {cost}: {detail}"
    return outcome, f"{detail} ({cost})"


def _interrupt(call: Callable[[], Any], delay: float) -> str:
    """Run ``call`` with SIGINT sent to this process ``delay`` seconds in (Ctrl-C): ``"inside"`` if the
    ``KeyboardInterrupt`` stopped the call, ``"after"`` if the call had ended first, ``"swallowed"`` if
    the interrupt came well before the call returned, and it returned normally all the same."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sent: list[float] = []

    def send() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sent.append(time.monotonic())

    ended = None
    try:
        timer = threading.Timer(delay, send)
        try:
            try:
                timer.start()
                call()
                ended = time.monotonic()
            finally:
                timer.join()  # the interrupt is sent by now; a late one lands in the sleep
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass
    finally:
        signal.signal(signal.SIGINT, previous)
    if ended is None:
        return "inside"
    return "swallowed" if sent and sent[0] < ended - 0.01 else "after"


def _interrupted(
    start: Any, call: Callable[[Any], Any], trials: int, rng: np.random.Generator
) -> tuple[str, str]:
    """Ctrl-C at random moments of ``call`` on copies of ``start``: each copy must be left as ``start``
    was, or as ``call`` leaves it when it is not interrupted, never in between."""
    call(copy.deepcopy(start))  # a first call may pay for what the later ones do not: not timed
    advanced = copy.deepcopy(start)
    tic = time.perf_counter()
    call(advanced)
    duration = time.perf_counter() - tic
    before, after = _snapshot(start), _snapshot(advanced)
    if _same(before, after):
        return "obscure", "the call changed nothing: nothing to interrupt"
    seen, swallowed, torn = [], 0, ""
    for _ in range(trials):
        f = copy.deepcopy(start)
        swallowed += _interrupt(lambda f=f: call(f), float(rng.uniform(0.0, 1.2 * duration))) == "swallowed"
        now = _snapshot(f)
        seen.append("before" if _same(now, before) else "after" if _same(now, after) else "torn")
        if seen[-1] == "torn" and not torn:
            torn = f"; the first in between changed {_changed(before, now)}"
    detail = (
        f"{trials} interrupts in {duration:.2f} s calls: {seen.count('before')} left it as it was, "
        f"{seen.count('after')} as the whole call does, {seen.count('torn')} in between; {swallowed} "
        f"swallowed (the call went on and returned normally){torn}"
    )
    return ("state lost", detail) if "torn" in seen else ("correct", detail)


def _ctrl_c() -> Any:
    """A skorch callback for an estimator's ``callbacks``: once armed (``armed[0] = True``), it raises
    ``KeyboardInterrupt`` at the end of the next training batch, as a Ctrl-C there would (at a moment
    that does not depend on timing)."""
    from skorch.callbacks import Callback

    class CtrlC(Callback):
        armed: ClassVar[list[bool]] = [False]  # (shared by the copies an estimator makes)

        def on_batch_end(self, net: Any, **kwargs: Any) -> None:
            if self.armed[0]:
                self.armed[0] = False
                raise KeyboardInterrupt

    return CtrlC()


def _ctrl_c_in_training(make: Callable[[Any], Any], call: Callable[[Any], Any]) -> tuple[str, str]:
    """``call`` on the estimator ``make(callback)`` fitted, with a Ctrl-C in its training: the
    ``KeyboardInterrupt`` must come through, and the estimator be left as it was."""
    ctrl_c = _ctrl_c()
    estimator = make(ctrl_c)
    before = _snapshot(estimator)
    ctrl_c.armed[0] = True
    try:
        call(estimator)
    except KeyboardInterrupt:
        if change := _changed(before, _snapshot(estimator)):
            return "state lost", f"the interrupt came through, but it changed {change}"
        return "correct", "the interrupt came through, the estimator as it was"
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {err}"
    finally:
        fired, ctrl_c.armed[0] = not ctrl_c.armed[0], False
    if not fired:
        return "obscure", "no training batch ended: nothing was interrupted"
    change = _changed(before, _snapshot(estimator))
    return (
        "state lost",
        f"the KeyboardInterrupt was swallowed: the call returned normally, trained part way ({change})",
    )


def _in_fork(call: Callable[[], Any], timeout: float = FORK_TIMEOUT) -> tuple[str, Any]:
    """Run ``call`` in a child forked from this process: ``("ok", result)``, ``("error", message)``, or
    ``("hung", message)`` if it did not answer within ``timeout`` seconds (it is then killed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never return into the worker
        try:
            try:
                answer = pickle.dumps(("ok", call()))
            except BaseException as err:
                answer = pickle.dumps(("error", f"{type(err).__name__}: {err}"))
            os.write(write, answer)
        finally:
            os._exit(0)
    os.close(write)
    chunks, deadline, hung = [], time.monotonic() + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            break
        ready, _, _ = select.select([read], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(read, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read)
    if hung:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if hung:
        return "hung", f"the forked child had not answered after {timeout:.0f} s"
    if not chunks:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"status {status}"
        return "error", f"the forked child died without an answer ({how})"
    return pickle.loads(b"".join(chunks))


# ------------------------------------------------------------------------ the cases
Cases = dict[str, Callable[[], tuple[str, str]]]


def cases_shapes(fx: Fixtures) -> Cases:
    from aaren_ts import AarenForecaster

    f, s, c = Shared(fx.panel), Shared(fx.single), Shared(fx.classifier)
    st, ct = Shared(fx.streamer), Shared(lambda: fx.streamer("classifier"))
    X, _ = _classes()
    out = {
        "array: wrong channels": lambda: refused(
            lambda: f().partial_update_array(np.ones((3, 1, 2))), "shape", f()
        ),
        "array: 4-D": lambda: refused(lambda: f().partial_update_array(np.ones((3, 1, 1, 1))), "shape", f()),
        "array: too few series": lambda: refused(
            lambda: f().partial_update_array(np.ones((2, 1))), "shape", f()
        ),
        "array: empty steps": lambda: refused(
            lambda: f().partial_update_array(np.ones((3, 0, 1))), "shape", f()
        ),
        "fit: 3-D (1, 144, 1)": lambda: refused(
            lambda: AarenForecaster(**TINY).fit(np.ones((1, 144, 1))), "n_timepoints|layout"
        ),
        "fit: empty frame": lambda: refused(
            lambda: AarenForecaster(**TINY).fit(_series().iloc[:0]), "empty|observation"
        ),
        "update: two columns for one": lambda: refused(
            lambda: s().partial_update(pd.DataFrame({"y": [1.0], "z": [1.0]}, index=[60])), "column", s()
        ),
        "classifier: wrong channels": lambda: refused(lambda: c().predict_proba(X[:, :1]), "channel"),
        "classifier: 4-D": lambda: refused(lambda: c().predict_proba(X[..., None]), "dimension|3D|shape"),
        "classifier: empty": lambda: refused(lambda: c().predict_proba(X[:0]), "empty"),
        "streamer: wrong shape": lambda: refused(
            lambda: st().partial_update(np.ones((2, 1, 1))), "shape", st()
        ),
        "classifier streamer: wrong channels": lambda: refused(
            lambda: ct().partial_update(np.ones((2, 3, 4))), "shape", ct()
        ),
    }
    for kind, values in {
        "complex": np.array([1 + 2j]),
        "bool": np.array([True]),
        "str": np.array(["101"]),
        "object": np.array([101.0], dtype=object),
    }.items():
        out[f"array: {kind}"] = lambda v=values: refused(
            lambda: f().partial_update_array(np.repeat(v[None, :, None], 3, 0)), "real numbers", f()
        )
        out[f"pandas update: {kind}"] = lambda v=values: refused(
            lambda: s().partial_update(pd.DataFrame({"y": v}, index=[60])), "real numbers|dtype", s()
        )
        out[f"classifier: {kind}"] = lambda v=values: (
            works(  # an object array of numbers is numbers: the same probabilities as the floats'
                lambda: c().predict_proba(np.broadcast_to(v[0], X.shape).astype(v.dtype)),
                lambda p: np.array_equal(p, c().predict_proba(np.full(X.shape, float(v[0])))),
            )
            if v.dtype == object
            else _refuses(lambda: c().predict_proba(np.broadcast_to(v[0], X.shape).astype(v.dtype)))
        )
        out[f"streamer: {kind}"] = lambda v=values: refused(
            lambda: st().partial_update(np.broadcast_to(v[0], (3, 1, 1)).astype(v.dtype)),
            "real numbers",
            st(),
        )
    out["pandas fit: bool"] = lambda: refused(
        lambda: AarenForecaster(**TINY).fit(_series() > 100), "real numbers|bool"
    )
    return out


def scaled_fit(fx: Fixtures, factor: float, classifier: Any = None) -> tuple[str, str]:
    """A classifier fitted (``classifier``: refitted) on ``X * factor``: refused naming the problem, a
    refitted one left as it was; or, as standardisation cancels the factor, fitted to the probabilities
    that ``X`` gives, and saved and loaded back as it is."""
    from aaren_ts import AarenClassifier

    X, y = _classes()
    c = classifier if classifier is not None else AarenClassifier(**fx.classifier_params())
    before = None if classifier is None else _snapshot(classifier)
    try:
        c.fit(X * factor, y)
    except (ValueError, TypeError) as err:
        if before is not None and (change := _changed(before, _snapshot(classifier))):
            return "state lost", f"refused, but it changed {change}; {type(err).__name__}: {err}"
        named = re.search("inf|overflow|float32|standard deviations|rescale|scale", str(err), re.IGNORECASE)
        return ("clear" if named else "obscure"), f"{type(err).__name__}: {err}"
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {err}"
    got, expected = c.predict_proba(X * factor), fx.classifier().predict_proba(X)
    gap = float(np.abs(got - expected).max())
    if not gap < 1e-6:
        return (
            "silent wrong",
            f"accepted, its probabilities {gap:.3g} from those X gives (scale {c.channel_scale_})",
        )
    try:
        loaded = AarenClassifier.load(c.save(Path(tempfile.mkdtemp()) / "scaled"))
    except Exception as err:
        return "state lost", f"accepted and right, but the archive save wrote is refused by load: {err}"
    same = np.array_equal(loaded.predict_proba(X * factor), got)
    return ("correct", f"fitted as X is (to {gap:.1e}), saved and loaded") if same else ("silent wrong", "")


def cases_values(fx: Fixtures) -> Cases:
    from aaren_ts import AarenForecaster

    f, s, c = Shared(fx.panel), Shared(fx.single), Shared(fx.classifier)
    st, ct = Shared(fx.streamer), Shared(lambda: fx.streamer("classifier"))
    X, _ = _classes()
    out: Cases = {}
    for value in (np.inf, -np.inf, 1e22, 1e38, 1e300):
        step = np.full((3, 1, 1), 100.0)
        step[1] = value
        out[f"array: {value:g}"] = lambda v=step: refused(
            lambda: f().partial_update_array(v), "infinite|overflow", f()
        )
        frame = pd.DataFrame({"y": [value]}, index=[60])
        out[f"pandas: {value:g}"] = lambda v=frame: refused(
            lambda: s().partial_update(v), "inf|overflow", s()
        )
        out[f"streamer: {value:g}"] = lambda v=step: refused(
            lambda: st().partial_update(v), "non-finite|overflow", st()
        )
        out[f"classifier: X * {value:g}"] = lambda v=value: refused(
            lambda: c().predict_proba(X * v), "inf|overflow|standard deviations"
        )
        out[f"classifier streamer: {value:g}"] = lambda v=value: refused(
            lambda: ct().partial_update(np.full((2, 2, 3), v)),
            "non-finite|overflow|standard deviations",
            ct(),
        )

    def missing_step() -> tuple[str, str]:
        g = fx.panel()
        seen = g.engine_.n_seen.copy()
        return works(
            lambda: g.partial_update_array(np.full((3, 1, 1), np.nan)).predict_array(),
            lambda p: _finite(p) and np.array_equal(g.engine_.n_seen, seen + 1),  # a step, with no value
        )

    out["array: NaN is a missing value"] = missing_step
    out["streamer: NaN"] = lambda: refused(
        lambda: st().partial_update(np.full((3, 1, 1), np.nan)), "non-finite", st()
    )
    out["classifier: NaN"] = lambda: refused(lambda: c().predict_proba(np.where(X > 50, np.nan, X)), "NaN")
    out["fit: all NaN"] = lambda: refused(
        lambda: AarenForecaster(**TINY).fit(_series() * np.nan), "NaN|observ"
    )
    out["fit: constant series"] = lambda: works(
        lambda: AarenForecaster(**TINY).fit(_series() * 0 + 5).predict(fh=[1]),
        lambda p: bool(np.abs(p.to_numpy() - 5.0).max() < 1e-3),  # the constant, to float32 round-off
    )
    out["fit: values 1e300"] = lambda: refused(
        lambda: AarenForecaster(**TINY).fit(_series() * 1e298), "rescale"
    )
    out["classifier: fit on X * 1e300 (its spread overflows)"] = lambda: scaled_fit(fx, 1e300)
    return out


def _torch_bytes(obj: Any, records: int = zipfile.ZIP_STORED) -> bytes:
    """``torch.save(obj)``'s bytes, its records re-packed with the compression ``records``."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    if records == zipfile.ZIP_STORED:
        return buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info), compress_type=records)
    return out.getvalue()


def _payload_edit(
    source: Path, target: Path, edit: Callable[[dict], None], compress: bool = False, records: bool = False
) -> None:
    """Write ``target``: the archive ``source`` with its payload changed by ``edit``, the payload
    deflated in the archive (``compress``) or the tensor records inside it deflated (``records``)."""
    import torch

    with zipfile.ZipFile(source) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    name = next(n for n in entries if n != "_metadata")
    payload = torch.load(io.BytesIO(entries[name]), weights_only=True)
    edit(payload)
    entries[name] = _torch_bytes(payload, zipfile.ZIP_DEFLATED if records else zipfile.ZIP_STORED)
    del payload
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


def cases_archives(fx: Fixtures) -> Cases:
    import torch

    from aaren_ts import AarenClassifier, AarenForecaster

    work = Path(tempfile.mkdtemp())
    X, _ = _classes()

    def load_and_step(path: Path) -> Any:
        f = AarenForecaster.load(path)
        f.partial_update_array(f.engine_.mean[:, None, :1] + 1.0)
        return f.predict_quantiles_array([0.1, 0.5, 0.9])

    def crafted(
        name: str,
        edit: Callable[[dict], None],
        compress: bool = False,
        pattern: str = "saved|damaged|altered|compressed|weight|must be",
    ) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.zip"
            _payload_edit(fx.path("panel.zip"), path, edit, compress)
            return refused(lambda: load_and_step(path), pattern)

        return run

    def crafted_classifier(
        name: str, edit: Callable[[dict], None], pattern: str
    ) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"classifier_{name}.zip"
            _payload_edit(fx.path("classifier.zip"), path, lambda p: edit(p["attributes"]))
            return refused(lambda: AarenClassifier.load(path).predict_proba(X), pattern)

        return run

    def raw(name: str, data: Callable[[], bytes]) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.zip"
            path.write_bytes(data())
            return refused(lambda: load_and_step(path), "not a file written|damaged|truncated|unexpected")

        return run

    def truncated() -> bytes:
        good = fx.path("panel.zip").read_bytes()
        return good[: len(good) // 2]

    def extra_member() -> bytes:
        bomb = io.BytesIO()
        with zipfile.ZipFile(fx.path("panel.zip")) as archive, zipfile.ZipFile(bomb, "w") as out:
            for name in archive.namelist():
                out.writestr(name, archive.read(name))
            out.writestr("extra", b"0" * 1000)
        return bomb.getvalue()

    standardisation = "channel standardisation|standard deviations"
    key = b"k" * 32  # a signing key (any 16 bytes or more)

    def signed_then(change: str) -> Callable[[], tuple[str, str]]:
        """A signed archive read with its key after ``change``: ``"weights"`` (a weight altered and
        the archive rebuilt, the CRCs recomputed), ``"unsigned"`` (the signature removed) or
        ``"other key"``; ``"none"`` must load and step."""

        def run() -> tuple[str, str]:
            source = fx.panel().save(work / f"signed_{change}", signing_key=key)
            if change == "none":
                expected = fx.panel().predict_quantiles_array([0.5])
                loaded = AarenForecaster.load(source, signing_key=key)
                return works(
                    lambda: loaded.predict_quantiles_array([0.5]), lambda q: np.array_equal(q, expected)
                )
            with zipfile.ZipFile(source) as archive:
                entries = {name: archive.read(name) for name in archive.namelist()}
            payload_name = "aaren_ts_payload.pt"
            if change == "weights":
                payload = torch.load(io.BytesIO(entries[payload_name]), weights_only=True)
                first = next(iter(payload["state_dict"]))
                payload["state_dict"][first] = payload["state_dict"][first] * 1.01
                entries[payload_name] = _torch_bytes(payload, zipfile.ZIP_STORED)
            elif change == "unsigned":
                entries.pop("aaren_ts_signature")
            target = work / f"signed_{change}_altered.zip"
            with zipfile.ZipFile(target, "w") as archive:
                for entry, data in entries.items():
                    archive.writestr(entry, data)
            reader_key = b"o" * 32 if change == "other key" else key
            pattern = "not signed" if change == "unsigned" else "does not match the signing key"
            return refused(lambda: AarenForecaster.load(target, signing_key=reader_key), pattern)

        return run

    def scale(value: float) -> Callable[[dict], None]:
        return lambda a: a.update(channel_scale=torch.full_like(a["channel_scale"], value))

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
        "series cutoffs shortened": crafted(
            "cutoffs",
            lambda p: p["attributes"].update(series_cutoffs=p["attributes"]["series_cutoffs"][:-1]),
            pattern=r"cutoffs \(2\) do not fit the 3",
        ),
        "params wrong type": crafted("params", lambda p: p["params"].update(horizon="three")),
        "compressed payload": crafted("zip", lambda p: None, compress=True),
        "truncated": raw("truncated", truncated),
        "extra member": raw("extra", extra_member),
        "not a zip": raw("text", lambda: b"hello" * 100),
        "untouched (control)": lambda: works(
            lambda: load_and_step(fx.path("panel.zip")), lambda q: _finite(q) and q.shape == (3, 3, 1, 3)
        ),
        "torch tensor in place of a list": crafted(
            "tensor", lambda p: p["attributes"].update(streams=torch.zeros(3))
        ),
        "classifier: channel_scale negative": crafted_classifier(
            "negative", lambda a: a.update(channel_scale=-a["channel_scale"]), standardisation
        ),
        "classifier: channel_scale zero": crafted_classifier("zero", scale(0.0), standardisation),
        "classifier: channel_scale 1e30": crafted_classifier("huge", scale(1e30), standardisation),
        "classifier: channel_scale 1e-30": crafted_classifier("tiny", scale(1e-30), standardisation),
        "classifier: channel_mean NaN": crafted_classifier(
            "nan", lambda a: a.update(channel_mean=a["channel_mean"] * float("nan")), standardisation
        ),
        "classifier: classes duplicated": crafted_classifier(
            "classes", lambda a: a.update(classes=torch.zeros_like(a["classes"])), "distinct"
        ),
        "signed: read with its key (control)": signed_then("none"),
        "signed: a weight altered, CRCs recomputed": signed_then("weights"),
        "signed: the signature removed": signed_then("unsigned"),
        "signed: read with another key": signed_then("other key"),
    }


def _resealed(source: Path, target: Path, change: Callable[[dict], None]) -> Path:
    """Write ``target``: the export ``source`` with the streams embedded in it changed by ``change`` (a
    dict of arrays, changed in place) and its checksum computed again, as anyone can."""
    import onnx

    from aaren_ts.onnx._format import CHECKSUM_KEY, STATE_KEY, sealed_bytes

    model = onnx.load(source)
    entries = {entry.key: entry.value for entry in model.metadata_props}
    with np.load(io.BytesIO(base64.b64decode(entries[STATE_KEY]))) as archive:
        state = {name: archive[name].copy() for name in archive.files}
    change(state)
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    entries[STATE_KEY] = base64.b64encode(buffer.getvalue()).decode("ascii")
    entries.pop(CHECKSUM_KEY, None)
    del model.metadata_props[:]
    for key, value in entries.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    target.write_bytes(sealed_bytes(model))
    return target


def cases_files(fx: Fixtures) -> Cases:
    from aaren_ts.onnx import OnnxStreamer

    work = Path(tempfile.mkdtemp())
    onnx = Shared(lambda: fx.path("panel.onnx").read_bytes())

    def onnx_case(name: str, data: Callable[[bytes], bytes]) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{name}.onnx"
            path.write_bytes(data(onnx()))

            def use() -> Any:
                streamer = OnnxStreamer(path)
                streamer.partial_update(np.full((3, 1, 1), 100.0))
                return streamer.predict()

            return refused(use, "damaged|checksum|not an ONNX|altered|consistent|format")

        return run

    def flipped(data: bytes) -> bytes:
        out = bytearray(data)
        out[len(data) // 2] ^= 0x10
        return bytes(out)

    def read_good() -> dict[str, np.ndarray]:
        with np.load(fx.path("state.npz")) as saved:
            return {k: saved[k] for k in saved.files}

    good = Shared(read_good)

    def state_case(name: str, change: Callable[[dict], None]) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            arrays = {k: v.copy() for k, v in good().items()}
            change(arrays)
            path = work / f"{name}.npz"
            np.savez(path, **arrays)
            streamer = fx.streamer()
            streamer.partial_update(np.full((3, 1, 1), 100.0))

            def use() -> Any:
                streamer.load_state(path)
                streamer.partial_update(np.full((3, 1, 1), 100.0))
                return streamer.predict_quantiles([0.1, 0.5, 0.9])

            return refused(use, "saved state|holds|disagree|differs|dtype|count|no stream|readable", streamer)

        return run

    def embedded(name: str, change: Callable[[dict], None], pattern: str) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = _resealed(fx.path("panel.onnx"), work / f"embedded_{name}.onnx", change)

            def use() -> Any:
                streamer = OnnxStreamer(path)
                return streamer.predict_quantiles([0.1, 0.5, 0.9])

            return refused(use, pattern)

        return run

    def set_first(name: str, value: float) -> Callable[[dict], None]:
        def change(arrays: dict) -> None:
            arrays[name].reshape(-1)[0] = value

        return change

    def pickled(arrays: dict) -> None:
        arrays["levels"] = np.array([object()], dtype=object)

    def resealed_control() -> tuple[str, str]:
        path = _resealed(fx.path("panel.onnx"), work / "resealed.onnx", lambda state: None)
        return works(lambda: _same(_snapshot(OnnxStreamer(path)), _snapshot(fx.streamer())), bool)

    def bare_name() -> tuple[str, str]:
        """``save_state("x")`` writes x.npz (numpy's rule); ``load_state("x")`` must find it."""
        streamer = fx.streamer()
        streamer.partial_update(np.full((3, 1, 1), 100.0))
        folder = Path(tempfile.mkdtemp())
        streamer.save_state(os.fspath(folder / "x"))
        written = sorted(os.listdir(folder))
        return works(
            lambda: fx.streamer().load_state(os.fspath(folder / "x")),
            lambda loaded: written == ["x.npz"] and _same(_snapshot(loaded), _snapshot(streamer)),
        )

    return {
        "onnx: a bit flipped": onnx_case("flip", flipped),
        "onnx: truncated": onnx_case("trunc", lambda d: d[: len(d) // 2]),
        "onnx: not onnx": onnx_case("text", lambda d: b"hello" * 100),
        "onnx: empty": onnx_case("empty", lambda d: b""),
        "onnx: spec edited": onnx_case("spec", lambda d: d.replace(b'"horizon": 3', b'"horizon": 4')),
        "onnx: embedded levels NaN (resealed)": embedded(
            "levels", set_first("levels", np.nan), r"embedded streams.*levels holds NaN"
        ),
        "onnx: embedded series_scale negative (resealed)": embedded(
            "scale", lambda a: a.update(series_scale=-a["series_scale"]), r"embedded streams.*series_scale"
        ),
        "onnx: embedded forecast NaN (resealed)": embedded(
            "loc", set_first("output.loc", np.nan), r"embedded streams.*output\.loc"
        ),
        "onnx: resealed, unchanged (control)": resealed_control,
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
        "state: save_state('x') then load_state('x')": bare_name,
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


def _readers(
    forecaster: Any,
    replay: Any,
    read: Callable[[Any], pd.DataFrame],
    step: Callable[[int], pd.DataFrame],
    steps: range,
) -> tuple[str, str]:
    """Seven threads read ``forecaster``'s forecasts while this one streams ``step(t)`` for ``t`` in
    ``steps``: every forecast read must be, label and values, one that a sequential replay on
    ``replay`` (a copy) gives after some number of steps."""
    expected = {}

    def record(forecast: pd.DataFrame) -> None:
        expected[tuple(forecast.index.get_level_values(-1))] = forecast.to_numpy()

    record(read(replay))
    for t in steps:
        replay.partial_update(step(t))
        record(read(replay))
    torn, unknown, errors, labels = [], [], [], set()
    done = threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                forecast = read(forecaster)
                label = tuple(forecast.index.get_level_values(-1))
                labels.add(label)
                if label not in expected:
                    unknown.append(label)
                elif not np.array_equal(forecast.to_numpy(), expected[label]):
                    torn.append(label)
        except Exception as err:
            errors.append(f"{type(err).__name__}: {err}")

    readers = [threading.Thread(target=reader) for _ in range(7)]
    for thread in readers:
        thread.start()
    try:
        for t in steps:
            forecaster.partial_update(step(t))
    finally:
        done.set()
        for thread in readers:
            thread.join()
    if errors:
        return "obscure", f"a reader failed: {errors[0]}"
    if torn or unknown:
        return (
            "silent wrong",
            f"{len(torn)} reads whose values belong to another time label; {len(unknown)} labels of no state",
        )
    return "correct", f"every read whole ({len(labels)} time labels seen)"


def cases_threads(fx: Fixtures) -> Cases:
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

    n_steps = 40 if fx.quick else 200

    def single_readers() -> tuple[str, str]:
        return _readers(
            fx.single(),
            fx.single(),
            lambda f: f.predict(fh=[1]),
            lambda t: pd.DataFrame({"y": [100.0 + 0.1 * t]}, index=[t]),
            range(60, 60 + n_steps),
        )

    def panel_readers() -> tuple[str, str]:
        def step(t: int) -> pd.DataFrame:
            frames = {f"s{k}": pd.DataFrame({"y": [100.0 * (k + 1) + 0.1 * t]}, index=[t]) for k in range(3)}
            return pd.concat(frames, names=["series", "time"])

        return _readers(
            fx.panel(),
            fx.panel(),
            lambda f: f.predict_interval(fh=[1, 2], coverage=0.9),
            step,
            range(60, 60 + n_steps // 2),
        )

    return {
        "forecaster: 4 threads x 20 array updates": forecaster_updates,
        "forecaster: 4 threads racing one timestamp": forecaster_pandas,
        "forecaster: predictions during updates": predictions_during_updates,
        "streamer: 4 threads x 15 updates": streamer_updates("panel"),
        "classifier streamer: 4 threads x 15 updates": streamer_updates("classifier"),
        "two forecasters in two threads": disjoint,
        "readers: 7 threads read a forecaster while one streams": single_readers,
        "readers: 7 threads read a panel's intervals while one streams": panel_readers,
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


def cases_saves(fx: Fixtures) -> Cases:
    from aaren_ts import AarenForecaster
    from aaren_ts.onnx import OnnxStreamer

    work = Path(tempfile.mkdtemp())
    loaders = {
        "save": (work / "model.zip", lambda p: AarenForecaster.load(p).predict_array()),
        "to_onnx": (work / "model.onnx", lambda p: OnnxStreamer(p).predict()),
        "save_state": (work / "state.npz", lambda p: fx.streamer().load_state(p).predict()),
    }

    def trial(kind: str, seed: int) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            target, load = loaders[kind]
            source = fx.path("panel.zip")
            if kind != "save":
                fx.path("panel.onnx")
            process = subprocess.Popen(
                [sys.executable, "-c", _SAVER, kind, os.fspath(source), os.fspath(target)],
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


def cases_times(fx: Fixtures) -> Cases:
    from sktime.forecasting.base import ForecastingHorizon

    from aaren_ts import AarenForecaster

    rng = np.random.default_rng(0)
    values = 100.0 + rng.normal(size=60).cumsum()
    irregular = pd.DatetimeIndex(
        pd.Timestamp("2020") + pd.to_timedelta(np.sort(rng.choice(600, 60, False)), "h")
    )
    hourly = pd.date_range("2020", periods=60, freq="h")
    one = fx.forecaster_params(n_estimators=1)

    def fitted(index: pd.Index) -> Any:
        return AarenForecaster(**TINY).fit(pd.DataFrame({"y": values}, index=index))

    def datetime_panel() -> Any:
        frames = {k: pd.DataFrame({"y": values + 10.0 * i}, index=hourly) for i, k in enumerate("ab")}
        y = pd.concat(frames, names=["series", "time"])
        return AarenForecaster(**TINY).fit(y).predict(fh=[1, 2])

    s = Shared(lambda: fitted(hourly))
    # a model of Berlin's hours (80 hours: the first 60 fitted, the rest to update with)
    berlin = pd.date_range("2024-01-01", periods=80, freq="h", tz="Europe/Berlin")
    y_berlin = pd.DataFrame({"y": 10 + np.sin(np.arange(80) / 3)}, index=berlin)
    b = Shared(lambda: AarenForecaster(**one).fit(y_berlin[:60]))
    naive = y_berlin[60:61].copy()
    naive.index = naive.index.tz_localize(None)
    in_utc = ForecastingHorizon(pd.DatetimeIndex([berlin[60].tz_convert("UTC")]), is_relative=False)
    past = ForecastingHorizon(pd.DatetimeIndex([berlin[50].tz_convert("UTC")]), is_relative=False)
    aware_next = pd.DataFrame({"y": [1.0]}, index=[(hourly[-1] + pd.Timedelta("1h")).tz_localize("UTC")])

    def next_hour_in_utc() -> tuple[str, str]:
        def check(forecasts: tuple[pd.DataFrame, pd.DataFrame]) -> bool:
            utc, relative = forecasts
            labels = list(utc.index) == [berlin[60]] and str(utc.index.tz) == "Europe/Berlin"
            return (
                labels
                and utc.index.equals(relative.index)
                and np.array_equal(utc.to_numpy(), relative.to_numpy())
            )

        return works(lambda: (b().predict(fh=in_utc), b().predict(fh=[1])), check)

    def update_in_utc() -> tuple[str, str]:
        def run() -> Any:
            f, reference = copy.deepcopy(b()), copy.deepcopy(b())
            update = y_berlin[60:62].copy()
            reference.partial_update(update)
            update.index = update.index.tz_convert("UTC")
            f.partial_update(update)
            return f, reference

        def check(pair: tuple[Any, Any]) -> bool:
            f, reference = pair
            forecast = f.predict(fh=[1])
            return (
                f.cutoff[0] == berlin[61]
                and str(f.cutoff.tz) == "Europe/Berlin"
                and list(forecast.index) == [berlin[62]]
                and np.array_equal(forecast.to_numpy(), reference.predict(fh=[1]).to_numpy())
            )

        return works(run, check)

    in_sample = (ValueError, NotImplementedError)  # sktime's contract: in-sample fh raise NotImplementedError
    return {
        "irregular DatetimeIndex": lambda: refused(
            lambda: fitted(irregular).predict(fh=[1]), "irregular|frequency|freq|regular"
        ),
        "duplicated timestamps": lambda: refused(
            lambda: fitted(hourly.insert(5, hourly[5])[:60]), "increasing|duplicate"
        ),
        "decreasing index": lambda: refused(lambda: fitted(hourly[::-1]), "increasing|sorted"),
        "a gap after the cutoff": lambda: refused(
            lambda: s().partial_update(pd.DataFrame({"y": [1.0]}, index=[hourly[-1] + pd.Timedelta("3h")])),
            "gap",
            s(),
        ),
        "an overlap with the cutoff": lambda: refused(
            lambda: s().partial_update(pd.DataFrame({"y": [1.0]}, index=[hourly[-1]])), "overlap", s()
        ),
        "an integer index after a datetime one": lambda: refused(
            lambda: s().partial_update(pd.DataFrame({"y": [1.0]}, index=[60])),
            "index|time|type|frequency",
            s(),
        ),
        "PeriodIndex": lambda: works(
            lambda: fitted(pd.period_range("2020", periods=60, freq="M")).predict(fh=[1]),
            lambda p: _finite(p) and list(p.index) == [pd.Period("2025-01", freq="M")],
        ),
        "hourly DatetimeIndex": lambda: works(
            lambda: s().predict(fh=[1, 2]),
            lambda p: _finite(p) and list(p.index) == list(hourly[-1] + pd.to_timedelta([1, 2], "h")),
        ),
        "panel with a DatetimeIndex": lambda: works(
            datetime_panel,
            lambda p: (
                _finite(p)
                and list(p.index) == [(k, hourly[-1] + pd.Timedelta(h, "h")) for k in "ab" for h in (1, 2)]
            ),
        ),
        "tz: a time in the past, given in UTC": lambda: refused(
            lambda: b().predict(fh=past), "in-sample|past|before the cutoff", b(), kinds=in_sample
        ),
        "tz: a naive update for an aware model": lambda: refused(
            lambda: b().partial_update(naive), "no time zone, but the cutoff", b()
        ),
        "tz: a naive fh for an aware model": lambda: refused(
            lambda: b().predict(fh=ForecastingHorizon(naive.index, is_relative=False)),
            "no time zone, but the cutoff",
            b(),
        ),
        "tz: an aware update for a naive model": lambda: refused(
            lambda: s().partial_update(aware_next), r"have a time zone \(UTC\), but the cutoff", s()
        ),
        "tz: the next hour given in UTC": next_hour_in_utc,
        "tz: an update given in UTC continues the series": update_in_utc,
    }


def cases_api(fx: Fixtures) -> Cases:
    from aaren_ts import AarenClassifier, AarenForecaster

    s, st, c = Shared(fx.single), Shared(fx.streamer), Shared(fx.classifier)
    X, _ = _classes()
    in_sample = (ValueError, NotImplementedError)  # sktime's contract: in-sample fh raise NotImplementedError
    out: Cases = {}
    for coverage in ([], "0.9", ["0.9"], 1.5, 0.0, float("nan"), None, True):
        out[f"predict_interval(coverage={coverage!r})"] = lambda v=coverage: refused(
            lambda: s().predict_interval(fh=[1], coverage=v), "coverage"
        )
    for alpha in ([], "0.1", 0.0, 1.0, [0.5, 2.0]):
        out[f"predict_quantiles(alpha={alpha!r})"] = lambda v=alpha: refused(
            lambda: s().predict_quantiles(fh=[1], alpha=v), "alpha"
        )
    out["predict_quantiles_array([0, 1])"] = lambda: refused(
        lambda: s().predict_quantiles_array([0.0, 1.0]), "alpha"
    )
    out["streamer predict_interval(1.0)"] = lambda: refused(lambda: st().predict_interval(1.0), "coverage")
    out["streamer predict_quantiles([])"] = lambda: refused(lambda: st().predict_quantiles([]), "alpha")
    out["horizon=100000"] = lambda: refused(
        lambda: AarenForecaster(**{**TINY, "horizon": 100_000}).fit(_series(144)), r"horizon.*(GB|16384)"
    )
    out["fh beyond the horizon"] = lambda: refused(lambda: s().predict(fh=[10]), "horizon")
    out["fh=0"] = lambda: refused(
        lambda: s().predict(fh=[0]), "in-sample|fh|horizon|positive|future", kinds=in_sample
    )
    out["fh negative"] = lambda: refused(
        lambda: s().predict(fh=[-1]), "in-sample|fh|horizon|positive|future", kinds=in_sample
    )
    out["predict before fit"] = lambda: refused(lambda: AarenForecaster(**TINY).predict(fh=[1]), "fit")
    out["partial_update before fit"] = lambda: refused(
        lambda: AarenForecaster(**TINY).partial_update(_series()), "fit"
    )
    out["unknown series id"] = lambda: refused(lambda: s().predict_array(series_ids=["nope"]), "unknown", s())
    out["d_model=-1"] = lambda: refused(
        lambda: AarenForecaster(**{**TINY, "d_model": -1}).fit(_series()), "d_model"
    )
    out["distribution='cauchy'"] = lambda: refused(
        lambda: AarenForecaster(**TINY, distribution="cauchy").fit(_series()), "distribution"
    )
    out["classifier: one class is predicted (sktime's rule)"] = lambda: works(
        lambda: AarenClassifier(**fx.classifier_params()).fit(X, np.zeros(20, dtype=int)).predict(X),
        lambda predicted: bool((np.asarray(predicted) == 0).all()),
    )
    out["classifier: labels of another length"] = lambda: refused(
        lambda: AarenClassifier(**CLASSIFIER).fit(X, np.zeros(5)),
        "length|samples|instances|inconsistent|labels",
    )
    out["classifier predict_proba: finite for ordinary data"] = lambda: works(
        lambda: c().predict_proba(X),
        lambda p: _finite(p) and p.shape == (20, 2) and np.allclose(p.sum(axis=1), 1.0),
    )
    return out


def _panel_update(new_value: float) -> pd.DataFrame:
    """Two observations of the three series of ``_panel`` and of a new series ``s3``, whose second
    value is ``new_value``."""
    frames = {
        f"s{k}": pd.DataFrame({"y": [100.0 * (k + 1), 100.0 * (k + 1) + 1.0]}, index=[60, 61])
        for k in range(4)
    }
    update = pd.concat(frames, names=["series", "time"])
    update.loc[("s3", 61), "y"] = new_value
    return update


def cases_transactions(fx: Fixtures) -> Cases:
    from aaren_ts import AarenClassifier, AarenForecaster

    X, y = _classes()
    s, c = Shared(fx.single), Shared(fx.classifier)
    # one network each, to refit quickly (the classifier for ten epochs, so that training takes its time)
    one = Shared(lambda: AarenForecaster(**fx.forecaster_params(n_estimators=1)).fit(_series()))
    small = Shared(
        lambda: AarenClassifier(**fx.classifier_params(**QUICK_CLASSIFIER, max_epochs=10)).fit(X, y)
    )
    trials = 3 if fx.quick else 12
    rng = np.random.default_rng(0)

    def new_series(
        value: float, pattern: str, method: str = "partial_update"
    ) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            f = fx.panel()
            return refused(lambda: getattr(f, method)(_panel_update(value)), pattern, f)

        return run

    def retry() -> tuple[str, str]:
        f, fresh = fx.panel(), fx.panel()
        try:
            f.partial_update(_panel_update(np.inf))
        except ValueError:
            pass
        else:
            return "silent wrong", "the infinite value was accepted"
        good = _panel_update(402.0)
        f.partial_update(good)  # the retry, after the refusal: as if it came first
        fresh.partial_update(good)
        got, expected = f.predict(fh=[1, 2]), fresh.predict(fh=[1, 2])
        if len(got) == 8 and got.equals(expected) and _same(_snapshot(f), _snapshot(fresh)):
            return "correct", "the retry gives what the good update alone gives, for all 4 series"
        return "state lost", "after the refusal, the retry differs from the good update alone"

    def interrupted_array_updates() -> tuple[str, str]:
        start = fx.panel()
        new = {
            f"n{k}": pd.DataFrame({"y": 100.0 + rng.normal(size=8).cumsum()}, index=range(60, 68))
            for k in range(2000)
        }
        start.partial_update(pd.concat(new, names=["series", "time"]))
        values = start.engine_.mean[:, None, :1] + rng.normal(size=(len(start.series_ids_), 4, 1))
        outcome, detail = _interrupted(start, lambda f: f.partial_update_array(values), trials, rng)
        return outcome, f"{len(start.series_ids_)} series, {detail}"

    return {
        "panel: a new series with inf is refused, nothing added": new_series(np.inf, r"'s3'.*infinite"),
        "panel: a new series of 1e300 is refused by name, nothing added": new_series(
            1e300, r"new series 's3' would be standardised"
        ),
        "panel: after the refusal, the retry works for the whole panel": retry,
        "array update of 2000 series interrupted at random moments": interrupted_array_updates,
        "update refused after fine-tuning (a new series of 1e300): weights and streams kept": new_series(
            1e300, r"new series 's3' would be standardised", "update"
        ),
        "update interrupted at random moments: weights and streams whole": lambda: _interrupted(
            fx.panel(), lambda f: f.update(_panel_update(402.0)), trials, rng
        ),
        "forecaster: refit on all-NaN data refused, the model kept": lambda: refused(
            lambda: s().fit(_series() * np.nan), "NaN|observ", s()
        ),
        "forecaster: refit interrupted at random moments, the model kept or replaced whole": lambda: (
            _interrupted(one(), lambda f: f.fit(_series(80)), trials, rng)
        ),
        "classifier: refit interrupted at random moments, the model kept or replaced whole": lambda: (
            _interrupted(small(), lambda c: c.fit(X * 2.0, y), trials, rng)
        ),
        "forecaster: Ctrl-C in a refit's training (a callback raises it)": lambda: _ctrl_c_in_training(
            lambda cb: AarenForecaster(**fx.forecaster_params(n_estimators=1, callbacks=[cb])).fit(_series()),
            lambda f: f.fit(_series(80)),
        ),
        "forecaster: Ctrl-C in an update's fine-tuning (a callback raises it)": lambda: _ctrl_c_in_training(
            lambda cb: AarenForecaster(**fx.forecaster_params(n_estimators=1, callbacks=[cb])).fit(_series()),
            lambda f: f.update(pd.DataFrame({"y": [101.0, 102.0, 103.0]}, index=[60, 61, 62])),
        ),
        "classifier: Ctrl-C in a refit's training (a callback raises it)": lambda: _ctrl_c_in_training(
            lambda cb: AarenClassifier(**fx.classifier_params(**QUICK_CLASSIFIER, callbacks=[cb])).fit(X, y),
            lambda c: c.fit(X * 2.0, y),
        ),
        "classifier: refit on X * 1e38 refused (the model kept) or fitted, saved and loaded": lambda: (
            scaled_fit(fx, 1e38, c())
        ),
        "classifier: refit with labels of another length refused, the model kept": lambda: refused(
            lambda: c().fit(X, y[:5]), "length|samples|instances|inconsistent|labels", c()
        ),
    }


def _id_panel(ids: list[Any], columns: tuple = ("y",), length: int = 40, start: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    names = pd.MultiIndex.from_tuples(columns) if isinstance(columns[0], tuple) else list(columns)
    frames = {
        i: pd.DataFrame(
            10 + k + rng.normal(0, 0.3, (length, len(columns))),
            index=pd.RangeIndex(start, start + length),
            columns=names,
        )
        for k, i in enumerate(ids)
    }
    return pd.concat(frames, names=["series", "time"])


def _instances_frame(X: np.ndarray) -> pd.DataFrame:
    """``X`` (instances, channels, time points) as sktime's pd-multiindex frame."""
    n, channels, length = X.shape
    index = pd.MultiIndex.from_product([range(n), range(length)], names=["instance", "time"])
    return pd.DataFrame(X.transpose(0, 2, 1).reshape(-1, channels), index=index, columns=["c0", "c1"])


def cases_identity(fx: Fixtures) -> Cases:
    from aaren_ts import AarenForecaster

    one = fx.forecaster_params(n_estimators=1)
    f, s, c = Shared(fx.panel), Shared(fx.single), Shared(fx.classifier)
    X, _ = _classes()
    work = Path(tempfile.mkdtemp())

    def round_trip(name: str, ids: list[Any]) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            fitted = AarenForecaster(**one).fit(_id_panel(ids))
            loaded = AarenForecaster.load(fitted.save(work / name))
            back = loaded.series_ids_
            if repr(back) != repr(fitted.series_ids_) or [type(i) for i in back] != [type(i) for i in ids]:
                return "silent wrong", f"ids {ids!r} came back as {back!r}"
            loaded.partial_update(_id_panel(ids, length=2, start=40))
            if len(loaded.series_ids_) != len(ids):
                return (
                    "silent wrong",
                    f"an update with the same ids started new series: {loaded.series_ids_!r}",
                )
            return "correct", f"{back!r} and their streams continue"

        return run

    def columns_round_trip() -> tuple[str, str]:
        columns = (("sales", "eu"), ("sales", "us"))
        fitted = AarenForecaster(**one).fit(_id_panel(["a", "b"], columns))
        loaded = AarenForecaster.load(fitted.save(work / "columns"))
        if not (isinstance(loaded.columns_, pd.MultiIndex) and loaded.columns_.equals(fitted.columns_)):
            return "silent wrong", f"columns came back as {loaded.columns_!r}"
        same = loaded.predict(fh=[1, 2]).equals(fitted.predict(fh=[1, 2]))
        return ("correct", "a MultiIndex, forecasts equal") if same else ("silent wrong", "forecasts differ")

    def nan_ids() -> pd.DataFrame:
        y = _id_panel(["a", "b"])
        y.index = y.index.set_levels(["a", np.nan], level=0, verify_integrity=False)
        return y

    def nan_update() -> pd.DataFrame:
        update = _panel_update(402.0).iloc[:4]  # s0 and s1 at 60 and 61
        update.index = update.index.set_levels(["s0", np.nan, "s2", "s3"], level=0, verify_integrity=False)
        return update

    def shuffled_rows() -> tuple[str, str]:
        frame = _instances_frame(X)
        shuffled = frame.sample(frac=1.0, random_state=0)
        first_seen = shuffled.index.get_level_values(0).unique()  # the instances' order: as they appear
        expected = c().predict_proba(X)
        ordered, got = c().predict_proba(frame), c().predict_proba(shuffled)
        if not np.array_equal(ordered, expected):
            return "silent wrong", "the sorted frame's probabilities differ from the array's"
        if not np.array_equal(got, expected[first_seen]):
            return "silent wrong", f"largest difference {np.abs(got - expected[first_seen]).max():.2g}"
        return "correct", "equal to the sorted frame's, instance by instance"

    repeated_row = pd.concat(
        {"s0": pd.DataFrame({"y": [1.0, 2.0]}, index=[60, 60]), "s1": pd.DataFrame({"y": [1.0]}, index=[60])},
        names=["series", "time"],
    )
    return {
        "naive Timestamp ids keep their type through save/load": round_trip(
            "naive", [pd.Timestamp("2024-01-01"), pd.Timestamp("2024-02-01")]
        ),
        "aware Timestamp ids keep type and zone through save/load": round_trip(
            "aware",
            [pd.Timestamp("2024-01-01", tz="Europe/Berlin"), pd.Timestamp("2024-03-31 02:30", tz="UTC")],
        ),
        "Period ids keep their type through save/load": round_trip(
            "periods", [pd.Period("2024-01", freq="M"), pd.Period("2024-02", freq="M")]
        ),
        "MultiIndex column names come back as a MultiIndex": columns_round_trip,
        "fit: a NaN series id is refused": lambda: refused(
            lambda: AarenForecaster(**one).fit(nan_ids()), r"missing \(NaN\) series id"
        ),
        "update: a NaN series id is refused, nothing changed": lambda: refused(
            lambda: f().partial_update(nan_update()), r"missing \(NaN\) series id", f()
        ),
        "update: a repeated timestamp is refused, nothing changed": lambda: refused(
            lambda: s().partial_update(pd.DataFrame({"y": [1.0, 2.0]}, index=[60, 60])),
            "strictly increasing|duplicate|more than one",
            s(),
        ),
        "panel update: a repeated (series, time) row is refused, nothing changed": lambda: refused(
            lambda: f().partial_update(repeated_row),
            r"'s0'.*(strictly increasing|duplicate|more than one)",
            f(),
        ),
        "classifier: shuffled rows, same probabilities": shuffled_rows,
        "classifier: a repeated time point is refused naming the instance": lambda: refused(
            lambda: c().predict_proba(pd.concat([_instances_frame(X), _instances_frame(X).loc[[(3, 7)]]])),
            r"instance 3 has more than one row at time point 7",
        ),
    }


def cases_bounds(fx: Fixtures) -> Cases:
    import torch

    from aaren_ts import AarenClassifier, AarenForecaster

    work = Path(tempfile.mkdtemp())
    X, y = _classes()

    def archive(kind: str, name: str, value: int) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / f"{kind}_{name}.zip"
            _payload_edit(fx.path(f"{kind}.zip"), path, lambda p: p["params"].update({name: value}))
            cls = AarenClassifier if kind == "classifier" else AarenForecaster
            return bounded(lambda: refused(lambda: cls.load(path), rf"{name} must be"))

        return run

    def constructor(cls: Any, name: str, value: int) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            if cls is AarenClassifier:
                return bounded(lambda: refused(lambda: cls(**{**CLASSIFIER, name: value}).fit(X, y), name))
            return bounded(lambda: refused(lambda: cls(**{**TINY, name: value}).fit(_series()), name))

        return run

    def state_bomb() -> tuple[str, str]:
        streamer = fx.streamer()
        with np.load(fx.path("state.npz")) as saved:
            arrays = {k: saved[k] for k in saved.files}
        path = work / "bomb.npz"  # a few hundred kilobytes that inflate to 100 MB
        np.savez_compressed(path, **arrays, padding=np.zeros(25_000_000, dtype=np.float32))
        return bounded(
            lambda: refused(lambda: streamer.load_state(path), r"compressed.*refused unread", streamer)
        )

    def archive_bomb(records: bool) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            path = work / ("records.zip" if records else "payload.zip")

            def pad(payload: dict) -> None:
                payload["attributes"]["padding"] = torch.zeros(25_000_000)  # 100 MB of zeros

            _payload_edit(fx.path("panel.zip"), path, pad, compress=not records, records=records)
            return bounded(lambda: refused(lambda: AarenForecaster.load(path), r"compressed.*refused unread"))

        return run

    out: Cases = {}
    for name, value in (("n_layers", 100_000), ("d_model", 32768), ("context_length", 2**27)):
        out[f"archive: {name}={value}"] = archive("panel", name, value)
    out["classifier archive: d_model=32768"] = archive("classifier", "d_model", 32768)
    forecaster_sizes = (
        ("n_layers", 100_000),
        ("d_model", 32768),
        ("d_ff", 10**7),
        ("n_heads", 1000),
        ("context_length", 2**27),
        ("n_estimators", 10**6),
    )
    for name, value in forecaster_sizes:
        out[f"AarenForecaster({name}={value}).fit"] = constructor(AarenForecaster, name, value)
    for name, value in (
        ("d_model", 32768),
        ("n_layers", 100_000),
        ("kernel_size", 1000),
        ("n_random_features", 10**9),
    ):
        out[f"AarenClassifier({name}={value}).fit"] = constructor(AarenClassifier, name, value)
    out["state file: a compressed member (a bomb)"] = state_bomb
    out["archive: the payload deflated (a bomb)"] = archive_bomb(records=False)
    out["archive: the tensor records inside the payload deflated (a bomb)"] = archive_bomb(records=True)
    return out


def cases_numerics(fx: Fixtures) -> Cases:
    from aaren_ts import AarenClassifier, AarenForecaster

    X, y = _classes()
    s, st, c = Shared(fx.single), Shared(fx.streamer), Shared(fx.classifier)
    offset = 1e8  # float32 resolves 8 at this magnitude
    # a panel forecaster that computes with two threads (OpenMP's threads do not survive a fork)
    threaded = Shared(
        lambda: AarenForecaster(**fx.forecaster_params(n_estimators=1, num_threads=2)).fit(_panel())
    )

    def fork_after_threads() -> tuple[str, str]:
        f = copy.deepcopy(threaded())
        expected = f.predict_array()  # multi-threaded inference in the parent first
        status, value = _in_fork(lambda: f.predict_array())
        if status == "hung":
            return "crash", value
        if status == "error":
            return "obscure", value
        if not np.array_equal(value, expected):
            return "silent wrong", "the child's forecasts differ from the parent's"
        return "correct", "the child's forecasts equal the parent's (num_threads=2 in the parent)"

    def fork_during_updates() -> tuple[str, str]:
        f, reference = copy.deepcopy(threaded()), copy.deepcopy(threaded())
        f.predict_array()  # multi-threaded inference in the parent first
        step = f.engine_.mean[:, None, :1] + 1.0
        n = 60 if fx.quick else 200
        replay = [reference.predict_array()]
        replay += [reference.partial_update_array(step).predict_array() for _ in range(n)]
        seen = int(f.engine_.n_seen[0])

        def child() -> tuple[int, np.ndarray, int, np.ndarray]:
            k, forecast = int(f.engine_.n_seen[0]) - seen, f.predict_array()
            f.partial_update_array(step)  # hangs if the lock came over held
            return k, forecast, int(f.engine_.n_seen[0]) - seen, f.predict_array()

        writer = threading.Thread(target=lambda: [f.partial_update_array(step) for _ in range(n - 1)])
        writer.start()
        answers = []
        try:
            for _ in range(2 if fx.quick else 6):
                time.sleep(0.03)
                answers.append(_in_fork(child))
        finally:
            writer.join()
        during = 0
        for status, value in answers:
            if status == "hung":
                return "crash", value
            if status == "error":
                return "obscure", value
            k, forecast, k2, after = value
            if not (0 <= k < n and k2 == k + 1 and np.array_equal(forecast, replay[k])):
                return "state lost", f"the child saw {k} updates and forecasts that no sequential state has"
            if not np.array_equal(after, replay[k2]):
                return "state lost", "the child's own update went wrong"
            during += 0 < k < n - 1
        return "correct", f"{len(answers)} forks ({during} while updates went on): whole streams, a free lock"

    def offset_mean_moved() -> tuple[str, str]:
        shifted = copy.deepcopy(c())
        shifted.channel_mean_ = c().channel_mean_ + offset  # the same network, the mean moved
        gap = float(np.abs(shifted.predict_proba(X + offset) - c().predict_proba(X)).max())
        if gap < 1e-6:
            return "correct", f"probabilities moved by {gap:.1e}"
        return "silent wrong", f"probabilities moved by up to {gap:.3g} (float32 standardisation?)"

    def offset_streamed() -> tuple[str, str]:
        shifted, reference = copy.deepcopy(c()), copy.deepcopy(c())
        shifted.channel_mean_ = c().channel_mean_ + offset
        expected = reference.partial_update(X[:, :, :7]).predict_proba()
        gap = float(np.abs(shifted.partial_update(X[:, :, :7] + offset).predict_proba() - expected).max())
        if gap < 1e-6:
            return "correct", f"probabilities moved by {gap:.1e}"
        return "silent wrong", f"probabilities moved by up to {gap:.3g} (float32 standardisation?)"

    def offset_fitted() -> tuple[str, str]:
        params = fx.classifier_params(**QUICK_CLASSIFIER)
        expected = AarenClassifier(**params).fit(X, y).predict_proba(X)
        moved = AarenClassifier(**params).fit(X + offset, y).predict_proba(X + offset)
        gap = float(np.abs(moved - expected).max())
        if gap < 1e-6:
            return "correct", f"probabilities moved by {gap:.1e}"
        return "silent wrong", f"probabilities moved by up to {gap:.3g} (float32 standardisation?)"

    def tail_control() -> tuple[str, str]:
        def check(q: pd.DataFrame) -> bool:
            values = q.to_numpy()
            return _finite(values) and bool((values[:, 0] < values[:, 1]).all())

        return works(lambda: s().predict_quantiles(fh=[1, 2], alpha=[1e-15, 0.5]), check)

    return {
        "fork after multi-threaded inference": fork_after_threads,
        "fork while another thread updates": fork_during_updates,
        "predict_quantiles(alpha=[1e-17])": lambda: refused_or_finite(
            lambda: s().predict_quantiles(fh=[1], alpha=[1e-17]), "alpha"
        ),
        "predict_quantiles(alpha=[0.5, 5e-17])": lambda: refused_or_finite(
            lambda: s().predict_quantiles(fh=[1], alpha=[0.5, 5e-17]), "alpha"
        ),
        "predict_quantiles_array([1e-17])": lambda: refused_or_finite(
            lambda: s().predict_quantiles_array([1e-17]), "alpha"
        ),
        "streamer predict_quantiles([1e-17])": lambda: refused_or_finite(
            lambda: st().predict_quantiles([1e-17]), "alpha"
        ),
        "predict_quantiles(alpha=[1e-15, 0.5]): finite and ordered (control)": tail_control,
        "classifier: X + 1e8 with the mean moved by 1e8": offset_mean_moved,
        "classifier: X + 1e8 streamed with the mean moved by 1e8": offset_streamed,
        "classifier: fitted on X + 1e8 against fitted on X": offset_fitted,
    }


CASES = {
    "shapes": cases_shapes,
    "values": cases_values,
    "archives": cases_archives,
    "files": cases_files,
    "threads": cases_threads,
    "saves": cases_saves,
    "times": cases_times,
    "api": cases_api,
    "transactions": cases_transactions,
    "identity": cases_identity,
    "bounds": cases_bounds,
    "numerics": cases_numerics,
}


# ------------------------------------------------------------------------ running
_FOLDERS = r"(?<![\w.])/(?:[^/\s'\"]+/)+"  # an absolute path's folders, before its file's name


def _selected(category: str, cases: Cases, quick: bool) -> Cases:
    if not quick:
        return cases
    missing = [name for name in QUICK[category] if name not in cases]
    if missing:
        raise KeyError(f"QUICK names cases that {category} does not have: {missing}")
    return {name: cases[name] for name in QUICK[category]}


def worker(categories: list[str], folder: Path, skip: int, quick: bool) -> None:
    """Run the cases of ``categories``, in order, from the ``skip``-th on: one JSON line before and after
    each (a category whose cases cannot even be listed is reported as one obscure case)."""
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    fx = Fixtures(folder, quick)
    tempfile.tempdir = os.fspath(folder / "scratch")  # the cases' files go where the run removes them
    os.makedirs(tempfile.tempdir, exist_ok=True)
    k = 0
    for category in categories:
        try:
            cases = _selected(category, CASES[category](fx), quick)
        except Exception as err:
            cases = {"(listing the cases)": lambda err=err: ("obscure", f"{type(err).__name__}: {err}")}
        for name, case in cases.items():
            k += 1
            if k <= skip:
                continue
            print(json.dumps({"start": name, "category": category}), flush=True)
            tic = time.perf_counter()
            try:
                outcome, detail = case()
            except Exception as err:  # the case's own set-up failed
                outcome, detail = "obscure", f"{type(err).__name__}: {err}"
            seconds = round(time.perf_counter() - tic, 2)  # (with the fixtures it was the first to need)
            detail = re.sub(_FOLDERS, "", detail)  # a file's name, not where this machine put it
            line = {
                "category": category,
                "case": name,
                "outcome": outcome,
                "detail": detail[:300],
                "seconds": seconds,
            }
            print(json.dumps(line), flush=True)
    print(json.dumps({"done": True}), flush=True)


def run_worker(categories: list[str], folder: Path, quick: bool) -> list[dict[str, str]]:
    """The outcome of every case of ``categories``: the worker restarted after each crash or hang."""
    results: list[dict[str, str]] = []
    while True:
        command = [
            sys.executable,
            __file__,
            "--worker",
            ",".join(categories),
            "--fixtures",
            os.fspath(folder),
        ]
        command += ["--skip", str(len(results))] + (["--quick"] if quick else [])
        with tempfile.TemporaryFile("w+") as errors:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)
            lines: queue.Queue[str | None] = queue.Queue()

            def pump(process: subprocess.Popen = process, lines: queue.Queue = lines) -> None:
                for line in process.stdout:
                    lines.put(line)
                lines.put(None)

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            current, done, hung = None, False, False
            while True:
                try:
                    line = lines.get(timeout=CASE_TIMEOUT)
                except queue.Empty:
                    hung = True
                    process.kill()
                    break
                if line is None:
                    break
                message = json.loads(line)
                if "start" in message:
                    current = message
                elif "case" in message:
                    results.append(message)
                    current = None
                else:
                    done = True
            code = process.wait()
            reader.join(timeout=10)
            errors.seek(0)
            tail = errors.read()[-300:].replace("\n", " ")
        if done:
            return results
        if current is None:  # died outside a case: that is counted, and nothing more is run
            results.append({"category": categories[0] if not results else results[-1]["category"],
                            "case": "(between cases)", "outcome": "crash",
                            "detail": f"the worker died outside a case: exit {code}: {tail}"})  # fmt: skip
            return results
        if hung:
            detail = f"no answer after {CASE_TIMEOUT:.0f} s: a hang"
        else:
            detail = f"the worker died: {f'signal {-code}' if code < 0 else f'exit status {code}'}: {tail}"
        results.append({"category": current["category"], "case": current["start"], "outcome": "crash",
                        "detail": detail})  # fmt: skip


def summary(outcomes: list[dict[str, str]], categories: list[str]) -> dict[str, Any]:
    """The counts of each outcome, per category and in total."""
    per = {}
    for category in categories:
        results = [r for r in outcomes if r["category"] == category]
        per[category] = {
            "cases": len(results),
            **{o: sum(r["outcome"] == o for r in results) for o in OUTCOMES},
        }
    total = {key: sum(counts[key] for counts in per.values()) for key in ["cases", *OUTCOMES]}
    return {"categories": per, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--fixtures", help=argparse.SUPPRESS)
    parser.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="one or two cases a category, fewest trials")
    parser.add_argument("--categories", nargs="+", choices=list(CASES), default=list(CASES), metavar="NAME",
                        help=f"the categories to run (default: all of {', '.join(CASES)})")  # fmt: skip
    parser.add_argument(
        "--out", default=None, help="folder for attack.md and attack.json (default benchmarks/results)"
    )
    args = parser.parse_args()
    if args.worker:
        worker(args.worker.split(","), Path(args.fixtures), args.skip, args.quick)
        return
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
    from _common import markdown_table, results_dir

    categories = [c for c in CASES if c in args.categories]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        if args.quick:  # one worker: its start-up and fixtures are paid once
            outcomes = run_worker(categories, Path(folder), quick=True)
        else:
            outcomes = [r for c in categories for r in run_worker([c], Path(folder), quick=False)]
    wall = time.perf_counter() - start
    counts = summary(outcomes, categories)
    header = ["category", "cases tried", "clear errors", "obscure errors", "silent wrong", "crashes",
              "state lost", "correct"]  # fmt: skip
    rows = [
        [CATEGORIES[c], counts["categories"][c]["cases"], *(counts["categories"][c][o] for o in OUTCOMES)]
        for c in categories
    ]
    rows.append(["**total**", counts["total"]["cases"], *(counts["total"][o] for o in OUTCOMES)])
    table = markdown_table(header, rows)
    details = [
        [r["category"], r["case"], r["outcome"], r["detail"].replace("|", "/").replace("\n", " ")[:300]]
        for r in outcomes
    ]
    command = "python benchmarks/attack.py" + (" --quick" if args.quick else "")
    if categories != list(CASES):
        command += " --categories " + " ".join(categories)
    report = (
        "# Attack on AarenForecaster, AarenClassifier and OnnxStreamer\n\n"
        f"`{command}` ({wall:.0f} s wall)\n\n{table}\n\n## Every case\n\n"
        + markdown_table(["category", "case", "outcome", "detail"], details)
        + "\n"
    )
    out = results_dir(args.out)
    (out / "attack.md").write_text(report)
    record = {"command": command, "quick": args.quick, "wall_seconds": round(wall, 1), **counts,
              "cases": outcomes}  # fmt: skip
    (out / "attack.json").write_text(json.dumps(record, indent=1) + "\n")
    print(table)
    print(f"\n{wall:.0f} s; every case: {out / 'attack.md'}")


if __name__ == "__main__":
    main()
