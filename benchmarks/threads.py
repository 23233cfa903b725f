"""What the default thread setting costs: one airline fit with ``num_threads`` at its default, at ``1``
and at ``None`` (torch's own setting, every core), on an idle machine and beside a CPU-bound process.

Each fit runs in a fresh worker process (torch's thread pool keeps the size it first had), which
prints its CPU seconds, wall seconds and a digest of the forecasts. The busy case starts one process
that spins on a core for the whole fit, as another job on a laptop or a shared CI machine would.
Ratios are CPU seconds against ``num_threads=1`` in the same condition.

Usage: ``python benchmarks/threads.py [--max-epochs 5]``; writes ``benchmarks/results/threads.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = {"default": "default", "1": 1, "None": None}


def _spin(stop: multiprocessing.Event) -> None:
    """Keep one core busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def worker(setting: str, max_epochs: int) -> None:
    """Fit the airline forecaster with ``setting``'s ``num_threads``; print one JSON line."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from sktime.datasets import load_airline

    from aaren_ts import AarenForecaster

    y = load_airline()
    kwargs = {} if setting == "default" else {"num_threads": SETTINGS[setting]}
    forecaster = AarenForecaster(horizon=12, max_epochs=max_epochs, random_state=0, **kwargs)
    usage, tic = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    forecaster.fit(y[:-24])
    wall = time.perf_counter() - tic
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    digest = hashlib.md5(forecaster.predict(fh=list(range(1, 13))).to_numpy().tobytes()).hexdigest()[:12]
    print(json.dumps({"cpu": cpu, "wall": wall, "digest": digest}), flush=True)


def run(setting: str, max_epochs: int) -> dict:
    """One worker's result."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", setting, "--max-epochs", str(max_epochs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker")
    parser.add_argument("--max-epochs", type=int, default=5)
    parser.add_argument("--out", default=None, help="folder for threads.md (default benchmarks/results)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.max_epochs)
        return
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
    from _common import markdown_table, results_dir

    rows = []
    for condition in ("idle", "busy"):
        stop = multiprocessing.Event()
        spinner = multiprocessing.Process(target=_spin, args=(stop,)) if condition == "busy" else None
        if spinner is not None:
            spinner.start()
        try:
            results = {setting: run(setting, args.max_epochs) for setting in SETTINGS}
        finally:
            if spinner is not None:
                stop.set()
                spinner.join()
        one = results["1"]["cpu"]
        for setting, r in results.items():
            ratio = f"{r['cpu'] / one:.2f}"
            rows.append([condition, setting, f"{r['cpu']:.1f}", f"{r['wall']:.1f}", ratio, r["digest"]])
    header = ["machine", "num_threads", "fit CPU s", "fit wall s", "CPU s / num_threads=1", "forecast md5"]
    table = markdown_table(header, rows)
    report = (
        "# Threads: the airline fit by thread setting\n\n"
        f"`python benchmarks/threads.py --max-epochs {args.max_epochs}` on {os.cpu_count()} cores "
        "(busy: one other process spinning on a core).\n\n" + table + "\n"
    )
    path = results_dir(args.out) / "threads.md"
    path.write_text(report)
    print(table)
    print(f"\n{path}")


if __name__ == "__main__":
    main()
