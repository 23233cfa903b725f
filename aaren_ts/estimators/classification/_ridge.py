"""Ridge classifiers on subsets of the rows of one feature matrix, computed from its Gram matrix.

The kernels' maps (:mod:`aaren_ts.estimators.classification._kernels`) fit, for each prefix length, a
ridge classifier on every training series with its penalty chosen by leave-one-out cross-validation
(scikit-learn's ``RidgeClassifierCV``, as MiniRocket uses), then one per fold of a 5-fold split and
one on half of the series at that penalty. With far fewer series than features all of them are dual
problems on the same rows: each needs only the inner products of the rows, one Gram matrix, from
which :class:`GramRidge` centres the block of any subset of rows, solves it, scores any other rows and
forms the coefficients. The Gram matrix is computed once instead of once per fit, and the small
fits skip scikit-learn's input validation, which cost most of their time (a classifier's ``fit`` in
sktime's and scikit-learn's test suites spent three fifths of its time in them).

The computation is scikit-learn's, in float64: ridge regression with an unpenalised intercept on the
classes coded as -1 / +1 (one column for two classes, whose coefficients are returned as minus and
plus half of it), the penalty among ``ALPHAS`` with the least mean squared leave-one-out residual
(its closed form from the eigendecomposition of the centred Gram matrix; the first of tied values).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ALPHAS", "GramRidge", "RidgeFit"]

#: The penalties leave-one-out cross-validation chooses from (MiniRocket's).
ALPHAS = np.logspace(-3, 3, 10)


class RidgeFit(NamedTuple):
    """A ridge classifier fitted on some rows of a :class:`GramRidge`: its penalty ``alpha``;
    ``rows``, ``dual`` (the dual coefficients, one column per coded target), ``target_mean`` and
    ``centring`` (each row's inner product with the mean of ``rows``, and that mean's with itself)
    score other rows through the Gram matrix (:meth:`GramRidge.scores`) and give the coefficients
    (:meth:`GramRidge.coefficients`)."""

    alpha: float
    rows: np.ndarray
    dual: np.ndarray
    target_mean: np.ndarray
    centring: tuple[np.ndarray, float]


class GramRidge:
    """Ridge classifiers of class codes on any subset of the rows of ``features`` ``(n, F)``.

    Parameters
    ----------
    features : numpy.ndarray
        The feature matrix, one row per series.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> codes = np.arange(40) % 2
    >>> features = rng.random((40, 200)) + codes[:, None] * 0.1
    >>> ridge = GramRidge(features)
    >>> fit = ridge.fit(np.arange(30), codes[:30])  # penalty by leave-one-out
    >>> ridge.scores(fit, np.arange(30, 40)).shape
    (10, 2)
    """

    def __init__(self, features: np.ndarray) -> None:
        self.features = np.asarray(features, dtype=np.float64)
        self.gram = self.features @ self.features.T

    def _centring(self, rows: np.ndarray) -> tuple[np.ndarray, float]:
        """Every row's inner product with the mean of ``rows`` ``(n,)``, and the mean's with itself."""
        with_mean = self.gram[:, rows].mean(axis=1)
        return with_mean, float(with_mean[rows].mean())

    def _centred_gram(
        self, left: np.ndarray, right: np.ndarray, centring: tuple[np.ndarray, float]
    ) -> np.ndarray:
        """Inner products of rows ``left`` and ``right`` less the mean the ``centring`` is of."""
        with_mean, mean_norm = centring
        return self.gram[np.ix_(left, right)] - with_mean[left, None] - with_mean[None, right] + mean_norm

    def fit(self, rows: np.ndarray, codes: np.ndarray, alpha: float | None = None) -> RidgeFit:
        """The ridge classifier of ``codes`` (one per row of ``rows``) on those rows: penalty
        ``alpha``, or the one of ``ALPHAS`` with the least leave-one-out error where ``None``."""
        rows = np.asarray(rows)
        classes, index = np.unique(codes, return_inverse=True)
        targets = np.full((len(rows), len(classes)), -1.0)
        targets[np.arange(len(rows)), index] = 1.0
        if len(classes) == 2:
            targets = targets[:, 1:]
        target_mean = targets.mean(axis=0)
        centred_targets = targets - target_mean
        centring = self._centring(rows)
        gram = self._centred_gram(rows, rows, centring)
        if alpha is None:
            alpha, dual = self._leave_one_out(gram, centred_targets)
        else:
            dual = np.linalg.solve(gram + alpha * np.eye(len(rows)), centred_targets)
        return RidgeFit(float(alpha), rows, dual, target_mean, centring)

    def coefficients(self, fit: RidgeFit) -> tuple[np.ndarray, np.ndarray]:
        """The ``coef_`` ``(n_classes, F)`` and ``intercept_`` ``(n_classes,)`` of the classifier
        ``fit`` (two classes: minus and plus half of its one decision function)."""
        mean = self.features[fit.rows].mean(axis=0)
        coef = fit.dual.T @ (self.features[fit.rows] - mean)  # (n_targets, F)
        intercept = fit.target_mean - coef @ mean
        if len(coef) == 1:
            coef, intercept = np.concatenate([-coef, coef]) / 2, np.concatenate([-intercept, intercept]) / 2
        return coef, intercept

    @staticmethod
    def _leave_one_out(gram: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
        """The penalty of ``ALPHAS`` with the least mean squared leave-one-out residual of ridge
        regression with an intercept on the centred Gram matrix ``gram`` and centred ``targets``, and
        its dual coefficients."""
        eigenvalues, vectors = np.linalg.eigh(gram)
        projected = vectors.T @ targets
        projected_ones = vectors.sum(axis=0)
        best = None
        for alpha in ALPHAS:
            inverse = 1.0 / (eigenvalues + alpha)
            dual = vectors @ (inverse[:, None] * projected)
            # the diagonal of the inverse, less the intercept's share (it is not penalised)
            diagonal = (vectors**2) @ inverse - (vectors @ (inverse * projected_ones)) / len(gram)
            error = float(np.mean((dual / diagonal[:, None]) ** 2))
            if best is None or error < best[0]:
                best = (error, float(alpha), dual)
        return best[1], best[2]

    def scores(self, fit: RidgeFit, rows: np.ndarray) -> np.ndarray:
        """The class scores ``(len(rows), n_classes)`` of the classifier ``fit`` on ``rows``."""
        values = self._centred_gram(np.asarray(rows), fit.rows, fit.centring) @ fit.dual + fit.target_mean
        if values.shape[1] == 1:
            values = np.concatenate([-values, values], axis=1) / 2
        return values
