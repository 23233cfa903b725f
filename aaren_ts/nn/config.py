"""One object for the sizes of an encoder stack, so they are written down once."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["EncoderConfig"]


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes and kind of a causal encoder stack (see :func:`aaren_ts.nn.make_encoder`).

    Parameters
    ----------
    backbone : {"aaren", "transformer"}, default="aaren"
        Sequence mixer of every block: Aaren attention, or the KV-cached causal self-attention baseline.
    d_model : int, default=64
        Width of the token vectors.
    n_heads : int, default=4
        Attention heads per layer (must divide ``d_model``).
    n_layers : int, default=2
        Number of residual blocks.
    d_ff : int, default=128
        Hidden width of the feed-forward layers.
    dropout : float, default=0.0
        Dropout on each residual branch.
    bias : bool, default=True
        Biases in the attention projections.

    Examples
    --------
    >>> from aaren_ts.nn import EncoderConfig, make_encoder
    >>> encoder = make_encoder(EncoderConfig(d_model=16, n_heads=2, n_layers=1, d_ff=32))
    >>> type(encoder).__name__
    'AarenEncoder'
    """

    backbone: str = "aaren"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    bias: bool = True

    def sizes(self) -> dict[str, Any]:
        """The keyword arguments of the encoder classes (everything but ``backbone``)."""
        out = asdict(self)
        del out["backbone"]
        return out
