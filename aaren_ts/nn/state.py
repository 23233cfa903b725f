"""Stream states as flat lists of tensors and back, for persistence and comparisons.

A stream state is a nest of tensors, tuples (named or not), lists and
:class:`~aaren_ts.nn.KVCache` objects: an encoder's state is one :class:`~aaren_ts.nn.functional.AarenState`
``(m, c, a)`` or one ``KVCache`` per layer, and the classifier's state adds its readout and counters.
:func:`flatten_state` lists its tensors in a fixed order; :func:`unflatten_state` puts them back into a
nest of the same structure (a fresh state of the same model, e.g. ``module.init_state(n)``, serves as
the template).
"""

from __future__ import annotations

from typing import Any

import torch

from aaren_ts.nn.transformer import KVCache

__all__ = ["flatten_state", "unflatten_state"]


def flatten_state(state: Any) -> list[torch.Tensor]:
    """Every tensor of ``state``, depth first (a ``KVCache`` gives its keys, values and mask)."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, KVCache):
        return [state.k, state.v, state.mask]
    if isinstance(state, tuple | list):
        return [t for item in state for t in flatten_state(item)]
    raise TypeError(f"unexpected object in a stream state: {type(state).__name__}")


def unflatten_state(template: Any, tensors: list[torch.Tensor]) -> Any:
    """The state with the structure of ``template`` holding ``tensors`` (from :func:`flatten_state`).

    Raises
    ------
    ValueError
        If the number of tensors does not fit the template.
    """
    rest = list(tensors)

    def build(node: Any) -> Any:
        if isinstance(node, torch.Tensor):
            if not rest:
                raise ValueError("too few tensors for the stream state")
            return rest.pop(0)
        if isinstance(node, KVCache):
            k, v, mask = build(node.k), build(node.v), build(node.mask)
            return KVCache(k.contiguous(), v.contiguous(), mask.contiguous(), k.shape[-2])
        if isinstance(node, tuple) and hasattr(node, "_fields"):  # a NamedTuple
            return type(node)(*(build(item) for item in node))
        if isinstance(node, tuple | list):
            return type(node)(build(item) for item in node)
        raise TypeError(f"unexpected object in a stream state: {type(node).__name__}")

    state = build(template)
    if rest:
        raise ValueError(f"{len(rest)} tensor(s) left over after rebuilding the stream state")
    return state
