"""The mean of the weights of a training run's best epochs: :class:`BestEpochsAverage`.

Early stopping keeps the weights of the epoch with the lowest validation loss. The epochs around it
are about as good, and their weights lie close to each other (one run, a small learning rate by then):
their mean is a better network than any one of them, as in stochastic weight averaging (Izmailov et
al., 2018) and "model soups" (Wortsman et al., 2022), and it costs nothing at prediction. The
forecaster's networks end their training with the mean of :data:`AVERAGED_BEST_EPOCHS` epochs.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from skorch.callbacks import Callback

__all__ = ["AVERAGED_BEST_EPOCHS", "BestEpochsAverage", "join_members", "unwrapped_network"]

#: How many of its best epochs' weights a forecasting network ends with the mean of
#: (:doc:`/design_notes/forecaster_weight_averaging`).
AVERAGED_BEST_EPOCHS = 3


class BestEpochsAverage(Callback):
    """At the end of training, set the network's weights to the mean of those after the ``k`` epochs
    with the lowest validation loss.

    Runs only when the epochs have a validation loss (a run without a validation split, such as
    fine-tuning, keeps its last weights); with fewer epochs than ``k``, all of them are averaged.
    Placed after skorch's ``EarlyStopping(load_best=True)``, it replaces the best epoch's weights
    that callback restores. Buffers that are not floating point (counters) are taken from the best
    epoch.

    With skorch's ``AccelerateMixin`` (data-parallel training), the weights are those of the network
    inside the wrapper Accelerate puts around it during training, so their names match at the end.

    Parameters
    ----------
    k : int, default=3
        How many of the best epochs to average (``1``: the best epoch's weights, unchanged).
    """

    def __init__(self, k: int = 3) -> None:
        self.k = k

    def initialize(self) -> BestEpochsAverage:
        self.best_: list[tuple[float, int, dict[str, torch.Tensor]]] = []
        return self

    def on_train_begin(self, net: Any, **kwargs: Any) -> None:
        self.best_ = []

    def on_epoch_end(self, net: Any, **kwargs: Any) -> None:
        loss = net.history[-1].get("valid_loss") if len(net.history) else None
        if self.k <= 1 or loss is None or not math.isfinite(float(loss)):
            return
        if len(self.best_) == self.k and float(loss) >= self.best_[-1][0]:
            return
        weights = {name: t.detach().clone() for name, t in unwrapped_network(net).state_dict().items()}
        self.best_.append((float(loss), len(net.history), weights))
        self.best_.sort(key=lambda item: (item[0], item[1]))
        del self.best_[self.k :]

    def on_train_end(self, net: Any, **kwargs: Any) -> None:
        if len(self.best_) < 2:
            return
        states = [weights for _, _, weights in self.best_]
        mean = {}
        for name, best in states[0].items():
            if best.is_floating_point():
                total = sum(state[name].double() for state in states)
                mean[name] = (total / len(states)).to(best.dtype)
            else:
                mean[name] = best
        unwrapped_network(net).load_state_dict(mean)
        self.best_ = []  # (the weights are not kept with the net)


def unwrapped_network(net: Any) -> torch.nn.Module:
    """``net.module_`` without the wrapper Accelerate puts around it in data-parallel training."""
    accelerator = getattr(net, "accelerator", None)
    return net.module_ if accelerator is None else accelerator.unwrap_model(net.module_)


def join_members(ensemble: Any, members: list[Any]) -> Any:
    """Load the trained networks of the skorch nets ``members`` into the members of ``ensemble``, an
    initialised skorch net of an ensemble module (its ``members``, in order), and give it their
    training logs: its ``history`` holds every member's epochs in turn (the ``"member"`` of each row).
    Returns ``ensemble``."""
    from skorch.history import History

    for member, net in zip(unwrapped_network(ensemble).members, members, strict=True):
        member.load_state_dict(unwrapped_network(net).state_dict())
    if getattr(ensemble, "unwrap_after_train", False):  # as Accelerate leaves a net after training
        ensemble._unwrap_accelerator()
    ensemble.history = History([{**row, "member": k} for k, net in enumerate(members) for row in net.history])
    return ensemble
