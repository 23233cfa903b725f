"""``aaren-ts forecast``: train AarenForecaster and report MSE/MAE beside the paper's figures.

Without ``--dataset`` it runs on sktime's bundled airline series (no download). With an ETT, Weather or
ECL dataset from a data folder it follows the long-horizon protocol (input 96, train-only scaling,
stride-1 test windows, MSE/MAE on the scaled data), evaluates every test window in batches, and also
scores the forecasts the model makes while *streaming* through the validation and test periods (one
``partial_update``-equivalent step per observation) against the fresh-window forecasts.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PAPER_MSE", "ProtocolResult", "add_arguments", "evaluate_protocol", "run"]

# Aaren's MSE in the paper (DESIGN §4), by dataset and horizon.
PAPER_MSE: dict[str, dict[int, float]] = {
    "ETTh1": {96: 0.53, 192: 0.59, 336: 0.65},
    "ETTh2": {96: 0.38, 192: 0.49, 336: 0.57, 720: 0.55},
    "ETTm1": {96: 0.48, 192: 0.51, 336: 0.54, 720: 0.60},
    "ETTm2": {96: 0.24, 192: 0.34, 336: 0.41, 720: 0.51},
    "Weather": {96: 0.18, 192: 0.25, 336: 0.31, 720: 0.40},
    "ECL": {96: 0.36, 192: 0.37, 336: 0.47, 720: 0.57},
}
BUNDLED = ("airline",)
INPUT_LENGTH = 96


@dataclass
class ProtocolResult:
    """Scores of one dataset/horizon run of the long-horizon protocol (on the scaled data)."""

    dataset: str
    horizon: int
    mse: float
    mae: float
    naive_mse: float
    naive_mae: float
    n_windows: int
    fit_seconds: float
    eval_seconds: float
    stream_mse: float | None = None
    stream_mae: float | None = None
    epochs: int = 0
    example: dict[str, Any] = field(default_factory=dict)


def _protocol_data(name: str, data_home: str | None) -> tuple[np.ndarray, dict[str, tuple[int, int]], list]:
    """The scaled series (train-only StandardScaler), the protocol's borders and the column names."""
    from aaren_ts.datasets import fit_scaler, load_forecasting, split_borders

    frame = load_forecasting(name, data_home=data_home, download_if_missing=False)
    borders = split_borders(name, INPUT_LENGTH, n_rows=len(frame))
    scaled = fit_scaler(frame, name).transform(frame.to_numpy(dtype=np.float64))
    return scaled, borders, list(frame.columns)


def protocol_test_windows(scaled: np.ndarray, borders: dict[str, tuple[int, int]], horizon: int) -> tuple:
    """Histories ``(W, L, C)`` and targets ``(W, T, C)`` of every stride-1 window of the test part."""
    start, stop = borders["test"]
    part = scaled[start:stop]
    n = len(part) - INPUT_LENGTH - horizon + 1
    view = np.lib.stride_tricks.sliding_window_view(part, INPUT_LENGTH + horizon, axis=0)  # (n, C, L+T)
    view = view[:n].transpose(0, 2, 1)
    return view[:, :INPUT_LENGTH], view[:, INPUT_LENGTH:]


def evaluate_protocol(
    name: str,
    horizon: int,
    data_home: str | None = None,
    stream: bool = True,
    window_stride: int = 1,
    **params: Any,
) -> tuple[ProtocolResult, Any]:
    """Fit AarenForecaster on train+validation (validation = early-stopping tail) and score the test part.

    Parameters
    ----------
    name : str
        Dataset name (``"ETTh1"``, ..., ``"Weather"``, ``"ECL"``).
    horizon : int
        Forecast horizon ``T``.
    data_home : str, optional
        Data folder (default ``$AAREN_TS_DATA``).
    stream : bool, default=True
        Also score the forecasts made while streaming through the test part from the fitted state.
    window_stride : int, default=1
        Score every ``window_stride``-th test window only (a cheaper estimate for screening settings;
        the protocol is 1). Streaming is scored only with stride 1.
    **params
        AarenForecaster parameters (``context_length`` defaults to 96).

    Returns
    -------
    ProtocolResult, AarenForecaster
    """
    import pandas as pd

    from aaren_ts import AarenForecaster

    stride = int(window_stride)
    if stride < 1:
        raise ValueError(f"window_stride must be a positive integer, got {window_stride!r}")
    scaled, borders, columns = _protocol_data(name, data_home)
    train_stop, val_stop = borders["train"][1], borders["val"][1]
    fit_part = pd.DataFrame(scaled[:val_stop], columns=[str(c) for c in columns])
    params.setdefault("context_length", INPUT_LENGTH)
    forecaster = AarenForecaster(
        horizon=horizon, validation_fraction=(val_stop - train_stop) / val_stop, **params
    )
    start = time.perf_counter()
    forecaster.fit(fit_part)
    fit_seconds = time.perf_counter() - start
    histories, targets = protocol_test_windows(scaled, borders, horizon)
    histories, targets = histories[::stride], targets[::stride]
    start = time.perf_counter()
    pred = forecaster.predict_windows(histories)
    eval_seconds = time.perf_counter() - start
    naive = np.repeat(histories[:, -1:], horizon, axis=1)
    result = ProtocolResult(
        dataset=name,
        horizon=horizon,
        mse=float(((pred - targets) ** 2).mean()),
        mae=float(np.abs(pred - targets).mean()),
        naive_mse=float(((naive - targets) ** 2).mean()),
        naive_mae=float(np.abs(naive - targets).mean()),
        n_windows=len(targets),
        fit_seconds=fit_seconds,
        eval_seconds=eval_seconds,
        epochs=len(forecaster.net_.history),
    )
    if stream and stride == 1:
        # The fitted state has consumed rows [0, val_stop); window i's history ends at row val_stop-1+i.
        later = scaled[val_stop : val_stop + len(targets) - 1]
        later_index = pd.RangeIndex(val_stop, val_stop + len(later))
        stream_pred = forecaster.stream_forecasts(
            pd.DataFrame(later, index=later_index, columns=fit_part.columns)
        )
        first = forecaster.predict(fh=list(range(1, horizon + 1))).to_numpy()[None]
        stream_pred = np.concatenate([first, stream_pred])
        result.stream_mse = float(((stream_pred - targets) ** 2).mean())
        result.stream_mae = float(np.abs(stream_pred - targets).mean())
    last = len(targets) // 2
    result.example = {
        "history": histories[last, :, -1],
        "target": targets[last, :, -1],
        "pred": pred[last, :, -1],
        "column": columns[-1],
    }
    return result, forecaster


def _plot(path: Path, title: str, history, target, pred, naive=None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.5))
    n = len(history)
    ax.plot(range(n), history, color="0.3", label="history")
    ax.plot(range(n, n + len(target)), target, color="black", label="truth")
    ax.plot(range(n, n + len(pred)), pred, color="tab:red", label="AarenForecaster")
    if naive is not None:
        ax.plot(range(n, n + len(naive)), naive, color="tab:blue", ls="--", label="last value")
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``aaren-ts forecast``."""
    parser.add_argument(
        "--dataset",
        default="airline",
        help="'airline' (bundled with sktime, the default) or ETTh1, ETTh2, ETTm1, ETTm2, Weather, ECL",
    )
    parser.add_argument("--data-home", default=None, help="data folder (default: $AAREN_TS_DATA)")
    parser.add_argument(
        "--horizon",
        type=int,
        nargs="+",
        default=None,
        help="horizon(s) T (default: 12 for airline, 96 192 336 720 otherwise)",
    )
    parser.add_argument("--max-epochs", type=int, default=20, help="upper bound on training epochs")
    parser.add_argument("--backbone", choices=["aaren", "transformer"], default="aaren")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--output", default="forecast_output", help="folder for the forecast plot(s)")
    parser.add_argument("--verbose", type=int, default=0)


def _run_airline(args: argparse.Namespace) -> int:
    from sktime.datasets import load_airline
    from sktime.forecasting.naive import NaiveForecaster

    from aaren_ts import AarenForecaster

    y = load_airline()
    horizon = (args.horizon or [12])[0]
    train, test = y[:-horizon], y[-horizon:]
    fh = list(range(1, horizon + 1))
    model = AarenForecaster(
        context_length=24,
        horizon=horizon,
        backbone=args.backbone,
        # 132 months make one or two training segments, so an epoch is a single step: keep the
        # learning rate constant (a per-epoch decay would stop the fit before it has learned much)
        batch_size=8,
        lr_decay=None,
        max_epochs=args.max_epochs,
        random_state=args.random_state,
        verbose=args.verbose,
    ).fit(train)
    pred = model.predict(fh=fh)
    naive = NaiveForecaster(strategy="last", sp=12).fit(train).predict(fh=fh)
    truth = test.to_numpy()
    for label, p in (("AarenForecaster", pred), ("seasonal naive (last, sp=12)", naive)):
        err = p.to_numpy() - truth
        print(f"airline T={horizon} {label:<30} MSE {np.mean(err**2):10.2f}  MAE {np.mean(np.abs(err)):7.2f}")
    path = Path(args.output) / f"forecast_airline_{args.backbone}.png"
    _plot(
        path,
        f"airline: {horizon}-month forecast",
        train.to_numpy()[-48:],
        truth,
        pred.to_numpy(),
        naive.to_numpy(),
    )
    print(f"plot: {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the job; returns the exit status."""
    if args.dataset.lower() in BUNDLED:
        return _run_airline(args)
    from aaren_ts.datasets import get_dataset_info

    name = get_dataset_info(args.dataset).name
    horizons = args.horizon or [96, 192, 336, 720]
    print(f"{name}: input {INPUT_LENGTH}, backbone {args.backbone}; MSE/MAE on scaled data, all test windows")
    print(f"{'T':>4} {'MSE':>7} {'MAE':>7} {'paper MSE':>9} {'stream MSE':>10} {'naive MSE':>9} {'fit s':>6}")
    for horizon in horizons:
        result, _ = evaluate_protocol(
            name,
            horizon,
            data_home=args.data_home,
            backbone=args.backbone,
            max_epochs=args.max_epochs,
            random_state=args.random_state,
            verbose=args.verbose,
        )
        paper = PAPER_MSE.get(name, {}).get(horizon)
        paper_s = f"{paper:9.2f}" if paper is not None else f"{'–':>9}"
        print(
            f"{horizon:>4} {result.mse:7.3f} {result.mae:7.3f} {paper_s} {result.stream_mse:10.3f} "
            f"{result.naive_mse:9.3f} {result.fit_seconds:6.0f}",
            flush=True,
        )
        ex = result.example
        path = Path(args.output) / f"forecast_{name}_T{horizon}_{args.backbone}.png"
        _plot(path, f"{name} ({ex['column']}), T={horizon}", ex["history"], ex["target"], ex["pred"])
        print(f"     plot: {path}")
    return 0
