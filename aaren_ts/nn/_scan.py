"""Chunked, stable evaluation of decayed prefix and suffix sums.

Every quantity of Aaren's forward and backward pass is one of two sums over running log-normalisers
``lse`` (non-decreasing):

.. math::

    y_j = \\sum_{l \\le j} \\exp(s_l - \\mathrm{lse}_j)\\, x_l \\quad \\text{(forward: outputs)},
    \\qquad
    h_i = \\sum_{k \\ge i} \\exp(\\mathrm{lse}_i - \\mathrm{lse}_k)\\, x_k \\quad \\text{(backward)}.

Both have the form "weight = exp(log-weight of the term - log-normaliser of the output)" with every
weight at most 1. The sequence is cut into chunks. Inside a chunk where the normaliser rises by at most
:data:`FACTOR_RANGE`, the weights factor exactly relative to the chunk's own reference, so the chunk is a
cumulative sum of rescaled terms; a chunk with a larger rise (a score spike) is computed with its explicit
triangular weight matrix instead. The chunk boundaries form a shorter problem of the same kind, solved
recursively, and each chunk then adds the carry across its boundary. Work is ``O(N * D)`` (plus
``O(chunk)`` per element in steep chunks), and exponents are formed from float64 differences, so score
magnitudes of ``1e4`` lose nothing. Full-size temporaries are avoided: on CPU, fresh allocations cost more
than the arithmetic.
"""

from __future__ import annotations

import torch

#: Finite stand-in for ``-inf`` log-normalisers (positions that have seen no token yet). It keeps
#: ``exp(lse_l - lse_j)`` equal to 0 or 1 instead of NaN.
NEG_LARGE = -1e300

#: Default number of tokens per chunk.
DEFAULT_CHUNK = 64

#: Largest rise of the normaliser inside a chunk for which the chunk is computed as a cumulative sum of
#: factored weights; ``e**20`` is far inside float32's range and exponents stay below 40 in magnitude.
FACTOR_RANGE = 20.0


def _scan_(x: torch.Tensor, reverse: bool) -> torch.Tensor:
    """In-place inclusive cumulative sum along dim -2 (from the end if ``reverse``)."""
    c = x.shape[-2]
    steps = range(c - 2, -1, -1) if reverse else range(1, c)
    for j in steps:
        x[..., j, :].add_(x[..., j + 1 if reverse else j - 1, :])
    return x


def _exact_chunk(g: torch.Tensor, G: torch.Tensor, x: torch.Tensor, reverse: bool) -> torch.Tensor:
    """Explicit triangular weights ``exp(g_l - G_j)`` (``l <= j``, or ``l >= j`` if ``reverse``) @ ``x``.

    ``g``, ``G`` float64 ``(M, C)``, ``x`` ``(M, C, D)``.
    """
    c = g.shape[-1]
    diff = g.unsqueeze(-2) - G.unsqueeze(-1)  # (M, j, l) = g_l - G_j, float64
    outside = torch.ones(c, c, dtype=torch.bool, device=g.device)
    outside = outside.tril_(-1) if reverse else outside.triu_(1)
    weights = diff.to(x.dtype).masked_fill_(outside, float("-inf")).exp_()
    return weights @ x


def _chunk_sums(
    g: torch.Tensor, G: torch.Tensor, started: torch.Tensor, x: torch.Tensor, reverse: bool
) -> torch.Tensor:
    """Within-chunk decayed sums for chunked inputs ``g``, ``G``, ``started`` ``(..., K, C)``, ``x``
    ``(..., K, C, D)``.

    Forward: ``sum_{l <= j} exp(g_l - G_j) x_l`` with ``G`` non-decreasing along C. Reverse:
    ``sum_{l >= j} exp(g_l - G_j) x_l`` with ``G`` non-increasing. ``started`` marks positions whose
    normaliser is a real one (not :data:`NEG_LARGE` or its negation).
    """
    dtype = x.dtype
    ref = G[..., :1] if reverse else G[..., -1:]  # the largest G of each chunk
    lowest = torch.where(started, G, ref).amin(-1, keepdim=True)
    mixed = started.any(-1) & ~started.all(-1)
    steep = ((ref - lowest).squeeze(-1) > FACTOR_RANGE) | mixed  # (..., K)
    # exp(g_l - G_j) = exp(g_l - ref) * exp(ref - G_j); both factors bounded where not steep.
    up = (g - ref).to(dtype).exp_()
    down = (ref - G).to(dtype).exp_()
    sums = torch.mul(x, up.unsqueeze(-1), out=torch.empty(x.shape, dtype=dtype, device=x.device))
    sums = _scan_(sums, reverse).mul_(down.unsqueeze(-1))
    if bool(steep.any()):
        c, d = x.shape[-2], x.shape[-1]
        pick = steep.reshape(-1)
        flat = sums.view(-1, c, d)
        g_p, G_p, x_p = g.reshape(-1, c)[pick], G.reshape(-1, c)[pick], x.reshape(-1, c, d)[pick]
        flat[pick] = _exact_chunk(g_p, G_p, x_p, reverse)
    return sums


def _decayed_sum(
    g: torch.Tensor, G: torch.Tensor, started: torch.Tensor, x: torch.Tensor, chunk: int, reverse: bool
) -> torch.Tensor:
    n, d = x.shape[-2], x.shape[-1]
    n_chunks = -(-n // chunk)
    size = -(-n // n_chunks)  # equal chunks, least padding
    if n_chunks == 1:
        one = _chunk_sums(g.unsqueeze(-2), G.unsqueeze(-2), started.unsqueeze(-2), x.unsqueeze(-3), reverse)
        return one.squeeze(-3)
    pad = n_chunks * size - n
    if pad:
        # Padding goes after the sequence; it must not feed real positions in either direction.
        g = torch.nn.functional.pad(g, (0, pad), value=float("-inf"))
        G = torch.cat([G, G[..., -1:].expand(*G.shape[:-1], pad)], dim=-1)
        started = torch.cat([started, started[..., -1:].expand(*started.shape[:-1], pad)], dim=-1)
        x = torch.nn.functional.pad(x, (0, 0, 0, pad))
    lead = x.shape[:-2]
    g_c = g.reshape(*lead, n_chunks, size)
    G_c = G.reshape(*lead, n_chunks, size)
    started_c = started.reshape(*lead, n_chunks, size)
    sums = _chunk_sums(g_c, G_c, started_c, x.reshape(*lead, n_chunks, size, d), reverse)

    # The value at each chunk's boundary position solves the same problem over the boundaries.
    edge = 0 if reverse else -1
    G_edge = G_c[..., edge]
    y_edge = _decayed_sum(G_edge, G_edge, started_c[..., edge], sums[..., edge, :], chunk, reverse)
    # Each chunk adds the boundary value of its neighbour (previous chunk, or next one in reverse).
    if reverse:
        carry = torch.nn.functional.pad(y_edge[..., 1:, :], (0, 0, 0, 1))
        G_from = torch.nn.functional.pad(G_edge[..., 1:], (0, 1), value=float("-inf"))
    else:
        carry = torch.nn.functional.pad(y_edge[..., :-1, :], (0, 0, 1, 0))
        G_from = torch.nn.functional.pad(G_edge[..., :-1], (1, 0), value=float("-inf"))
    # exp(G_from - G_j); the neighbour's boundary weight may be 1e300-scaled: keep the difference
    # finite (0 or 1) where both sides are unstarted.
    decay = (G_from.unsqueeze(-1) - G_c).nan_to_num_(nan=0.0).to(x.dtype).exp_()
    y = sums.addcmul_(decay.unsqueeze(-1), carry.unsqueeze(-2)).reshape(*lead, n_chunks * size, d)
    return y[..., :n, :] if pad else y


def decayed_cumsum(
    s: torch.Tensor, lse: torch.Tensor, x: torch.Tensor, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Compute ``y_j = sum_{l <= j} exp(s_l - lse_j) x_l`` along dim -2 of ``x``.

    Parameters
    ----------
    s : torch.Tensor
        Float64 log-weights ``(..., N)``; ``-inf`` for terms that contribute nothing.
    lse : torch.Tensor
        Float64 ``(..., N)``, non-decreasing, with ``s_l <= lse_j`` for ``l <= j``; :data:`NEG_LARGE`
        where nothing has been seen yet.
    x : torch.Tensor
        ``(..., N, D)``.
    chunk : int, default=64
        Tokens per chunk (at least 2).

    Returns
    -------
    torch.Tensor
        ``y`` of the shape and dtype of ``x``.
    """
    return _decayed_sum(s, lse, lse > NEG_LARGE, x, chunk, reverse=False)


def reverse_decayed_cumsum(lse: torch.Tensor, x: torch.Tensor, chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """Compute ``h_i = sum_{k >= i} exp(lse_i - lse_k) x_k`` (the backward pass's sum) along dim -2.

    ``lse`` is float64 ``(..., N)``, non-decreasing, :data:`NEG_LARGE` where nothing was seen yet;
    ``x`` has shape ``(..., N, D)``.
    """
    neg = -lse
    return _decayed_sum(neg, neg, lse > NEG_LARGE, x, chunk, reverse=True)
