"""AarenForecaster against a linear model on instance-normalised windows (RLinear), validation and test.

RLinear (Li et al., 2023: RevIN with its affine parameters around one linear map from the 96 input
values to the horizon, shared by the channels, trained on every window with the MSE) sets the level of
the published figures on the ETT data sets (iTransformer's table lists it at or below iTransformer on
ETTh1 and ETTh2). It is written here (``RLinear``), as its paper describes it, and trained as that
protocol trains: Adam, learning rate 1e-3 decayed by 0.9 per epoch, batches of 32 windows, at most 30
epochs, stopped after 5 without a better early-stopping MSE, the best epoch's weights kept.

Per dataset, horizon and seed, two fits of each model on the protocol's parts (input 96, every
stride-1 window, train-only standardisation):

* validation: both fitted on the training part alone; AarenForecaster cuts its own early-stopping tail
  (``validation_fraction``) from it and RLinear stops on the windows of that same tail. Both are scored
  on the tail and on the validation part; ``mean (tail weight)`` is the weighted mean of the two whose
  weight (0, 0.1, ..., 1 on AarenForecaster) has the lowest MSE on the tail, scored on the validation
  part: the choice a forecaster could make for itself. The test part is not read.
* test (``--test``): RLinear fitted on the training part with the validation part as its early-stopping
  set, scored on the test part, as the long-horizon benchmark (``forecasting.py``) scores
  AarenForecaster.

Usage::

    python benchmarks/ltsf_linear_peer.py --datasets ETTh1 --horizons 96 720 --seeds 0 --test

Writes ``benchmarks/results/ltsf_linear_peer.md`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import numpy as np
import torch
from _common import cpu_seconds, markdown_table, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, load_series, sliding_windows

WEIGHTS = np.linspace(0.0, 1.0, 11)  # AarenForecaster's weights tried in the mean of the two
BATCH, MAX_EPOCHS, PATIENCE, LR, LR_DECAY = 32, 30, 5, 1e-3, 0.9


class RLinear(torch.nn.Module):
    """RevIN (per window and channel, with a learned scale and shift per channel) around one linear map
    of the ``input_length`` values to the ``horizon``, shared by the channels."""

    def __init__(self, n_channels: int, input_length: int, horizon: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(input_length, horizon)
        self.scale = torch.nn.Parameter(torch.ones(n_channels))
        self.shift = torch.nn.Parameter(torch.zeros(n_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, C) -> (B, T, C)
        mean = x.mean(dim=1, keepdim=True)
        std = (x.var(dim=1, keepdim=True, unbiased=False) + 1e-5).sqrt()
        z = (x - mean) / std * self.scale + self.shift
        y = self.linear(z.transpose(1, 2)).transpose(1, 2)
        return (y - self.shift) / (self.scale + 1e-10) * std + mean


def _predict(model: torch.nn.Module, histories: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return np.concatenate(
            [
                model(torch.tensor(histories[k : k + 2048], dtype=torch.float32)).numpy()
                for k in range(0, len(histories), 2048)
            ]
        )


def fit_rlinear(train: np.ndarray, stop: np.ndarray, horizon: int, seed: int) -> RLinear:
    """RLinear trained on every window of ``train`` ``(n, C)``, early-stopped on those of ``stop``."""
    torch.manual_seed(seed)
    x, y = (
        torch.tensor(a, dtype=torch.float32) for a in sliding_windows(train, DEFAULT_INPUT_LENGTH, horizon)
    )
    stop_x, stop_y = sliding_windows(stop, DEFAULT_INPUT_LENGTH, horizon)
    model = RLinear(train.shape[1], DEFAULT_INPUT_LENGTH, horizon)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    best, best_state, waited = math.inf, None, 0
    for _ in range(MAX_EPOCHS):
        for rows in torch.randperm(len(x)).split(BATCH):
            loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        score = float(np.mean((_predict(model, stop_x.astype(np.float32)) - stop_y) ** 2))
        if score < best:
            best, best_state, waited = score, {k: v.clone() for k, v in model.state_dict().items()}, 0
        else:
            waited += 1
        for group in optimizer.param_groups:
            group["lr"] *= LR_DECAY
        if waited >= PATIENCE:
            break
    model.load_state_dict(best_state)
    return model.eval()


def _mse(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((pred - target) ** 2))


def validation_row(name: str, horizon: int, seed: int, data_home: str | None) -> dict[str, float]:
    """Both models fitted on the training part; their MSE on its tail and on the validation part."""
    frame, borders = load_series(name, data_home=data_home, index="range")
    values = frame.to_numpy(dtype=np.float32)
    n = borders["train"][1]
    forecaster = AarenForecaster(
        horizon=horizon, context_length=DEFAULT_INPUT_LENGTH, random_state=seed, device="cpu"
    )
    before = cpu_seconds()
    forecaster.fit(frame.iloc[:n])
    ours_seconds = cpu_seconds() - before
    cut = n - math.floor(forecaster.validation_fraction * n)  # the forecaster's own tail starts here
    tail = values[cut - DEFAULT_INPUT_LENGTH : n]
    before = cpu_seconds()
    linear = fit_rlinear(values[:cut], tail, horizon, seed)
    linear_seconds = cpu_seconds() - before
    scores: dict[str, float] = {"fit CPU s (ours)": ours_seconds, "fit CPU s (RLinear)": linear_seconds}
    forecasts = {}
    for part, segment in (("tail", tail), ("val", values[borders["val"][0] : borders["val"][1]])):
        histories, targets = sliding_windows(segment, DEFAULT_INPUT_LENGTH, horizon)
        ours = np.concatenate(
            [forecaster.predict_windows(histories[k : k + 1024]) for k in range(0, len(histories), 1024)]
        )
        forecasts[part] = (ours, _predict(linear, histories), targets)
    tail_mse = [
        _mse(w * forecasts["tail"][0] + (1 - w) * forecasts["tail"][1], forecasts["tail"][2]) for w in WEIGHTS
    ]
    weight = float(WEIGHTS[int(np.argmin(tail_mse))])
    ours, lin, targets = forecasts["val"]
    scores.update(
        {
            "tail MSE (ours)": tail_mse[-1],
            "tail MSE (RLinear)": tail_mse[0],
            "val MSE (ours)": _mse(ours, targets),
            "val MSE (RLinear)": _mse(lin, targets),
            "tail weight": weight,
            "val MSE (mean, tail weight)": _mse(weight * ours + (1 - weight) * lin, targets),
        }
    )
    return scores


def test_mse(name: str, horizon: int, seed: int, data_home: str | None) -> float:
    """RLinear fitted on the training part, early-stopped on the validation part: its test MSE."""
    frame, borders = load_series(name, data_home=data_home, index="range")
    values = frame.to_numpy(dtype=np.float32)
    (_, train_stop), (val_start, val_stop), (test_start, test_stop) = (
        borders[k] for k in ("train", "val", "test")
    )
    model = fit_rlinear(values[:train_stop], values[val_start:val_stop], horizon, seed)
    histories, targets = sliding_windows(values[test_start:test_stop], DEFAULT_INPUT_LENGTH, horizon)
    return _mse(_predict(model, histories), targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--datasets", nargs="+", default=["ETTh1", "ETTh2"])
    parser.add_argument("--horizons", type=int, nargs="+", default=[96, 192, 336, 720])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--test", action="store_true", help="also RLinear's test MSE")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    keys = [
        "tail MSE (ours)",
        "tail MSE (RLinear)",
        "val MSE (ours)",
        "val MSE (RLinear)",
        "tail weight",
        "val MSE (mean, tail weight)",
    ]
    rows = []
    for name in args.datasets:
        for horizon in args.horizons:
            for seed in args.seeds:
                scores = validation_row(name, horizon, seed, args.data_home)
                row = [name, horizon, seed, *(f"{scores[k]:.4f}" for k in keys)]
                row.append(f"{test_mse(name, horizon, seed, args.data_home):.4f}" if args.test else "")
                row += [f"{scores['fit CPU s (ours)']:.0f}", f"{scores['fit CPU s (RLinear)']:.0f}"]
                rows.append(row)
                print(" | ".join(str(c) for c in row), flush=True)
    header = ["dataset", "T", "seed", *keys, "test MSE (RLinear)", "fit CPU s (ours)", "fit CPU s (RLinear)"]
    text = [
        "# AarenForecaster's defaults and RLinear on the long-horizon protocol's validation part",
        "",
        f"Command: `python benchmarks/ltsf_linear_peer.py` with this run's options; {platform.machine()}, "
        f"torch {torch.__version__}, one thread; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "Both fitted on the training part (the tail: the forecaster's early-stopping part of it); "
        "`tail weight`: AarenForecaster's weight in the mean of the two with the lowest tail MSE.",
        "",
        markdown_table(header, rows),
    ]
    path = results_dir(args.output) / "ltsf_linear_peer.md"
    path.write_text("\n".join(text) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
