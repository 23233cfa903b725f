"""The fused C step of AarenEncoder: same results as the one PyTorch definition of the step.

The reference throughout is the general path, :meth:`StackedEncoder.step` (``ResidualBlock.step`` with
``Aaren.step``, i.e. :func:`~aaren_ts.nn.blocks.pre_norm_residual` and
:func:`~aaren_ts.nn.functional.aaren_step`), not the lean step plan.
"""

from __future__ import annotations

import copy
import ctypes.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from aaren_ts.nn import AarenEncoder, AarenState, FusedStepFallbackWarning, _native, fused_step_available
from aaren_ts.nn._native import load_fused_step
from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.encoder import _StepPlan

needs_fused = pytest.mark.skipif(
    not fused_step_available(),
    reason="the fused step was not built when aaren_ts was installed (no C compiler then?)",
)


def _plan(enc: AarenEncoder):
    with torch.inference_mode():
        enc.step(torch.zeros(1, enc.d_model, dtype=enc.norm.weight.dtype), enc.init_state(1))
    return enc.__dict__["_step_plan"]


def _general(enc: AarenEncoder):
    """The general step (the single PyTorch definition), bypassing the plan."""
    return lambda x_t, state: StackedEncoder.step(enc, x_t, state)


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
    ops, ops_state = _stream(_general(enc), x, enc.init_state(batch))
    torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fused, ops, rtol=1e-5, atol=1e-5)
    for got, want, ops_st in zip(fused_state, final, ops_state, strict=True):
        assert got.m.dtype == torch.float64 and got.a.shape == want.a.shape
        torch.testing.assert_close(got.m, ops_st.m, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got.c, ops_st.c)
        torch.testing.assert_close(got.a, ops_st.a, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got.normalised().a, want.normalised().a, rtol=1e-5, atol=1e-5)


def _randomise(enc: AarenEncoder, gen: torch.Generator) -> None:
    """Random weights everywhere, norms included (their defaults, ones and zeros, hide mistakes)."""
    with torch.no_grad():
        for name, p in enc.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * noise)
            else:
                p.add_(0.3 * noise if "norm" in name or "query" in name else 0.05 * noise)


def _random_states(enc: AarenEncoder, batch: int, gen: torch.Generator) -> list[AarenState]:
    """Random normalised states; some heads of some rows have seen no token yet."""
    states = []
    for st in enc.init_state(batch):
        m = 3.0 * torch.randn(st.m.shape, generator=gen, dtype=torch.float64)
        fresh = torch.rand(st.m.shape, generator=gen) < 0.2
        a = torch.randn(st.a.shape, generator=gen, dtype=torch.float64).masked_fill(fresh.unsqueeze(-1), 0)
        states.append(AarenState(m.masked_fill(fresh, float("-inf")), (~fresh).double(), a))
    return states


def _assert_same_stream(step, reference, x: torch.Tensor, start: list, tol: float) -> None:
    """``step`` and ``reference`` give the same outputs and states over the stream ``x`` from ``start``."""
    got, got_state = _stream(step, x, start)
    want, want_state = _stream(reference, x, start)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    for got_layer, want_layer in zip(got_state, want_state, strict=True):
        for g, w in zip(got_layer, want_layer, strict=True):  # m, c, a
            torch.testing.assert_close(g, w, rtol=tol, atol=tol)


@needs_fused
@pytest.mark.parametrize("batch", [1, 7])
@pytest.mark.parametrize(("d_model", "n_heads", "n_layers", "d_ff"), [(16, 4, 3, 40), (24, 2, 2, 24)])
def test_fused_step_equals_the_general_step_on_random_weights_and_states(
    batch: int, d_model: int, n_heads: int, n_layers: int, d_ff: int
) -> None:
    gen = torch.Generator().manual_seed(10 * batch + n_layers)
    enc = AarenEncoder(d_model, n_heads, n_layers, d_ff).eval()
    _randomise(enc, gen)
    assert _plan(enc).native is not None
    x = torch.randn(batch, 200, d_model, generator=gen)
    start = _random_states(enc, batch, gen)
    _assert_same_stream(enc.step, _general(enc), x, start, tol=1e-5)


def test_plan_step_is_the_general_step_on_the_plan_weights() -> None:
    # The PyTorch step of the plan runs the same block, stack and recurrence functions as the general
    # path: the same operations on the same (pre-transposed) weights, so the same numbers.
    gen = torch.Generator().manual_seed(11)
    enc = AarenEncoder(16, 4, 3, 40).eval()
    _randomise(enc, gen)
    x = torch.randn(3, 50, 16, generator=gen)
    start = _random_states(enc, 3, gen)
    with torch.inference_mode():
        plan = _StepPlan(enc)
    _assert_same_stream(plan._step_torch, _general(enc), x, start, tol=1e-6)


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
    ops, _ = _stream(_general(enc), x, enc.init_state(2))
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
        expected, _ = _general(enc)(x_t, enc.init_state(1))
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
    assert plan._step_native(torch.randn(2, 16), enc.init_state(1)) is None  # batch mismatch
    assert plan._step_native(torch.randn(1, 15), enc.init_state(1)) is None  # wrong width: never read by C
    with torch.inference_mode(), pytest.raises(RuntimeError):
        enc.step(torch.randn(1, 15), enc.init_state(1))


def test_native_kernel_can_be_switched_off() -> None:
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

    def run(**extra: str) -> str:
        env = {**os.environ, **extra}
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert run(AAREN_TS_NATIVE="0") == "False False"
    if load_fused_step() is None:
        pytest.skip("the fused step was not built when aaren_ts was installed (no C compiler then?)")
    assert run() == "True True"


@needs_fused
def test_the_fused_step_is_the_installed_build_and_nothing_is_compiled_at_run_time(monkeypatch) -> None:
    import aaren_ts.nn

    path = _native.library_path()
    assert path.parent == Path(aaren_ts.nn.__file__).parent  # installed with the package, not a cache

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started while loading the fused step: {args}")

    monkeypatch.setattr(subprocess, "run", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    load_fused_step.cache_clear()
    try:
        assert load_fused_step() is not None
    finally:
        load_fused_step.cache_clear()


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


@pytest.fixture
def fresh_native(monkeypatch):
    """``load_fused_step`` not yet called and no fallback warning given yet in this process."""
    monkeypatch.delenv("AAREN_TS_NATIVE", raising=False)
    monkeypatch.setattr(_native, "_fallback_warned", set())
    load_fused_step.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    load_fused_step.cache_clear()  # later tests load the real build again


def _fallback_warnings(load_twice_and_step) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_twice_and_step()
    return [w for w in caught if issubclass(w.category, FusedStepFallbackWarning)]


def _two_loads_and_a_step() -> None:
    assert load_fused_step() is None
    load_fused_step.cache_clear()  # a second load in the same process
    assert load_fused_step() is None
    enc = AarenEncoder(8, 2, 1, 16).eval()
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        expected, _ = enc(x)
    stepped, _ = _stream(enc.step, x, enc.init_state(2))  # the PyTorch step: the same results
    assert _plan(enc).native is None
    torch.testing.assert_close(stepped, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("failure", ["not built", "not a library", "another version"])
def test_fallback_warns_once_per_process(fresh_native, failure: str, tmp_path) -> None:
    if failure == "not built":
        fresh_native.setattr(_native, "library_path", lambda module=None: None)
    elif failure == "not a library":
        bogus = tmp_path / "_fused_step.so"
        bogus.write_bytes(b"not a shared object")
        fresh_native.setattr(_native, "library_path", lambda module=None: bogus)
    else:
        libm = ctypes.util.find_library("m")
        if libm is None:
            pytest.skip("no C maths library to stand in for a library of another version")
        fresh_native.setattr(_native, "library_path", lambda module=None: Path(libm))
    caught = _fallback_warnings(_two_loads_and_a_step)
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert "same results" in message and "slower" in message
    expected = {"not built": "not built when aaren_ts was installed", "not a library": "does not load"}
    assert expected.get(failure, "another version") in message


def test_switching_the_fused_step_off_does_not_warn(fresh_native) -> None:
    fresh_native.setenv("AAREN_TS_NATIVE", "0")
    fresh_native.setattr(_native, "library_path", lambda module=None: None)  # would warn, were it consulted
    assert _fallback_warnings(_two_loads_and_a_step) == []


def test_many_streams_take_the_pytorch_step_with_the_same_result() -> None:
    """Above the fused kernel's batch limit the lean step runs PyTorch's matrix products: same outputs."""
    from aaren_ts.nn.encoder import _NATIVE_MAX_BATCH

    torch.manual_seed(1)
    enc = AarenEncoder(16, 4, 2, 32).eval()
    batch = _NATIVE_MAX_BATCH + 9
    x = torch.randn(batch, 20, 16)
    with torch.no_grad():
        expected, _ = enc(x)
    plan = _plan(enc)
    if plan.native is not None:  # the fused kernel would not be called at this batch size
        plan.native = None
        lean, _ = _stream(enc.step, x, enc.init_state(batch))
        enc.__dict__.pop("_step_plan")
    lean_default, _ = _stream(enc.step, x, enc.init_state(batch))
    torch.testing.assert_close(lean_default, expected, rtol=1e-5, atol=1e-5)
    if "lean" in locals():
        torch.testing.assert_close(lean_default, lean, rtol=0, atol=0)
