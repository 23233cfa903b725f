"""Exogenous variables in AarenForecaster: ETTh1's oil temperature, and a series driven by a known input.

**ETTh1** (the long-horizon protocol's data and split: train-only StandardScaler, fit on train+validation
with the validation part as the early-stopping tail, T=96 by default): the target is ``OT`` alone, forecast

* from its own history;
* with the six load series (HUFL ... LULL) as *past* covariates (``past_covariates``: known up to the
  forecast's origin only);
* with calendar covariates known for the future (hour of day, day of week; ``calendar_covariates``);

each scored by streaming through the test period one observation at a time (``partial_update`` with the
step's covariates) and forecasting the next T steps after every one (``predict`` with the future-known
covariates of those steps), beside the last value and the seasonal naive (24 h) on the same forecasts.

**Simulated**: ``y_t = 3 u_t + e_t`` with ``e`` an AR(1) noise and ``u`` a known input (a random
step function, like a planned price or set point), forecast without and with ``u`` as a future-known
covariate; the covariate must cut the MSE by more than half.

Usage::

    python benchmarks/covariates.py --data-home $AAREN_TS_DATA

Writes ``benchmarks/results/covariates.md``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np
import pandas as pd
import torch
from _common import markdown_table, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.covariates import calendar_covariates
from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, load_series

LOADS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL"]


def stream_scores(
    forecaster: AarenForecaster,
    y: np.ndarray,
    X: np.ndarray | None,
    start: int,
    horizon: int,
    n_future: int,
) -> tuple[float, float]:
    """MSE and MAE of the forecasts after each observation from ``start`` on (full horizons only).

    ``y`` ``(n,)`` and ``X`` ``(n, n_exog)`` cover the whole series; the forecaster has consumed
    ``y[:start]``. The first ``n_future`` columns of ``X`` are passed for the forecast steps.
    """
    squared, absolute = [], []
    for t in range(start, len(y) - horizon):
        exog = None if X is None else X[None, t : t + 1]
        forecaster.partial_update_array(y[None, t : t + 1, None], X=exog)
        future = X[None, t + 1 : t + 1 + horizon, :n_future] if n_future else None
        error = forecaster.predict_array(X=future)[0, :, 0] - y[t + 1 : t + 1 + horizon]
        squared.append(np.mean(error**2))
        absolute.append(np.mean(np.abs(error)))
    return float(np.mean(squared)), float(np.mean(absolute))


def naive_scores(y: np.ndarray, start: int, horizon: int, season: int) -> tuple[float, float]:
    """The same forecasts' scores for the (seasonal) naive: the last ``season`` values repeated."""
    squared, absolute = [], []
    for t in range(start, len(y) - horizon):
        last = y[t + 1 - season : t + 1]
        error = np.resize(last, horizon) - y[t + 1 : t + 1 + horizon]
        squared.append(np.mean(error**2))
        absolute.append(np.mean(np.abs(error)))
    return float(np.mean(squared)), float(np.mean(absolute))


def ett_rows(args: argparse.Namespace) -> list[list[str]]:
    frame, borders = load_series("ETTh1", data_home=args.data_home, download_if_missing=False)
    train_stop, val_stop = borders["train"][1], borders["val"][1]
    target = frame["OT"].to_numpy(dtype=np.float64)
    calendar = calendar_covariates(frame.index).to_numpy()
    settings = [
        ("OT alone", None, None),
        ("OT + six loads (past covariates)", frame[LOADS].to_numpy(dtype=np.float64), LOADS),
        ("OT + calendar (future-known)", calendar, []),
    ]
    y_fit = pd.Series(target[:val_stop], index=frame.index[:val_stop], name="OT")
    rows = []
    for label, exog, past in settings:
        forecaster = AarenForecaster(
            horizon=args.horizon,
            context_length=DEFAULT_INPUT_LENGTH,
            validation_fraction=(val_stop - train_stop) / val_stop,
            past_covariates=past if past else None,
            random_state=args.seed,
        )
        X_fit = None
        if exog is not None:
            names = LOADS if past else list(calendar_covariates(frame.index[:1]).columns)
            X_fit = pd.DataFrame(exog[:val_stop], index=y_fit.index, columns=names)
        start = time.perf_counter()
        forecaster.fit(y_fit, X=X_fit)
        fit_s = time.perf_counter() - start
        n_future = 0 if exog is None else int(forecaster.n_future_)
        mse, mae = stream_scores(forecaster, target, exog, val_stop, args.horizon, n_future)
        rows.append(["ETTh1 OT", label, f"{mse:.4f}", f"{mae:.4f}", f"{fit_s:.0f}"])
        print(rows[-1], flush=True)
    for label, season in (("last value", 1), ("seasonal naive (24 h)", 24)):
        mse, mae = naive_scores(target, val_stop, args.horizon, season)
        rows.append(["ETTh1 OT", label, f"{mse:.4f}", f"{mae:.4f}", "–"])
    return rows


def simulated_rows(args: argparse.Namespace) -> list[list[str]]:
    rng = np.random.default_rng(args.seed)
    n, horizon = 4000, 24
    u = np.repeat(rng.normal(size=n // 8 + 1), 8)[:n]  # a planned input, changing every 8 steps
    noise = np.zeros(n)
    for t in range(1, n):
        noise[t] = 0.8 * noise[t - 1] + 0.5 * rng.normal()
    y = 10.0 + 3.0 * u + noise
    split = 3000
    index = pd.RangeIndex(split)
    rows = []
    for label, use_x in (("without u", False), ("with u (future-known)", True)):
        forecaster = AarenForecaster(horizon=horizon, context_length=48, random_state=args.seed)
        X_fit = pd.DataFrame({"u": u[:split]}, index=index) if use_x else None
        start = time.perf_counter()
        forecaster.fit(pd.Series(y[:split], index=index, name="y"), X=X_fit)
        fit_s = time.perf_counter() - start
        exog = u[:, None] if use_x else None
        mse, mae = stream_scores(forecaster, y, exog, split, horizon, 1 if use_x else 0)
        rows.append(["simulated, y = 3u + AR(1)", label, f"{mse:.4f}", f"{mae:.4f}", f"{fit_s:.0f}"])
        print(rows[-1], flush=True)
    mse, mae = naive_scores(y, split, horizon, 1)
    rows.append(["simulated, y = 3u + AR(1)", "last value", f"{mse:.4f}", f"{mae:.4f}", "–"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = simulated_rows(args) + ett_rows(args)
    text = [
        f"# Covariates: ETTh1's OT (T={args.horizon}) and a series driven by a known input "
        f"(seed {args.seed})",
        "",
        "Command: `python benchmarks/covariates.py --data-home $AAREN_TS_DATA`",
        "",
        f"Machine: {platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s). "
        "Streaming through the test period from the fitted state, a forecast of the whole horizon after "
        "every observation; ETTh1 on the protocol's scaled data (OT's scale), the simulated series in "
        "its own units (the last 1000 of 4000 steps, horizon 24).",
        "",
        markdown_table(["data", "model", "MSE", "MAE", "fit s"], rows),
        "",
    ]
    out = results_dir(args.output)
    (out / "covariates.md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
