"""Build an encoder by name, so estimators can offer ``backbone="aaren"`` or ``"transformer"``."""

from __future__ import annotations

from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.encoder import AarenEncoder
from aaren_ts.nn.transformer import CausalTransformerEncoder

__all__ = ["BACKBONES", "make_encoder"]

BACKBONES: dict[str, type[StackedEncoder]] = {
    "aaren": AarenEncoder,
    "transformer": CausalTransformerEncoder,
}


def make_encoder(
    backbone: str,
    d_model: int,
    n_heads: int,
    n_layers: int,
    d_ff: int,
    dropout: float = 0.0,
) -> StackedEncoder:
    """Return an :class:`AarenEncoder` (``"aaren"``) or a KV-cached ``CausalTransformerEncoder``
    (``"transformer"``) with the given sizes."""
    try:
        cls = BACKBONES[backbone]
    except KeyError:
        raise ValueError(
            f"unknown backbone {backbone!r}; expected one of {sorted(BACKBONES)}"
        ) from None
    return cls(d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, dropout=dropout)
