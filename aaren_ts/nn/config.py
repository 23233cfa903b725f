"""One object for the sizes of an encoder stack, so they are written down once."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["EncoderConfig", "head_dim"]

BACKBONE_NAMES = ("aaren", "transformer")


def head_dim(d_model: int, n_heads: int) -> int:
    """Size of each head, after checking that ``n_heads`` is a positive divisor of ``d_model`` (the one
    place this is checked: :class:`EncoderConfig` and every attention layer call it)."""
    if d_model <= 0 or n_heads <= 0 or d_model % n_heads:
        raise ValueError(
            f"n_heads must be a positive divisor of d_model; got d_model={d_model}, n_heads={n_heads}"
        )
    return d_model // n_heads


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
    fast_dropout : bool, default=False
        Draw the dropout masks on CPU from 16-bit random integers (:mod:`aaren_ts.nn.dropout`, about
        a third of the time of torch's) instead of torch's Bernoulli draws: the same dropout, other
        masks for the same seed.

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
    fast_dropout: bool = False

    def __post_init__(self) -> None:
        """Check the sizes once, where they are written down: a clear ``ValueError`` names the first
        that cannot make an encoder."""
        if self.backbone not in BACKBONE_NAMES:
            raise ValueError(f"unknown backbone {self.backbone!r}; expected one of {list(BACKBONE_NAMES)}")
        for name in ("n_layers", "d_ff"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        head_dim(self.d_model, self.n_heads)

    def sizes(self) -> dict[str, Any]:
        """The keyword arguments of the encoder classes (everything but ``backbone``)."""
        out = asdict(self)
        del out["backbone"]
        return out
