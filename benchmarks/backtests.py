"""Backtests with sktime's ``evaluate`` on the series sktime ships: AarenForecaster's defaults fold by fold,
beside the last-value and seasonal naive forecasts of the same folds.

Each dataset is cut by an ``ExpandingWindowSplitter`` into four folds (the first training window, the
step and the horizon below); every system is evaluated on the same folds with
:func:`sktime.forecasting.model_evaluation.evaluate`, the forecaster refitted on each fold
(``strategy="refit"``) and, for AarenForecaster, also fitted once and updated with each fold's new
observations (``strategy="update"``). The table gives each fold's MAPE, their mean, and the fold's
ratio to the seasonal naive forecast's MAPE. One torch thread; CPU seconds of each system's whole
backtest beside its wall seconds.

Usage: ``python benchmarks/backtests.py [--datasets airline shampoo lynx] [--seed 0]``; writes
``benchmarks/results/backtests.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: name: (loader, seasonal period, first training window, step, horizon)
DATASETS = {
    "airline": ("load_airline", 12, 96, 12, 12),
    "shampoo": ("load_shampoo_sales", 12, 24, 3, 3),
    "lynx": ("load_lynx", 10, 74, 10, 10),
}
N_FOLDS = 4


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def backtest(name: str, seed: int) -> list[list[object]]:
    """The table's rows for dataset ``name``: one per system."""
    import sktime.datasets
    from sktime.forecasting.model_evaluation import evaluate
    from sktime.forecasting.model_selection import ExpandingWindowSplitter
    from sktime.forecasting.naive import NaiveForecaster
    from sktime.performance_metrics.forecasting import MeanAbsolutePercentageError

    from aaren_ts import AarenForecaster

    loader, sp, initial, step, horizon = DATASETS[name]
    y = getattr(sktime.datasets, loader)()
    fh = list(range(1, horizon + 1))
    cv = ExpandingWindowSplitter(fh=fh, initial_window=initial, step_length=step)
    n_folds = cv.get_n_splits(y)
    if n_folds < N_FOLDS:
        raise ValueError(f"{name}: {n_folds} folds, expected {N_FOLDS}")
    systems = {
        "last value": (lambda: NaiveForecaster(strategy="last"), "refit"),
        "seasonal naive": (lambda: NaiveForecaster(strategy="last", sp=sp), "refit"),
        "AarenForecaster (refit)": (lambda: AarenForecaster(horizon=horizon, random_state=seed), "refit"),
        "AarenForecaster (update)": (lambda: AarenForecaster(horizon=horizon, random_state=seed), "update"),
    }
    scores, costs = {}, {}
    for system, (make, strategy) in systems.items():
        cpu, tic = _cpu(), time.perf_counter()
        frame = evaluate(
            forecaster=make(), cv=cv, y=y, strategy=strategy, scoring=MeanAbsolutePercentageError(),
            error_score="raise",
        )  # fmt: skip
        costs[system] = (_cpu() - cpu, time.perf_counter() - tic)
        scores[system] = frame.iloc[:, 0].to_numpy()[-N_FOLDS:]
    reference = scores["seasonal naive"]
    rows = []
    for system, mape in scores.items():
        folds = " / ".join(f"{m:.3f}" for m in mape)
        ratios = " / ".join(f"{m / r:.2f}" for m, r in zip(mape, reference, strict=True))
        cpu, wall = costs[system]
        rows.append([name, system, folds, f"{np.mean(mape):.3f}", ratios, f"{cpu:.1f}", f"{wall:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for backtests.md (default benchmarks/results)")
    args = parser.parse_args()
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
    from _common import markdown_table, results_dir

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    rows = []
    for name in args.datasets:
        rows += backtest(name, args.seed)
        print(markdown_table(HEADER, rows), flush=True)
    settings = ", ".join(
        f"{name}: initial {DATASETS[name][2]}, step {DATASETS[name][3]}, fh 1..{DATASETS[name][4]}"
        for name in args.datasets
    )
    report = (
        "# Backtests: sktime's evaluate, fold by fold\n\n"
        f"`python benchmarks/backtests.py --seed {args.seed}`; {N_FOLDS} folds each ({settings}); "
        "AarenForecaster's defaults with `horizon` set, one torch thread.\n\n"
        + markdown_table(HEADER, rows)
        + "\n"
    )
    path = results_dir(args.out) / "backtests.md"
    path.write_text(report)
    print(f"\n{path}")


HEADER = [
    "dataset",
    "system",
    "MAPE per fold",
    "mean MAPE",
    "MAPE / seasonal naive's, per fold",
    "CPU s",
    "wall s",
]

if __name__ == "__main__":
    main()
