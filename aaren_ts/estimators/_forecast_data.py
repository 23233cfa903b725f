"""Training data of :class:`~aaren_ts.AarenForecaster`: segments of a series with their future values."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["MIN_TRAIN_ITEMS", "SegmentDataset"]

# Random crops an epoch draws at least (training data, i.e. with a generator). A long series is cut into
# more stretches than this and keeps one crop per stretch (ETTh1's 8640 training steps in segments of
# 192: 45); a short one would otherwise make an epoch of a single optimizer step, and the per-epoch
# learning-rate decay would stop training after a few steps.
MIN_TRAIN_ITEMS = 32


class SegmentDataset(torch.utils.data.Dataset):
    """Training segments of one (scaled) series, each with the next ``horizon`` values of every step.

    The series is cut into stretches of ``length`` starts: stretch ``k`` covers starts
    ``[k * length, (k + 1) * length)``. Without a ``generator`` item ``k`` is stretch ``k``'s first start
    (a fixed segment per stretch). With a ``generator`` (training) there are at least ``min_items``
    items, item ``i`` belonging to stretch ``i % n_stretches``, and a start is drawn in its stretch at
    every access (fresh crops each epoch; a short series gets several crops of its few stretches per
    epoch). An item is ``(x, target)``: ``x`` ``(S, C)`` the segment and ``target`` ``(S, T, C)`` the
    values after each of its steps, NaN where the series has ended.
    """

    def __init__(
        self,
        values: np.ndarray,
        length: int,
        horizon: int,
        generator: torch.Generator | None = None,
        min_items: int = MIN_TRAIN_ITEMS,
    ) -> None:
        n, c = values.shape
        self.values = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
        self.padded = torch.cat([self.values, torch.full((horizon, c), float("nan"))])
        self.length = max(1, min(length, n - 1))
        self.horizon = horizon
        self.max_start = max(0, n - self.length - horizon)
        self.n_stretches = self.max_start // self.length + 1
        self.n_items = self.n_stretches if generator is None else max(self.n_stretches, int(min_items))
        self.generator = generator

    def __len__(self) -> int:
        return self.n_items

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = (i % self.n_stretches) * self.length
        if self.generator is not None:
            span = min(self.length, self.max_start - start + 1)
            start += int(torch.randint(span, (1,), generator=self.generator))
        x = self.values[start : start + self.length]
        future = self.padded[start + 1 : start + self.length + self.horizon]
        target = future.unfold(0, self.horizon, 1).transpose(1, 2)  # (S, T, C)
        return x, target
