"""Many fits on a Dask cluster: a real ``LocalCluster`` of 2 single-threaded worker processes.

The searches and evaluations run through joblib's Dask backend (scikit-learn) and sktime's
``backend="dask"``, and give exactly the scores of the same run in this process.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np
import pytest

pytest.importorskip("distributed", reason='the "distributed" extra (dask.distributed) is not installed')

import joblib
from distributed import Client, LocalCluster, get_task_stream
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sktime.datasets import load_airline
from sktime.forecasting.model_evaluation import evaluate
from sktime.forecasting.model_selection import ForecastingGridSearchCV
from sktime.performance_metrics.forecasting import MeanSquaredError
from sktime.split import ExpandingWindowSplitter

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.nn import fused_step_available
from tests._params import TINY_NETWORK

#: the default ensemble and its random kernels, fewer of them (840: one threshold per kernel and slot)
TINY_CLF = {**TINY_NETWORK, "n_random_features": 840}
TINY_FC = {**TINY_NETWORK, "context_length": 12, "max_epochs": 2, "batch_size": 8}


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    with cluster, Client(cluster) as dask_client:
        yield dask_client


def _panel(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.array(["a", "b"] * 20)
    X = rng.normal(scale=0.3, size=(40, 24))
    X += np.where(y == "a", 1.0, -1.0)[:, None] * np.linspace(-1, 1, 24)
    return X, y


def _worker_probe() -> tuple[int, bool]:
    import torch

    from aaren_ts.nn import fused_step_available as available

    return torch.get_num_threads(), available()


def _threads_during_fit() -> list[int]:
    """Fit a classifier on a worker; the torch threads its training epochs ran with."""
    import torch
    from skorch.callbacks import Callback

    class CountThreads(Callback):
        seen: ClassVar[list[int]] = []  # (one list for the clones every network of the ensemble trains with)

        def on_epoch_begin(self, net, **kwargs):
            self.seen.append(torch.get_num_threads())

    X, y = _panel()
    AarenClassifier(**TINY_CLF, max_epochs=2, callbacks=[CountThreads()]).fit(X, y)
    assert len(CountThreads.seen) == 2 * 2  # (two networks of two epochs each)
    return CountThreads.seen


def _workers(tasks) -> set[str]:
    """The workers that ran the tasks a ``get_task_stream`` block recorded."""
    return {task["worker"] for task in tasks.data}


def test_workers_run_one_torch_thread_each_with_the_installed_kernel(client):
    probes = client.run(_worker_probe)
    assert len(probes) == 2
    assert all(threads == 1 for threads, _ in probes.values()), probes
    assert all(kernel == fused_step_available() for _, kernel in probes.values()), probes
    # ... and training on a worker stays within it (no oversubscription of the 2 cores)
    assert set(client.submit(_threads_during_fit, pure=False).result()) == {1}


@pytest.mark.slow
def test_grid_search_over_a_pipeline_on_dask_equals_the_sequential_search(client):
    X, y = _panel()
    pipe = Pipeline(
        [
            ("scale", FunctionTransformer(lambda a: a * 2.0)),
            ("clf", AarenClassifier(**TINY_CLF, num_threads=1)),
        ]
    )
    grid = {"clf__max_epochs": [1, 8], "clf__readout": ["mean", "last"]}
    sequential = GridSearchCV(pipe, grid, cv=2).fit(X, y)
    with get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
        distributed = GridSearchCV(pipe, grid, cv=2, n_jobs=-1).fit(X, y)
        cv_scores = cross_val_score(
            AarenClassifier(**TINY_CLF, max_epochs=8, num_threads=1), X, y, cv=2, n_jobs=-1
        )
    assert _workers(tasks) == set(client.scheduler_info()["workers"])  # both workers fitted
    np.testing.assert_array_equal(
        distributed.cv_results_["mean_test_score"], sequential.cv_results_["mean_test_score"]
    )
    assert distributed.best_params_ == sequential.best_params_
    np.testing.assert_array_equal(distributed.predict_proba(X), sequential.predict_proba(X))
    expected = cross_val_score(AarenClassifier(**TINY_CLF, max_epochs=8, num_threads=1), X, y, cv=2)
    np.testing.assert_array_equal(cv_scores, expected)


@pytest.mark.slow
def test_forecasting_grid_search_and_evaluate_with_the_dask_backend_equal_sequential(client):
    y = load_airline()[:96]
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=60, step_length=12)
    forecaster = AarenForecaster(**TINY_FC, horizon=3, num_threads=1)
    grid = {"local_norm": ["last", "mean"], "max_epochs": [1, 2]}
    runs = {}
    for backend in (None, "dask"):
        search = ForecastingGridSearchCV(
            forecaster, cv=cv, param_grid=grid, scoring=MeanSquaredError(), backend=backend
        )
        with get_task_stream(client) as tasks:
            runs[backend] = search.fit(y)
        assert bool(_workers(tasks)) == (backend == "dask")  # the cluster ran the dask search only
    sequential, distributed = runs[None], runs["dask"]
    np.testing.assert_array_equal(
        distributed.cv_results_["mean_test_MeanSquaredError"],
        sequential.cv_results_["mean_test_MeanSquaredError"],
    )
    assert distributed.best_params_ == sequential.best_params_
    np.testing.assert_array_equal(distributed.predict(fh=[1, 2, 3]), sequential.predict(fh=[1, 2, 3]))

    scores = {
        backend: evaluate(forecaster, cv=cv, y=y, strategy="update", backend=backend)[
            "test_MeanAbsolutePercentageError"
        ]
        for backend in (None, "dask")
    }
    np.testing.assert_array_equal(scores["dask"].to_numpy(), scores[None].to_numpy())


class StreamShard:
    """The streams of some series, held by one worker (the pattern of the "Scaling out" guide)."""

    def __init__(self, path, series_ids):
        self.forecaster = AarenForecaster.load(path)
        self.series_ids = list(series_ids)

    def update(self, y):
        self.forecaster.partial_update_array(y, self.series_ids)
        return self.forecaster.predict_array(self.series_ids)


def test_streams_sharded_over_dask_actors_forecast_as_one_process(client, tmp_path):
    import pandas as pd

    rng = np.random.default_rng(2)
    frames = []
    for k in range(8):
        values = 10 + k + np.sin(np.arange(80) / 3 + k) + rng.normal(0, 0.2, 80)
        index = pd.MultiIndex.from_arrays([[f"s{k}"] * 80, np.arange(80)], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
    forecaster = AarenForecaster(**TINY_FC, horizon=4, num_threads=1).fit(pd.concat(frames))
    path = forecaster.save(tmp_path / "global_model")
    partitions = np.array_split(np.array(forecaster.series_ids_), len(client.nthreads()))
    shards = [client.submit(StreamShard, str(path), ids, actor=True).result() for ids in partitions]
    new = rng.normal(12, 1, (8, 5, 1))
    parts = np.array_split(new, len(partitions))
    sharded = np.concatenate([shard.update(part).result() for shard, part in zip(shards, parts, strict=True)])
    forecaster.partial_update_array(new)
    np.testing.assert_allclose(sharded, forecaster.predict_array(), rtol=0, atol=1e-6)
