"""A small data-parallel fit, run by ``accelerate launch`` from ``test_accelerate.py`` (not a test itself).

Usage: ``accelerate launch --multi_gpu --num_processes N accelerate_fit.py KIND OUT BATCH_SIZE [--gpu]``
with KIND ``classifier`` or ``forecaster`` (``--multi_gpu`` is accelerate's multi-process launcher; the
processes train on CPU with gloo unless ``--gpu`` is given, then on one GPU each with NCCL). Every
process fits; the main one saves the model to ``OUT.zip`` and writes ``OUT.json`` (number of
processes, validation losses per epoch, fit time).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pandas as pd
from accelerate import Accelerator

from aaren_ts import AarenClassifier, AarenForecaster

SIZES = {"d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "random_state": 0, "num_threads": 1}


def classification_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.array(["a", "b"] * 64)
    X = rng.normal(scale=1.0, size=(len(y), 2, 32))
    X[:, 0] += np.where(y == "a", 0.6, -0.6)[:, None] * np.sin(np.linspace(0, 3, 32))
    return X, y


def forecasting_data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frames = []
    for k in range(16):
        t = np.arange(160)
        values = 10 + 3 * np.sin(2 * np.pi * (t + k) / 12) + rng.normal(0, 0.5, len(t))
        index = pd.MultiIndex.from_arrays([[f"s{k}"] * len(t), t], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
    return pd.concat(frames)


def make(kind: str, batch_size: int, accelerator: Accelerator | None):
    if kind == "classifier":
        return AarenClassifier(
            **SIZES, max_epochs=12, batch_size=batch_size, validation_fraction=0.25, patience=None,
            device=accelerator or "auto",
        )  # fmt: skip
    return AarenForecaster(
        **SIZES, horizon=6, context_length=24, max_epochs=6, batch_size=batch_size,
        patience=None, device=accelerator or "auto",
    )  # fmt: skip


def fit(kind: str, batch_size: int, accelerator: Accelerator | None):
    est = make(kind, batch_size, accelerator)
    start = time.perf_counter()
    if kind == "classifier":
        X, y = classification_data()
        est.fit(X, y)
    else:
        est.fit(forecasting_data(), fh=list(range(1, 7)))
    return est, time.perf_counter() - start


def main() -> None:
    kind, out, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    accelerator = Accelerator(cpu="--gpu" not in sys.argv[4:])
    est, seconds = fit(kind, batch_size, accelerator)
    if accelerator.is_main_process:
        est.save(out)
        history = est.net_.history
        report = {
            "processes": accelerator.num_processes,
            "valid_loss": [float(v) for v in history[:, "valid_loss"]],
            "train_batches": int(sum(len(epoch["batches"]) for epoch in history)),
            "seconds": seconds,
        }
        with open(f"{out}.json", "w", encoding="utf-8") as fh:
            json.dump(report, fh)
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main()
