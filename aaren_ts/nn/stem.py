"""A multi-scale causal convolution stem: each step embedded from the inputs up to it at several scales.

:class:`DilatedStem` applies, to the same input window, one causal convolution per dilation
(``kernel_size`` taps spaced ``dilation`` steps apart, so branch ``j`` sees the last
``(kernel_size - 1) * dilation_j + 1`` steps), concatenates the branches and mixes them with a GELU
and a position-wise linear map. Large dilations give each step shape information at the scale of a
gesture or a beat, as the random dilated kernels of ROCKET-type classifiers do, while the stem stays
causal and stateless beyond its input window: a stream keeps the last
``DilatedStem.receptive_field`` ``- 1`` inputs (a ring buffer of constant size) and embeds one
new step in O(1).

Its ``forward`` has the contract of a ``Conv1d`` without padding: ``(batch, channels, L)`` in,
``(batch, d_model, L - receptive_field + 1)`` out, so it takes the place of the single convolution.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["DilatedStem"]


class DilatedStem(nn.Module):
    """Causal convolutions at several dilations over the same window, mixed position-wise.

    Parameters
    ----------
    n_channels : int
        Input channels.
    d_model : int
        Output features per step.
    kernel_size : int
        Taps of every branch.
    dilations : sequence of int
        One branch per dilation (positive, distinct).
    branch_width : int or None, default=None
        Output channels of each branch (``None``: ``d_model // len(dilations)``, at least 1).

    Attributes
    ----------
    receptive_field : int
        Steps each output depends on: ``(kernel_size - 1) * max(dilations) + 1``.
    """

    def __init__(
        self,
        n_channels: int,
        d_model: int,
        kernel_size: int,
        dilations: Sequence[int],
        branch_width: int | None = None,
    ) -> None:
        super().__init__()
        dilations = tuple(int(d) for d in dilations)
        if not dilations or min(dilations) < 1 or len(set(dilations)) != len(dilations):
            raise ValueError(f"dilations must be distinct positive integers, got {dilations}")
        self.dilations = dilations
        self.kernel_size = int(kernel_size)
        self.receptive_field = (self.kernel_size - 1) * max(dilations) + 1
        width = max(d_model // len(dilations), 1) if branch_width is None else int(branch_width)
        self.branches = nn.ModuleList(
            nn.Conv1d(n_channels, width, self.kernel_size, dilation=d) for d in dilations
        )
        self.mix = nn.Sequential(nn.GELU(), nn.Conv1d(width * len(dilations), d_model, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, n_channels, L)`` -> ``(batch, d_model, L - receptive_field + 1)``."""
        outs = []
        for conv, d in zip(self.branches, self.dilations, strict=True):
            skip = self.receptive_field - ((self.kernel_size - 1) * d + 1)
            outs.append(conv(x[..., skip:]))
        return self.mix(torch.cat(outs, dim=1))
