"""Per-series fallback: a series where the network does not beat the naive forecast on its held-out tail
forecasts with the naive method (weighed with the network's where the panel shows that the network
learns), the others keep the network; exact in every path that streams."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster

SETTINGS = {
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 32,
    "context_length": 12,
    "horizon": 6,
    "sp": 1,
    "max_epochs": 8,
    "device": "cpu",
    "random_state": 0,
}
ATOL = 1e-5


def _panel(n: int = 240) -> pd.DataFrame:
    """Three series: two strongly seasonal (the network learns them), one random walk (nothing to learn,
    the last value is the best forecast)."""
    rng = np.random.default_rng(0)
    t = np.arange(n)
    series = {
        "season_a": 20 + 5 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.2, n),
        "walk": 20 + np.cumsum(rng.normal(0, 1.0, n)),
        "season_b": 40 + 8 * np.cos(2 * np.pi * t / 12) + rng.normal(0, 0.2, n),
    }
    frames = {k: pd.DataFrame({"y": v}, index=pd.RangeIndex(n)) for k, v in series.items()}
    return pd.concat(frames, names=["series", "time"])


@pytest.fixture(scope="module")
def fitted() -> tuple[AarenForecaster, pd.DataFrame]:
    y = _panel()
    train = y[y.index.get_level_values(1) < 200]
    return AarenForecaster(**SETTINGS).fit(train), y


def test_the_random_walk_falls_back_and_the_seasonal_series_keep_the_network(fitted):
    forecaster, y = fitted
    share = forecaster.engine_.naive[:, 0]
    # the panel learns, so the walk weighs the two forecasts by their tail errors: mostly the naive one
    assert share[0] == share[2] == 0.0 and 0.5 < share[1] < 1.0
    # every series' spread factor is chosen on its tail, around the forecast it uses
    spread = forecaster.engine_.spread[:, 0]
    assert ((spread >= 0.05) & (spread <= 20.0)).all() and len(set(spread.tolist())) == 3
    # the walk's intervals are the naive method's own: its one-step error spread growing as sqrt(k)
    naive_std = forecaster.engine_.naive_std[:, 0]
    assert naive_std[1] > 0 and naive_std[0] == naive_std[2] == 0
    walk = y.xs("walk", level=0)["y"].to_numpy()[:160]  # (the training part: the tail is held out)
    np.testing.assert_allclose(
        naive_std[1] * forecaster.engine_.scale[1, 0], np.sqrt(np.mean(np.diff(walk) ** 2))
    )
    params = forecaster.engine_.predict_params()[:, :, 0, 0]  # the Gaussians' std, in the series' units
    np.testing.assert_allclose(params[1], params[1, 0] * np.sqrt(np.arange(1, 7)), rtol=1e-5)
    # the network's spread is capped at the naive method's (sp = 1: growing as sqrt(t)) before the
    # factor, except where the point forecast is the naive one (the choice of intervals is then free)
    engine = forecaster.engine_
    assert engine.max_std[1, 0] == 0 and (engine.max_std[[0, 2], 0] > 0).all()
    cap = engine.spread[:, 0] * engine.max_std[:, 0] * engine.scale[:, 0]
    assert (params[[0, 2]] <= cap[[0, 2], None] * np.sqrt(np.arange(1, 7)) * (1 + 1e-5)).all()
    pred = forecaster.predict(fh=range(1, 7))
    # the walk's point forecast: its share of the last value, the rest the network's forecast
    module, row = forecaster.net_.module_, 1
    walk = y.xs("walk", level=0)[["y"]].to_numpy()[:200]
    x = torch.as_tensor((walk - engine.mean[row]) / engine.scale[row], dtype=torch.float32)[None]
    with torch.no_grad():
        network = module(x, last_only=True).loc[0, 0, :, 0].double().numpy()
    network = network * engine.scale[row, 0] + engine.mean[row, 0]
    blend = share[1] * walk[-1, 0] + (1 - share[1]) * network
    np.testing.assert_allclose(engine.predict(combined=False)[row, :, 0], blend, rtol=1e-5)
    snaive = y.xs("season_a", level=0)["y"].iloc[199]
    assert not np.allclose(pred.xs("season_a", level=0)["y"].to_numpy(), snaive)


def test_streaming_with_fallback_is_exact_and_survives_save_and_load(fitted, tmp_path):
    forecaster, y = fitted
    new = y[y.index.get_level_values(1) >= 200]
    whole = AarenForecaster.load(_saved(forecaster, tmp_path / "a.zip"))
    assert whole.engine_.naive.tolist() == forecaster.engine_.naive.tolist()
    np.testing.assert_array_equal(whole.engine_.spread, forecaster.engine_.spread)
    np.testing.assert_array_equal(whole.engine_.max_std, forecaster.engine_.max_std)
    whole.partial_update(new)
    chunked = AarenForecaster.load(tmp_path / "a.zip")
    times = new.index.get_level_values(1)
    for lo, hi in ((200, 201), (201, 213), (213, 240)):
        chunked.partial_update(new[(times >= lo) & (times < hi)])
    a, b = whole.predict(fh=range(1, 7)), chunked.predict(fh=range(1, 7))
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=ATOL)
    intervals = [g.predict_interval(fh=range(1, 7), coverage=0.9).to_numpy() for g in (whole, chunked)]
    np.testing.assert_allclose(*intervals, rtol=ATOL)


@pytest.mark.slow
def test_onnx_streamer_follows_the_fallback(fitted, tmp_path):
    pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
    pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript, the exporter) is not installed')
    from aaren_ts.onnx import OnnxStreamer

    forecaster, y = fitted
    copy = AarenForecaster.load(_saved(forecaster, tmp_path / "b.zip"))
    streamer = OnnxStreamer(copy.to_onnx(tmp_path / "model.onnx"))
    new = y[y.index.get_level_values(1) >= 200]
    values = np.stack([g["y"].to_numpy() for _, g in new.groupby(level=0, sort=False)])[:, :, None]
    copy.partial_update(new)
    streamer.partial_update(values)
    np.testing.assert_allclose(streamer.predict(), copy.engine_.predict(), rtol=ATOL, atol=ATOL)
    lower, upper = streamer.predict_interval(coverage=0.9)
    bounds = copy.engine_.predict_quantiles([0.05, 0.95])
    np.testing.assert_allclose(lower, bounds[..., 0], rtol=ATOL, atol=ATOL)
    np.testing.assert_allclose(upper, bounds[..., 1], rtol=ATOL, atol=ATOL)


def _saved(forecaster: AarenForecaster, path) -> object:
    forecaster.save(path)
    return path
