"""Early decisions: when a stream of class probabilities is confident enough to answer.

The rule (:class:`ConfidenceRule`) is the one of aeon's ``ProbabilityThresholdEarlyClassifier``,
applied after every time step instead of at a few classification points: a series is decided at the
first step ``t`` at which the most probable class has had probability at least
``probability_threshold`` for ``consecutive_predictions`` steps in a row (``t`` included), the same
class every time; the decided label is that class, the prediction from the first ``t`` time points.

:class:`EarlyDecisions` is the rule's state for a batch of series: four integers per series (the
decision time and class, and the current run of confident predictions), updated in O(1) per step, so
the batch computation over whole series and a stream fed one chunk at a time take the same decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "THRESHOLD_GRID",
    "ConfidenceRule",
    "EarlyDecisions",
    "best_threshold",
    "decide_staged",
    "harmonic_mean",
]

#: The thresholds :func:`best_threshold` chooses among.
THRESHOLD_GRID = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)


@dataclass(frozen=True)
class ConfidenceRule:
    """When a class distribution after a prefix is confident enough to answer.

    Parameters
    ----------
    probability_threshold : float
        The probability, in ``(0, 1]``, the most probable class must reach.
    consecutive_predictions : int
        For how many consecutive steps (at least 1) the same class must reach it.
    """

    probability_threshold: float = 0.9
    consecutive_predictions: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < float(self.probability_threshold) <= 1.0:
            raise ValueError(f"probability_threshold must lie in (0, 1], got {self.probability_threshold}")
        if int(self.consecutive_predictions) < 1:
            raise ValueError(
                f"consecutive_predictions must be at least 1, got {self.consecutive_predictions}"
            )


class EarlyDecisions:
    """The state of a :class:`ConfidenceRule` over a batch of series.

    Parameters
    ----------
    n_series : int
        Series in the batch.
    device : torch.device or str, default="cpu"

    Attributes
    ----------
    decided_at : torch.Tensor
        int64 ``(n_series,)``: the number of time points seen when the series was decided, 0 while
        undecided.
    decided_class : torch.Tensor
        int64 ``(n_series,)``: the index of the decided class (-1 while undecided).
    run : torch.Tensor
        int64 ``(n_series,)``: consecutive confident steps of ``run_class`` up to the last step.
    run_class : torch.Tensor
        int64 ``(n_series,)``: the class of the current run (-1: none).
    """

    #: The names of the state's tensors, in the order :meth:`tensors` gives and :meth:`from_tensors` takes.
    FIELDS = ("decided_at", "decided_class", "run", "run_class")

    def __init__(self, n_series: int, device: torch.device | str = "cpu") -> None:
        zeros = torch.zeros(n_series, dtype=torch.int64, device=device)
        self.decided_at = zeros.clone()
        self.decided_class = zeros - 1
        self.run = zeros.clone()
        self.run_class = zeros - 1

    def __len__(self) -> int:
        return len(self.decided_at)

    def update_chunk(
        self, proba: torch.Tensor, real: torch.Tensor, seen: torch.Tensor, rule: ConfidenceRule
    ) -> None:
        """Take the steps of a chunk at once (a single step is a chunk of one).

        Parameters
        ----------
        proba : torch.Tensor
            ``(n_series, T, n_classes)`` class probabilities after each step of the chunk.
        real : torch.Tensor
            Bool ``(n_series, T)``: real steps, a prefix of each row (the rest is padding).
        seen : torch.Tensor
            int64 ``(n_series,)``: time points each series had seen before the chunk.
        rule : ConfidenceRule
        """
        n, t_max = real.shape
        if t_max == 0:
            return
        top, cls = proba.max(dim=-1)  # (n, T)
        confident = (top >= float(rule.probability_threshold)) & real
        steps = torch.arange(t_max, device=real.device).expand(n, t_max)
        # a run starts at a confident step whose class differs from the run before it
        before = torch.cat([self.run_class.unsqueeze(1), torch.where(confident, cls, -1)[:, :-1]], dim=1)
        starts = confident & (cls != before)
        # the last start or unconfident step at or before each step: the run began there
        last = torch.where(starts | ~confident, steps, torch.full_like(steps, -1)).cummax(dim=1).values
        run = torch.where(last >= 0, steps - last + 1, self.run.unsqueeze(1) + steps + 1)
        run = torch.where(confident, run, torch.zeros_like(run))
        hit = real & (run >= int(rule.consecutive_predictions)) & (self.decided_at == 0).unsqueeze(1)
        newly = hit.any(dim=1)
        first = hit.to(torch.int8).argmax(dim=1)  # the first hit of each row (0 if none)
        rows = torch.arange(n, device=real.device)
        self.decided_at = torch.where(newly, seen + first + 1, self.decided_at)
        self.decided_class = torch.where(newly, cls[rows, first], self.decided_class)
        n_real = real.sum(dim=1)
        end = (n_real - 1).clamp_min(0)
        moved = n_real > 0
        self.run = torch.where(moved, run[rows, end], self.run)
        self.run_class = torch.where(
            moved, torch.where(confident[rows, end], cls[rows, end], -1), self.run_class
        )

    def copy(self) -> EarlyDecisions:
        """An independent copy."""
        out = EarlyDecisions.__new__(EarlyDecisions)
        for name in self.FIELDS:
            setattr(out, name, getattr(self, name).clone())
        return out

    def tensors(self) -> list[torch.Tensor]:
        """The state's tensors, in the order of :attr:`FIELDS`."""
        return [getattr(self, name) for name in self.FIELDS]

    @classmethod
    def from_tensors(cls, tensors: Sequence[torch.Tensor], n_series: int) -> EarlyDecisions:
        """The state :meth:`tensors` gave, after checking it fits ``n_series`` series.

        Raises
        ------
        ValueError
            If a tensor has another shape or dtype, or holds impossible values.
        """
        if len(tensors) != len(cls.FIELDS):
            raise ValueError(f"the saved early decisions hold {len(tensors)} tensors, not {len(cls.FIELDS)}")
        out = cls(n_series, tensors[0].device if len(tensors) else "cpu")
        for name, tensor in zip(cls.FIELDS, tensors, strict=True):
            tensor = torch.as_tensor(tensor)
            if tensor.dtype != torch.int64 or tuple(tensor.shape) != (n_series,):
                raise ValueError(
                    f"the saved early decisions' {name} has dtype {tensor.dtype} and shape "
                    f"{tuple(tensor.shape)}; expected int64 of shape ({n_series},)"
                )
            setattr(out, name, tensor.clone())
        if (out.decided_at < 0).any() or (out.run < 0).any() or (out.decided_class < -1).any():
            raise ValueError("the saved early decisions hold negative counts or class indices")
        return out


def decide_staged(
    proba: torch.Tensor, lengths: torch.Tensor, rule: ConfidenceRule
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rule's decisions on whole series from their class probabilities after every step.

    Parameters
    ----------
    proba : torch.Tensor
        ``(n_series, T, n_classes)``: after each step (steps past a series' length are not read).
    lengths : torch.Tensor
        int64 ``(n_series,)``, each at least 1.
    rule : ConfidenceRule

    Returns
    -------
    classes, decided_at : torch.Tensor
        int64 ``(n_series,)`` each: the decided class and the time points seen then; a series never
        confident enough is decided at its last step with its final prediction.
    """
    n, t_max, _ = proba.shape
    real = torch.arange(t_max, device=proba.device)[None, :] < lengths[:, None]
    early = EarlyDecisions(n, proba.device)
    early.update_chunk(proba, real, torch.zeros(n, dtype=torch.int64, device=proba.device), rule)
    final = proba[torch.arange(n, device=proba.device), lengths - 1].argmax(dim=-1)
    decided = early.decided_at > 0
    return torch.where(decided, early.decided_class, final), torch.where(decided, early.decided_at, lengths)


def harmonic_mean(accuracy: float, earliness: float) -> float:
    """The harmonic mean of accuracy and ``1 - earliness`` (aeon's score of early classifiers; 0 when
    both are 0)."""
    total = accuracy + 1.0 - earliness
    return 0.0 if total == 0 else 2.0 * accuracy * (1.0 - earliness) / total


def best_threshold(
    proba: torch.Tensor,
    lengths: torch.Tensor,
    codes: torch.Tensor,
    consecutive_predictions: int = 1,
    thresholds: Sequence[float] = THRESHOLD_GRID,
) -> tuple[float, float]:
    """The probability threshold of the grid whose rule has the highest harmonic mean of accuracy and
    earliness on series of known classes ``codes`` (their probabilities after every step ``proba``,
    as in :func:`decide_staged`); of tied thresholds, the middle one (the lower of the middle two).

    Returns
    -------
    threshold, score : float
        The threshold and its harmonic mean.
    """
    scores = []
    for threshold in thresholds:
        classes, decided_at = decide_staged(
            proba, lengths, ConfidenceRule(threshold, consecutive_predictions)
        )
        accuracy = float((classes == codes).double().mean())
        earliness = float((decided_at.double() / lengths.double()).mean())
        scores.append(harmonic_mean(accuracy, earliness))
    best = max(scores)
    tied = [t for t, score in zip(thresholds, scores, strict=True) if score >= best - 1e-12]
    return float(tied[(len(tied) - 1) // 2]), best
