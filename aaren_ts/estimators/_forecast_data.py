"""Training data of :class:`~aaren_ts.AarenForecaster`: segments of series with their future values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["MIN_TRAIN_ITEMS", "SegmentDataset", "pad_segments"]

# Random crops an epoch draws at least (training data, i.e. with a generator). A long series is cut into
# more stretches than this and keeps one crop per stretch (ETTh1's 8640 training steps in segments of
# 192: 45); a short one would otherwise make an epoch of a single optimizer step, and the per-epoch
# learning-rate decay would stop training after a few steps.
MIN_TRAIN_ITEMS = 32


class SegmentDataset(torch.utils.data.Dataset):
    """Training segments of (scaled) series, each with the next ``horizon`` values of every step.

    Every series is cut into stretches of ``length`` starts: stretch ``k`` of a series covers starts
    ``[k * length, (k + 1) * length)``. Without a ``generator`` there is one item per stretch of every
    series, its first start (fixed segments). With a ``generator`` (training) there are at least
    ``min_items`` items, item ``i`` belonging to stretch ``i % n_stretches`` of all series' stretches,
    and a start is drawn in its stretch at every access (fresh crops each epoch; a short series gets
    several crops of its few stretches per epoch). An item is ``(x, target)``: ``x`` ``(S, C)`` the
    segment (NaN where a value is missing) and ``target`` ``(S, T, C)`` the values after each of its
    steps, NaN where they are missing, where the series has ended, and where a channel has not been
    observed yet in the segment (nothing to forecast from). Series of fewer than 2 steps give no item.

    Starts are drawn uniformly within a stretch, and a segment's first ``context_length - 1`` steps
    see windows that begin with the padding before its first value (the alternatives tried are in the
    documentation's design note ``design_notes/forecaster_segments``).

    Parameters
    ----------
    series : ndarray of shape (n, C), or a sequence of them
        The series (of any lengths, one number of channels).
    length : int
        Steps per segment (shorter for a series of ``length`` steps or fewer).
    horizon : int
        Number of future values of every step's target.
    generator : torch.Generator, optional
        Draws the random crops; ``None`` gives fixed segments.
    min_items : int, default=MIN_TRAIN_ITEMS
        Items an epoch has at least, with a ``generator``.
    n_exog : int, default=0
        The last ``n_exog`` columns of every series are covariates, not targets. An item is then
        ``({"x": x, "future": future}, target)``: ``x`` ``(S, C + n_exog)`` the segment with its
        covariates, ``future`` ``(S, T, n_future)`` the first ``n_future`` covariates at each step's
        forecast steps, and ``target`` ``(S, T, C)`` the series' values only.
    n_future : int, default=0
        How many of the covariates (the first ones) are known for the future.
    levels : sequence of ndarray of shape (2, C), optional
        Each series' ``offset`` and ``log_scale`` per target channel (see
        :func:`~aaren_ts.nn.forecast_training.masked_smape`), for a loss on the series' own scale:
        every item's target is then ``{"values": target, "offset": ..., "log_scale": ...}``.
    """

    def __init__(
        self,
        series: np.ndarray | Sequence[np.ndarray],
        length: int,
        horizon: int,
        generator: torch.Generator | None = None,
        min_items: int = MIN_TRAIN_ITEMS,
        n_exog: int = 0,
        n_future: int = 0,
        levels: Sequence[np.ndarray] | None = None,
    ) -> None:
        if isinstance(series, np.ndarray):
            series = [series]
        self.horizon = horizon
        self.generator = generator
        self.n_exog, self.n_future = n_exog, n_future
        self.padded: list[torch.Tensor] = []
        self.lengths: list[int] = []
        self.max_starts: list[int] = []
        self.levels: list[torch.Tensor] = []
        stretches = []  # (series, first start) of every stretch
        for k_series, values in enumerate(series):
            n, c = values.shape
            if n < 2:
                continue
            if levels is not None:
                self.levels.append(torch.as_tensor(np.asarray(levels[k_series], dtype=np.float32)))
            seg = max(1, min(length, n - 1))
            tensor = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
            k = len(self.padded)
            self.padded.append(torch.cat([tensor, torch.full((horizon, c), float("nan"))]))
            self.lengths.append(seg)
            max_start = max(0, n - seg - horizon)
            self.max_starts.append(max_start)
            stretches.extend((k, j * seg) for j in range(max_start // seg + 1))
        self.stretches = stretches
        self.n_stretches = len(stretches)
        self.n_items = self.n_stretches if generator is None else max(self.n_stretches, int(min_items))
        if self.n_stretches == 0:
            self.n_items = 0

    def __len__(self) -> int:
        return self.n_items

    def __getitem__(self, i: int) -> tuple[torch.Tensor | dict[str, torch.Tensor], torch.Tensor]:
        k, start = self.stretches[i % self.n_stretches]
        seg = self.lengths[k]
        if self.generator is not None:
            span = min(seg, self.max_starts[k] - start + 1)
            start += int(torch.randint(span, (1,), generator=self.generator))
        padded = self.padded[k]
        x = padded[start : start + seg]
        future = padded[start + 1 : start + seg + self.horizon]
        target = future.unfold(0, self.horizon, 1).transpose(1, 2)  # (S, T, C)
        started = torch.isfinite(x).to(torch.int8).cummax(dim=0).values.bool()  # (S, C)
        target = torch.where(started[:, None, :], target, float("nan"))
        if self.n_exog:
            c = x.shape[1] - self.n_exog
            x, target = {"x": x, "future": target[..., c : c + self.n_future]}, target[..., :c]
        if self.levels:
            offset, log_scale = self.levels[k]
            return x, {"values": target, "offset": offset, "log_scale": log_scale}
        return x, target


def pad_segments(
    items: list[tuple[torch.Tensor | dict[str, torch.Tensor], torch.Tensor]],
) -> tuple[torch.Tensor | dict[str, torch.Tensor], torch.Tensor]:
    """Collate items of :class:`SegmentDataset` of different lengths, padding the ends with NaN.

    A padded step is a missing observation with no target: the encoder's state carries over it and
    it adds nothing to the loss, so padding at the end of a segment changes none of its forecasts.
    Items with covariates (dicts) are padded entry by entry.
    """
    if isinstance(items[0][1], dict):  # (targets with each series' levels)
        padded = pad_segments([(x, target["values"]) for x, target in items])
        levels = {k: torch.stack([target[k] for _, target in items]) for k in ("offset", "log_scale")}
        return padded[0], {"values": padded[1], **levels}
    longest = max(target.shape[0] for _, target in items)
    targets = torch.stack([_pad_steps(target, longest) for _, target in items])
    if isinstance(items[0][0], dict):
        return {k: torch.stack([_pad_steps(x[k], longest) for x, _ in items]) for k in items[0][0]}, targets
    return torch.stack([_pad_steps(x, longest) for x, _ in items]), targets


def _pad_steps(values: torch.Tensor, steps: int) -> torch.Tensor:
    """``values`` with NaN appended along the first (time) axis up to ``steps``."""
    pad = [0, 0] * (values.dim() - 1) + [0, steps - values.shape[0]]
    return torch.nn.functional.pad(values, pad, value=float("nan"))
