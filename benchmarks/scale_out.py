"""Past one process: a grid search on a Dask cluster, and one fit across processes with Accelerate.

Two measurements on this machine, in the same run:

* **Many fits.** A 16-candidate ``GridSearchCV`` (2-fold, 32 fits) over ``AarenClassifier`` on
  BasicMotions (UEA; it ships with sktime), first sequentially in this process (one torch thread), then
  through joblib's Dask backend on a ``LocalCluster`` of ``--workers`` single-threaded worker
  processes. Wall time, speed-up, the ideal speed-up (the number of workers) and whether both found
  the same scores. The cluster's start (its workers importing torch) is timed apart.
* **One fit.** The classifier (default sizes) trained data-parallel with ``accelerate launch`` on 1 and on
  ``--workers`` processes (one thread each, the same global batch), on BasicMotions repeated to
  ``--train-copies`` times its size: training samples per second over the fit.

Usage::

    python benchmarks/scale_out.py

Writes ``benchmarks/results/scale_out.md``. Needs the ``distributed`` extra.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

GRID = {
    "d_model": [16, 32],
    "readout": ["mean", "last"],
    "lr": [1e-3, 3e-3],
    "max_epochs": [80, 160],
}
SIZES = {"n_heads": 2, "n_layers": 1, "d_ff": 32, "device": "cpu", "random_state": 0, "num_threads": 1}


def basic_motions(copies: int = 1) -> tuple[np.ndarray, np.ndarray]:
    from sktime.datasets import load_basic_motions

    X, y = load_basic_motions(split="train", return_type="numpy3D")
    return np.concatenate([X] * copies), np.concatenate([y] * copies)


def _warm_up() -> None:
    import aaren_ts.estimators.classifier  # noqa: F401


def grid_search(workers: int) -> list[list[object]]:
    import joblib
    from distributed import Client, LocalCluster
    from sklearn.model_selection import GridSearchCV

    from aaren_ts import AarenClassifier

    X, y = basic_motions()
    search = GridSearchCV(AarenClassifier(**SIZES), GRID, cv=2)
    start = time.perf_counter()
    sequential = search.fit(X, y)
    t_seq = time.perf_counter() - start
    scores_seq = sequential.cv_results_["mean_test_score"].copy()
    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,
    )  # fmt: skip
    with cluster, Client(cluster) as client:
        start = time.perf_counter()
        client.run(_warm_up)  # the workers import torch and aaren_ts once; timed apart
        t_start = time.perf_counter() - start
        start = time.perf_counter()
        with joblib.parallel_backend("dask"):
            distributed = GridSearchCV(AarenClassifier(**SIZES), GRID, cv=2, n_jobs=-1).fit(X, y)
        t_dask = time.perf_counter() - start
    same = bool(np.array_equal(distributed.cv_results_["mean_test_score"], scores_seq))
    n = len(scores_seq)
    print(f"cluster of {workers} workers ready (torch and aaren_ts imported) in {t_start:.1f}s")
    return [
        [
            f"GridSearchCV, {n} candidates x 2 folds",
            "sequential, 1 process",
            f"{t_seq:.1f}",
            "1.00x",
            "-",
            "-",
        ],
        [
            f"GridSearchCV, {n} candidates x 2 folds",
            f"Dask LocalCluster, {workers} workers x 1 thread",
            f"{t_dask:.1f}",
            f"{t_seq / t_dask:.2f}x",
            f"{workers:.2f}x",
            "yes" if same else "NO",
        ],
    ]


def train_worker(out: str, copies: int, global_batch: int) -> None:
    """Run by ``accelerate launch``: fit data-parallel and report training samples per second."""
    import torch
    from accelerate import Accelerator

    from aaren_ts import AarenClassifier

    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    X, y = basic_motions(copies)
    batch = global_batch // accelerator.num_processes
    clf = AarenClassifier(
        **{**SIZES, "d_model": 64, "n_heads": 4, "d_ff": 128, "n_layers": 2, "device": accelerator},
        batch_size=batch, max_epochs=5, validation_fraction=None,
    )  # fmt: skip
    start = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - start
    if accelerator.is_main_process:
        epochs = len(clf.net_.history)
        report = {"processes": accelerator.num_processes, "seconds": seconds, "samples": len(X) * epochs}
        Path(out).write_text(json.dumps(report), encoding="utf-8")


def training_throughput(workers: int, copies: int, global_batch: int) -> list[list[object]]:
    rows, base = [], None
    for processes in (1, workers):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.json"
            cmd = [sys.executable, "-m", "accelerate.commands.launch"]
            cmd += ["--multi_gpu"] if processes > 1 else []
            cmd += ["--num_processes", str(processes), "--num_machines", "1", "--mixed_precision", "no"]
            cmd += [
                "--dynamo_backend",
                "no",
                "--main_process_port",
                "0",
                __file__,
                "--train-worker",
                str(out),
            ]
            cmd += ["--train-copies", str(copies), "--global-batch", str(global_batch)]
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-4000:])
            report = json.loads(out.read_text(encoding="utf-8"))
        rate = report["samples"] / report["seconds"]
        base = base or rate
        label = f"one fit, {copies * 40} series x 5 epochs, global batch {global_batch}"
        rows.append(
            [label, f"accelerate launch, {processes} process(es) x 1 thread", f"{report['seconds']:.1f}",
             f"{rate / base:.2f}x", f"{processes:.2f}x", f"{rate:,.0f} samples/s"]
        )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--train-copies", type=int, default=20, help="BasicMotions repeated this often")
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--output", default=None, help="results folder")
    parser.add_argument("--train-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.train_worker:
        train_worker(args.train_worker, args.train_copies, args.global_batch)
        return
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from _common import markdown_table, results_dir

    torch.set_num_threads(1)
    rows = grid_search(args.workers)
    print(markdown_table(["job", "how", "seconds", "speed-up", "ideal", "same scores"], rows[-2:]))
    rows += training_throughput(args.workers, args.train_copies, args.global_batch)
    header = ["job", "how", "seconds", "speed-up", "ideal", "same scores / throughput"]
    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    )
    report = "\n\n".join(["# Scaling out", f"{machine}.", markdown_table(header, rows)])
    folder = results_dir(args.output)
    out = folder / "scale_out.md"
    out.write_text(report + "\n", encoding="utf-8")
    plot(rows, folder / "scale_out.png")
    print(report)
    print(f"written to {out} and scale_out.png")


def plot(rows: list[list[object]], path: Path) -> None:
    """Speed-up of each job against its one-process run, beside the ideal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = list(dict.fromkeys(str(row[0]) for row in rows))
    fig, axes = plt.subplots(1, len(jobs), figsize=(5 * len(jobs), 3.4), squeeze=False)
    for ax, job in zip(axes[0], jobs, strict=True):
        mine = [row for row in rows if row[0] == job]
        labels = [str(row[1]).replace(", ", "\n", 1) for row in mine]
        speed = [float(str(row[3]).rstrip("x")) for row in mine]
        ideal = [1.0] + [float(str(row[4]).rstrip("x")) for row in mine[1:]]
        x = np.arange(len(mine))
        ax.bar(x - 0.2, speed, width=0.4, label="measured", color="C0")
        ax.bar(x + 0.2, ideal, width=0.4, label="ideal", color="0.75")
        for i, v in enumerate(speed):
            ax.text(i - 0.2, v, f"{v:.2f}x", ha="center", va="bottom", fontsize=9)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("speed-up")
        ax.set_title(job, fontsize=9)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
