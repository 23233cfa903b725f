"""Small helpers shared by the benchmark scripts: timing, result folder, Markdown tables, parameters."""

from __future__ import annotations

import re
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

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
