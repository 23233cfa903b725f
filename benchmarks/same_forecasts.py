"""Do two revisions of aaren_ts forecast alike? Fit the same forecasters and save, or compare, outputs.

A refactoring must not move the figures on the results page. This script fits, with one thread and fixed
seeds, a forecaster on sktime's airline series (streamed 12 steps further), one on a series driven by a
future-known covariate, and a global one on 40 series of M4 Hourly, and saves their point forecasts,
quantiles and variances; run it once with each revision on ``PYTHONPATH`` and compare the two files::

    git worktree add ../before <revision> && (cd ../before && python setup.py -q build_ext --inplace)
    PYTHONPATH=../before python benchmarks/same_forecasts.py --data-home DIR --save before.npz
    python benchmarks/same_forecasts.py --data-home DIR --save after.npz
    python benchmarks/same_forecasts.py --compare before.npz after.npz
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd


def _fit_and_forecast(data_home: str | None) -> dict[str, np.ndarray]:
    from sktime.datasets import load_airline

    from aaren_ts import AarenForecaster
    from aaren_ts.datasets import load_m4

    out = {}
    y = load_airline()
    f = AarenForecaster(horizon=12, random_state=0, max_epochs=8, num_threads=1).fit(y[:-24])
    f.partial_update(y[-24:-12])
    fh = list(range(1, 13))
    out["airline_pred"] = f.predict(fh=fh).to_numpy()
    out["airline_q"] = f.predict_quantiles(fh=fh, alpha=[0.025, 0.1, 0.5, 0.9, 0.975]).to_numpy()
    out["airline_var"] = f.predict_var(fh=fh).to_numpy()
    rng = np.random.default_rng(0)
    index = pd.RangeIndex(400)
    X = pd.DataFrame({"x": rng.normal(size=400)}, index=index)  # known for the future
    driven = pd.Series(np.sin(np.arange(400) / 5) + 2 * X["x"] + rng.normal(size=400).cumsum() / 10, index)
    c = AarenForecaster(horizon=5, random_state=0, max_epochs=5, num_threads=1).fit(driven[:380], X=X[:380])
    out["covariate_pred"] = c.predict(fh=fh[:5], X=X[380:385]).to_numpy()
    out["covariate_q"] = c.predict_quantiles(fh=fh[:5], X=X[380:385], alpha=[0.1, 0.9]).to_numpy()
    y_train = load_m4("Hourly", data_home=data_home).y_train
    ids = list(y_train.index.get_level_values(0).unique()[:40])
    g = AarenForecaster(horizon=48, sp=24, random_state=0, max_epochs=3, num_threads=1).fit(y_train.loc[ids])
    fh = list(range(1, 49))
    out["m4_pred"] = g.predict(fh=fh).to_numpy()
    out["m4_q"] = g.predict_quantiles(fh=fh, alpha=[0.025, 0.975]).to_numpy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--save", help="fit with the aaren_ts on the path and save the outputs here")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two saved outputs")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.save:
        np.savez(args.save, **_fit_and_forecast(args.data_home))
    if args.compare:
        before, after = (np.load(path) for path in args.compare)
        print("| output | largest difference | relative to its largest value |\n|---|---|---|")
        for name in before.files:
            gap = float(np.abs(before[name] - after[name]).max())
            print(f"| {name} | {gap:.3g} | {gap / float(np.abs(before[name]).max()):.3g} |")


if __name__ == "__main__":
    main()
