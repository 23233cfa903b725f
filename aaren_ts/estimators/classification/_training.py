"""``fit``'s orchestration for :class:`~aaren_ts.AarenClassifier`: from standardised series to a net.

:class:`ClassifierTraining` trains the ensemble's members in turn, each with its random kernels' ridge
classifiers (:func:`~aaren_ts.estimators.classification._kernels.fit_kernel_head`) and their mixture
with the network, whose weights are chosen against one network trained on half of the series that the
members share (:meth:`ClassifierTraining.half_network`); it then resolves
``probability_threshold="auto"`` (:func:`choose_threshold`) and joins the members into one net
(:meth:`ClassifierTraining.train`). Each step takes what it needs and returns what it computes; the
estimator stores the results as its fitted attributes.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

import numpy as np
import torch

from aaren_ts.engine.early import best_threshold
from aaren_ts.estimators._progress import fit_progress, stage
from aaren_ts.estimators._skorch import make_train_split
from aaren_ts.estimators._weight_averaging import unwrapped_network
from aaren_ts.estimators.classification._early import AUTO_THRESHOLD_FLOOR
from aaren_ts.estimators.classification._kernels import (
    fit_kernel_head,
    fit_network_share,
    held_out_staged_proba,
)
from aaren_ts.estimators.classification._net import ClassifierNets
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.ensemble import member_kernels, member_seed

__all__ = [
    "AUTO_POSITION_FREQUENCIES",
    "EARLY_STOPPING_FRACTION",
    "HALF_NETWORK_EPOCH_FRACTION",
    "ClassifierTraining",
    "TrainedNetworks",
    "choose_threshold",
    "position_frequencies",
    "validation_fraction",
]

#: The part of the training data held out for early stopping when ``validation_fraction`` is ``None``
#: (sklearn's ``MLPClassifier`` default).
EARLY_STOPPING_FRACTION = 0.1
#: The half-data network the kernel mixture is weighed against trains this fraction of ``max_epochs``
#: (at least one; its learning-rate schedule as long). See :doc:`/design_notes/classifier_half_network`
#: for the evidence behind the fraction.
HALF_NETWORK_EPOCH_FRACTION = 0.5
#: ``position_frequencies="auto"``'s count for the network alone (``n_random_features=0``).
AUTO_POSITION_FREQUENCIES = 8


def validation_fraction(
    fraction: float | None, early_stopping: bool, codes: np.ndarray, seed: int | None, max_epochs: int
) -> float | None:
    """The part of the training series held out: ``fraction``, or ``EARLY_STOPPING_FRACTION`` for
    early stopping (``early_stopping``) without one; warns where early stopping finds too few series to
    hold any out."""
    if early_stopping and fraction is None:
        fraction = EARLY_STOPPING_FRACTION
    if early_stopping and make_train_split(codes, fraction, seed) is None:
        warnings.warn(
            f"early stopping (a patience), but {len(codes)} training series are too few to hold out "
            f"validation_fraction={fraction} of them with every class on both sides; training runs "
            f"all max_epochs={max_epochs} epochs",
            UserWarning,
            stacklevel=5,  # the caller of fit (through sktime's fit and the classifier's _fit)
        )
    return fraction


def position_frequencies(frequencies: int | str, n_random_features: int) -> int:
    """``position_frequencies``, ``"auto"`` resolved: 8 for the network alone, 0 beside the random
    kernels (:doc:`/design_notes/classifier_position` says why)."""
    if frequencies == "auto":
        return AUTO_POSITION_FREQUENCIES if int(n_random_features) == 0 else 0
    return int(frequencies)


def choose_threshold(
    probability_threshold: float | str,
    consecutive_predictions: int,
    staged: list[np.ndarray | None],
    lengths: np.ndarray,
    codes: np.ndarray,
    mixture: tuple[np.ndarray, np.ndarray] | None,
) -> float:
    """``probability_threshold``, ``"auto"`` resolved (:doc:`/design_notes/classifier_early`): the
    threshold of :data:`~aaren_ts.engine.early.THRESHOLD_GRID` whose rule best classifies the
    held-out series ``mixture[1]`` early with the members' mean probabilities ``staged``, at least
    ``AUTO_THRESHOLD_FLOOR``, which it is without them."""
    if probability_threshold != "auto":
        return float(probability_threshold)
    if any(part is None for part in staged) or mixture is None:
        return AUTO_THRESHOLD_FLOOR
    rows = mixture[1]
    threshold, _ = best_threshold(
        torch.as_tensor(np.mean(staged, axis=0)),
        torch.as_tensor(lengths[rows], dtype=torch.int64),
        torch.as_tensor(codes[rows]),
        int(consecutive_predictions),
    )
    return max(threshold, AUTO_THRESHOLD_FLOOR)


class TrainedNetworks(NamedTuple):
    """What :meth:`ClassifierTraining.train` returns: the trained skorch ``net`` (its network in train
    mode) and the early-decision rule's ``probability_threshold``."""

    net: Any
    probability_threshold: float


@dataclasses.dataclass
class ClassifierTraining:
    """Trains a classifier's networks on the standardised training series ``values`` ``(n, T, C)``
    (``lengths`` real steps each) of class ``codes``.

    Parameters
    ----------
    nets : ClassifierNets
        Builds the skorch nets.
    torch_context : callable
        The estimator's :meth:`~aaren_ts.estimators._base.AarenEstimatorMixin._torch_context`: threads
        and, for a member, its seed.
    values, lengths, codes : numpy.ndarray
        The training series and their labels' codes.
    fraction : float or None
        The part held out to report the validation loss and for early stopping.
    seed : int or None
        The classifier's seed (:func:`~aaren_ts.estimators._skorch.torch_seed`).
    mixture : tuple of numpy.ndarray or None
        The halves of the series (:func:`~aaren_ts.estimators.classification._kernels.mixture_split`)
        the half network trains on and the mixture's weights are chosen on; ``None``: no mixture.
    max_epochs, n_estimators, verbose : int
        The estimator's parameters.
    """

    nets: ClassifierNets
    torch_context: Callable[..., AbstractContextManager[None]]
    values: np.ndarray
    lengths: np.ndarray
    codes: np.ndarray
    fraction: float | None
    seed: int | None
    mixture: tuple[np.ndarray, np.ndarray] | None
    max_epochs: int
    n_estimators: int
    verbose: int
    _half: ClassifierModule | None = dataclasses.field(default=None, init=False, repr=False)

    def train(self, probability_threshold: float | str, consecutive_predictions: int) -> TrainedNetworks:
        """Every member trained (:meth:`member`), the threshold chosen and the members joined."""
        held_out = probability_threshold == "auto" and self.mixture is not None
        networks = self.n_estimators + (self.mixture is not None)
        epochs = self.n_estimators * self.max_epochs + (self.half_epochs() if self.mixture is not None else 0)
        with fit_progress(self.verbose, "AarenClassifier.fit", epochs, networks):
            return self._train(held_out, probability_threshold, consecutive_predictions)

    def _train(
        self, held_out: bool, probability_threshold: float | str, consecutive_predictions: int
    ) -> TrainedNetworks:
        fitted = [self.member(k, held_out) for k in range(self.n_estimators)]
        members = [net for net, _ in fitted]
        threshold = choose_threshold(
            probability_threshold,
            consecutive_predictions,
            [staged for _, staged in fitted],
            self.lengths,
            self.codes,
            self.mixture,
        )
        net = members[0] if len(members) == 1 else self.nets.join(members)
        return TrainedNetworks(net, threshold)

    def member(self, k: int, held_out: bool = False) -> tuple[Any, np.ndarray | None]:
        """The skorch net of the ensemble's member ``k``: its network and random kernels trained as a
        classifier seeded with :func:`~aaren_ts.nn.ensemble.member_seed` would train them (``k = 0``:
        the classifier's own seed), its mixture with the kernels chosen on the series ``mixture[1]``
        against :meth:`half_network`
        (:func:`~aaren_ts.estimators.classification._kernels.fit_network_share`); with ``held_out``,
        also the class probabilities after every step of the series ``mixture[1]`` from the member as
        it would be trained on the series ``mixture[0]``
        (:func:`~aaren_ts.estimators.classification._kernels.held_out_staged_proba`), else ``None``."""
        with stage(f"network {k + 1} of {self.n_estimators}", epochs=self.max_epochs):
            return self._member(k, held_out)

    def _member(self, k: int, held_out: bool) -> tuple[Any, np.ndarray | None]:
        seed = member_seed(self.seed, k)
        train_split = make_train_split(self.codes, self.fraction, seed)
        kernels = member_kernels(self.nets.random_kernels, k)
        net = self.nets.build(
            train_split, batch_size=min(self.nets.batch_size, len(self.codes)), random_kernels=kernels
        )
        values, lengths, codes, mixture = self.values, self.lengths, self.codes, self.mixture
        with self.torch_context(seed=True, member=k):
            net.initialize()
            if kernels is not None:
                # (data-parallel training has wrapped the network already: the kernels are its own)
                network = unwrapped_network(net)
                kernel_half = fit_kernel_head(network, values, lengths, codes, seed, mixture)
            net.partial_fit({"x": values, "lengths": lengths}, codes)
            staged = None
            if kernels is not None:
                fit_network_share(network, self.half_network, values, lengths, codes, mixture, kernel_half)
                if held_out and mixture is not None and kernel_half is not None:
                    rows = mixture[1]
                    staged = held_out_staged_proba(
                        network, self.half_network(), kernel_half, values[rows], lengths[rows]
                    )
        return net, staged

    def half_epochs(self) -> int:
        """The epochs :meth:`half_network` trains for."""
        return max(1, round(self.max_epochs * HALF_NETWORK_EPOCH_FRACTION))

    def half_network(self) -> ClassifierModule:
        """A network (without the kernels) trained as the classifier's own on the series
        ``mixture[0]`` for ``HALF_NETWORK_EPOCH_FRACTION`` of ``max_epochs``: trained the first time a
        member asks (in member 0's torch context), the same network after."""
        if self._half is None:
            rows = self.mixture[0]
            split = make_train_split(self.codes[rows], self.fraction, self.seed)
            epochs = self.half_epochs()
            with stage(f"a network on {len(rows)} series to weigh the kernels", epochs=epochs):
                net = self.nets.build(
                    split,
                    batch_size=min(self.nets.batch_size, len(rows)),
                    random_kernels=None,
                    own_use=True,
                    max_epochs=epochs,
                ).initialize()
                net.partial_fit({"x": self.values[rows], "lengths": self.lengths[rows]}, self.codes[rows])
            self._half = unwrapped_network(net)
        return self._half
