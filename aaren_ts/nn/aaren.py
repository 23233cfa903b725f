"""The Aaren attention layer: a learned query per head attending over every prefix of the input."""

from __future__ import annotations

import math

import torch
from torch import nn

from aaren_ts.nn.blocks import head_dim
from aaren_ts.nn.dropout import Dropout
from aaren_ts.nn.functional import AarenState, aaren_attention, aaren_step

__all__ = ["Aaren"]


class Aaren(nn.Module):
    """Multi-head Aaren attention (Feng et al., 2024), many-to-many and causal.

    Each head ``h`` has a learned query ``q_h``; token ``i`` contributes a key ``k_i`` and a value
    ``v_i`` and the head outputs, at every position, the softmax attention of ``q_h`` over the keys
    seen so far. Because the query does not depend on the input, ``q_h . k_i`` is a linear function of
    the token: the key projection and the query are folded into one score projection, so no key is
    ever materialised.

    Parameters
    ----------
    d_model : int
        Size of the token vectors.
    n_heads : int
        Number of heads; must divide ``d_model``.
    dropout : float, default=0.0
        Dropout applied to the layer's output.
    bias : bool, default=True
        Whether the projections have biases.
    fast_dropout : bool, default=False
        The dropout's masks from 16-bit random integers on CPU (:mod:`aaren_ts.nn.dropout`).

    Examples
    --------
    >>> import torch
    >>> layer = Aaren(d_model=16, n_heads=4)
    >>> x = torch.randn(2, 10, 16)
    >>> y, state = layer(x)
    >>> y_t, state = layer.step(torch.randn(2, 16), state)  # one more token, O(1)
    >>> y.shape, y_t.shape
    (torch.Size([2, 10, 16]), torch.Size([2, 16]))
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, fast_dropout: bool = False
    ) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, head_dim(d_model, n_heads)
        self.query = nn.Parameter(torch.randn(n_heads, self.head_dim) / math.sqrt(self.head_dim))
        self.key = nn.Linear(d_model, d_model, bias=bias)
        self.value = nn.Linear(d_model, d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = Dropout(dropout, fast=fast_dropout)

    def _fold_score_value(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One weight (and bias) mapping a token to ``[scores (H), values (d_model)]``."""
        scale = 1.0 / math.sqrt(self.head_dim)
        w_key = self.key.weight.view(self.n_heads, self.head_dim, self.d_model)
        w_score = torch.einsum("hk,hkd->hd", self.query, w_key) * scale
        weight = torch.cat([w_score, self.value.weight])
        if self.key.bias is None:
            return weight, None
        b_score = (self.query * self.key.bias.view(self.n_heads, self.head_dim)).sum(-1) * scale
        return weight, torch.cat([b_score, self.value.bias])

    def _score_value_weights(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The folded weights; cached while gradients are off and the parameters are unchanged.

        Token-by-token inference would otherwise rebuild them for every token. The cache key holds
        each parameter's storage and in-place version counter, so optimiser steps, ``load_state_dict``
        and ``.to(device)`` all invalidate it.
        """
        candidates = (self.query, self.key.weight, self.key.bias, self.value.weight, self.value.bias)
        params = [p for p in candidates if p is not None]
        if (
            torch.is_grad_enabled() and any(p.requires_grad for p in params)
        ) or torch.compiler.is_compiling():
            return self._fold_score_value()  # (tracing, e.g. for ONNX export: parameters have no storage)
        key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in params)
        cached = self.__dict__.get("_folded_cache")
        if cached is None or cached[0] != key:
            with torch.no_grad():
                cached = (key, self._fold_score_value())
            self.__dict__["_folded_cache"] = cached
        return cached[1]

    def _scores_and_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores ``(..., H)`` and values ``(..., H, Dh)`` of tokens ``x`` ``(..., d_model)``."""
        weight, bias = self._score_value_weights()
        s, v = nn.functional.linear(x, weight, bias).split([self.n_heads, self.d_model], dim=-1)
        return s, v.unflatten(-1, (self.n_heads, self.head_dim))

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_folded_cache", None)  # derived; never pickled
        return state

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> AarenState:
        """State before any token for ``batch_size`` sequences (float64 accumulators)."""
        if device is None:
            device = self.out.weight.device
        return AarenState.initial((batch_size, self.n_heads), self.head_dim, device=device)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: AarenState | None = None,
    ) -> tuple[torch.Tensor, AarenState]:
        """Attend over every prefix of ``x`` in parallel.

        Parameters
        ----------
        x : torch.Tensor
            Tokens of shape ``(batch, N, d_model)``.
        mask : torch.Tensor, optional
            Bool ``(batch, N)``, True for real tokens; padding contributes nothing.
        state : AarenState, optional
            State after earlier tokens of the same sequences; the output continues them exactly.

        Returns
        -------
        y : torch.Tensor
            Outputs ``(batch, N, d_model)``.
        state : AarenState
            State after the last token.
        """
        s, v = self._scores_and_values(x)
        s = s.transpose(-1, -2)  # (B, H, N)
        v = v.permute(0, 2, 1, 3)  # (B, H, N, Dh)
        if mask is not None:
            mask = mask.unsqueeze(-2).expand_as(s)
        o, state = aaren_attention(s, v, mask=mask, state=state, return_state=True)
        o = o.permute(0, 2, 1, 3).flatten(-2)
        return self.dropout(self.out(o)), state

    def step(
        self, x_t: torch.Tensor, state: AarenState, mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, AarenState]:
        """Consume one token per sequence: ``x_t`` ``(batch, d_model)``; ``O(1)`` in history length.

        ``mask_t`` (bool ``(batch,)``) marks padding steps, which leave the state unchanged.
        """
        s, v = self._scores_and_values(x_t)
        if mask_t is not None:
            mask_t = mask_t.unsqueeze(-1).expand_as(s)
        o, state = aaren_step(state, s, v, mask_t)
        y = nn.functional.linear(o.flatten(-2), self.out.weight, self.out.bias)
        return (self.dropout(y) if self.training else y), state
