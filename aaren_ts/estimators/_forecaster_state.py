"""Encoder stream states as flat lists of tensors and back (for persistence and state comparisons).

An Aaren encoder's state is one :class:`~aaren_ts.nn.AarenState` ``(m, c, a)`` per layer; a Transformer
encoder's is one :class:`~aaren_ts.nn.KVCache` per layer, flattened as its keys, values and mask.
"""

from __future__ import annotations

from typing import Any

import torch

from aaren_ts.nn import AarenState, KVCache

__all__ = ["state_from_tensors", "state_to_tensors"]


def state_to_tensors(state: list[Any]) -> list[torch.Tensor]:
    """Every tensor of an encoder state, layer by layer (3 per layer)."""
    out: list[torch.Tensor] = []
    for layer in state:
        if isinstance(layer, AarenState):
            out.extend([layer.m, layer.c, layer.a])
        elif isinstance(layer, KVCache):
            out.extend([layer.k, layer.v, layer.mask])
        else:
            raise TypeError(f"unknown encoder state {type(layer).__name__}")
    return out


def state_from_tensors(tensors: list[torch.Tensor], backbone: str, n_layers: int) -> list[Any]:
    """Rebuild the state that :func:`state_to_tensors` flattened."""
    if len(tensors) != 3 * n_layers:
        raise ValueError(f"expected {3 * n_layers} state tensors for {n_layers} layers, got {len(tensors)}")
    layers = [tensors[3 * i : 3 * i + 3] for i in range(n_layers)]
    if backbone == "aaren":
        return [AarenState(m, c, a) for m, c, a in layers]
    if backbone == "transformer":
        return [
            KVCache(k.contiguous(), v.contiguous(), mask.contiguous(), k.shape[-2]) for k, v, mask in layers
        ]
    raise ValueError(f"unknown backbone {backbone!r}")
