"""AarenForecaster with default parameters against the naive baselines a user checks first.

* a Gaussian random walk (nothing to learn): the streamed 24-step forecasts must be within 2 % of the
  last value's MSE;
* sktime's airline series: the 12-month forecast must beat the seasonal naive forecast clearly (half its
  MSE), for several seeds.

Also the pieces behind them: the untrained network is the last-value forecast, training epochs of a
short series have several optimizer steps, and a network without a clear validation gain falls back to
the last value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sktime.datasets import load_airline
from sktime.forecasting.naive import NaiveForecaster

from aaren_ts import AarenForecaster
from aaren_ts.estimators._forecast_data import MIN_TRAIN_ITEMS, SegmentDataset
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.forecast import ForecastNet

RW_FIT, RW_TEST, RW_HORIZON = 3000, 576, 24


def _random_walk(seed: int) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series(np.cumsum(rng.normal(size=RW_FIT + RW_TEST)))


def _random_walk_mse_ratio(seed: int) -> float:
    """MSE of the default forecaster over the test stretch, relative to the last value's.

    Fit on the first 3000 steps, then stream through the next 576 (``stream_forecasts``, the same
    computation as ``partial_update`` one observation at a time) and score the 24-step forecast from
    every origin whose future lies in the test stretch: the fit cutoff and each streamed observation.
    """
    y = _random_walk(seed)
    train, test = y[:RW_FIT], y[RW_FIT:]
    f = AarenForecaster(horizon=RW_HORIZON, device="cpu", random_state=seed).fit(train)
    first = f.predict(fh=range(1, RW_HORIZON + 1)).to_numpy()[None]
    forecasts = np.concatenate([first, f.stream_forecasts(test)[:, :, 0]])
    values = y.to_numpy()
    n_origins = RW_TEST - RW_HORIZON + 1
    futures = np.stack([values[RW_FIT + k : RW_FIT + k + RW_HORIZON] for k in range(n_origins)])
    last = values[RW_FIT - 1 : RW_FIT - 1 + n_origins, None]
    return float(((forecasts[:n_origins] - futures) ** 2).mean() / ((last - futures) ** 2).mean())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_random_walk_within_two_percent_of_last_value(seed):
    ratio = _random_walk_mse_ratio(seed)
    assert ratio <= 1.02, f"seed {seed}: {ratio:.3f} times the last value's MSE"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_airline_beats_seasonal_naive(seed):
    y = load_airline()
    train, test = y[:-12], y[-12:]
    fh = list(range(1, 13))
    pred = AarenForecaster(horizon=12, device="cpu", random_state=seed).fit(train).predict(fh=fh)
    naive = NaiveForecaster(strategy="last", sp=12).fit(train).predict(fh=fh)
    mse = float(((pred.to_numpy() - test.to_numpy()) ** 2).mean())
    naive_mse = float(((naive.to_numpy() - test.to_numpy()) ** 2).mean())
    assert np.isfinite(mse)
    # (clearly below: the naive fallback ties it to float rounding, which a bare ``<`` let pass)
    assert mse < 0.5 * naive_mse, f"seed {seed}: MSE {mse:.0f} vs seasonal naive {naive_mse:.0f}"


@pytest.mark.parametrize("local_norm", ["last", "mean", "standard", None])
@pytest.mark.parametrize("channel_independent", [True, False])
def test_untrained_network_is_the_last_value_forecast(local_norm, channel_independent):
    torch.manual_seed(0)
    encoder = EncoderConfig("aaren", 16, 2, 1, 32, 0.0)
    net = ForecastNet(3, 8, 5, encoder, channel_independent, local_norm).eval()
    x = torch.randn(2, 20, 3).cumsum(1) + 5.0
    with torch.no_grad():
        out = net(x).loc  # (B, N, T, C)
    torch.testing.assert_close(out, x[:, :, None, :].expand_as(out), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("local_norm", ["last", "mean", "standard"])
def test_untrained_network_from_the_level_forecasts_each_windows_level_until_reset(local_norm):
    """``initial_forecast="level"``: the untrained network repeats the level its local normalisation
    takes from each window (the last value, or the mean of the window's values); reset to the naive
    forecast, it is the seasonal naive forecast."""
    torch.manual_seed(0)
    encoder = EncoderConfig("aaren", 16, 2, 1, 32, 0.0)
    net = ForecastNet(2, 8, 6, encoder, True, local_norm, sp=3, initial_forecast="level").eval()
    x = torch.randn(2, 20, 2).cumsum(1) + 5.0
    with torch.no_grad():
        out = net(x).loc  # (B, N, T, C)
        if local_norm == "last":
            level = x
        else:  # the window of every step (the first steps' windows repeat the first value before it)
            padded = torch.cat([x[:, :1].expand(-1, 7, -1), x], dim=1)
            level = padded.unfold(1, 8, 1).mean(-1)
        torch.testing.assert_close(out, level[:, :, None, :].expand_as(out), rtol=1e-5, atol=1e-4)
        net.reset_to_naive()
        out = net(x).loc
    for t in range(6):  # after step n, step n + t + 1 repeats the value of step n - 2 + t % 3
        torch.testing.assert_close(out[:, 3:, t], x[:, 1 + t % 3 : 18 + t % 3], rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="initial_forecast"):
        ForecastNet(2, 8, 6, encoder, True, local_norm, initial_forecast="mean")


def test_short_series_epoch_has_several_crops_long_series_one_per_stretch():
    gen = torch.Generator().manual_seed(0)
    short = SegmentDataset(np.zeros((105, 1)), 192, 12, generator=gen)
    assert len(short) == MIN_TRAIN_ITEMS  # airline's training part: one stretch, cropped repeatedly
    assert len(SegmentDataset(np.zeros((105, 1)), 192, 12)) == 1  # validation: fixed segments
    long = SegmentDataset(np.zeros((8640, 7)), 192, 96, generator=gen)  # ETTh1's training part
    assert len(long) == (8640 - 192 - 96) // 192 + 1 > MIN_TRAIN_ITEMS
    x, target = short[MIN_TRAIN_ITEMS - 1]
    assert x.shape == (104, 1) and target.shape == (104, 12, 1)


def test_network_without_a_validation_gain_falls_back_to_last_value():
    # a random walk has nothing to learn: the trained network fits noise, does not beat the last value
    # by the margin on the validation tail, and is reset to the last-value forecast
    y = _random_walk(3)
    f = AarenForecaster(horizon=4, context_length=8, max_epochs=1, device="cpu", random_state=0).fit(y[:400])
    pred = f.predict(fh=[1, 2, 3, 4]).to_numpy()
    np.testing.assert_allclose(pred, np.full(4, y.iloc[399]), rtol=1e-5)
