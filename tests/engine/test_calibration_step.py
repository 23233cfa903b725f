"""The C step of the online interval calibration (``engine/_aci_step.c``) against its PyTorch path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts.engine import calibration as calibration_module
from aaren_ts.engine._native import load_aci_step
from aaren_ts.engine.calibration import Calibration
from aaren_ts.nn.heads import NormalHead

HEAD = NormalHead(1, 1, 1)

pytestmark = pytest.mark.skipif(
    load_aci_step() is None,
    reason="the C calibration step was not built (reinstall aaren_ts where a C compiler is available)",
)

ROWS, HORIZON, CHANNELS, RATE = 200, 7, 3, 0.05


def _random_state(rng: np.random.Generator) -> Calibration:
    """Levels off their nominal values, full rings, and streams at every stage of their first horizon."""
    state = Calibration.fresh(ROWS, HORIZON, CHANNELS, "cpu")
    state.levels += torch.as_tensor(rng.uniform(-0.01, 0.01, state.levels.shape), dtype=torch.float32)
    state.issued[..., 0].copy_(torch.as_tensor(rng.normal(size=state.issued.shape[:-1])))
    state.issued[..., 1].copy_(torch.as_tensor(rng.uniform(0.5, 1.5, size=state.issued.shape[:-1])))
    n_issued = rng.integers(HORIZON, 5 * HORIZON, ROWS)
    n_issued[: HORIZON + 1] = np.arange(HORIZON + 1)  # streams that have issued fewer than a horizon
    state.n_issued = torch.as_tensor(n_issued)
    return state


def _copy(state: Calibration) -> Calibration:
    return Calibration(*(t.clone() for t in state.tensors()))


def _advance(state: Calibration, inputs, rate: float, streams: torch.Tensor | None = None) -> None:
    """One observation for the rows ``inputs[3]`` marks as advanced, through ``Calibration.advance``."""
    y, loc, scale, advanced, known = inputs
    params = scale[:, None, ..., None]
    state.advance(y[:, None], loc[:, None], params, advanced.long(), rate, HEAD, known, streams)


def _step_inputs(rng: np.random.Generator, with_known: bool):
    y = torch.as_tensor(rng.normal(size=(ROWS, CHANNELS)) * 1.5, dtype=torch.float32)
    y[torch.as_tensor(rng.random(y.shape) < 0.1)] = float("nan")  # missing observations
    y[3, 0], y[4, 1] = float("inf"), -float("inf")
    loc = torch.as_tensor(rng.normal(size=(ROWS, HORIZON, CHANNELS)), dtype=torch.float32)
    scale = torch.as_tensor(rng.uniform(0.5, 1.5, size=(ROWS, HORIZON, CHANNELS)), dtype=torch.float32)
    advanced = torch.as_tensor(rng.random(ROWS) < 0.8)
    known = None
    if with_known:
        known = torch.as_tensor(rng.normal(size=(ROWS, 1, HORIZON, CHANNELS)) * 0.3, dtype=torch.float32)
    return y, loc, scale, advanced, known


@pytest.mark.parametrize("with_known", [False, True], ids=["no covariates", "known covariate effect"])
def test_c_step_equals_the_pytorch_step(with_known, monkeypatch):
    rng = np.random.default_rng(0)
    native = _random_state(rng)
    reference = _copy(native)
    assert calibration_module._aci_kernel(native, native.levels, HEAD) is not None  # the C step is used
    decisions = 0
    for _ in range(60):
        inputs = _step_inputs(rng, with_known)
        _advance(native, inputs, RATE)
        with monkeypatch.context() as patch:
            patch.setattr(calibration_module, "_aci_kernel", lambda *args: None)
            _advance(reference, inputs, RATE)
        decisions += int(inputs[3].sum()) * native.levels[0].numel()
        torch.testing.assert_close(native.issued, reference.issued, rtol=0, atol=0)
        torch.testing.assert_close(native.n_issued, reference.n_issued, rtol=0, atol=0)
    # the levels agree to rounding; where a p-value lands within ~1e-6 of a level the two erfc can
    # decide differently, and that level then differs by one rate step: rare, and never more
    gap = (native.levels - reference.levels).abs()
    flipped = gap > 1e-5
    assert int(flipped.sum()) <= max(1, decisions // 100_000), int(flipped.sum())
    assert float(gap.max()) <= RATE * 1.001
    assert float(gap[~flipped].max()) <= 1e-6
    assert not torch.equal(native.levels, _random_state(np.random.default_rng(0)).levels)  # they moved


def test_c_step_without_a_rate_only_files_the_forecasts(monkeypatch):
    rng = np.random.default_rng(1)
    native = _random_state(rng)
    reference, before = _copy(native), native.levels.clone()
    inputs = _step_inputs(rng, with_known=False)
    inputs = (*inputs[:4], None)
    _advance(native, inputs, 0.0)
    monkeypatch.setattr(calibration_module, "_aci_kernel", lambda *args: None)
    _advance(reference, inputs, 0.0)
    assert torch.equal(native.levels, before)
    for a, b in zip(native.tensors(), reference.tensors(), strict=True):
        assert torch.equal(a, b)


def test_any_chunking_moves_the_levels_bit_for_bit_alike():
    rng = np.random.default_rng(2)
    rows, n = 50, 40
    y = torch.as_tensor(rng.normal(size=(rows, n, CHANNELS)) * 1.5, dtype=torch.float32)
    y[torch.as_tensor(rng.random(y.shape) < 0.1)] = float("nan")
    loc = torch.as_tensor(rng.normal(size=(rows, n, HORIZON, CHANNELS)), dtype=torch.float32)
    scale = torch.as_tensor(rng.uniform(0.5, 1.5, size=(rows, n, HORIZON, CHANNELS)), dtype=torch.float32)
    lengths = torch.as_tensor(rng.integers(0, n + 1, rows))  # ragged: each stream's own number of steps
    whole = Calibration.fresh(rows, HORIZON, CHANNELS, "cpu")
    whole.advance(y, loc, scale[..., None], lengths, RATE, HEAD)
    pieces = Calibration.fresh(rows, HORIZON, CHANNELS, "cpu")
    for start, stop in [(0, 1), (1, 9), (9, 10), (10, 33), (33, n)]:
        part = (lengths - start).clamp(0, stop - start)
        chunk = (y[:, start:stop], loc[:, start:stop], scale[:, start:stop, ..., None])
        pieces.advance(*chunk, part, RATE, HEAD)
    for a, b in zip(whole.tensors(), pieces.tensors(), strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(whole.levels, Calibration.fresh(rows, HORIZON, CHANNELS, "cpu").levels)


def test_a_subset_of_streams_moves_in_place_as_if_taken_apart(monkeypatch):
    rng = np.random.default_rng(3)
    in_place = _random_state(rng)
    apart, with_pytorch, before = _copy(in_place), _copy(in_place), _copy(in_place)
    streams = torch.as_tensor(rng.permutation(ROWS)[: ROWS // 2])  # any distinct streams, any order
    rest = torch.as_tensor(np.setdiff1d(np.arange(ROWS), streams.numpy()))
    for _ in range(20):
        y, loc, scale, advanced, known = _step_inputs(rng, with_known=True)
        inputs = (
            y[: len(streams)],
            loc[: len(streams)],
            scale[: len(streams)],
            advanced[: len(streams)],
            known[: len(streams)],
        )
        _advance(in_place, inputs, RATE, streams)
        part = apart.take(streams)
        _advance(part, inputs, RATE)
        apart.put(streams, part)
        with monkeypatch.context() as patch:
            patch.setattr(calibration_module, "_aci_kernel", lambda *args: None)
            _advance(with_pytorch, inputs, RATE, streams)
    for a, b, c, untouched in zip(
        in_place.tensors(), apart.tensors(), with_pytorch.tensors(), before.tensors(), strict=True
    ):
        assert torch.equal(a, b)  # the same C step: exactly the same
        assert torch.equal(a[rest], untouched[rest])  # the other streams are left as they were
        torch.testing.assert_close(a.double(), c.double(), rtol=0, atol=1e-6)  # the PyTorch path, to rounding
    assert not torch.equal(in_place.levels[streams], before.levels[streams])
