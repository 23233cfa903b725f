"""Build an encoder from an :class:`EncoderConfig`, so estimators can offer ``backbone="aaren"`` or
``"transformer"``."""

from __future__ import annotations

from aaren_ts.nn.blocks import HeadedEncoder
from aaren_ts.nn.config import EncoderConfig
from aaren_ts.nn.encoder import AarenEncoder
from aaren_ts.nn.transformer import CausalTransformerEncoder

__all__ = ["BACKBONES", "make_encoder"]

BACKBONES: dict[str, type[HeadedEncoder]] = {
    "aaren": AarenEncoder,
    "transformer": CausalTransformerEncoder,
}


def make_encoder(config: EncoderConfig) -> HeadedEncoder:
    """Return an :class:`AarenEncoder` (``config.backbone="aaren"``) or a KV-cached
    :class:`CausalTransformerEncoder` (``"transformer"``) with the sizes of ``config``.

    Raises
    ------
    ValueError
        For an unknown backbone (the message lists the known ones).
    """
    try:
        cls = BACKBONES[config.backbone]
    except KeyError:
        raise ValueError(
            f"unknown backbone {config.backbone!r}; expected one of {sorted(BACKBONES)}"
        ) from None
    return cls.from_config(config)
