"""Training data of :class:`~aaren_ts.AarenForecaster`: segments of a series with their future values."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["SegmentDataset"]


class SegmentDataset(torch.utils.data.Dataset):
    """Training segments of one (scaled) series, each with the next ``horizon`` values of every step.

    Item ``i`` covers starts ``[i * length, (i + 1) * length)``; with a ``generator`` a start is drawn
    in that range at every access (a fresh crop each epoch), otherwise the range's first start is used.
    An item is ``(x, target)``: ``x`` ``(S, C)`` the segment and ``target`` ``(S, T, C)`` the values
    after each of its steps, NaN where the series has ended.
    """

    def __init__(
        self,
        values: np.ndarray,
        length: int,
        horizon: int,
        generator: torch.Generator | None = None,
    ) -> None:
        n, c = values.shape
        self.values = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
        self.padded = torch.cat([self.values, torch.full((horizon, c), float("nan"))])
        self.length = max(1, min(length, n - 1))
        self.horizon = horizon
        self.max_start = max(0, n - self.length - horizon)
        self.n_items = self.max_start // self.length + 1
        self.generator = generator

    def __len__(self) -> int:
        return self.n_items

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = i * self.length
        if self.generator is not None:
            span = min(self.length, self.max_start - start + 1)
            start += int(torch.randint(span, (1,), generator=self.generator))
        x = self.values[start : start + self.length]
        future = self.padded[start + 1 : start + self.length + self.horizon]
        target = future.unfold(0, self.horizon, 1).transpose(1, 2)  # (S, T, C)
        return x, target
