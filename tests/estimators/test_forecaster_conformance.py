"""AarenForecaster in sktime's machinery: the conformance suite, grid search, evaluate, benchmarking."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
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
    "segment_length": 24,
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
    assert f.get_tag("capability:exogenous") is False
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
def test_evaluate_with_update_strategies_is_cheap():
    y = load_airline()
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=96, step_length=6)
    results = {}
    for strategy in ("refit", "update", "no-update_params"):
        start = time.perf_counter()
        results[strategy] = evaluate(
            AarenForecaster(**SMALL, horizon=3), cv=cv, y=y, strategy=strategy, return_data=True
        )
        results[strategy].attrs["wall"] = time.perf_counter() - start
    for frame in results.values():
        assert len(frame) == len(list(cv.split(y)))
        assert np.isfinite(frame["test_MeanAbsolutePercentageError"]).all()
    fit_times = {s: r["fit_time"].iloc[1:].mean() for s, r in results.items()}
    # state-only updates are far cheaper than refitting each fold
    assert fit_times["no-update_params"] < 0.25 * fit_times["refit"]
    # the first fold of every strategy is the same fit, so the first forecasts agree
    first = {s: r["y_pred"].iloc[0] for s, r in results.items()}
    pd.testing.assert_series_equal(first["refit"], first["update"])


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
