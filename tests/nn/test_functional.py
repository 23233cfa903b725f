"""Every path of Aaren attention (parallel, block with state, step) against the float64 reference."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from aaren_ts.nn.functional import AarenState, aaren_attention, aaren_combine, aaren_step

from .reference import attention_reference, relative_error

TOL = 1e-5
SCALES = [1e-3, 1.0, 30.0, 1e3, 1e4]
LENGTHS = [1, 2, 63, 64, 65, 129, 300]


def adversarial_scores(kind: str, shape: tuple[int, ...], scale: float, gen: torch.Generator) -> torch.Tensor:
    n = shape[-1]
    if kind == "random":
        return torch.randn(shape, generator=gen) * scale
    if kind == "all_negative":
        return -(torch.rand(shape, generator=gen) + 0.1) * scale
    if kind == "increasing":
        return torch.linspace(-1.0, 1.0, n).expand(shape).clone() * scale
    if kind == "late_spike":
        s = torch.randn(shape, generator=gen)
        s[..., max(n - 3, 0)] = scale
        return s
    raise ValueError(kind)


KINDS = ["random", "all_negative", "increasing", "late_spike"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("n", LENGTHS)
def test_parallel_matches_reference(kind: str, scale: float, n: int) -> None:
    gen = torch.Generator().manual_seed(n)
    s = adversarial_scores(kind, (2, 3, n), scale, gen)
    v = torch.randn(2, 3, n, 5, generator=gen)
    out = aaren_attention(s, v, chunk=16)
    assert out.dtype == torch.float32
    assert torch.isfinite(out).all()
    assert relative_error(out, attention_reference(s, v)) < TOL


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("n", [1, 17, 100, 257])
def test_masked_parallel_matches_reference(scale: float, n: int) -> None:
    gen = torch.Generator().manual_seed(7 + n)
    s = torch.randn(3, 2, n, generator=gen) * scale
    v = torch.randn(3, 2, n, 4, generator=gen)
    mask = torch.rand(3, 2, n, generator=gen) > 0.4
    mask[0, 0] = False  # an all-masked row
    mask[1, 1, : n // 2] = False  # a long masked prefix
    out = aaren_attention(s, v, mask=mask, chunk=16)
    assert torch.isfinite(out).all()
    assert relative_error(out, attention_reference(s, v, mask)) < TOL
    assert torch.equal(out[0, 0], torch.zeros_like(out[0, 0]))
    # Before the first real token the output is exactly 0.
    first = int(mask[1, 1].nonzero()[0]) if mask[1, 1].any() else n
    assert torch.equal(out[1, 1, :first], torch.zeros_like(out[1, 1, :first]))


@pytest.mark.parametrize("chunk", [2, 3, 16, 64, 1024])
def test_chunk_size_does_not_change_result(chunk: int) -> None:
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(2, 200, generator=gen) * 50
    v = torch.randn(2, 200, 3, generator=gen)
    assert relative_error(aaren_attention(s, v, chunk=chunk), attention_reference(s, v)) < TOL


def test_long_sequence_with_large_scores_stays_exact() -> None:
    gen = torch.Generator().manual_seed(1)
    n = 100_000
    s = torch.randn(1, n, generator=gen) * 1e3
    s[0, -5] = 1e4
    v = torch.randn(1, n, 2, generator=gen)
    out = aaren_attention(s, v)
    assert torch.isfinite(out).all()
    # At this length the N x N reference is too big: check sampled positions by direct float64 sums.
    s64, v64 = s[0].double(), v[0].double()
    for k in [0, 1, 999, 50_000, n - 6, n - 5, n - 1]:
        w = torch.softmax(s64[: k + 1], dim=0)
        expected = (w.unsqueeze(-1) * v64[: k + 1]).sum(0)
        assert relative_error(out[0, k], expected) < TOL, k


@pytest.mark.parametrize("splits", [[0, 37, 38, 200, 300], [0, 1, 2, 3, 300], [0, 150, 300]])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_block_form_with_state_continues_exactly(splits: list[int], scale: float) -> None:
    gen = torch.Generator().manual_seed(3)
    s = torch.randn(2, 3, 300, generator=gen) * scale
    v = torch.randn(2, 3, 300, 4, generator=gen)
    mask = torch.rand(2, 3, 300, generator=gen) > 0.2
    expected = attention_reference(s, v, mask)
    state, outs = None, []
    for lo, hi in itertools.pairwise(splits):
        o, state = aaren_attention(
            s[..., lo:hi], v[..., lo:hi, :], mask[..., lo:hi], state=state, return_state=True, chunk=16
        )
        outs.append(o)
    assert relative_error(torch.cat(outs, dim=-2), expected) < TOL
    # The returned state's output equals the last position's output.
    assert relative_error(state.output(), expected[..., -1, :]) < TOL


@pytest.mark.parametrize("scale", SCALES)
def test_step_matches_reference(scale: float) -> None:
    gen = torch.Generator().manual_seed(5)
    n = 120
    s = torch.randn(2, 3, n, generator=gen) * scale
    v = torch.randn(2, 3, n, 4, generator=gen)
    mask = torch.rand(2, 3, n, generator=gen) > 0.3
    mask[0, 0, :50] = False
    state = AarenState.initial((2, 3), 4)
    outs = []
    for t in range(n):
        o, state = aaren_step(state, s[..., t], v[..., t, :], mask[..., t])
        outs.append(o)
    out = torch.stack(outs, dim=-2)
    assert torch.isfinite(out).all()
    assert relative_error(out, attention_reference(s, v, mask)) < TOL


def test_step_state_size_is_constant() -> None:
    state = AarenState.initial((1, 2), 8)
    sizes = set()
    for t in range(1000):
        _, state = aaren_step(state, torch.randn(1, 2), torch.randn(1, 2, 8))
        if t in (0, 999):
            sizes.add(sum(x.nelement() for x in state))
    assert len(sizes) == 1


def test_parallel_state_equals_stepped_state() -> None:
    gen = torch.Generator().manual_seed(11)
    s = torch.randn(4, 50, generator=gen) * 20
    v = torch.randn(4, 50, 3, generator=gen)
    _, par = aaren_attention(s, v, return_state=True)
    state = AarenState.initial((4,), 3)
    for t in range(50):
        _, state = aaren_step(state, s[:, t], v[:, t])
    torch.testing.assert_close(par.m, state.m)
    torch.testing.assert_close(par.c, state.c, rtol=1e-6, atol=0)
    torch.testing.assert_close(par.a, state.a, rtol=1e-5, atol=1e-6)


def test_all_masked_rows_and_empty_sequences() -> None:
    s = torch.randn(2, 10)
    v = torch.randn(2, 10, 3)
    mask = torch.zeros(2, 10, dtype=torch.bool)
    out, state = aaren_attention(s, v, mask=mask, return_state=True)
    assert torch.equal(out, torch.zeros_like(out))
    assert torch.isneginf(state.m).all() and (state.c == 0).all()
    empty, state = aaren_attention(s[:, :0], v[:, :0], return_state=True)
    assert empty.shape == (2, 0, 3)
    assert (state.c == 0).all()


def test_combine_of_two_halves_equals_whole() -> None:
    gen = torch.Generator().manual_seed(2)
    s = torch.randn(3, 40, generator=gen) * 100
    v = torch.randn(3, 40, 2, generator=gen)
    _, left = aaren_attention(s[:, :13], v[:, :13], return_state=True)
    _, right = aaren_attention(s[:, 13:], v[:, 13:], return_state=True)
    _, whole = aaren_attention(s, v, return_state=True)
    combined = aaren_combine(left, right)
    torch.testing.assert_close(combined.output(), whole.output(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(combined.log_normaliser(), whole.log_normaliser())


# ----------------------------------------------------------------------------- gradients


def _loss_weights(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("n", [1, 5, 13])
def test_gradcheck_float64(n: int) -> None:
    gen = torch.Generator().manual_seed(n)
    s = (torch.randn(2, n, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    v = torch.randn(2, n, 3, generator=gen, dtype=torch.float64).requires_grad_()
    mask = torch.rand(2, n, generator=gen) > 0.3
    assert torch.autograd.gradcheck(lambda s, v: aaren_attention(s, v, mask, chunk=4), (s, v))


def test_gradcheck_through_state() -> None:
    gen = torch.Generator().manual_seed(4)
    s = (torch.randn(2, 9, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    v = torch.randn(2, 9, 3, generator=gen, dtype=torch.float64).requires_grad_()
    m0 = torch.randn(2, generator=gen, dtype=torch.float64).requires_grad_()
    c0 = (torch.rand(2, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    a0 = torch.randn(2, 3, generator=gen, dtype=torch.float64).requires_grad_()

    def f(s, v, m0, c0, a0):
        return aaren_attention(s, v, state=AarenState(m0, c0, a0), chunk=4)

    assert torch.autograd.gradcheck(f, (s, v, m0, c0, a0))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e2, 1e4])
@pytest.mark.parametrize("n", [7, 100, 300])
def test_float32_gradients_match_float64_reference(scale: float, n: int) -> None:
    gen = torch.Generator().manual_seed(n)
    s64 = torch.randn(2, 2, n, generator=gen, dtype=torch.float64) * scale
    v64 = torch.randn(2, 2, n, 4, generator=gen, dtype=torch.float64)
    mask = torch.rand(2, 2, n, generator=gen) > 0.25
    weights = _loss_weights((2, 2, n, 4), 0)

    s_ref, v_ref = s64.clone().requires_grad_(), v64.clone().requires_grad_()
    (attention_reference(s_ref, v_ref, mask) * weights).sum().backward()

    s32, v32 = s64.float().requires_grad_(), v64.float().requires_grad_()
    (aaren_attention(s32, v32, mask, chunk=16) * weights.float()).sum().backward()
    assert torch.isfinite(s32.grad).all() and torch.isfinite(v32.grad).all()
    assert relative_error(v32.grad, v_ref.grad) < 1e-5
    # ds_i = alpha_i (v_i . H_i - Delta_i) is a difference of two nearly equal terms, so float32 carries
    # an absolute rounding error of order eps * |v| * |H| (H_i = sum_{k>=i} p_{k,i}/alpha_i g_k). At
    # |s| = 1e4 the softmax is one-hot and the true gradient is ~1e-30: bound the error on that scale.
    h_scale = _reverse_weighted_grad_scale(s64, mask, weights)
    tol = 1e-4 * float(s_ref.grad.abs().max()) + 1e-5 * float(v64.abs().max()) * h_scale
    assert float((s32.grad.double() - s_ref.grad).abs().max()) <= tol


def _reverse_weighted_grad_scale(s: torch.Tensor, mask: torch.Tensor, g: torch.Tensor) -> float:
    """``max_i |H_i|`` with ``H_i = sum_{k >= i} exp(lse_i - lse_k) g_k`` in float64."""
    s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logcumsumexp(s, dim=-1)
    lse = torch.where(torch.isfinite(lse), lse, torch.full_like(lse, -1e300))
    n = s.shape[-1]
    later = torch.ones(n, n, dtype=torch.bool).triu()  # (i, k): k >= i
    w = torch.exp((lse.unsqueeze(-1) - lse.unsqueeze(-2)).masked_fill(~later, float("-inf")))
    return float((w @ g).abs().max())


def test_gradients_are_zero_for_masked_tokens() -> None:
    s = torch.randn(1, 30, requires_grad=True)
    v = torch.randn(1, 30, 2, requires_grad=True)
    mask = torch.ones(1, 30, dtype=torch.bool)
    mask[0, ::3] = False
    aaren_attention(s, v, mask).sum().backward()
    assert (s.grad[~mask] == 0).all()
    assert (v.grad[~mask] == 0).all()


def test_backward_saves_about_the_size_of_v() -> None:
    n, d = 512, 32
    s = torch.randn(4, 2, n, requires_grad=True)
    v = torch.randn(4, 2, n, d, requires_grad=True)
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = aaren_attention(s, v)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saved}
    ratio = sum(storages.values()) / (v.nelement() * v.element_size())
    assert ratio < 1.2, ratio
    out.sum().backward()


# ----------------------------------------------------------------------------- input checks


def test_bad_inputs_raise_clear_errors() -> None:
    s, v = torch.randn(2, 5), torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="shapes do not match"):
        aaren_attention(s[:, :4], v)
    with pytest.raises(TypeError, match="floating point"):
        aaren_attention(s.long(), v)
    with pytest.raises(TypeError, match="bool"):
        aaren_attention(s, v, mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match="mask shape"):
        aaren_attention(s, v, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="chunk must be at least 2"):
        aaren_attention(s, v, chunk=1)
    with pytest.raises(ValueError, match="state does not match"):
        aaren_attention(s, v, state=AarenState.initial((3,), 3))


@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(2, 4, 700, generator=gen) * 100
    v = torch.randn(2, 4, 700, 16, generator=gen)
    out = aaren_attention(s.cuda(), v.cuda()).cpu()
    assert relative_error(out, attention_reference(s, v)) < TOL
    assert math.isfinite(float(out.abs().max()))
