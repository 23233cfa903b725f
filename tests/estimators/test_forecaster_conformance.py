"""AarenForecaster in sktime's machinery: the conformance suite, grid search, evaluate, benchmarking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sktime.datasets import load_airline
from sktime.forecasting.model_evaluation import evaluate
from sktime.forecasting.model_selection import ForecastingGridSearchCV
from sktime.performance_metrics.forecasting import MeanSquaredError
from sktime.split import ExpandingWindowSplitter

from aaren_ts import AarenForecaster

SMALL = {
    "d_model": 8,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 16,
    "context_length": 12,
    "max_epochs": 2,
    "batch_size": 4,
    "device": "cpu",
    "random_state": 0,
}


@pytest.mark.slow
@pytest.mark.parametrize("params_index", [0, 1])
def test_sktime_check_estimator(params_index):
    from sktime.utils.estimator_checks import check_estimator

    params = AarenForecaster.get_test_params()[params_index]
    results = check_estimator(AarenForecaster(**params), raise_exceptions=True)
    assert results
    assert all(v == "PASSED" for v in results.values())


def test_tags_are_truthful():
    f = AarenForecaster()
    assert f.get_tag("capability:update") is True
    assert f.get_tag("capability:multivariate") is True
    assert f.get_tag("capability:insample") is False
    assert f.get_tag("capability:exogenous") is True
    assert f.get_tag("capability:pred_int") is True
    assert f.get_config()["remember_data"] is False


@pytest.mark.slow
def test_grid_search():
    y = load_airline()
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=100, step_length=20)
    gscv = ForecastingGridSearchCV(
        AarenForecaster(**SMALL, horizon=3),
        cv=cv,
        param_grid={"local_norm": ["last", "mean"]},
        scoring=MeanSquaredError(),
    )
    gscv.fit(y[:-12])
    assert gscv.best_params_["local_norm"] in ("last", "mean")
    assert len(gscv.predict(fh=[1, 2, 3])) == 3


@pytest.mark.slow
def test_evaluate_with_update_strategies():
    y = load_airline()
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=96, step_length=6)
    results = {}
    for strategy in ("refit", "update", "no-update_params"):
        forecaster = AarenForecaster(**SMALL, horizon=3)
        results[strategy] = evaluate(forecaster, cv=cv, y=y, strategy=strategy, return_data=True)
    for frame in results.values():
        assert len(frame) == len(list(cv.split(y)))
        assert np.isfinite(frame["test_MeanAbsolutePercentageError"]).all()
    # the first fold of every strategy is the same fit, so the first forecasts agree
    first = {s: r["y_pred"].iloc[0] for s, r in results.items()}
    pd.testing.assert_series_equal(first["refit"], first["update"])
    # What makes the state-only folds cheap (timed in benchmarks/forecasting.py, not asserted here):
    # update(update_params=False) trains nothing and leaves the weights as they are.
    f = AarenForecaster(**SMALL, horizon=3).fit(y[:96])
    weights = {k: v.clone() for k, v in f.net_.module_.state_dict().items()}
    epochs = len(f.net_.history)
    f.update(y[96:102], update_params=False)
    assert len(f.net_.history) == epochs
    for k, v in f.net_.module_.state_dict().items():
        assert torch.equal(v, weights[k]), k
    assert f.cutoff[0] == y.index[101]


@pytest.mark.slow
def test_forecasting_benchmark_update_strategy(tmp_path):
    from sktime.benchmarking.forecasting import ForecastingBenchmark

    benchmark = ForecastingBenchmark()
    benchmark.add_estimator(AarenForecaster(**SMALL, horizon=3), estimator_id="aaren")
    benchmark.add_task(
        load_airline,
        ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=120, step_length=6),
        [MeanSquaredError()],
        strategy="update",
    )
    results = benchmark.run(str(tmp_path / "results.csv"))
    assert len(results) == 1
    score_cols = [c for c in results.columns if "MeanSquaredError" in c and "mean" in c]
    assert score_cols and np.isfinite(results[score_cols[0]]).all()
