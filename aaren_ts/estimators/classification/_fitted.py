"""The classifier's fitted state as plain data: the hooks that save and restore it.

:class:`FittedClassifierMixin` gives :class:`~aaren_ts.AarenClassifier` the two persistence hooks of
:class:`~aaren_ts.estimators._base.AarenEstimatorMixin`: what a saved classifier holds besides its
weights and parameters, and how a loaded one is rebuilt from it (its streams checked by
:meth:`aaren_ts.engine.ClassifierStreams.restore`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from aaren_ts.engine.classify import ClassifierStreams
from aaren_ts.estimators.classification._early import AUTO_THRESHOLD_FLOOR
from aaren_ts.estimators.classification._net import ClassifierNets
from aaren_ts.utils.limits import MAX_SCALE

__all__ = ["FittedClassifierMixin", "check_training_scale"]


class FittedClassifierMixin:
    """Persistence of :class:`~aaren_ts.AarenClassifier`."""

    def _check_savable(self) -> None:
        self._require_network("save")

    def _fitted_attributes(self) -> dict[str, Any]:
        tensors = self.streams_.tensors()
        return {
            "classes": self.classes_,
            "classes_kind": self.classes_.dtype.kind,
            "n_channels": int(self.n_channels_),
            "channel_mean": self.channel_mean_,
            "channel_scale": self.channel_scale_,
            "fit_time": int(getattr(self, "fit_time_", 0)),
            "random_kernels": self.random_kernels_,
            "position_periods": self.position_periods_,
            "probability_threshold": getattr(self, "probability_threshold_", None),
            "n_streams": int(self.n_streams_),
            "stream": [t.cpu() for t in tensors] if tensors else None,
            "early": [t.cpu() for t in self.streams_.early_tensors()] if tensors else None,
        }

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        classes = attributes["classes"]
        classes = classes.numpy() if isinstance(classes, torch.Tensor) else np.asarray(classes)
        if attributes["classes_kind"] == "O":
            classes = classes.astype(object)
        if classes.ndim != 1 or len(classes) < 1 or len(set(classes.tolist())) != len(classes):
            raise ValueError(f"the saved classes must be distinct labels, got {classes.tolist()!r}")
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self._class_dictionary = {c: i for i, c in enumerate(classes)}
        self.n_channels_ = int(attributes["n_channels"])
        self.channel_mean_ = attributes["channel_mean"].numpy()
        self.channel_scale_ = attributes["channel_scale"].numpy()
        _check_standardization(self.channel_mean_, self.channel_scale_, self.n_channels_)
        self.fit_time_ = attributes["fit_time"]
        self.random_kernels_ = attributes.get("random_kernels")
        # (saved before the position's sines and cosines: the network had none)
        periods = attributes.get("position_periods")
        self.position_periods_ = None if periods is None else tuple(float(p) for p in periods)
        self.probability_threshold_ = self._saved_threshold(attributes.get("probability_threshold"))
        members = {name.split(".")[1] for name in state_dict if name.startswith("members.")}
        if not members and int(self.n_estimators) > 1:  # saved before n_estimators: one network
            self.n_estimators = 1
        self.net_ = ClassifierNets.of(self).build(with_callbacks=False).initialize()
        if self.random_kernels_ is not None and not members and "head_gain" not in state_dict:
            # saved before the network's scores had a factor per prefix length: they had none (1),
            # and the kernels' maps shared one factor
            module = self.net_.module_
            shared = state_dict["kernel_gain"].expand_as(module.kernel_gain)
            state_dict = {**state_dict, "head_gain": module.head_gain, "kernel_gain": shared}
        if self.random_kernels_ is not None and not members and "head_weight" not in state_dict:
            # saved before the mixture's weights were chosen on out-of-fold scores: an even mixture
            state_dict = {**state_dict, "head_weight": self.net_.module_.head_weight}
        self.net_.module_.load_state_dict(state_dict)
        self.net_.module_.eval()
        self.streams_ = ClassifierStreams(self.net_.module_, self._device())
        self.streams_.restore(attributes["stream"], int(attributes["n_streams"]), attributes.get("early"))
        self._is_vectorized = False
        self._y_metadata = {"is_univariate": True, "mtype": "numpy1D"}
        self._y_inner_mtype = "numpy1D"

    def _saved_threshold(self, saved: Any) -> float:
        """``probability_threshold_`` from a saved classifier's: checked, or the parameter where none
        was saved (before ``"auto"``; ``AUTO_THRESHOLD_FLOOR`` for ``"auto"``)."""
        if saved is None:
            given = self.probability_threshold
            return AUTO_THRESHOLD_FLOOR if given == "auto" else float(given)
        threshold = float(saved)
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"the saved probability_threshold_ must lie in (0, 1], got {threshold}")
        return threshold


def check_training_scale(mean: np.ndarray, scale: np.ndarray) -> None:
    """Refuse training data whose channel's mean is not finite or whose standard deviation exceeds
    ``MAX_SCALE`` (a saved model could not be loaded back; such values are a sentinel or the wrong
    units): ``ValueError`` naming the channel."""
    beyond = np.flatnonzero(~((scale <= MAX_SCALE) & np.isfinite(mean)))
    if len(beyond):
        channel = int(beyond[0])
        raise ValueError(
            f"X: channel {channel} has a standard deviation of {scale[channel]:.3g}; the classifier "
            f"standardises by at most {MAX_SCALE:.3g} (values this large are a sentinel or in the wrong "
            "units? rescale the data)"
        )


def _check_standardization(mean: np.ndarray, scale: np.ndarray, n_channels: int) -> None:
    """Refuse a saved standardisation that is not one finite mean and one positive scale of at most
    ``MAX_SCALE`` per channel (a zero, negative or huge scale would change every probability)."""
    shapes_fit = mean.shape == scale.shape == (n_channels,)
    if not shapes_fit or not (np.isfinite(mean).all() and (scale > 0).all() and (scale <= MAX_SCALE).all()):
        raise ValueError(
            f"the saved channel standardisation does not fit the {n_channels} channel(s): one finite mean "
            f"and one positive scale of at most {MAX_SCALE:.3g} each, got mean {mean.tolist()} and "
            f"scale {scale.tolist()}"
        )
