"""Small helpers shared by the benchmark scripts: timing, result folder, Markdown tables, parameters,
the archive's splits redrawn."""

from __future__ import annotations

import re
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from aaren_ts.jobs._common import parse_param  # the command line's own, one reading of NAME=VALUE

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """Best wall-clock seconds of ``repeats`` calls after ``warmup`` calls (noise only adds time)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def best_times(calls: dict[str, Callable[[], object]], repeats: int = 3, inner: int = 1) -> dict[str, float]:
    """Best seconds per call of each of ``calls``: the best of ``repeats`` runs of ``inner`` calls.

    The runs of the different calls alternate, round by round, so that a slow spell of a noisy
    machine hits them all alike (and a ratio of two of them compares like with like).
    """
    best = dict.fromkeys(calls, float("inf"))
    for fn in calls.values():
        fn()  # warm-up
    for _ in range(repeats):
        for name, fn in calls.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: t / inner for name, t in best.items()}


def gemm_floor(linears: Sequence[torch.nn.Linear], rows: int, device: str = "cpu") -> Callable[[], None]:
    """The FLOP floor of a step: the matrix products of ``linears`` on ``rows`` tokens, as plain sgemms."""
    mats = [
        (
            torch.randn(rows, m.in_features, device=device),
            torch.randn(m.in_features, m.out_features, device=device),
        )
        for m in linears
    ]

    def run() -> None:
        for a, b in mats:
            torch.mm(a, b)

    return run


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def results_dir(path: str | None = None) -> Path:
    """The folder results are written to (created if missing)."""
    out = Path(path) if path else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    return out


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its finished child processes."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def parse_variant(text: str) -> dict[str, object]:
    """``NAME=VALUE[,NAME=VALUE]`` of a ``--variant`` option as parameters (each read by
    :func:`parse_param`); a comma starts a new one only before ``NAME=``, so a value may be a JSON list
    (``loss=["mse","mae"]``). ``""``: no parameters (the defaults)."""
    return dict(parse_param(item) for item in re.split(r",(?=\w+=)", text) if item)


def trained_networks(forecaster: object) -> str:
    """Each network of a fitted ``AarenForecaster`` as ``loss/start`` (its ``member_losses_`` and
    ``member_initial_forecasts_``, as the ``"auto"`` settings settled them), and the linear model's
    share where it has one (``linear_share_``)."""
    pairs = zip(forecaster.member_losses_, forecaster.member_initial_forecasts_, strict=True)
    networks = " ".join(f"{loss}/{start}" for loss, start in pairs)
    share = float(getattr(forecaster, "linear_share_", 0.0))
    return networks + (f" + linear {share:.1f}" if share > 0 else "")


def resample_split(
    X_train: list, y_train: np.ndarray, X_test: list, y_test: np.ndarray, resample: int
) -> tuple[list, np.ndarray, list, np.ndarray]:
    """The archive's train/test split redrawn, as the UEA/UCR bake-offs report accuracy over resamples.

    Train and test are pooled and, for each class, as many of its series as the archive's train part
    holds are drawn into train at random (``resample`` seeds the draw), the others into test, so the
    sizes and class counts of both parts stay the archive's. ``resample=0`` is the archive's split
    itself. Each part keeps the pooled order (train series first).

    Parameters
    ----------
    X_train, X_test : list
        The series of each part (any per-series objects; they are not copied).
    y_train, y_test : array-like of shape (n_train,) and (n_test,)
        Their labels.
    resample : int
        Which resample (``>= 0``).

    Returns
    -------
    X_train, y_train, X_test, y_test
    """
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if resample < 0:
        raise ValueError(f"resample must be >= 0, got {resample}")
    if resample == 0:
        return list(X_train), y_train, list(X_test), y_test
    X, y = [*X_train, *X_test], np.concatenate([y_train, y_test])
    rng = np.random.default_rng(resample)
    labels, counts = np.unique(y_train, return_counts=True)
    drawn = [
        rng.choice(np.flatnonzero(y == c), size=n, replace=False) for c, n in zip(labels, counts, strict=True)
    ]
    train = np.zeros(len(y), dtype=bool)
    train[np.concatenate(drawn)] = True
    test = ~train
    return [X[i] for i in np.flatnonzero(train)], y[train], [X[i] for i in np.flatnonzero(test)], y[test]


def paired_differences(rows: list, model: str, baseline: str) -> dict[str, dict[str, float]]:
    """Per dataset, ``baseline``'s score minus ``model``'s, paired by seed (the seeds both ran), from
    rows ``[dataset, model, seed, score, ...]``: the mean difference, its standard error
    (``sd / sqrt(n)``, ``ddof=1``), the number of seeds and the seeds on which ``baseline`` was
    better, equal and worse. Datasets with fewer than two such seeds are left out."""
    score = {(r[0], r[1], r[2]): r[3] for r in rows}
    out = {}
    for name in sorted({r[0] for r in rows}):
        seeds = sorted(
            seed for (n, m, seed) in score if (n, m) == (name, model) and (name, baseline, seed) in score
        )
        if len(seeds) < 2:
            continue
        diff = np.array([score[(name, baseline, s)] - score[(name, model, s)] for s in seeds])
        out[name] = {
            "mean": float(diff.mean()),
            "se": float(diff.std(ddof=1) / np.sqrt(len(diff))),
            "n": len(diff),
            "wins": int(np.sum(diff > 1e-9)),
            "ties": int(np.sum(np.abs(diff) <= 1e-9)),
            "losses": int(np.sum(diff < -1e-9)),
        }
    return out
