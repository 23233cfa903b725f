"""The skorch nets of :class:`~aaren_ts.AarenClassifier`: its network, a member's, or its ensemble.

:class:`ClassifierNets` is built from the estimator's parameters and fitted attributes
(:meth:`ClassifierNets.of`) and returns nets: the classifier's own (a
:class:`~aaren_ts.nn.ensemble.ClassifierEnsemble` with ``n_estimators > 1``), one member's network with
its own random kernels, a network without them for the classifier's own use, or the ensemble that
joins trained members.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from aaren_ts.estimators._weight_averaging import join_members
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.classify_loss import ClassificationLoss
from aaren_ts.nn.ensemble import ClassifierEnsemble

__all__ = ["ClassifierNets"]


@dataclasses.dataclass(frozen=True)
class ClassifierNets:
    """Builds the skorch nets of a classifier.

    Parameters
    ----------
    module_params : dict
        The arguments of :class:`~aaren_ts.nn.classify.ClassifierModule` up to ``step_outputs``.
    random_kernels : dict or None
        The classifier's own random kernels (``random_kernels_``).
    position_periods : tuple of float or None
        The periods of the steps' position (``position_periods_``).
    n_estimators, batch_size, n_classes : int
        The estimator's parameters and its number of classes.
    label_smoothing, prefix_weight : float
        The training loss's (:class:`~aaren_ts.nn.classify_loss.ClassificationLoss`).
    build_net : callable
        The estimator's :meth:`~aaren_ts.estimators._base.AarenEstimatorMixin._build_net`: optimizer,
        learning rate, device, callbacks.
    """

    module_params: dict[str, Any]
    random_kernels: dict[str, Any] | None
    position_periods: tuple[float, ...] | None
    n_estimators: int
    batch_size: int
    n_classes: int
    label_smoothing: float
    prefix_weight: float
    build_net: Callable[..., Any]

    @classmethod
    def of(cls, estimator: Any) -> ClassifierNets:
        """The nets of a classifier whose ``n_channels_``, ``n_classes_``, ``random_kernels_`` and
        ``position_periods_`` are set."""
        module_params = {
            "n_channels": int(estimator.n_channels_),
            "n_classes": int(estimator.n_classes_),
            "encoder": dataclasses.replace(estimator._encoder_config(), fast_dropout=True),
            "readout": estimator.readout,
            "kernel_size": int(estimator.kernel_size),
            "dilations": None if estimator.dilations is None else tuple(int(d) for d in estimator.dilations),
            "step_outputs": float(estimator.prefix_weight) > 0.0,
        }
        return cls(
            module_params,
            estimator.random_kernels_,
            estimator.position_periods_,
            int(estimator.n_estimators),
            int(estimator.batch_size),
            int(estimator.n_classes_),
            float(estimator.label_smoothing),
            float(estimator.prefix_weight),
            estimator._build_net,
        )

    def build(
        self, train_split: Any = None, with_callbacks: bool = True, batch_size: int | None = None,
        random_kernels: Any = "fitted", own_use: bool = False, max_epochs: int | None = None,
    ) -> Any:  # fmt: skip
        """The skorch net (not initialised) of one network with ``random_kernels`` (a member's, or
        ``None``), or with ``"fitted"`` (default) the classifier's own, a
        :class:`~aaren_ts.nn.ensemble.ClassifierEnsemble` when ``n_estimators > 1``; the other
        arguments as :meth:`~aaren_ts.estimators._base.AarenEstimatorMixin._build_net` takes them."""
        from aaren_ts.estimators._nets import ClassifierNeuralNet

        module: type[torch.nn.Module] = ClassifierModule
        module_params: dict[str, Any] = {
            **self.module_params,
            "random_kernels": self.random_kernels if random_kernels == "fitted" else random_kernels,
            "position_periods": self.position_periods,
        }
        if random_kernels == "fitted" and self.n_estimators > 1:
            module, module_params = ClassifierEnsemble, {"n_members": self.n_estimators, **module_params}
        loss = functools.partial(
            ClassificationLoss, label_smoothing=self.label_smoothing, prefix_weight=self.prefix_weight
        )
        batches = {"batch_size": int(batch_size or self.batch_size), "classes": np.arange(self.n_classes)}
        return self.build_net(
            ClassifierNeuralNet, module, module_params, loss, train_split, with_callbacks,
            own_use, max_epochs=max_epochs, **batches,
        )  # fmt: skip

    def join(self, members: list[Any]) -> Any:
        """One skorch net of a :class:`~aaren_ts.nn.ensemble.ClassifierEnsemble` holding the trained
        ``members``' networks; its ``history`` holds every member's epochs in turn (the ``"member"``
        of each row)."""
        return join_members(self.build(with_callbacks=False).initialize(), members)
