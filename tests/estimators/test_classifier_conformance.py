"""AarenClassifier against the real sktime and sklearn suites, in sklearn/sktime tooling, on real data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from aaren_ts import AarenClassifier
from aaren_ts.estimators.classifier import SKLEARN_EXPECTED_FAILED_CHECKS

# small but able to learn the blobs sklearn's checks use
_SKLEARN_INSTANCE = AarenClassifier(
    d_model=16, n_heads=2, n_layers=1, d_ff=32, max_epochs=15, device="cpu", num_threads=1
)


@pytest.mark.slow
def test_sktime_check_estimator():
    from sktime.utils.estimator_checks import check_estimator

    results = check_estimator(AarenClassifier, raise_exceptions=True)
    failed = {name: result for name, result in results.items() if result != "PASSED"}
    assert not failed
    assert len(results) > 100


with warnings.catch_warnings():
    # sklearn notes that the classifier is not a BaseEstimator subclass: it is an sktime estimator
    # that keeps sklearn's contract by itself, which these very checks test
    warnings.filterwarnings("ignore", message=".*does not inherit from `sklearn.base.BaseEstimator`")
    _SKLEARN_CHECKS = parametrize_with_checks(
        [_SKLEARN_INSTANCE],
        expected_failed_checks=lambda est: AarenClassifier.sklearn_expected_failed_checks(),
    )


@pytest.mark.slow
@_SKLEARN_CHECKS
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_expected_failures_are_documented():
    doc = AarenClassifier.sklearn_expected_failed_checks.__doc__
    for name, reason in SKLEARN_EXPECTED_FAILED_CHECKS.items():
        assert name in doc and len(reason) > 40


def test_tags_are_truthful():
    clf = AarenClassifier()
    assert clf.get_tag("capability:multivariate")
    assert clf.get_tag("capability:unequal_length")
    assert clf.get_tag("capability:predict_proba")
    assert clf.get_tag("capability:random_state")
    assert not clf.get_tag("capability:missing_values")
    from sklearn.base import is_classifier

    assert is_classifier(clf)


@pytest.mark.slow
def test_grid_search_over_pipeline_in_parallel():
    from sklearn.model_selection import GridSearchCV, cross_val_score
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(0)
    y = np.array(["a", "b"] * 20)
    X = rng.normal(scale=0.3, size=(40, 24))
    X += np.where(y == "a", 1.0, -1.0)[:, None] * np.linspace(-1, 1, 24)
    pipe = Pipeline(
        [
            ("scale", FunctionTransformer(lambda a: a * 2.0)),
            (
                "clf",
                AarenClassifier(  # (the network alone: its epochs are what the search must find)
                    d_model=8,
                    n_heads=2,
                    n_layers=1,
                    d_ff=16,
                    n_random_features=0,
                    device="cpu",
                    random_state=0,
                    num_threads=1,
                ),
            ),
        ]
    )
    grid = {"clf__max_epochs": [1, 15], "clf__readout": ["mean", "last"]}
    search = GridSearchCV(pipe, grid, cv=2, n_jobs=2)
    search.fit(X, y)
    assert search.best_params_["clf__max_epochs"] == 15
    assert search.score(X, y) >= 0.9
    assert set(search.predict(X)) <= {"a", "b"}
    scores = cross_val_score(search.best_estimator_, X, y, cv=2)
    assert scores.mean() >= 0.8


@pytest.mark.slow
def test_sktime_classification_benchmark_and_evaluate():
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import KFold
    from sktime.benchmarking.classification import ClassificationBenchmark
    from sktime.classification.model_evaluation import evaluate
    from sktime.datasets import load_basic_motions

    X, y = load_basic_motions(return_type="numpy3D")
    clf = AarenClassifier(
        d_model=16, n_heads=2, n_layers=1, d_ff=32, max_epochs=20, device="cpu", random_state=0, num_threads=1
    )
    bench = ClassificationBenchmark()
    bench.add_estimator(clf, estimator_id="AarenClassifier")
    bench.add_task(
        (X, y), KFold(n_splits=2, shuffle=True, random_state=0), [accuracy_score], task_id="basic_motions"
    )
    results = bench.run()
    accuracy = results.filter(like="accuracy_score_mean").iloc[0, 0]
    assert accuracy >= 0.8

    scores = evaluate(clf, KFold(n_splits=2, shuffle=True, random_state=0), X, y, scoring=accuracy_score)
    assert scores.filter(like="accuracy").to_numpy().mean() >= 0.8


@pytest.mark.slow
@pytest.mark.data
def test_real_uea_data_end_to_end(shared_data_home):
    """BasicMotions from the real .ts files: near-perfect test accuracy in a short fit; streaming agrees."""
    from aaren_ts.datasets import load_uea

    X_train, y_train = load_uea(
        "BasicMotions", "train", data_home=shared_data_home, return_type="list", download_if_missing=False
    )
    X_test, y_test = load_uea(
        "BasicMotions", "test", data_home=shared_data_home, return_type="list", download_if_missing=False
    )
    clf = AarenClassifier(
        d_model=32, n_layers=1, d_ff=64, max_epochs=40, device="cpu", random_state=0, num_threads=1
    ).fit(X_train, y_train)
    assert clf.score(X_test, y_test) >= 0.9
    clf.reset_stream()
    for start in range(0, 100, 30):
        clf.partial_update([x[:, start : start + 30] for x in X_test[:5]])
    np.testing.assert_allclose(clf.predict_proba(), clf.predict_proba(X_test[:5]), atol=1e-5)
