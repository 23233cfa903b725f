# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# ruff: noqa: E402 (imports stay in the notebook cells that use them)

# %% [markdown]
# # Model selection with sklearn and sktime
#
# `AarenClassifier` and `AarenForecaster` are ordinary sklearn/sktime estimators, so the usual
# model-selection tools work with them unchanged:
#
# 1. `GridSearchCV` over an sklearn `Pipeline` that ends in `AarenClassifier`;
# 2. sktime's `evaluate` (rolling-origin evaluation) of `AarenForecaster`;
# 3. sktime's `ForecastingBenchmark`: `AarenForecaster` against DLinear (`LTSFDLinearForecaster`)
#    and the repeat-last-value forecaster, which any useful forecaster must beat.
#
# Set `AAREN_TS_EXAMPLES_QUICK=1` for a reduced run (tiny grids, few epochs).

# %%
import contextlib
import warnings

import numpy as np
import pandas as pd
import torch
from _common import QUICK, output_dir
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.datasets import load_uea

warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


@contextlib.contextmanager
def without_sktime_notice():
    """Run a block with sktime's notice about the coming default of its `remember_data` config dropped.

    sktime's own forecasters raise it whenever one is built or cloned (DLinear and NaiveForecaster in
    section 3; AarenForecaster sets the config and raises none). A warning filter cannot hold it back:
    while sktime runs, it checks frequencies inside a context that leaves
    `filterwarnings("default", category=FutureWarning)` behind, ahead of every earlier filter. So the
    block's warnings are collected, and all but that notice are shown once it ends.
    """
    with warnings.catch_warnings(record=True) as caught:
        yield
    for w in caught:
        if "The default of config ``remember_data``" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


EPOCHS = 3 if QUICK else 100
# These models are small: one thread is as fast, and timings stay meaningful on a busy machine.
torch.set_num_threads(1)
print("reduced setting" if QUICK else "full setting")

# %% [markdown]
# ## 1. Grid search over a pipeline
#
# BasicMotions (ships with sktime): 6 channels, 100 time points, 4 classes. The first pipeline step
# appends the first differences of every channel as extra channels; sklearn transformers receive the
# 3D array `(n_series, n_channels, n_timepoints)` unchanged when `validate=False`.

# %%
X_train, y_train = load_uea("BasicMotions", split="train")
X_test, y_test = load_uea("BasicMotions", split="test")


def add_differences(X):
    """Stack each channel's first difference (0 at the first step) under the channels."""
    diff = np.diff(X, axis=-1, prepend=X[..., :1])
    return np.concatenate([X, diff], axis=1)


pipe = Pipeline(
    [
        ("diff", FunctionTransformer(add_differences, validate=False)),
        ("clf", AarenClassifier(max_epochs=EPOCHS, n_layers=1, random_state=0, num_threads=1)),
    ]
)
grid = {"clf__d_model": [16, 32]} if QUICK else {"clf__d_model": [32, 64], "clf__readout": ["mean", "last"]}
search = GridSearchCV(pipe, grid, cv=StratifiedKFold(2 if QUICK else 4, shuffle=True, random_state=0))
search.fit(X_train, y_train)
print("best parameters:", search.best_params_)
print(pd.DataFrame(search.cv_results_)[["params", "mean_test_score", "std_test_score"]])
print(f"test accuracy of the refitted best pipeline: {search.score(X_test, y_test):.3f}")

# %% [markdown]
# ## 2. Rolling-origin evaluation with sktime's `evaluate`
#
# The airline series (monthly, 144 points, ships with sktime). Each fold refits on an expanding
# window and forecasts the next 12 months.

# %%
from sktime.datasets import load_airline
from sktime.forecasting.model_evaluation import evaluate
from sktime.performance_metrics.forecasting import MeanAbsolutePercentageError
from sktime.split import ExpandingWindowSplitter

y = load_airline()
fh = np.arange(1, 13)
cv = ExpandingWindowSplitter(initial_window=108 if QUICK else 72, step_length=24 if QUICK else 12, fh=fh)
forecaster = AarenForecaster(context_length=24, horizon=12, max_epochs=2 if QUICK else 50, random_state=0)
results = evaluate(forecaster, cv, y, scoring=MeanAbsolutePercentageError())
print(results[["test_MeanAbsolutePercentageError", "fit_time", "len_train_window"]])

# %% [markdown]
# ## 3. A small benchmark: Aaren vs DLinear vs repeat-last-value
#
# `ForecastingBenchmark` runs every estimator on every task and writes one row per estimator and
# task. DLinear is sktime's port of the LTSF linear model; it needs its input and output lengths
# (`seq_len`, `pred_len`) up front.

# %%
from sktime.benchmarking.forecasting import ForecastingBenchmark
from sktime.forecasting.ltsf import LTSFDLinearForecaster
from sktime.forecasting.naive import NaiveForecaster
from sktime.performance_metrics.forecasting import MeanSquaredError

table_path = output_dir() / "model_selection_benchmark.csv"
with without_sktime_notice():
    bench = ForecastingBenchmark()
    bench.add_estimator(
        AarenForecaster(context_length=24, horizon=12, max_epochs=2 if QUICK else 50, random_state=0),
        estimator_id="Aaren",
    )
    bench.add_estimator(
        LTSFDLinearForecaster(seq_len=24, pred_len=12, num_epochs=2 if QUICK else 50), estimator_id="DLinear"
    )
    bench.add_estimator(NaiveForecaster(strategy="last"), estimator_id="Naive-last")
    bench.add_task(load_airline, cv, [MeanSquaredError(), MeanAbsolutePercentageError()])
    table = bench.run(str(table_path))
cols = [c for c in table.columns if c.endswith("_mean") and "time" not in c]
print(table[["model_id", *cols]].to_string(index=False))
print(f"written to {table_path}")
