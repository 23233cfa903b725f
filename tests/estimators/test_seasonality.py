"""Detection of the seasonal period (``sp="auto"``) from the training series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from aaren_ts.estimators._seasonality import detect_sp

RNG = np.random.default_rng(0)


def _seasonal(n: int, period: int, noise: float = 0.3, trend: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 10 + trend * t + 3 * np.sin(2 * np.pi * t / period) + rng.normal(0, noise, n)


@pytest.mark.parametrize("period", [4, 7, 12, 24])
def test_a_cycle_is_found_with_or_without_trend(period):
    assert detect_sp([_seasonal(20 * period, period)], max_sp=96) == period
    assert detect_sp([_seasonal(20 * period, period, trend=0.5)], max_sp=96) == period


def test_the_daily_cycle_of_hourly_data_beats_the_weekly_one():
    t = np.arange(24 * 7 * 8)
    hourly = 3 * np.sin(2 * np.pi * t / 24) + 1.5 * np.sin(2 * np.pi * t / 168) + RNG.normal(0, 0.3, len(t))
    assert detect_sp([hourly], max_sp=168) == 24


@pytest.mark.parametrize("n", [30, 100, 1000])
def test_random_walks_and_noise_have_no_period(n):
    for seed in range(5):
        rng = np.random.default_rng(seed)
        assert detect_sp([np.cumsum(rng.normal(size=n))], max_sp=96) == 1
        assert detect_sp([rng.normal(size=n)], max_sp=96) == 1


def test_a_panel_pools_its_series_and_channels_and_skips_gaps():
    short = [_seasonal(n, 4, noise=0.5, seed=k) for k, n in enumerate([14, 20, 30, 40, 60])]
    assert detect_sp(short, max_sp=12) == 4  # each series alone is too short to be sure
    two_channels = np.stack([_seasonal(240, 12), np.cumsum(RNG.normal(size=240))], axis=1)
    two_channels[::17, 0] = np.nan
    assert detect_sp([two_channels], max_sp=48) == 12


def test_too_little_data_or_a_constant_series_gives_one():
    assert detect_sp([np.arange(5.0)], max_sp=4) == 1
    assert detect_sp([np.full(100, 3.0)], max_sp=24) == 1
    assert detect_sp([], max_sp=24) == 1


def test_the_period_never_exceeds_max_sp():
    assert detect_sp([_seasonal(400, 24)], max_sp=12) != 24


def test_the_forecaster_detects_and_keeps_sp():
    y = pd.Series(_seasonal(240, 12))
    settings = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 1, "device": "cpu"}
    f = AarenForecaster(horizon=6, context_length=24, random_state=0, **settings).fit(y)
    assert f.sp_ == 12 and f.get_params()["sp"] == "auto"
    assert AarenForecaster(horizon=6, sp=3, context_length=24, **settings).fit(y).sp_ == 3
    with pytest.raises(ValueError, match="sp"):
        AarenForecaster(horizon=6, sp="weekly", **settings).fit(y)
