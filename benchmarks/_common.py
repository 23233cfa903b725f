"""Small helpers shared by the benchmark scripts: timing, result folder, Markdown tables."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

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
