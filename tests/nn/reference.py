"""Float64 brute-force references: softmax attention over each prefix, written the obvious way."""

from __future__ import annotations

import torch


def attention_reference(s: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``o_k = softmax(s_{<=k}) @ v_{<=k}`` in float64 with an explicit ``N x N`` causal matrix.

    Positions with no real token yet give 0.
    """
    s = s.to(torch.float64)
    v = v.to(torch.float64)
    n = s.shape[-1]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()  # (k, i): i <= k
    if mask is not None:
        allowed = allowed & mask.unsqueeze(-2)
    logits = s.unsqueeze(-2).expand(*s.shape[:-1], n, n).masked_fill(~allowed, float("-inf"))
    row_max = logits.amax(-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(logits - row_max)
    total = weights.sum(-1, keepdim=True)
    probs = weights / torch.where(total > 0, total, torch.ones_like(total))
    return probs @ v


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Largest absolute deviation divided by the largest magnitude of ``expected``."""
    scale = expected.detach().abs().max().clamp_min(1e-30)
    return float((actual.detach().to(torch.float64) - expected.detach()).abs().max() / scale)
