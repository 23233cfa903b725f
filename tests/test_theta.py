"""The Theta method's streams (aaren_ts.statistical.theta) against a float64 reference computed from
the formulas."""

from __future__ import annotations

import numpy as np
import pytest

from aaren_ts.statistical.theta import ALPHAS, ThetaStreams, fit_theta, is_seasonal, seasonal_component


def _reference(values: np.ndarray, alpha: float, season: np.ndarray, horizon: int) -> np.ndarray:
    """The Theta forecast after ``values`` (NaN: gaps) computed directly: the SES level as a weighted
    sum of the adjusted observations, the slope by least squares on their times, the drift formula."""
    sp = len(season)
    times = np.arange(len(values))
    adjusted = values - season[times % sp]
    seen = np.isfinite(adjusted)
    t, x = times[seen], adjusted[seen]
    n = len(x)
    weights = alpha * (1 - alpha) ** np.arange(n - 1, -1, -1.0)
    weights[0] = (1 - alpha) ** (n - 1)  # the first observation starts the level
    level = float(weights @ x)
    slope = float(np.polyfit(t, x, 1)[0]) if n >= 2 and np.ptp(t) > 0 else 0.0
    h = np.arange(1, horizon + 1)
    drift = slope / 2 * (h - 1 + (1 - (1 - alpha) ** n) / alpha)
    return level + drift + season[(len(values) + h - 1) % sp]


def test_streams_match_the_formulas_one_value_at_a_time_with_gaps():
    rng = np.random.default_rng(0)
    season = np.array([1.0, -0.5, 0.25, -0.75])
    series = [10 + 0.1 * np.arange(n) + season[np.arange(n) % 4] + rng.normal(size=n) for n in (5, 37, 120)]
    series[1][[3, 4, 20]] = np.nan
    alphas = np.array([0.2, 0.55, 0.9])
    streams = ThetaStreams.empty(alphas, np.tile(season, (3, 1)))
    for t in range(max(map(len, series))):
        rows = np.array([k for k, v in enumerate(series) if t < len(v)])
        streams.update(np.array([series[k][t] for k in rows]), rows)
    got = streams.forecast(6)
    for k, v in enumerate(series):
        np.testing.assert_allclose(got[k], _reference(v, alphas[k], season, 6), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(streams.clock, [5, 37, 120])
    np.testing.assert_array_equal(streams.count, [5, 34, 120])


def test_a_stream_is_the_same_whichever_rows_advance_beside_it():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(4, 30)).cumsum(axis=1)
    together = ThetaStreams.empty(np.full(4, 0.3), np.zeros((4, 1)))
    apart = ThetaStreams.empty(np.full(4, 0.3), np.zeros((4, 1)))
    for t in range(30):
        together.update(values[:, t])
        for row in rng.permutation(4):
            apart.update(values[row : row + 1, t], np.array([row]))
    np.testing.assert_array_equal(together.forecast(3), apart.forecast(3))


def test_forecasts_before_any_observation_are_nan_and_a_gap_changes_nothing_but_the_clock():
    streams = ThetaStreams.empty(np.array([0.5]), np.zeros((1, 1)))
    assert np.isnan(streams.forecast(2)).all()
    streams.update(np.array([3.0]))
    before = streams.take(np.array([0]))
    streams.update(np.array([np.nan]))
    assert streams.clock[0] == 2 and streams.count[0] == 1
    np.testing.assert_array_equal(streams.level, before.level)
    np.testing.assert_array_equal(streams.forecast(2), [[3.0, 3.0]])


def test_seasonality_test_and_component():
    rng = np.random.default_rng(2)
    pattern = np.array([2.0, -1.0, 0.5, -1.5])
    t = np.arange(80)
    seasonal = 0.05 * t + pattern[t % 4] + 0.2 * rng.normal(size=80)
    assert is_seasonal(seasonal, 4)
    assert not is_seasonal(rng.normal(size=80), 4)
    assert not is_seasonal(seasonal[:11], 4)  # fewer than three seasons
    assert not is_seasonal(seasonal, 1)
    np.testing.assert_allclose(seasonal_component(seasonal, 4), pattern - pattern.mean(), atol=0.15)
    np.testing.assert_array_equal(seasonal_component(rng.normal(size=80), 4), np.zeros(4))


def test_fit_theta_picks_the_smoothing_parameter_with_the_lowest_one_step_error():
    rng = np.random.default_rng(3)
    series = [rng.normal(size=60).cumsum(), rng.normal(size=40)]
    alpha, season = fit_theta(series, 1)
    for k, v in enumerate(series):
        sse = []
        for a in ALPHAS:
            stream = ThetaStreams.empty(np.array([a]), season[k : k + 1])
            total = 0.0
            for t, x in enumerate(v):
                if t >= 2:
                    total += (x - stream.forecast(1)[0, 0]) ** 2
                stream.update(np.array([x]))
            sse.append(total)
        assert alpha[k] == ALPHAS[int(np.argmin(sse))]
    assert alpha[0] > 0.8 > 0.3 > alpha[1]  # a random walk: little smoothing; white noise: much


def test_restoring_refuses_what_streams_cannot_hold():
    streams = ThetaStreams.empty(np.array([0.5, 0.5]), np.zeros((2, 4)))
    streams.update(np.array([1.0, 2.0]))
    arrays = {k: v.copy() for k, v in streams.arrays().items()}
    restored = ThetaStreams.from_arrays(arrays, 2, 4)
    np.testing.assert_array_equal(restored.forecast(3), streams.forecast(3))
    for name, value, message in [
        ("alpha", np.array([0.5, 1.5]), "smoothing parameters"),
        ("level", np.array([np.nan, 1.0]), "not finite"),
        ("count", np.array([2, 1]), "at most their clocks"),
        ("season", np.zeros((2, 3)), "shape"),
        ("clock", np.array([1.0, 1.0]), "integers"),
    ]:
        with pytest.raises(ValueError, match=message):
            ThetaStreams.from_arrays({**arrays, name: value}, 2, 4)
    with pytest.raises(ValueError, match="arrays"):
        ThetaStreams.from_arrays({k: v for k, v in arrays.items() if k != "m_tx"}, 2, 4)
