"""Choosing the forecaster's settings for the long-horizon protocol without its test part.

The forecaster is fitted on the protocol's training part alone (its own early-stopping tail cut from
that) and scored on every stride-1 window of the validation part (input 96), beside the last value and
the seasonal naive forecast of the same windows. Each ``--variant`` (``NAME=VALUE[,NAME=VALUE]``;
``""``: the defaults) is one row per dataset, horizon and seed. The test part is never read.

Usage::

    python benchmarks/ltsf_validation.py --datasets ETTh1 ETTh2 --horizons 96 --seeds 0 1 2 \\
        --variant "" --variant initial_forecast=level

Writes ``benchmarks/results/ltsf_validation.md`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch
from _common import cpu_seconds, markdown_table, parse_variant, results_dir, trained_networks

from aaren_ts import AarenForecaster
from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, get_dataset_info, load_series, sliding_windows
from aaren_ts.jobs.forecast import protocol_seasonal_naive

#: Validation windows scored per call of ``predict_windows``.
BLOCK = 1024


def _mse(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((np.broadcast_to(pred, target.shape) - target) ** 2))


def validation_scores(name: str, horizon: int, seed: int, params: dict, data_home: str | None) -> dict:
    """The MSE of the forecaster fitted on ``name``'s training part with ``params``, and of both naive
    forecasts, over every window of the validation part; and the fit's CPU seconds."""
    frame, borders = load_series(name, data_home=data_home, index="range")
    scaled = frame.to_numpy(dtype=np.float64)
    train_stop = borders["train"][1]
    start, stop = borders["val"]
    histories, targets = sliding_windows(scaled[start:stop], DEFAULT_INPUT_LENGTH, horizon)
    forecaster = AarenForecaster(
        horizon=horizon, context_length=DEFAULT_INPUT_LENGTH, random_state=seed, device="cpu", **params
    )
    before = cpu_seconds()
    forecaster.fit(frame.iloc[:train_stop])
    fit_seconds = cpu_seconds() - before
    errors = [
        np.mean((forecaster.predict_windows(histories[k : k + BLOCK]) - targets[k : k + BLOCK]) ** 2)
        * len(targets[k : k + BLOCK])
        for k in range(0, len(targets), BLOCK)
    ]
    sp = get_dataset_info(name).sp
    return {
        "MSE": float(np.sum(errors) / len(targets)),
        "last value": _mse(histories[:, -1:], targets),
        "seasonal naive": _mse(protocol_seasonal_naive(scaled, borders, horizon, sp, part="val"), targets),
        "fit CPU s": fit_seconds,
        "networks": trained_networks(forecaster),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--datasets", nargs="+", default=["ETTh1", "ETTh2"])
    parser.add_argument("--horizons", type=int, nargs="+", default=[96])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variant", action="append", default=None, metavar="NAME=VALUE[,NAME=VALUE]")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.datasets:
        for horizon in args.horizons:
            for text in args.variant or [""]:
                for seed in args.seeds:
                    scores = validation_scores(name, horizon, seed, parse_variant(text), args.data_home)
                    row = [name, horizon, text or "defaults", seed] + [
                        f"{scores[k]:.4f}" for k in ("MSE", "last value", "seasonal naive")
                    ]
                    rows.append([*row, f"{scores['fit CPU s']:.0f}", scores["networks"]])
                    print(" | ".join(str(c) for c in rows[-1]), flush=True)
    header = ["dataset", "T", "variant", "seed", "MSE", "last value MSE", "seasonal naive MSE", "fit CPU s"]
    header.append("networks")
    text = [
        "# The long-horizon protocol's validation part: fitted on the training part, every window scored",
        "",
        f"Command: `python benchmarks/ltsf_validation.py` with this run's options; {platform.machine()}, "
        f"torch {torch.__version__}, one thread; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        markdown_table(header, rows),
    ]
    path = results_dir(args.output) / "ltsf_validation.md"
    path.write_text("\n".join(text) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
