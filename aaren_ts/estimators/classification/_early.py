"""Early classification for :class:`~aaren_ts.AarenClassifier`: answers before the series end.

:class:`EarlyClassifierMixin` gives the classifier :meth:`~EarlyClassifierMixin.predict_early`: the
confidence rule (:class:`~aaren_ts.engine.early.ConfidenceRule`, from the estimator's
``probability_threshold`` and ``consecutive_predictions`` or given per call) applied after every time
point of whole series, or read from the decisions its streams took during ``partial_update``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aaren_ts.engine.early import ConfidenceRule

__all__ = ["AUTO_THRESHOLD_FLOOR", "EarlyClassifierMixin"]

#: ``probability_threshold="auto"``'s least threshold, and its threshold where no training series are
#: held out (no random kernels, or a class with fewer than two series). See
#: :doc:`/design_notes/classifier_early` for the evidence behind it.
AUTO_THRESHOLD_FLOOR = 0.75


class EarlyClassifierMixin:
    """``predict_early`` of :class:`~aaren_ts.AarenClassifier`."""

    def _early_rule(
        self, probability_threshold: float | None = None, consecutive_predictions: int | None = None
    ) -> ConfidenceRule:
        if probability_threshold is not None:
            threshold = probability_threshold
        else:  # the parameter, "auto" resolved at fit
            threshold = getattr(self, "probability_threshold_", None)
            if threshold is None:  # (fitted before "auto": the parameter is a number)
                threshold = self.probability_threshold
        consecutive = (
            self.consecutive_predictions if consecutive_predictions is None else consecutive_predictions
        )
        return ConfidenceRule(float(threshold), int(consecutive))

    def predict_early(
        self,
        X: Any = None,
        probability_threshold: float | None = None,
        consecutive_predictions: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Early classification: each series' label as soon as the model is confident enough.

        The class probabilities are updated after every time point (each from that prefix only, as
        :meth:`staged_predict_proba` gives them); a series is decided at the first time point ``t``
        after which the most probable class has had probability at least ``probability_threshold``
        for ``consecutive_predictions`` consecutive time points, and its label is that class, the
        prediction from its first ``t`` time points. A series never that confident is decided at its
        last time point with its final prediction (as aeon's early classifiers do).

        Parameters
        ----------
        X : panel, optional
            Whole series to classify. Without ``X``: the decisions of the ongoing streams so far
            (:meth:`partial_update` applies the estimator's rule after every new time point, in any
            chunking, so a stream takes the same decision as the whole series).
        probability_threshold, consecutive_predictions : optional
            The rule for ``X``; default: the estimator's parameters of the same names (changing
            those with ``set_params`` would unfit the estimator, as in sktime). Streams always use
            the estimator's parameters.

        Returns
        -------
        labels : ndarray of shape (n_instances,)
            The decided labels. For a stream not decided yet: its current prediction.
        decided_at : ndarray of int of shape (n_instances,)
            The number of time points seen when each series was decided (divide by the series
            length for aeon's earliness). For a stream not decided yet: 0.

        Raises
        ------
        ValueError
            Bad input or rule, or a rule given without ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> from aaren_ts import AarenClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 1, 30)).astype("float32")
        >>> y = np.where(X[:, 0, :5].mean(axis=1) > 0, "up", "down")
        >>> clf = AarenClassifier(d_model=16, n_layers=1, max_epochs=5, prefix_weight=0.5,
        ...                       random_state=0).fit(X, y)
        >>> labels, decided_at = clf.predict_early(X[:3], probability_threshold=0.8)
        >>> labels.shape, bool((decided_at >= 1).all() and (decided_at <= 30).all())
        ((3,), True)
        """
        self._require_network("predict_early")
        rule = self._early_rule(probability_threshold, consecutive_predictions)
        if X is None:
            if probability_threshold is not None or consecutive_predictions is not None:
                raise ValueError(
                    "streams decide under the estimator's probability_threshold and "
                    "consecutive_predictions, after every time point; a rule can be given only with X"
                )
            with self._torch_context():
                codes, decided_at = self.streams_.early_decisions()
                current = np.argmax(self.streams_.predict_proba(), axis=1)
            return self.classes_[np.where(decided_at > 0, codes, current)], decided_at
        values, lengths = self._scaled(self._panel(X))
        with self._torch_context():
            codes, decided_at = self.streams_.decide_early(
                values, lengths, rule, max(256, int(self.batch_size))
            )
        return self.classes_[codes], decided_at
