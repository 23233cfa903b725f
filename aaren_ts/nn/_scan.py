"""Chunked, stable evaluation of decayed prefix sums.

Every quantity of Aaren's forward and backward pass is one computation,

.. math::

    y_j = \\sum_{l \\le j} \\exp(g_l - G_j)\\, x_l ,

where ``G`` is non-decreasing and ``g_l <= G_j`` for ``l <= j``, so that every weight is at most 1. The
forward output uses ``g = s`` (scores) and ``G = lse`` (running log-normalisers); the backward uses the
same sum run in reverse, with ``g = G = -lse``.

The sequence is cut into chunks of ``chunk`` tokens. Inside a chunk the weights form a small lower
triangular matrix, applied with one batched matrix product. The chunk ends form a shorter sequence of
the same kind (``g = G = G_end``), solved recursively, and each chunk then adds the carry from the end
of the previous chunk. Work is ``O(N * chunk * D)``, memory ``O(N * chunk)`` for the weights; exponents
are formed in float64 so that score magnitudes of ``1e4`` lose nothing.
"""

from __future__ import annotations

import torch

#: Finite stand-in for ``-inf`` log-normalisers (positions that have seen no token yet). It keeps
#: ``exp(G_l - G_j)`` equal to 0 or 1 instead of NaN; the values it multiplies are zero.
NEG_LARGE = -1e300

DEFAULT_CHUNK = 64


def _chunk_weights(g: torch.Tensor, G: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Lower triangular weights ``exp(g_l - G_j)`` for ``l <= j`` inside each chunk.

    ``g`` and ``G`` are float64 of shape ``(..., C)``; returns ``(..., C, C)`` in ``dtype``.
    """
    c = g.shape[-1]
    diff = g.unsqueeze(-2) - G.unsqueeze(-1)  # (..., j, l) = g_l - G_j, float64
    upper = torch.ones(c, c, dtype=torch.bool, device=g.device).triu_(1)
    diff = diff.to(dtype).masked_fill_(upper, float("-inf"))
    return diff.exp_()


def decayed_cumsum(
    g: torch.Tensor, G: torch.Tensor, x: torch.Tensor, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Compute ``y_j = sum_{l <= j} exp(g_l - G_j) x_l`` along the second-to-last axis of ``x``.

    Parameters
    ----------
    g, G : torch.Tensor
        Float64 tensors of shape ``(..., N)``. ``G`` must be non-decreasing along the last axis and
        ``g_l <= G_j`` must hold for ``l <= j``; ``g`` may hold ``-inf`` (a term that contributes
        nothing). ``G`` must be finite (use :data:`NEG_LARGE` for "nothing seen yet").
    x : torch.Tensor
        Tensor of shape ``(..., N, D)``.
    chunk : int, default=64
        Tokens per chunk.

    Returns
    -------
    torch.Tensor
        ``y`` of the shape and dtype of ``x``.
    """
    n = x.shape[-2]
    if n <= chunk:
        return _chunk_weights(g, G, x.dtype) @ x
    n_chunks = -(-n // chunk)
    pad = n_chunks * chunk - n
    if pad:
        g = torch.nn.functional.pad(g, (0, pad), value=float("-inf"))
        G = torch.cat([G, G[..., -1:].expand(*G.shape[:-1], pad)], dim=-1)
        x = torch.nn.functional.pad(x, (0, 0, 0, pad))
    lead = x.shape[:-2]
    d = x.shape[-1]
    g_c = g.reshape(*lead, n_chunks, chunk)
    G_c = G.reshape(*lead, n_chunks, chunk)
    x_c = x.reshape(*lead, n_chunks, chunk, d)

    local = _chunk_weights(g_c, G_c, x.dtype) @ x_c  # (..., n_chunks, chunk, D)
    G_end = G_c[..., -1]  # (..., n_chunks)
    # Exact value of y at every chunk end: the same problem over the chunk ends.
    y_end = decayed_cumsum(G_end, G_end, local[..., -1, :], chunk)
    # Carry the previous chunk's end value into each chunk.
    carry = torch.nn.functional.pad(y_end[..., :-1, :], (0, 0, 1, 0))
    G_prev = torch.nn.functional.pad(G_end[..., :-1], (1, 0), value=NEG_LARGE)
    decay = (G_prev.unsqueeze(-1) - G_c).to(x.dtype).exp_()  # (..., n_chunks, chunk)
    y = local.addcmul_(decay.unsqueeze(-1), carry.unsqueeze(-2))
    y = y.reshape(*lead, n_chunks * chunk, d)
    return y[..., :n, :] if pad else y


def reverse_decayed_cumsum(
    lse: torch.Tensor, x: torch.Tensor, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Compute ``h_i = sum_{k >= i} exp(lse_i - lse_k) x_k`` (the backward pass's sum).

    ``lse`` is a finite, non-decreasing float64 tensor of shape ``(..., N)``; ``x`` has shape
    ``(..., N, D)``.
    """
    neg = (-lse).flip(-1)
    return decayed_cumsum(neg, neg, x.flip(-2), chunk).flip(-2)
