"""A forecast distribution added from outside the library: a Student-t head, defined in this file alone.

It is registered, chosen by the forecaster's ``distribution`` parameter, trained by its own negative
log-likelihood, streamed, calibrated online, saved and loaded, and exported to ONNX, where the
torch-free streamer serves its intervals, all through the head interface of ``aaren_ts.nn.heads``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from torch.nn.functional import softplus

from aaren_ts import AarenForecaster
from aaren_ts.nn.heads import DIRECT_GAIN, DistributionHead, register_head
from tests._params import TINY_NETWORK


@register_head
class StudentTHead(DistributionHead):
    """Student's t around the point forecast: a scale (in the window's standard deviations) and
    degrees of freedom (at least 3), learnt by maximum likelihood."""

    name = "student_t"
    n_params = 2
    scaled = (True, False)

    def __init__(self, d_model: int, horizon: int, c_in: int) -> None:
        super().__init__(d_model, horizon, c_in)
        self.linear = nn.Linear(d_model, 2 * horizon * c_in)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, h: torch.Tensor, window_std: torch.Tensor) -> torch.Tensor:
        raw = (self.linear(h) * DIRECT_GAIN).unflatten(-1, (2, self.c_in, self.horizon))
        scale = softplus(raw[..., 0, :, :] + 0.5413) * window_std + 0.01
        df = 3.0 + softplus(raw[..., 1, :, :] + 1.5)
        return torch.stack([scale, df], dim=-1)

    def loss(self, loc: torch.Tensor, params: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        scale, df = params[..., 0], params[..., 1]
        z = (target - loc) / scale
        return (
            torch.lgamma(df / 2)
            - torch.lgamma((df + 1) / 2)
            + 0.5 * torch.log(df * math.pi)
            + scale.log()
            + 0.5 * (df + 1) * torch.log1p(z * z / df)
        )

    @staticmethod
    def _t_of_z(z: torch.Tensor, df: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The t quantile at the normal score ``z`` (Fisher's expansion) and its derivative in ``z``."""
        z2 = z * z
        t = z + z * (z2 + 1) / (4 * df) + z * (5 * z2 * z2 + 16 * z2 + 3) / (96 * df**2)
        t = t + z * (3 * z2**3 + 19 * z2 * z2 + 17 * z2 - 15) / (384 * df**3)
        dt = 1 + (3 * z2 + 1) / (4 * df) + (25 * z2 * z2 + 48 * z2 + 3) / (96 * df**2)
        dt = dt + (21 * z2**3 + 95 * z2 * z2 + 51 * z2 - 15) / (384 * df**3)
        return t, dt

    def quantile(self, loc: torch.Tensor, params: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        t, _ = self._t_of_z(z.to(loc.dtype), params[..., 1])
        return loc + t * params[..., 0]

    def p_value(self, loc: torch.Tensor, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        t = ((y - loc) / params[..., 0]).abs()
        z = t
        for _ in range(6):  # Newton's method on the expansion: the normal score whose quantile is y
            value, slope = self._t_of_z(z, params[..., 1])
            z = (z - (value - t) / slope).clamp_min(0.0)
        return torch.erfc(z / math.sqrt(2.0))


TINY = {
    **TINY_NETWORK,
    "context_length": 8,
    "max_epochs": 4,
    "horizon": 4,
    "distribution": "student_t",
    "interval_calibration": 0.02,
}


def _heavy_tailed(n: int, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return pd.Series(20 + 3 * np.sin(2 * np.pi * t / 12) + rng.standard_t(3, n), name="y")


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    return AarenForecaster(**TINY).fit(_heavy_tailed(400)[:300])


def test_the_head_trains_and_its_quantiles_are_its_own(fitted) -> None:
    head = fitted.net_.module_.distribution_head
    assert isinstance(head, StudentTHead)
    assert head.linear.weight.abs().sum() > 0  # learnt from its likelihood
    q = fitted.predict_quantiles(fh=[1, 2], alpha=[0.025, 0.25, 0.5, 0.75, 0.975]).to_numpy()
    assert np.all(np.diff(q, axis=1) > 0)
    np.testing.assert_allclose(q[:, 2], np.ravel(fitted.predict(fh=[1, 2]).to_numpy()))
    assert np.all(fitted.predict_var(fh=[1, 2]).to_numpy() > 0)


def test_its_p_value_inverts_its_quantile_function() -> None:
    head = StudentTHead(4, 1, 1)
    loc, params = (
        torch.zeros(5, 1, 1),
        torch.tensor([[1.0, 3.5], [2.0, 5.0], [0.5, 10.0], [1.0, 30.0], [3.0, 4.0]]),
    )
    params = params[:, None, None, :]
    for z in (0.2, 1.0, 1.96, 2.6):
        y = head.quantile(loc, params, torch.tensor(z))
        expected = torch.full_like(loc, math.erfc(z / math.sqrt(2.0)))
        torch.testing.assert_close(head.p_value(loc, params, y), expected, rtol=1e-4, atol=1e-6)


def test_it_streams_exactly_and_calibrates_online() -> None:
    y = _heavy_tailed(400)
    chunked = AarenForecaster(**TINY).fit(y[:300])
    one_call = AarenForecaster(**TINY).fit(y[:300])
    before = one_call.predict_interval(fh=[1, 2], coverage=0.9).to_numpy()
    one_call.partial_update(y[300:])
    for start, stop in [(300, 301), (301, 350), (350, 400)]:
        chunked.partial_update(y[start:stop])
    np.testing.assert_allclose(
        chunked.predict_interval(fh=[1, 2], coverage=0.9).to_numpy(),
        one_call.predict_interval(fh=[1, 2], coverage=0.9).to_numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    assert not np.allclose(before, one_call.predict_interval(fh=[1, 2], coverage=0.9).to_numpy())


def test_it_saves_and_loads(fitted, tmp_path) -> None:
    loaded = AarenForecaster.load(fitted.save(tmp_path / "student"))
    pd.testing.assert_frame_equal(
        loaded.predict_interval(fh=[1, 2, 3], coverage=0.8),
        fitted.predict_interval(fh=[1, 2, 3], coverage=0.8),
    )


@pytest.mark.slow
def test_it_exports_and_the_streamer_serves_its_intervals(fitted, tmp_path) -> None:
    pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
    pytest.importorskip(
        "onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed'
    )
    from aaren_ts.onnx import OnnxStreamer

    f = AarenForecaster(**TINY).fit(_heavy_tailed(400)[:300])
    streamer = OnnxStreamer(f.to_onnx(tmp_path / "student.onnx"))
    assert streamer.spec.distribution == "student_t"
    future = _heavy_tailed(400, seed=1).to_numpy()[300:340]
    alpha = [0.05, 0.2, 0.5, 0.8, 0.95]
    for value in future:
        f.partial_update_array(np.array([[value]]))
        streamer.partial_update(np.array([[value]]))
    scale = f.scale_[0]
    np.testing.assert_allclose(streamer.predict() / scale, f.predict_array()[0] / scale, atol=1e-5)
    np.testing.assert_allclose(
        streamer.predict_quantiles(alpha) / scale, f.predict_quantiles_array(alpha)[0] / scale, atol=1e-5
    )
