"""The RLinear peer of ``benchmarks/ltsf_linear_peer.py``: its instance normalisation and its training."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import ltsf_linear_peer  # noqa: E402


def test_rlinear_that_repeats_the_last_value_gives_it_back_whatever_its_affine_map() -> None:
    model = ltsf_linear_peer.RLinear(n_channels=2, input_length=8, horizon=3)
    with torch.no_grad():
        model.linear.weight.zero_()
        model.linear.weight[:, -1] = 1.0  # every step repeats the normalised last value
        model.linear.bias.zero_()
        model.scale.copy_(torch.tensor([2.0, 0.5]))  # the affine map is undone on the way out
        model.shift.copy_(torch.tensor([0.3, -1.0]))
    x = torch.randn(4, 8, 2) * 5 + 3
    out = model(x)
    assert out.shape == (4, 3, 2)
    torch.testing.assert_close(out, x[:, -1:, :].expand(-1, 3, -1), rtol=1e-5, atol=1e-4)


def test_fit_rlinear_learns_a_cycle_that_the_window_mean_misses() -> None:
    steps = np.arange(700)
    series = np.stack([np.sin(2 * np.pi * steps / 24), 2 + np.cos(2 * np.pi * steps / 12)], axis=1)
    series = series.astype(np.float32)
    model = ltsf_linear_peer.fit_rlinear(series[:500], series[404:600], horizon=12, seed=0)
    histories, targets = ltsf_linear_peer.sliding_windows(series[500:], 96, 12)
    error = ltsf_linear_peer._mse(ltsf_linear_peer._predict(model, histories), targets)
    window_mean = ltsf_linear_peer._mse(histories.mean(axis=1, keepdims=True), targets)
    assert error < 0.01 * window_mean
