"""The aeon side of ``benchmarks/classification.py``: run in aeon's own Python, one thread.

aeon 1.x needs an older numpy than this project's environment, so the peers run in a separate
virtual environment (see ``benchmarks/requirements-aeon.txt``)::

    python3 -m venv .venv-aeon && .venv-aeon/bin/pip install -r benchmarks/requirements-aeon.txt

``classification.py`` starts this script with that Python, hands it the data as ``.npz`` files and reads
back one JSON file. Each classifier is first fitted once on a few cases, so that numba's compilation
(tens of seconds for MiniRocket and MultiRocket) is not counted in the timings. It imports numpy and
aeon only (never ``aaren_ts``), so it runs in any environment with aeon; ``classification.py`` imports
its :func:`prefix_lengths` too, so both sides cut the series at the same points.

Usage (by ``classification.py``)::

    python benchmarks/_aeon_peers.py TASK.json RESULT.json
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

#: aeon's convolution-based classifiers (class name in ``aeon.classification.convolution_based``).
PEERS = {
    "MiniRocket": "MiniRocketClassifier",
    "MultiRocket": "MultiRocketClassifier",
    "MultiRocket-Hydra": "MultiRocketHydraClassifier",
}
#: MiniRocket's kernels have length 9: shorter series are zero-padded to it.
MIN_LENGTH = 9


def prefix_lengths(lengths: np.ndarray, fraction: float) -> np.ndarray:
    """The number of leading time points of each series that make ``fraction`` of it (at least 1)."""
    return np.maximum(1, np.ceil(np.asarray(lengths) * fraction - 1e-9).astype(int))


def pad(values: np.ndarray, keep: np.ndarray, width: int) -> np.ndarray:
    """The first ``keep[i]`` points of each series i, zero-padded to ``width`` points.

    Parameters
    ----------
    values : ndarray of shape (n_cases, n_channels, max_length)
        The series, NaN after each one's end.
    keep : ndarray of shape (n_cases,)
        How many leading points of each to keep (its length, or a prefix).
    width : int
        The common length, at least ``keep.max()``: the same for TRAIN and TEST (aeon's classifiers
        take one length).

    Returns
    -------
    ndarray of shape (n_cases, n_channels, width)
    """
    out = np.zeros((values.shape[0], values.shape[1], width))
    for i, k in enumerate(keep):
        out[i, :, :k] = values[i, :, :k]
    return out


def _timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """The call's result, its CPU seconds (this process, all threads) and its wall seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def _make(peer: str, seed: int) -> Any:
    """An aeon classifier with its defaults, one thread."""
    from aeon.classification import convolution_based

    return getattr(convolution_based, PEERS[peer])(n_jobs=1, random_state=seed)


def _pad_pair(data: Any, fraction: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """TRAIN and TEST cut to ``fraction`` of each series and zero-padded to one common length."""
    keep_train = prefix_lengths(data["len_train"], fraction)
    keep_test = prefix_lengths(data["len_test"], fraction)
    width = max(int(keep_train.max()), int(keep_test.max()), MIN_LENGTH)
    return pad(data["X_train"], keep_train, width), pad(data["X_test"], keep_test, width)


def warm_up(peers: list[str], X: np.ndarray, y: np.ndarray) -> None:
    """Fit and predict each peer once on a few cases, so numba's compilation is not timed."""
    keep = np.concatenate([np.flatnonzero(y == label)[:2] for label in np.unique(y)])
    for peer in {*peers, "MiniRocket"}:
        try:
            _make(peer, 0).fit(X[keep], y[keep]).predict(X[keep])
        except Exception as error:  # the timed run reports it
            print(f"warm-up of {peer} failed: {type(error).__name__}: {error}", flush=True)


def run(task: dict) -> dict:
    """Fit and score every peer on every dataset and seed, and MiniRocket on every prefix fraction."""
    rows, curve, notes = [], [], []
    if task["datasets"]:
        first = np.load(task["datasets"][0]["path"], allow_pickle=False)
        warm_up(task["peers"], _pad_pair(first)[0], first["y_train"])
    for entry in task["datasets"]:
        data = np.load(entry["path"], allow_pickle=False)
        name = entry["name"]
        X_train, X_test = _pad_pair(data)
        y_train, y_test = data["y_train"], data["y_test"]
        for seed in entry.get("seeds", task["seeds"]):  # a resampled split: its own seed
            for peer in task["peers"]:
                try:
                    clf = _make(peer, seed)
                    _, fit_cpu, fit_wall = _timed(partial(clf.fit, X_train, y_train))
                    pred, pred_cpu, pred_wall = _timed(partial(clf.predict, X_test))
                except Exception as error:  # report and go on with the other peers
                    notes.append(f"{peer} failed on {name} (seed {seed}): {type(error).__name__}: {error}")
                    continue
                acc = 100.0 * float(np.mean(pred == y_test))
                rows.append([name, peer, seed, acc, fit_cpu, fit_wall, pred_cpu, pred_wall])
                print(
                    f"{name:22s} {peer:18s} seed={seed} acc={acc:6.2f}% fit={fit_cpu:6.1f} CPU s", flush=True
                )
            for fraction in task["fractions"]:
                X_tr, X_te = _pad_pair(data, fraction)
                try:
                    clf = _make("MiniRocket", seed).fit(X_tr, y_train)
                    acc = 100.0 * float(np.mean(clf.predict(X_te) == y_test))
                except Exception as error:
                    notes.append(
                        f"MiniRocket failed on {name} prefix {fraction} (seed {seed}): "
                        f"{type(error).__name__}: {error}"
                    )
                    continue
                curve.append([name, "MiniRocket (trained per prefix)", seed, fraction, acc])
                print(f"{name:22s} MiniRocket prefix {fraction:4.2f} seed={seed} acc={acc:6.2f}%", flush=True)
    import aeon

    return {"rows": rows, "curve": curve, "notes": notes, "aeon": aeon.__version__, "numpy": np.__version__}


def main(argv: list[str]) -> int:
    task = json.loads(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(run(task)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
