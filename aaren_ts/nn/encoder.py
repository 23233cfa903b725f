"""The Aaren encoder: pre-norm residual blocks of Aaren attention and feed-forward layers."""

from __future__ import annotations

from aaren_ts.nn.aaren import Aaren
from aaren_ts.nn.blocks import StackedEncoder

__all__ = ["AarenEncoder"]


class AarenEncoder(StackedEncoder):
    """Stacked Aaren blocks; the whole stack is an RNN.

    Trained in parallel on whole sequences (:meth:`forward`), it then consumes one token at a time
    (:meth:`step`) with ``O(n_layers * d_model**2)`` work and ``O(n_layers * d_model)`` state, whatever
    the history length. Stepping through a sequence gives the same outputs as :meth:`forward`.

    Parameters
    ----------
    d_model : int
        Size of the token vectors.
    n_heads : int
        Heads per Aaren layer.
    n_layers : int
        Number of blocks.
    d_ff : int
        Hidden size of the feed-forward layers.
    dropout : float, default=0.0
        Dropout on each residual branch.
    bias : bool, default=True
        Biases in the attention projections.

    Examples
    --------
    >>> import torch
    >>> enc = AarenEncoder(d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    >>> x = torch.randn(3, 20, 16)
    >>> y, state = enc(x)
    >>> state = enc.init_state(3)
    >>> for t in range(20):
    ...     y_t, state = enc.step(x[:, t], state)
    >>> torch.allclose(y_t, y[:, -1], atol=1e-5)
    True
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_layers: int,
        d_ff: int,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__(
            lambda: Aaren(d_model, n_heads, dropout=dropout, bias=bias),
            d_model=d_model,
            n_layers=n_layers,
            d_ff=d_ff,
            dropout=dropout,
        )
