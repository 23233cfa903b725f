"""Dropout with cheap masks on CPU: 16-bit random integers, four from each 64-bit draw.

``torch.nn.functional.dropout`` on CPU draws one Bernoulli sample per element from torch's Mersenne
Twister, which is a large share of a small network's training time. Here each 64-bit word of the same
generator gives four 16-bit integers, and an element is kept where its integer is at least
``round(p * 65536)`` (of 0 to 65535) and scaled by ``65536 / (65536 - round(p * 65536))``: the same
dropout, with the probability rounded to a multiple of 1/65536 (0.2 becomes 0.199997), unbiased for
that probability, and seeded by ``torch.manual_seed`` as torch's is, in about a third of the time. On
other devices torch's own dropout runs (its masks there are cheap).

The masks differ from torch's for the same seed, so a model trained with them is not the one torch's
dropout trains (:class:`~aaren_ts.nn.EncoderConfig`'s ``fast_dropout`` chooses). The timings are in
:doc:`/design_notes/classifier_dropout`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Dropout", "dropout"]

_LEVELS = 65536  # the values of a 16-bit integer


def dropout(x: torch.Tensor, p: float, training: bool = True, fast: bool = True) -> torch.Tensor:
    """Zero each element of ``x`` with probability ``p`` and scale the rest to keep the mean.

    Parameters
    ----------
    x : torch.Tensor
        The activations.
    p : float
        The probability of zeroing an element, in ``[0, 1)``.
    training : bool, default=True
        ``False`` returns ``x`` itself.
    fast : bool, default=True
        On CPU, masks from 16-bit random integers (this module's docstring); ``False``, or on another
        device, ``torch.nn.functional.dropout``.

    Returns
    -------
    torch.Tensor
        Of the shape and dtype of ``x``.
    """
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must lie in [0, 1), got {p}")
    if not fast or x.device.type != "cpu":
        return F.dropout(x, p, training=True)
    dropped = min(round(p * _LEVELS), _LEVELS - 1)
    if dropped == 0:
        return x
    words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_(-(2**63), None)
    integers = words.view(torch.int16)[: x.numel()].view(x.shape)  # -32768 .. 32767, uniform
    # (the comparison written straight into the multiplier's dtype: one pass fewer than a bool mask)
    keep = torch.ge(integers, dropped - _LEVELS // 2, out=torch.empty(x.shape, dtype=x.dtype))
    return x * keep.mul_(_LEVELS / (_LEVELS - dropped))


class Dropout(nn.Module):
    """:func:`dropout` as a module, in training mode only (as :class:`torch.nn.Dropout`).

    Parameters
    ----------
    p : float, default=0.5
        The probability of zeroing an element.
    fast : bool, default=True
        Masks from 16-bit random integers on CPU (:func:`dropout`).

    Examples
    --------
    >>> import torch
    >>> layer = Dropout(0.25)
    >>> y = layer(torch.ones(4, 1000))
    >>> sorted({round(v, 4) for v in y.unique().tolist()})
    [0.0, 1.3333]
    """

    def __init__(self, p: float = 0.5, fast: bool = True) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must lie in [0, 1), got {p}")
        self.p, self.fast = float(p), bool(fast)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training, self.fast)

    def extra_repr(self) -> str:
        return f"p={self.p}, fast={self.fast}"
