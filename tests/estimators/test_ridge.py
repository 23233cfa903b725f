"""The kernels' ridge classifiers from the Gram matrix against scikit-learn's ridge classifiers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import RidgeClassifier, RidgeClassifierCV

from aaren_ts.estimators.classification._ridge import ALPHAS, GramRidge


def _problem(n_classes: int, n: int = 60, n_features: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n_classes)
    features = rng.random((n, n_features)).astype(np.float32)
    codes = np.arange(n) % n_classes
    features[:, :5] += codes[:, None]  # (something to learn, so that the penalty chosen is not an end)
    return features, codes


def _sklearn_scores(reference, features: np.ndarray) -> np.ndarray:
    scores = reference.decision_function(features)
    if scores.ndim == 1:  # one decision function for two classes: minus and plus half of it
        scores = np.stack([-scores, scores], axis=1) / 2
    return scores


@pytest.mark.parametrize("n_classes", [2, 3, 8])
@pytest.mark.parametrize("alpha", [None, 0.5])
def test_a_fit_on_every_row_is_scikit_learns_ridge_classifier(n_classes, alpha):
    features, codes = _problem(n_classes)
    ridge = GramRidge(features)
    fit = ridge.fit(np.arange(len(codes)), codes, alpha)
    if alpha is None:
        reference = RidgeClassifierCV(alphas=ALPHAS).fit(features, codes)
        assert fit.alpha == reference.alpha_
    else:
        reference = RidgeClassifier(alpha=alpha).fit(features, codes)
        assert fit.alpha == alpha
    expected = _sklearn_scores(reference, features)
    coef, intercept = ridge.coefficients(fit)
    # the coefficients, and the scores through the Gram matrix, are the classifier's
    np.testing.assert_allclose(features @ coef.T + intercept, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ridge.scores(fit, np.arange(len(codes))), expected, rtol=1e-4, atol=1e-4)
    assert coef.shape == (n_classes, features.shape[1]) and intercept.shape == (n_classes,)


def test_the_penalty_chosen_differs_with_the_data_as_scikit_learns_does():
    """Leave-one-out picks other penalties on other problems, each time scikit-learn's (a choice that
    always fell on one end of the grid would pass the test above by luck)."""
    chosen = set()
    for n_classes in (2, 3, 8):
        features, codes = _problem(n_classes)
        for scale in (0.1, 1.0, 10.0):
            fit = GramRidge(features * scale).fit(np.arange(len(codes)), codes)
            assert fit.alpha == RidgeClassifierCV(alphas=ALPHAS).fit(features * scale, codes).alpha_
            chosen.add(fit.alpha)
    assert len(chosen) >= 3


@pytest.mark.parametrize("n_classes", [2, 4])
def test_a_fit_on_some_rows_scores_the_others_as_scikit_learn_would(n_classes):
    features, codes = _problem(n_classes, n=80)
    in_train = np.arange(80) // n_classes % 2 == 0  # every other run of the classes
    train, held_out = np.flatnonzero(in_train), np.flatnonzero(~in_train)
    ridge = GramRidge(features)
    fit = ridge.fit(train, codes[train], 0.3)
    reference = RidgeClassifier(alpha=0.3).fit(features[train], codes[train])
    expected = _sklearn_scores(reference, features[held_out])
    np.testing.assert_allclose(ridge.scores(fit, held_out), expected, rtol=1e-4, atol=1e-4)
    coef, intercept = ridge.coefficients(fit)
    np.testing.assert_allclose(features[held_out] @ coef.T + intercept, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(fit.rows, train)


def test_singular_features_fit_quietly_and_as_scikit_learn_in_float64():
    """Identical feature rows (the first steps of short series) leave the Gram matrix singular but for
    the penalty (scikit-learn's float32 solve warns through SciPy at a small penalty, and its scores
    drift from the right ones); this fit, in float64, warns about nothing and gives scikit-learn's
    float64 scores, which are near each block of identical rows' mean targets."""
    rng = np.random.default_rng(0)
    features = np.repeat((rng.random((6, 5000)) > 0.5).astype(np.float32), 10, axis=0)
    codes = np.arange(60) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reference = RidgeClassifier(alpha=1e-3).fit(features.astype(np.float64), codes)
        ridge = GramRidge(features)
        fit = ridge.fit(np.arange(60), codes, 1e-3)
        chosen = ridge.fit(np.arange(60), codes)
    expected = reference.decision_function(features)
    coef, intercept = ridge.coefficients(fit)
    np.testing.assert_allclose(features @ coef.T + intercept, expected, rtol=1e-4, atol=1e-4)
    targets = np.where(np.eye(3)[codes] > 0, 1.0, -1.0)
    block_means = np.repeat(targets.reshape(6, 10, 3).mean(axis=1), 10, axis=0)
    np.testing.assert_allclose(expected, block_means, atol=1e-3)
    assert chosen.alpha in ALPHAS
