"""The skorch nets the estimators train: skorch's, with an interrupt that ends the call.

skorch stops training at a ``KeyboardInterrupt`` and returns from ``fit`` and ``partial_fit`` as if
training had finished, which suits an interactive session but would let an estimator's ``fit``,
``update`` or ``pretrain`` carry on with a network trained for fewer epochs than asked. The nets here
stop training the same way (skorch's ``on_train_end`` callbacks still run) and then raise the
interrupt, so the estimator's call is interrupted whole and puts back what it changed. skorch's
``EarlyStopping`` ends training by raising ``KeyboardInterrupt`` too: that one, raised when its
patience has run out, ends training as skorch intends.
"""

from __future__ import annotations

from typing import Any

from skorch import NeuralNet, NeuralNetClassifier
from skorch.callbacks import EarlyStopping

__all__ = ["ClassifierNeuralNet", "ForecastNeuralNet", "InterruptsPropagate"]


class InterruptsPropagate:
    """Mixin for a skorch net: a ``KeyboardInterrupt`` during training is raised again once skorch
    has ended training, instead of being swallowed."""

    def fit_loop(self, X: Any, y: Any = None, epochs: int | None = None, **fit_params: Any) -> Any:
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        except KeyboardInterrupt as interrupt:
            if not self._stopped_early():
                self._interrupt = interrupt  # skorch's partial_fit swallows it; partial_fit raises it
            raise

    def _stopped_early(self) -> bool:
        """Whether an ``EarlyStopping`` callback has run out of patience (it raised the interrupt)."""
        return any(
            isinstance(callback, EarlyStopping) and getattr(callback, "misses_", 0) >= callback.patience
            for _, callback in getattr(self, "callbacks_", [])
        )

    def partial_fit(self, X: Any, y: Any = None, classes: Any = None, **fit_params: Any) -> Any:
        self._interrupt = None
        try:
            super().partial_fit(X, y, classes, **fit_params)
            interrupt = self._interrupt
        finally:
            del self._interrupt
        if interrupt is not None:
            raise interrupt
        return self


class ForecastNeuralNet(InterruptsPropagate, NeuralNet):
    """skorch's ``NeuralNet`` whose training an interrupt ends with the interrupt raised."""


class ClassifierNeuralNet(InterruptsPropagate, NeuralNetClassifier):
    """skorch's ``NeuralNetClassifier`` whose training an interrupt ends with the interrupt raised."""
