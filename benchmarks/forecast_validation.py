"""Choosing the forecaster's defaults without the test data: validation cut from the training part.

Every series' training part loses its last ``horizon`` values, which become the validation target; the
forecaster is fitted on the rest (its own early-stopping tail is cut from that again) and scored there,
beside the last value and the seasonal naive forecast of the same cut (with 95 % intervals computed as
statsforecast's). This is the run the defaults are chosen on (the official test parts are scored by
``benchmarks/forecast_peers.py``). Each ``--param`` setting (``NAME=VALUE[,NAME=VALUE]``, one per flag)
is one row per seed; no flag: the defaults alone.

Usage::

    python benchmarks/forecast_validation.py --dataset tourism_quarterly --seeds 0 1 2 \\
        --variant "" --variant context_length=96

Writes ``benchmarks/results/forecast_validation_<dataset>.md``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd
import torch
from _common import cpu_seconds, markdown_table, parse_param, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.datasets import load_m4, load_tourism
from aaren_ts.metrics import coverage, mape, mase, msis, smape

LOADERS = {
    "m4_hourly": lambda home: load_m4("Hourly", data_home=home),
    "tourism_quarterly": lambda home: load_tourism("Quarterly", data_home=home),
}


def _cut(y: pd.DataFrame, horizon: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each series' last ``horizon`` values (the validation target) and what comes before them."""
    position = y.groupby(level=0, sort=False).cumcount(ascending=False)
    return y[position >= horizon], y[position < horizon]


def _naive(train: pd.DataFrame, valid: pd.DataFrame, season: int) -> tuple[pd.DataFrame, ...]:
    """The (seasonal) naive forecast of every series on ``valid``'s index, and its 95 % interval as
    statsforecast gives it: the in-sample errors' root mean square, times the square root of the number
    of seasons ahead, times the normal quantile."""
    z = NormalDist().inv_cdf(0.975)
    point, lower, upper = [], [], []
    for (_, part), (_, target) in zip(
        train.groupby(level=0, sort=False), valid.groupby(level=0, sort=False), strict=True
    ):
        values = part.iloc[:, 0].to_numpy(dtype=float)
        forecast = np.resize(values[-season:], len(target))
        sigma = np.sqrt(np.nanmean((values[season:] - values[:-season]) ** 2))
        half = z * sigma * np.sqrt(np.arange(len(target)) // season + 1)
        point.append(forecast)
        lower.append(forecast - half)
        upper.append(forecast + half)
    column = valid.columns[0]
    return tuple(pd.DataFrame({column: np.concatenate(v)}, index=valid.index) for v in (point, lower, upper))


def _scores(train, valid, pred, sp, lower=None, upper=None) -> dict[str, float]:
    out = {
        "sMAPE": smape(valid, pred),
        "MAPE": mape(valid, pred),
        "MASE": mase(valid, pred, y_train=train, sp=sp),
    }
    if lower is not None:
        out["MSIS"] = msis(valid, lower, upper, y_train=train, sp=sp, alpha=0.05)
        out["coverage 95 %"] = 100 * coverage(valid, lower, upper)
    return out


def _variant(text: str) -> dict[str, object]:
    return dict(parse_param(item) for item in text.split(",") if item)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="tourism_quarterly")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variant", action="append", default=None, metavar="NAME=VALUE[,NAME=VALUE]")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*remember_data.*", category=FutureWarning)
    torch.set_num_threads(1)
    data = LOADERS[args.dataset](args.data_home)
    train, valid = _cut(data.y_train, data.horizon)
    fh = list(range(1, data.horizon + 1))
    rows = []
    for name, season in (("last value", 1), (f"seasonal naive (m = {data.sp})", data.sp)):
        point, lower, upper = _naive(train, valid, season)
        rows.append({"system": name, **_scores(train, valid, point, data.sp, lower, upper)})
    for text in args.variant or [""]:
        for seed in args.seeds:
            params = {"horizon": data.horizon, "device": "cpu", "random_state": seed, **_variant(text)}
            forecaster = AarenForecaster(**params)
            start = cpu_seconds()
            forecaster.fit(train)
            fit_cpu = cpu_seconds() - start
            pred = forecaster.predict(fh=fh)
            interval = forecaster.predict_interval(fh=fh, coverage=0.95)
            lower, upper = interval.iloc[:, [0]], interval.iloc[:, [1]]
            lower.columns = upper.columns = valid.columns
            label = f"AarenForecaster({text or 'defaults'}), seed {seed}"
            scores = _scores(train, valid, pred, data.sp, lower, upper)
            rows.append({"system": label, **scores, "fit CPU s": fit_cpu})
            print(label, {k: round(v, 3) for k, v in scores.items()}, f"fit {fit_cpu:.1f} CPU s", flush=True)
    header = ["system", "sMAPE", "MAPE", "MASE", "MSIS", "coverage 95 %", "fit CPU s"]
    table = [[r["system"], *(f"{r[k]:.3f}" if k in r else "–" for k in header[1:])] for r in rows]
    text = [
        f"# Validation cut from the training part: {args.dataset}",
        "",
        f"Each series' last {data.horizon} training values are the target; {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, torch {torch.__version__}, one thread.",
        "",
        markdown_table(header, table),
    ]
    path = results_dir(args.output) / f"forecast_validation_{args.dataset}.md"
    path.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
