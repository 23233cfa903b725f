"""M4 Hourly: one global AarenForecaster over all 414 series, beside the competition's published table.

Protocol (the M4 competition's): fit on each series' training part, forecast the next 48 hours, score
sMAPE, MASE (in-sample seasonal naive scale, m = 24) and OWA (relative to Naive2's published totals)
with :mod:`aaren_ts.metrics`, and the MSIS (m = 24) and empirical coverage of the 95 % intervals. In
the same run: sktime's seasonal naive (``NaiveForecaster(sp=24)``) and last value on every series, and,
for contrast on the first ``--broadcast-series`` series, the same AarenForecaster trained per series
(sktime's broadcasting of a single-series fit, one forecaster each), with the global model's and the
seasonal naive's scores on the same series. The global model runs with its defaults (only ``horizon``
set) and, when ``--param`` is given, also with those settings (the contrast and the plot then use the
latter).

Usage::

    python benchmarks/global_m4.py --data-home $AAREN_TS_DATA

Writes ``benchmarks/results/global_m4.md`` and ``global_m4.png`` (a few series with their forecasts).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings

import numpy as np
import pandas as pd
import torch
from _common import markdown_table, parse_param, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.datasets import load_m4
from aaren_ts.datasets.reference import M4_HOURLY
from aaren_ts.metrics import mase, msis, owa, smape


def _scores(y_test: pd.DataFrame, y_pred: pd.DataFrame, y_train: pd.DataFrame, sp: int) -> dict[str, float]:
    s = smape(y_test, y_pred)
    m = mase(y_test, y_pred, y_train=y_train, sp=sp)
    return {"smape": s, "mase": m, "owa": owa(s, m, frequency="Hourly")}


def _subset(y: pd.DataFrame, ids: list) -> pd.DataFrame:
    return y[y.index.get_level_values(0).isin(ids)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--broadcast-series", type=int, default=12, help="series fitted one forecaster each")
    parser.add_argument("--param", type=parse_param, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--skip-defaults", action="store_true", help="only the --param settings")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*remember_data.*", category=FutureWarning)
    if args.threads:
        torch.set_num_threads(args.threads)

    from sktime.forecasting.naive import NaiveForecaster

    data = load_m4("Hourly", data_home=args.data_home)
    y_train, y_test, sp, fh = data.y_train, data.y_test, data.sp, list(range(1, data.horizon + 1))
    params = {"horizon": data.horizon, "device": "cpu", **dict(args.param)}
    rows: list[dict] = []

    def record(
        name: str,
        pred: pd.DataFrame,
        fit_s: float,
        truth=y_test,
        train=y_train,
        scope="all 414",
        interval: pd.DataFrame | None = None,
    ) -> None:
        rows.append({"model": name, "series": scope, **_scores(truth, pred, train, sp), "fit_s": fit_s})
        last = rows[-1]
        if interval is not None:  # the 95 % interval: M4's MSIS (m = 24) and the empirical coverage
            lower, upper = interval.iloc[:, 0].to_frame("y"), interval.iloc[:, 1].to_frame("y")
            last["msis"] = msis(truth, lower, upper, y_train=train, sp=sp, alpha=0.05)
            inside = (truth["y"] >= lower["y"]) & (truth["y"] <= upper["y"])
            last["cov95"] = 100.0 * float(inside.mean())
        print(
            f"{name:<48} {scope:<10} sMAPE {last['smape']:7.3f} MASE {last['mase']:6.3f} "
            f"OWA {last['owa']:6.3f} MSIS {last.get('msis', float('nan')):7.3f} fit {fit_s:7.1f}s",
            flush=True,
        )

    for label, strategy, season in (
        ("NaiveForecaster(sp=24) (seasonal naive)", "last", sp),
        ("NaiveForecaster (last value)", "last", 1),
    ):
        start = time.perf_counter()
        naive = NaiveForecaster(strategy=strategy, sp=season).fit(y_train)
        fit_s = time.perf_counter() - start
        record(label, naive.predict(fh), fit_s, interval=naive.predict_interval(fh, coverage=0.95))

    # the defaults first (only horizon), then with the --param settings if any
    variants = [] if args.skip_defaults else [{"horizon": data.horizon, "device": "cpu"}]
    if args.param:
        variants.append(params)
    global_preds = []
    for variant in variants:
        for seed in args.seeds:
            model = AarenForecaster(**variant, random_state=seed)
            start = time.perf_counter()
            model.fit(y_train)
            fit_s = time.perf_counter() - start
            pred = model.predict(fh)
            global_preds.append(pred)
            extra = ", ".join(f"{k}={v}" for k, v in variant.items() if k != "device")
            interval = model.predict_interval(fh, coverage=0.95)
            record(f"AarenForecaster({extra}) global, seed {seed}", pred, fit_s, interval=interval)
            print(f"   epochs run: {len(model.net_.history)}", flush=True)
    global_preds = global_preds[-len(args.seeds) :]  # the last variant's, for the contrast and the plot

    ids = list(data.series_ids[: args.broadcast_series])
    if ids:
        train_sub, test_sub = _subset(y_train, ids), _subset(y_test, ids)
        scope = f"first {len(ids)}"
        naive = NaiveForecaster(strategy="last", sp=sp).fit(train_sub)
        record("NaiveForecaster(sp=24) (seasonal naive)", naive.predict(fh), 0.0, test_sub, train_sub, scope)
        record(
            "AarenForecaster global (same fit as above, these series)",
            _subset(global_preds[0], ids),
            0.0,
            test_sub,
            train_sub,
            scope,
        )
        start = time.perf_counter()
        per_series = []
        for series_id in ids:
            single = train_sub.xs(series_id, level=0)
            f = AarenForecaster(**params, random_state=args.seeds[0]).fit(single)
            per_series.append(pd.concat({series_id: f.predict(fh)}, names=["series", "time"]))
        record(
            "AarenForecaster per series (one forecaster each)",
            pd.concat(per_series),
            time.perf_counter() - start,
            test_sub,
            train_sub,
            scope,
        )

    out = results_dir(args.output)
    header = ["model", "series", "sMAPE", "MASE", "OWA", "MSIS (95 %)", "coverage 95 %", "fit s"]
    table = [
        [
            r["model"],
            r["series"],
            f"{r['smape']:.3f}",
            f"{r['mase']:.3f}",
            f"{r['owa']:.3f}",
            f"{r['msis']:.3f}" if "msis" in r else "–",
            f"{r['cov95']:.1f}" if "cov95" in r else "–",
            f"{r['fit_s']:.1f}",
        ]
        for r in rows
    ]
    published = [
        [
            name,
            "all 414",
            f"{v.get('smape', float('nan')):.3f}" if "smape" in v else "–",
            f"{v['mase']:.3f}" if "mase" in v else "–",
            f"{v['owa']:.3f}" if "owa" in v else "–",
            f"{v['msis']:.3f}" if "msis" in v else "–",
            "–",
            "–",
        ]
        for name, v in M4_HOURLY.items()
    ]
    text = [
        "# M4 Hourly: one global AarenForecaster (414 series, horizon 48, m = 24)",
        "",
        "Command: `python benchmarks/global_m4.py --data-home $AAREN_TS_DATA"
        + "".join(f" --param {k}={json.dumps(v)}" for k, v in args.param)
        + (f" --seeds {' '.join(map(str, args.seeds))}" if args.seeds != [0] else "")
        + "`",
        "",
        f"Machine: {platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s); "
        "sMAPE/MASE/OWA/MSIS from `aaren_ts.metrics` (OWA against Naive2's published Hourly totals; "
        "MSIS of the 95 % intervals, m = 24; sktime's NaiveForecaster intervals are its own).",
        "",
        "## This run",
        "",
        markdown_table(header, table),
        "",
        "## Published (M4 competition, Hourly)",
        "",
        markdown_table(header, published),
    ]
    (out / "global_m4.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    _plot(out / "global_m4.png", y_train, y_test, global_preds[0], data.series_ids[:4], sp)


def _plot(path, y_train, y_test, pred, ids, sp) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install 'aaren-ts[plot]'): no plot")
        return
    fig, axes = plt.subplots(len(ids), 1, figsize=(10, 2.4 * len(ids)), squeeze=False)
    for ax, series_id in zip(axes[:, 0], ids, strict=True):
        history = y_train.xs(series_id, level=0).iloc[-7 * 24 :, 0]
        truth = y_test.xs(series_id, level=0).iloc[:, 0]
        ax.plot(history.index, history.to_numpy(), color="0.3", lw=1, label="history")
        ax.plot(truth.index, truth.to_numpy(), color="k", lw=1.2, label="actual")
        ax.plot(
            truth.index,
            pred.xs(series_id, level=0).iloc[:, 0].to_numpy(),
            color="C0",
            lw=1.5,
            label="AarenForecaster (global)",
        )
        snaive = np.resize(y_train.xs(series_id, level=0).iloc[-sp:, 0].to_numpy(), len(truth))
        ax.plot(truth.index, snaive, color="C1", lw=1, ls="--", label="seasonal naive")
        ax.set_title(str(series_id), fontsize=9, loc="left")
    axes[0, 0].legend(fontsize=8, ncol=4)
    axes[-1, 0].set_xlabel("hour")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
