"""The exported step of a forecaster whose positive series are forecast on the log scale
(``target_transform``): the torch-free streamer takes the same logarithms and maps its outputs back,
as the estimator does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed')

from aaren_ts import AarenForecaster
from aaren_ts.onnx import OnnxStreamer

TINY = {
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 2,
    "d_ff": 32,
    "context_length": 12,
    "max_epochs": 2,
    "horizon": 6,
    "sp": 12,
    "device": "cpu",
    "random_state": 0,
    "target_transform": "auto",
}
RTOL = 1e-5  # relative: on the log scale, float32 rounding is relative in the series' units
ATOL = 1e-5  # absolute, for the signed series (unit variance) where a quantile passes near zero
QUANTILES = [0.05, 0.5, 0.95]


@pytest.fixture(autouse=True)
def _network_kept(monkeypatch):
    """Every series keeps the network (two epochs beat the naive forecast nowhere, and "auto" would then
    move every series to its own scale): these tests stream the log scale, not the verdict."""
    from aaren_ts.nn.forecast_training import HeldOutErrors

    monkeypatch.setattr(HeldOutErrors, "falls_back", lambda self: np.zeros(self.error.shape, dtype=bool))


def _positive(n: int, level: float, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n)
    return level * (1.5 + np.sin(2 * np.pi * t / 12)) * np.exp(rng.normal(0, 0.1, n).cumsum() * 0.1)


def _panel(n: int = 120) -> tuple[pd.DataFrame, np.ndarray]:
    """Three series, the middle one crossing zero (kept on its own scale), and 300 more steps of each."""
    rng = np.random.default_rng(0)
    values = np.stack(
        [_positive(n + 300, 40.0, rng), rng.normal(0, 1, n + 300), _positive(n + 300, 3.0, rng)]
    )
    frames = {f"s{k}": pd.DataFrame({"y": v[:n]}, index=pd.RangeIndex(n)) for k, v in enumerate(values)}
    return pd.concat(frames, names=["series", "time"]), values[:, n:, None]


@pytest.mark.parametrize("calibration", ["aci", None])
@pytest.mark.slow
def test_a_panel_on_the_log_scale_streams_as_the_estimator(calibration, tmp_path):
    y, future = _panel()
    est = AarenForecaster(**TINY, interval_calibration=calibration).fit(y)
    assert est.log_target_["y"].tolist() == [True, False, True]
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "log.onnx"))
    assert streamer.spec.log_target == [[True], [False], [True]]
    np.testing.assert_allclose(streamer.predict(), est.predict_array(), rtol=1e-9)
    for t in range(future.shape[1]):
        est.partial_update_array(future[:, t])
        streamer.partial_update(future[:, t])
        if t % 50 == 49:
            np.testing.assert_allclose(streamer.predict(), est.predict_array(), rtol=RTOL)
            np.testing.assert_allclose(
                streamer.predict_quantiles(QUANTILES),
                est.predict_quantiles_array(QUANTILES),
                rtol=RTOL,
                atol=ATOL,
            )
    fh = np.arange(1, TINY["horizon"] + 1)
    var = est.predict_var(fh=fh)["y"].to_numpy().reshape(3, -1)
    np.testing.assert_allclose(streamer.predict_var()[..., 0], var, rtol=RTOL)
    assert (streamer.predict()[[0, 2]] > 0).all()


def test_the_streamer_refuses_a_non_positive_value_in_a_log_channel(tmp_path):
    y, _ = _panel()
    one_network = AarenForecaster(**TINY, n_estimators=1)  # the refusal is the streamer's, whatever the model
    streamer = OnnxStreamer(one_network.fit(y).to_onnx(tmp_path / "log.onnx"))
    before = streamer.predict()
    with pytest.raises(ValueError, match=r"series 's2'.*channel 0, holds 0.*log scale.*observed values only"):
        streamer.partial_update(np.array([[1.0], [-5.0], [0.0]]))
    np.testing.assert_array_equal(streamer.predict(), before)
    streamer.partial_update(np.array([[1.0], [-5.0], [2.0]]))  # the signed series takes any value
    assert streamer.n_seen == 1
