"""The training loss of the classifier's network (:class:`~aaren_ts.nn.classify.ClassifierModule`).

:class:`ClassificationLoss` is the cross-entropy skorch trains the network with; with a weight on every
prefix it reads the :class:`StepLogits` the network returns with ``step_outputs=True`` (the logits
after every step), so that the class distribution is trained to be right early too.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["ClassificationLoss", "StepLogits"]


class StepLogits(NamedTuple):
    """What :meth:`~aaren_ts.nn.classify.ClassifierModule.forward` returns with ``step_outputs=True``.

    A tuple whose first entry is the final logits, so skorch's inference (which keeps the first entry
    of a tuple) sees the same thing as without ``step_outputs``.

    Attributes
    ----------
    last : torch.Tensor
        ``(batch, n_classes)`` logits at each series' last real step.
    steps : torch.Tensor
        ``(batch, T, n_classes)`` logits after every step (each from that step's prefix only).
    mask : torch.Tensor
        Bool ``(batch, T)``, True at real steps.
    """

    last: torch.Tensor
    steps: torch.Tensor
    mask: torch.Tensor


class ClassificationLoss:
    """Training loss of :class:`~aaren_ts.nn.classify.ClassifierModule` (skorch's ``criterion``):
    cross-entropy of the logits.

    With ``prefix_weight = w > 0`` (and a module built with ``step_outputs=True``) the loss is
    ``(1 - w) * CE(final logits) + w * mean_t CE(logits after step t)``, the mean running over the
    real steps of every series, each series weighted equally: the class distribution is then trained
    to be right after every prefix, not only at the end (early classification).

    A plain callable, not a ``torch.nn.Module``: it has no parameters, so data-parallel training
    (Accelerate) has nothing of it to wrap.

    Parameters
    ----------
    label_smoothing : float, default=0.0
        As :func:`torch.nn.functional.cross_entropy`'s.
    prefix_weight : float, default=0.0
        Weight ``w`` in ``[0, 1]`` of the loss on every prefix.
    """

    def __init__(self, label_smoothing: float = 0.0, prefix_weight: float = 0.0) -> None:
        self.label_smoothing = label_smoothing
        self.prefix_weight = prefix_weight

    def __call__(self, logits: torch.Tensor | StepLogits, target: torch.Tensor) -> torch.Tensor:
        if not isinstance(logits, StepLogits):
            return self._cross_entropy(logits, target)
        final = self._cross_entropy(logits.last, target)
        w = float(self.prefix_weight)
        if w == 0.0:
            return final
        steps, mask = logits.steps, logits.mask
        per_step = torch.nn.functional.cross_entropy(
            steps.transpose(1, 2),  # (batch, n_classes, T)
            target.unsqueeze(1).expand(mask.shape),
            label_smoothing=self.label_smoothing,
            reduction="none",
        )
        m = mask.to(per_step.dtype)
        per_series = (per_step * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)
        return (1.0 - w) * final + w * per_series.mean()

    def _cross_entropy(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(logits, target, label_smoothing=self.label_smoothing)
