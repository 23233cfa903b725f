"""Causal Transformer encoder with a KV cache: the baseline every comparison runs against.

Same blocks, sizes and interface as :class:`~aaren_ts.nn.AarenEncoder`; only the mixer differs.
Its :meth:`~CausalTransformerEncoder.step` appends the new token's key and value to a cache and
attends over all of them, so one new token costs ``O(N)`` time and the cache ``O(N)`` memory.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from aaren_ts.nn.blocks import HeadedEncoder, head_dim
from aaren_ts.nn.dropout import Dropout

__all__ = ["CausalSelfAttention", "CausalTransformerEncoder", "KVCache"]


class KVCache:
    """Keys and values of the tokens seen so far, for one layer.

    Storage grows by doubling, so appending is amortised ``O(1)``; :meth:`append` returns a new cache
    object that shares storage with this one. Appending twice to the same cache (two different
    continuations of one history) is safe: the second one copies first.

    Attributes
    ----------
    k, v : torch.Tensor
        Keys and values ``(batch, n_heads, length, head_dim)`` (views of the storage).
    mask : torch.Tensor
        Bool ``(batch, length)``, False for padding tokens.
    """

    def __init__(self, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, length: int) -> None:
        self._k, self._v, self._mask = k, v, mask
        self.length = length
        self._fill = [length]  # shared among caches on the same storage: how far it is written

    @classmethod
    def empty(
        cls,
        batch_size: int,
        n_heads: int,
        head_dim: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        capacity: int = 64,
    ) -> KVCache:
        """An empty cache with room for ``capacity`` tokens."""
        k = torch.zeros(batch_size, n_heads, capacity, head_dim, device=device, dtype=dtype)
        mask = torch.zeros(batch_size, capacity, dtype=torch.bool, device=device)
        return cls(k, torch.zeros_like(k), mask, 0)

    @property
    def k(self) -> torch.Tensor:
        return self._k[:, :, : self.length]

    @property
    def v(self) -> torch.Tensor:
        return self._v[:, :, : self.length]

    @property
    def mask(self) -> torch.Tensor:
        return self._mask[:, : self.length]

    def nbytes(self) -> int:
        """Bytes held by the cache's storage."""
        return sum(t.element_size() * t.nelement() for t in (self._k, self._v, self._mask))

    def append(self, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> KVCache:
        """Return the cache extended by ``n`` tokens: ``k``, ``v`` ``(B, H, n, Dh)``, ``mask`` ``(B, n)``."""
        n = k.shape[-2]
        new_len = self.length + n
        k_buf, v_buf, m_buf = self._k, self._v, self._mask
        shared = self._fill[0] == self.length
        if new_len > k_buf.shape[-2] or not shared:
            capacity = max(new_len, 2 * k_buf.shape[-2])
            k_buf = _grow(k_buf[:, :, : self.length], capacity, dim=2)
            v_buf = _grow(v_buf[:, :, : self.length], capacity, dim=2)
            m_buf = _grow(m_buf[:, : self.length], capacity, dim=1)
            shared = False
        k_buf[:, :, self.length : new_len] = k
        v_buf[:, :, self.length : new_len] = v
        m_buf[:, self.length : new_len] = mask
        out = KVCache(k_buf, v_buf, m_buf, new_len)
        if shared:
            out._fill = self._fill
            out._fill[0] = new_len
        return out


def _grow(t: torch.Tensor, capacity: int, dim: int) -> torch.Tensor:
    shape = list(t.shape)
    shape[dim] = capacity
    out = t.new_zeros(shape)
    out.narrow(dim, 0, t.shape[dim]).copy_(t)
    return out


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a KV cache for token-by-token decoding.

    Parameters
    ----------
    d_model, n_heads, dropout, bias, fast_dropout
        As for :class:`~aaren_ts.nn.Aaren`.
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, fast_dropout: bool = False
    ) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, head_dim(d_model, n_heads)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = Dropout(dropout, fast=fast_dropout)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> KVCache:
        """An empty KV cache."""
        if device is None:
            device = self.out.weight.device
        return KVCache.empty(
            batch_size, self.n_heads, self.head_dim, device=device, dtype=self.out.weight.dtype
        )

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = self.qkv(x).unflatten(-1, (3, self.n_heads, self.head_dim)).unbind(-3)
        return q.transpose(-2, -3), k.transpose(-2, -3), v.transpose(-2, -3)  # (B, H, N, Dh)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, state: KVCache | None = None
    ) -> tuple[torch.Tensor, KVCache]:
        """Causal attention over ``x`` ``(B, N, d_model)``, after the tokens cached in ``state``."""
        batch, n, _ = x.shape
        q, k, v = self._qkv(x)
        if mask is None:
            mask = torch.ones(batch, n, dtype=torch.bool, device=x.device)
        if state is None:
            state = self.init_state(batch, x.device)
        cache = state.append(k, v, mask)
        if state.length == 0 and bool(mask.all()):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            t = cache.length
            query_pos = torch.arange(state.length, t, device=x.device)
            key_pos = torch.arange(t, device=x.device)
            causal = key_pos <= query_pos.unsqueeze(-1)  # (N, T)
            own = key_pos == query_pos.unsqueeze(-1)  # a padding query sees itself: no empty rows
            allowed = (causal & cache.mask.unsqueeze(-2)) | own  # (B, N, T)
            o = F.scaled_dot_product_attention(q, cache.k, cache.v, attn_mask=allowed.unsqueeze(1))
        o = o.transpose(1, 2).flatten(-2)
        return self.dropout(self.out(o)), cache

    def step(
        self, x_t: torch.Tensor, state: KVCache, mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, KVCache]:
        """One token per sequence ``x_t`` ``(B, d_model)``: ``O(length)`` time, cache grows by one."""
        q, k, v = self._qkv(x_t.unsqueeze(1))
        if mask_t is None:
            mask_t = torch.ones(x_t.shape[0], dtype=torch.bool, device=x_t.device)
        cache = state.append(k, v, mask_t.unsqueeze(-1))
        allowed = cache.mask.clone()
        allowed[:, -1] = True
        scores = (q @ cache.k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # (B, H, 1, T)
        scores = scores.masked_fill(~allowed[:, None, None, :], float("-inf"))
        o = torch.softmax(scores, dim=-1) @ cache.v
        return self.dropout(self.out(o.flatten(1))), cache


class CausalTransformerEncoder(HeadedEncoder):
    """Pre-norm causal Transformer encoder with the interface of :class:`~aaren_ts.nn.AarenEncoder`.

    Parameters
    ----------
    d_model, n_heads, n_layers, d_ff, dropout, bias, fast_dropout
        As for :class:`~aaren_ts.nn.AarenEncoder`; :meth:`from_config` builds it from an
        :class:`~aaren_ts.nn.EncoderConfig`.

    Notes
    -----
    The state of :meth:`step` is one :class:`KVCache` per layer; it grows with every token.
    """

    backbone = "transformer"
    mixer_class = CausalSelfAttention
