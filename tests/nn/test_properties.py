"""Property tests: the scan operator is associative with an identity, and chunking never matters."""

from __future__ import annotations

import itertools

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aaren_ts.nn.functional import AarenState, aaren_attention, aaren_combine

from .reference import attention_reference, relative_error

scores = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False, width=32)


def _token_states(values: list[float], dim: int = 2) -> list[AarenState]:
    """One state per token: ``(s_i, 1, v_i)`` with ``v_i`` derived from the score for determinism."""
    out = []
    for i, s in enumerate(values):
        v = torch.tensor([[float(i % 5) - 2.0, 0.5 * ((i * 7) % 3)]], dtype=torch.float64)[:, :dim]
        out.append(AarenState(torch.tensor([s], dtype=torch.float64), torch.ones(1, dtype=torch.float64), v))
    return out


def _close(x: AarenState, y: AarenState) -> None:
    torch.testing.assert_close(x.output(), y.output(), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(x.log_normaliser(), y.log_normaliser(), rtol=1e-12, atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(scores, min_size=3, max_size=3))
def test_combine_is_associative(values: list[float]) -> None:
    a, b, c = _token_states(values)
    _close(aaren_combine(aaren_combine(a, b), c), aaren_combine(a, aaren_combine(b, c)))


@settings(max_examples=100, deadline=None)
@given(scores)
def test_initial_state_is_identity(value: float) -> None:
    (a,) = _token_states([value])
    empty = AarenState.initial((1,), 2)
    _close(aaren_combine(empty, a), a)
    _close(aaren_combine(a, empty), a)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(scores, min_size=1, max_size=80),
    st.lists(st.integers(min_value=1, max_value=80), min_size=1, max_size=6),
    st.integers(min_value=2, max_value=17),
)
def test_chunk_splitting_invariance(values: list[float], cuts: list[int], chunk: int) -> None:
    n = len(values)
    s = torch.tensor(values, dtype=torch.float32).unsqueeze(0)
    v = torch.linspace(-1, 1, n * 3).reshape(1, n, 3)
    expected = attention_reference(s, v)
    bounds = sorted({0, n, *(c % n for c in cuts)})
    state, outs = None, []
    for lo, hi in itertools.pairwise(bounds):
        o, state = aaren_attention(s[:, lo:hi], v[:, lo:hi], state=state, return_state=True, chunk=chunk)
        outs.append(o)
    assert relative_error(torch.cat(outs, dim=1), expected) < 1e-5
