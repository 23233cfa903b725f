"""The fused C step of AarenEncoder: same results as the PyTorch step and the parallel forward."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest
import torch

from aaren_ts.nn import AarenEncoder, fused_step_available
from aaren_ts.nn._native import load_fused_step

needs_fused = pytest.mark.skipif(
    not fused_step_available(), reason="the fused step could not be built here (no C compiler?)"
)


def _plan(enc: AarenEncoder):
    with torch.inference_mode():
        enc.step(torch.zeros(1, enc.d_model, dtype=enc.norm.weight.dtype), enc.init_state(1))
    return enc.__dict__["_step_plan"]


def _stream(step, x: torch.Tensor, state: list) -> tuple[torch.Tensor, list]:
    outs = []
    with torch.inference_mode():
        for t in range(x.shape[1]):
            y_t, state = step(x[:, t], state)
            outs.append(y_t)
    return torch.stack(outs, 1), state


@needs_fused
@pytest.mark.parametrize(
    ("d_model", "n_heads", "n_layers", "d_ff", "batch"), [(16, 4, 2, 32, 1), (24, 3, 3, 40, 5)]
)
def test_fused_step_equals_forward_and_pytorch_step(
    d_model: int, n_heads: int, n_layers: int, d_ff: int, batch: int
) -> None:
    torch.manual_seed(0)
    enc = AarenEncoder(d_model, n_heads, n_layers, d_ff).eval()
    plan = _plan(enc)
    assert plan.native is not None, "float32 CPU encoder should use the fused step"
    x = torch.randn(batch, 50, d_model)
    with torch.no_grad():
        expected, final = enc(x)
    fused, fused_state = _stream(enc.step, x, enc.init_state(batch))
    ops, ops_state = _stream(plan._step_torch, x, enc.init_state(batch))
    torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fused, ops, rtol=1e-5, atol=1e-5)
    for got, want, ops_st in zip(fused_state, final, ops_state, strict=True):
        assert got.m.dtype == torch.float64 and got.a.shape == want.a.shape
        torch.testing.assert_close(got.m, ops_st.m, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got.c, ops_st.c)
        torch.testing.assert_close(got.a, ops_st.a, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got.normalised().a, want.normalised().a, rtol=1e-5, atol=1e-5)


@needs_fused
def test_fused_step_continues_a_state_from_the_parallel_forward() -> None:
    # States returned by forward can be views into larger tensors (not contiguous).
    torch.manual_seed(1)
    enc = AarenEncoder(16, 2, 2, 32).eval()
    x = torch.randn(3, 40, 16)
    with torch.no_grad():
        expected, _ = enc(x)
        _, state = enc(x[:, :25])
    continued, _ = _stream(enc.step, x[:, 25:], state)
    torch.testing.assert_close(continued, expected[:, 25:], rtol=1e-5, atol=1e-5)


@needs_fused
def test_fused_step_leaves_its_inputs_untouched() -> None:
    torch.manual_seed(2)
    enc = AarenEncoder(16, 4, 2, 32).eval()
    _, state = _stream(enc.step, torch.randn(2, 10, 16), enc.init_state(2))
    before = copy.deepcopy(state)
    x_t = torch.randn(2, 16)
    x_before = x_t.clone()
    with torch.inference_mode():
        first, _ = enc.step(x_t, state)
        again, _ = enc.step(x_t, state)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert torch.equal(x_t, x_before)
    for now, then in zip(state, before, strict=True):
        assert torch.equal(now.m, then.m) and torch.equal(now.c, then.c) and torch.equal(now.a, then.a)


@needs_fused
@pytest.mark.parametrize("score_scale", [1e-3, 1.0, 1e3, 1e4])
def test_fused_step_matches_a_float64_reference_at_extreme_score_scales(score_scale: float) -> None:
    torch.manual_seed(3)
    enc = AarenEncoder(16, 4, 2, 32).eval()
    with torch.no_grad():
        for layer in enc.layers:
            layer.mixer.query.mul_(score_scale)
    reference = copy.deepcopy(enc).double()
    x = torch.randn(2, 60, 16)
    x[:, 45] *= 30.0  # one large token late in the stream: a score spike at large scales
    with torch.no_grad():
        expected, _ = reference(x.double())
    fused, _ = _stream(enc.step, x, enc.init_state(2))
    ops, _ = _stream(_plan(enc)._step_torch, x, enc.init_state(2))
    assert torch.isfinite(fused).all()
    err_fused = (fused.double() - expected).abs().max().item()
    err_ops = (ops.double() - expected).abs().max().item()
    # float32 projections: both steps sit within float32 round-off of the float64 model
    assert err_fused < 2e-5 and err_ops < 2e-5, (err_fused, err_ops)


def test_pytorch_step_is_used_where_the_fused_one_does_not_apply() -> None:
    torch.manual_seed(4)
    enc = AarenEncoder(16, 4, 2, 32).eval().double()  # float64 weights: PyTorch operations
    assert _plan(enc).native is None
    x = torch.randn(2, 20, 16, dtype=torch.float64)
    with torch.no_grad():
        expected, _ = enc(x)
    stepped, _ = _stream(enc.step, x, enc.init_state(2))
    torch.testing.assert_close(stepped, expected, rtol=1e-10, atol=1e-10)


@needs_fused
def test_fused_step_falls_back_for_states_it_does_not_handle() -> None:
    torch.manual_seed(5)
    enc = AarenEncoder(16, 4, 2, 32).eval()
    plan = _plan(enc)
    x_t = torch.randn(1, 16)
    state32 = [s.map(lambda t: t.float()) for s in enc.init_state(1)]  # float32 accumulators
    assert plan._step_native(x_t, state32) is None
    with torch.inference_mode():
        y, _ = enc.step(x_t, state32)  # still steps, through PyTorch operations
        expected, _ = plan._step_torch(x_t, enc.init_state(1))
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
    assert plan._step_native(torch.randn(2, 16), enc.init_state(1)) is None  # batch mismatch
    assert plan._step_native(torch.randn(1, 15), enc.init_state(1)) is None  # wrong width: never read by C
    with torch.inference_mode(), pytest.raises(RuntimeError):
        enc.step(torch.randn(1, 15), enc.init_state(1))


def test_native_kernel_can_be_switched_off_and_is_cached(tmp_path) -> None:
    code = "\n".join(
        [
            "import torch",
            "from aaren_ts.nn import AarenEncoder, fused_step_available",
            "enc = AarenEncoder(8, 2, 1, 16).eval()",
            "with torch.inference_mode():",
            "    enc.step(torch.ones(1, 8), enc.init_state(1))",
            "print(fused_step_available(), enc.__dict__['_step_plan'].native is not None)",
        ]
    )
    env = {**os.environ, "AAREN_TS_CACHE_DIR": str(tmp_path)}

    def run(**extra: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert run(AAREN_TS_NATIVE="0") == "False False"
    assert list(tmp_path.iterdir()) == []  # switched off: nothing built
    if load_fused_step() is None:
        pytest.skip("no fused step on this machine: the build-and-cache part cannot run")
    assert run() == "True True"
    built = sorted(tmp_path.glob("fused_step-*.so"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    assert run() == "True True"
    assert built[0].stat().st_mtime_ns == stamp  # the second process loaded the cached build


def test_step_follows_load_state_dict_with_assign() -> None:
    torch.manual_seed(6)
    enc, other = AarenEncoder(16, 4, 2, 32).eval(), AarenEncoder(16, 4, 2, 32).eval()
    x = torch.randn(2, 12, 16)
    _stream(enc.step, x, enc.init_state(2))  # builds the cached plan for the old weights
    enc.load_state_dict(other.state_dict(), assign=True)  # swaps the parameter objects
    with torch.no_grad():
        expected, _ = other(x)
    stepped, _ = _stream(enc.step, x, enc.init_state(2))
    torch.testing.assert_close(stepped, expected, rtol=1e-5, atol=1e-5)


def test_threads_stepping_one_encoder_get_their_own_results() -> None:
    from concurrent.futures import ThreadPoolExecutor

    torch.manual_seed(7)
    enc = AarenEncoder(16, 4, 2, 32).eval()
    streams = [torch.randn(1, 200, 16) for _ in range(4)]
    expected = [_stream(enc.step, x, enc.init_state(1))[0] for x in streams]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda x: _stream(enc.step, x, enc.init_state(1))[0], streams))
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


@pytest.mark.parametrize("fused", [True, False])
def test_bias_free_encoder_steps_like_its_forward(fused: bool, monkeypatch) -> None:
    torch.manual_seed(8)
    enc = AarenEncoder(16, 4, 2, 32, bias=False).eval()
    if not fused:
        monkeypatch.setattr("aaren_ts.nn.encoder.load_fused_step", lambda: None)
    elif not fused_step_available():
        pytest.skip("the fused step could not be built here")
    x = torch.randn(2, 25, 16)
    with torch.no_grad():
        expected, _ = enc(x)
    stepped, _ = _stream(enc.step, x, enc.init_state(2))
    assert (_plan(enc).native is not None) == fused
    torch.testing.assert_close(stepped, expected, rtol=1e-5, atol=1e-5)
