"""Aaren attention as functions: parallel (prefix scan), block (with carried state) and step.

For scores ``s_i`` (the learned query against the keys) and values ``v_i``, Aaren outputs at every
position ``k`` the softmax attention over the prefix,

.. math::

    o_k = \\sum_{i \\le k} \\exp(s_i - \\mathrm{lse}_k)\\, v_i,
    \\qquad \\mathrm{lse}_k = \\log \\sum_{i \\le k} \\exp(s_i),

which is also an RNN with state ``(m, c, a)`` (running max, normaliser, weighted value sum). All three
ways of computing it here are exact:

* :func:`aaren_attention` computes every ``o_k`` at once. The running log-normalisers are kept in
  float64 (they are only ``N`` scalars per head), the outputs come from a chunked decayed prefix sum
  (:mod:`aaren_ts.nn._scan`), and a custom backward runs the same sum in reverse, so training memory is
  ``O(N * D)``: only the scores, the normalisers and the outputs are saved.
* Given ``state``, :func:`aaren_attention` continues an earlier computation (the block form), and with
  ``return_state=True`` it hands back the state after its last token.
* :func:`aaren_step` consumes one token in ``O(D)`` time and memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from aaren_ts.nn._scan import DEFAULT_CHUNK, NEG_LARGE, decayed_cumsum, reverse_decayed_cumsum

__all__ = ["AarenState", "aaren_attention", "aaren_combine", "aaren_step"]


class AarenState(NamedTuple):
    """Recurrent state of Aaren attention after some prefix of tokens.

    With ``s_i`` the scores and ``v_i`` the values seen so far, any state satisfies
    ``c * exp(m) = sum_i exp(s_i)`` and ``a * exp(m) = sum_i exp(s_i) v_i``; the attention output is
    ``a / c``. A fresh state, before any token, is ``(m, c, a) = (-inf, 0, 0)``.

    The reference ``m`` is free: the paper takes the running maximum of the scores; the states this
    module returns take the log-normaliser itself, ``m = log sum_i exp(s_i)``, so that ``c = 1`` once a
    token has been seen and ``a`` *is* the attention output (the *normalised* form). Then one token
    updates the state with ``m' = logaddexp(m, s)``, ``alpha = exp(s - m')`` and
    ``a' = a + alpha (v - a)``: the same recurrence, every weight in ``[0, 1]``, and fewer operations
    per token. Functions here accept states in any form.

    Attributes
    ----------
    m : torch.Tensor
        Reference log-scale, shape ``(...)`` (the log-normaliser in normalised form).
    c : torch.Tensor
        Normaliser relative to ``m``, shape ``(...)`` (1, or 0 before any token, in normalised form).
    a : torch.Tensor
        Weighted sum of values relative to ``m``, shape ``(..., D)`` (the output, in normalised form).
    """

    m: torch.Tensor
    c: torch.Tensor
    a: torch.Tensor

    @classmethod
    def initial(
        cls,
        batch_shape: tuple[int, ...] | torch.Size,
        head_dim: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> AarenState:
        """Return the state before any token: ``m = -inf``, ``c = 0``, ``a = 0``.

        Parameters
        ----------
        batch_shape : tuple of int
            Leading dimensions, e.g. ``(batch_size, n_heads)``.
        head_dim : int
            Size ``D`` of each value vector.
        device : torch.device or str, optional
            Where to allocate the state.
        dtype : torch.dtype, default=torch.float64
            Dtype of the accumulators. Float64 keeps a stream exact over very long histories at the
            cost of a few bytes per head.
        """
        shape = tuple(batch_shape)
        return cls(
            m=torch.full(shape, float("-inf"), device=device, dtype=dtype),
            c=torch.zeros(shape, device=device, dtype=dtype),
            a=torch.zeros((*shape, head_dim), device=device, dtype=dtype),
        )

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> AarenState:
        """Apply ``fn`` to each tensor (e.g. ``lambda t: t[idx]`` or ``torch.Tensor.detach``)."""
        return AarenState(fn(self.m), fn(self.c), fn(self.a))

    def detach(self) -> AarenState:
        """Return the state cut from the autograd graph."""
        return self.map(torch.Tensor.detach)

    def output(self) -> torch.Tensor:
        """Attention output ``a / c`` of the state (0 where no token has been seen)."""
        return self.a / _safe_c(self.c).unsqueeze(-1)

    def log_normaliser(self) -> torch.Tensor:
        """Return ``log sum_i exp(s_i)`` over the tokens seen (``-inf`` where none)."""
        seen = self.c > 0
        return torch.where(seen, self.m + torch.log(_safe_c(self.c)), float("-inf"))

    def normalised(self) -> AarenState:
        """The same state in normalised form: ``m`` the log-normaliser, ``c`` in {0, 1}, ``a`` the output."""
        return AarenState(self.log_normaliser(), (self.c > 0).to(self.c.dtype), self.output())


def _safe_c(c: torch.Tensor) -> torch.Tensor:
    return torch.where(c > 0, c, torch.ones_like(c))


def _safe_max(m: torch.Tensor) -> torch.Tensor:
    """Replace ``-inf`` maxima (nothing seen) by 0 so that ``exp(x - m)`` never forms ``-inf + inf``."""
    return torch.where(torch.isneginf(m), torch.zeros_like(m), m)


def aaren_combine(left: AarenState, right: AarenState) -> AarenState:
    """Associative operator of the prefix scan: the state of ``left``'s tokens followed by ``right``'s.

    ``(mA, cA, aA) ⊕ (mB, cB, aB) = (m, cA e^{mA-m} + cB e^{mB-m}, aA e^{mA-m} + aB e^{mB-m})`` with
    ``m = max(mA, mB)``. Empty states (``m = -inf``) are handled exactly. The result is returned in
    normalised form (see :class:`AarenState`).
    """
    m = torch.maximum(left.m, right.m)
    m_ref = _safe_max(m)
    wl = torch.exp(left.m - m_ref)
    wr = torch.exp(right.m - m_ref)
    c = left.c * wl + right.c * wr
    a = left.a * wl.unsqueeze(-1) + right.a * wr.unsqueeze(-1)
    return AarenState(m, c, a).normalised()


def aaren_step(
    state: AarenState,
    s_t: torch.Tensor,
    v_t: torch.Tensor,
    mask_t: torch.Tensor | None = None,
) -> tuple[torch.Tensor, AarenState]:
    """Consume one token: ``O(D)`` time and memory whatever the history length.

    This is the one definition of the token update: :meth:`~aaren_ts.nn.Aaren.step` and the lean
    inference step of :class:`~aaren_ts.nn.AarenEncoder` both call it (the fused C kernel of that step
    repeats it in C and is tested against it).

    Parameters
    ----------
    state : AarenState
        State after the previous tokens, in normalised form (as every function here returns it; see
        :class:`AarenState` and :meth:`AarenState.normalised`). :meth:`AarenState.initial` is one.
    s_t : torch.Tensor
        Finite scores of the new token, shape ``(...)``.
    v_t : torch.Tensor
        Values of the new token, shape ``(..., D)``.
    mask_t : torch.Tensor, optional
        Bool of shape ``(...)``; False marks a padding token that leaves the state unchanged.

    Returns
    -------
    o_t : torch.Tensor
        Attention output after the token, shape ``(..., D)``, dtype of ``v_t`` (0 while no real
        token has been seen).
    state : AarenState
        The new state, in normalised form and in the dtype of ``state``.
    """
    s = s_t.to(state.m.dtype)
    if mask_t is not None:
        s = s.masked_fill(~mask_t, float("-inf"))
    m = torch.logaddexp(state.m, s)
    alpha = torch.exp(s - m)  # share of the new token in the normaliser, in [0, 1]
    if mask_t is not None:
        alpha = alpha.nan_to_num_(nan=0.0)  # a padding token before any real one: -inf - -inf
    a = torch.lerp(state.a, v_t.to(state.a.dtype), alpha.unsqueeze(-1))
    c = torch.maximum(state.c, alpha)  # 0 until the first real token, then 1
    return a.to(v_t.dtype), AarenState(m, c, a)


class _AarenAttention(torch.autograd.Function):
    """Parallel Aaren attention with an ``O(N * D)``-memory backward.

    Inputs: scores ``s`` (..., N) with ``-inf`` for masked tokens, values ``v`` (..., N, D), and
    optionally a carried-in prefix summarised as a virtual token with log-weight ``lse0`` (...) and
    value ``o0`` (..., D). The backward uses, with ``alpha_i = exp(s_i - lse_i)`` and
    ``H_i = sum_{k >= i} exp(lse_i - lse_k) g_k``:
    ``dv_i = alpha_i H_i`` and ``ds_i = (o_i - (1 - alpha_i) o_{i-1}) . H_i - alpha_i Delta_i``,
    where ``Delta`` is the same reverse sum of ``o_k . g_k`` and ``o_i - (1 - alpha_i) o_{i-1}`` equals
    ``alpha_i v_i``, so ``v`` itself need not be saved.
    """

    @staticmethod
    def forward(ctx, s, v, lse0, o0, chunk):
        s64 = s.to(torch.float64)
        lse = torch.logcumsumexp(s64, dim=-1)
        if lse0 is not None:
            lse = torch.logaddexp(lse, lse0.unsqueeze(-1))
        lse = lse.clamp_min(NEG_LARGE)
        o = decayed_cumsum(s64, lse, v, chunk)
        if lse0 is not None:
            lse0 = lse0.clamp_min(NEG_LARGE)
            decay = (lse0.unsqueeze(-1) - lse).exp().to(v.dtype)
            o.addcmul_(decay.unsqueeze(-1), o0.to(v.dtype).unsqueeze(-2))
            ctx.save_for_backward(s, lse, o, lse0, o0)
        else:
            ctx.save_for_backward(s, lse, o)
        ctx.chunk = chunk
        return o

    @staticmethod
    def backward(ctx, grad_o):
        s, lse, o, *init = ctx.saved_tensors
        dtype = o.dtype
        grad_o = grad_o.to(dtype)
        if init:
            lse0, o0 = init[0], init[1].to(dtype)
        else:
            lse0 = torch.full_like(lse[..., 0], NEG_LARGE)
            o0 = torch.zeros_like(o[..., 0, :])
        # H_i = sum_{k>=i} exp(lse_i - lse_k) g_k  and  Delta_i = the same sum of o_k . g_k.
        h = reverse_decayed_cumsum(lse, grad_o, ctx.chunk)
        o_dot_g = torch.linalg.vecdot(o, grad_o).unsqueeze(-1)
        delta = reverse_decayed_cumsum(lse, o_dot_g, ctx.chunk).squeeze(-1)
        alpha = torch.exp(s.to(torch.float64) - lse).to(dtype)
        lse_prev = torch.cat([lse0.unsqueeze(-1), lse[..., :-1]], dim=-1)
        beta = torch.exp(lse_prev - lse).to(dtype)  # = 1 - alpha, without cancellation
        # ds_i = alpha_i v_i . H_i - alpha_i Delta_i, with alpha_i v_i = o_i - beta_i o_{i-1}.
        first = torch.linalg.vecdot(o0, h[..., 0, :]).unsqueeze(-1)
        o_prev_dot_h = torch.cat([first, torch.linalg.vecdot(o[..., :-1, :], h[..., 1:, :])], dim=-1)
        grad_s = (torch.linalg.vecdot(o, h) - beta * o_prev_dot_h - alpha * delta).to(s.dtype)
        grad_lse0 = grad_o0 = None
        if init:
            w0 = torch.exp(lse0 - lse[..., 0]).to(dtype)
            h0 = w0.unsqueeze(-1) * h[..., 0, :]
            grad_o0 = h0.to(init[1].dtype)
            grad_lse0 = (torch.linalg.vecdot(o0, h0) - w0 * delta[..., 0]).to(lse0.dtype)
        grad_v = h.mul_(alpha.unsqueeze(-1))
        return grad_s, grad_v, grad_lse0, grad_o0, None


def _check_attention_inputs(
    s: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, state: AarenState | None
) -> None:
    if not torch.is_floating_point(s) or not torch.is_floating_point(v):
        raise TypeError(f"s and v must be floating point tensors, got {s.dtype} and {v.dtype}")
    if v.dim() < 2 or s.shape != v.shape[:-1]:
        raise ValueError(
            f"shapes do not match: s must be (..., N) and v (..., N, D); got s {tuple(s.shape)} "
            f"and v {tuple(v.shape)}"
        )
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = real token), got {mask.dtype}")
        if mask.shape != s.shape:
            raise ValueError(f"mask shape {tuple(mask.shape)} must equal s shape {tuple(s.shape)}")
    if state is not None:
        lead = s.shape[:-1]
        if state.m.shape != lead or state.c.shape != lead or state.a.shape != v.shape[:-2] + v.shape[-1:]:
            raise ValueError(
                f"state does not match the inputs: expected m, c of shape {tuple(lead)} and a of "
                f"shape {(*lead, v.shape[-1])}, got {tuple(state.m.shape)}, {tuple(state.c.shape)}, "
                f"{tuple(state.a.shape)}"
            )


def aaren_attention(
    s: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    state: AarenState | None = None,
    return_state: bool = False,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor | tuple[torch.Tensor, AarenState]:
    """Many-to-many Aaren attention over every prefix, computed in parallel.

    Parameters
    ----------
    s : torch.Tensor
        Scores of shape ``(..., N)`` (any leading batch/head dims).
    v : torch.Tensor
        Values of shape ``(..., N, D)``.
    mask : torch.Tensor, optional
        Bool of shape ``(..., N)``, True for real tokens. Masked tokens contribute nothing; before
        the first real token the output is 0.
    state : AarenState, optional
        State after an earlier block of tokens; the result then continues that computation exactly
        (the block-by-block form). Gradients flow into the state's tensors.
    return_state : bool, default=False
        Also return the state after the last token.
    chunk : int, default=64
        Chunk length (at least 2) of the internal scan: a speed knob; results do not depend on it
        beyond rounding.

    Returns
    -------
    o : torch.Tensor
        Outputs of shape ``(..., N, D)`` and the dtype of ``v``.
    state : AarenState
        Only with ``return_state=True``: the state after the last token, in the dtype of ``state``
        (float64 for a fresh one).
    """
    _check_attention_inputs(s, v, mask, state)
    if int(chunk) < 2:
        raise ValueError(f"chunk must be at least 2, got {chunk}")
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    if state is None:
        lse0 = o0 = None
    else:
        lse0 = state.log_normaliser()
        o0 = state.output()
    if s.shape[-1] == 0:
        o = v.new_zeros(v.shape)
    else:
        o = _AarenAttention.apply(s, v, lse0, o0, int(chunk))
    if not return_state:
        return o
    # Final state, normalised: log-normaliser of everything seen, and the last output.
    dtype = state.m.dtype if state is not None else torch.float64
    lse = torch.logsumexp(s.to(dtype), dim=-1)
    if lse0 is not None:
        lse = torch.logaddexp(lse, lse0)
        last = o[..., -1, :] if s.shape[-1] else o0
    else:
        last = o[..., -1, :] if s.shape[-1] else v.new_zeros(v.shape[:-2] + v.shape[-1:])
    seen = (lse > float("-inf")).to(dtype)
    return o, AarenState(lse, seen, last.to(dtype))
