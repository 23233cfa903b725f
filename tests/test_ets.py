"""Damped-trend exponential smoothing as streams (aaren_ts.statistical.ets): the recursion, the fit,
the checks."""

from __future__ import annotations

import numpy as np
import pytest

from aaren_ts.statistical.ets import MAX_FORECASTS, PARAMETER_GRID, ETSStreams, fit_ets
from aaren_ts.statistical.partner import PartnerStreams
from aaren_ts.statistical.theta import ThetaStreams


def _reference_run(x: np.ndarray, params, level: float, trend: float, season: np.ndarray, horizon: int):
    """Sum of squared one-step errors and the forecasts after ``x``, one scalar step at a time (float64)."""
    alpha, beta, gamma, phi = params
    season = list(season)
    sp, sse = len(season), 0.0
    for t, value in enumerate(x):
        forecast = level + phi * trend + season[t % sp]
        error = 0.0 if np.isnan(value) else value - forecast
        sse += error * error
        level, trend = level + phi * trend + alpha * error, phi * trend + beta * error
        season[t % sp] += gamma * error
    ahead = [
        level + sum(phi**j for j in range(1, h + 1)) * trend + season[(len(x) + h - 1) % sp]
        for h in range(1, horizon + 1)
    ]
    return sse, np.array(ahead)


def _series(n: int, length: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    out = []
    for _ in range(n):
        pattern = rng.normal(size=4)
        x = (
            3.0
            + rng.uniform(-0.1, 0.1) * t
            + (pattern - pattern.mean())[t % 4]
            + rng.normal(scale=0.3, size=length)
        )
        out.append(np.cumsum(rng.normal(scale=0.2, size=length)) + x)
    return out


def test_the_streams_follow_the_recursion_step_by_step_with_gaps():
    series = _series(3, 30)
    series[1][[4, 5, 17]] = np.nan
    streams = fit_ets(series, 4)
    start = streams.take(np.arange(3))
    for t in range(30):
        streams.update(np.array([s[t] for s in series]))
    for i, x in enumerate(series):
        params = (start.alpha[i], start.beta[i], start.gamma[i], start.phi[i])
        _, ahead = _reference_run(x, params, start.level[i], start.trend[i], start.season[i], 6)
        np.testing.assert_allclose(streams.forecast(6)[i], ahead, rtol=1e-12, atol=1e-12)
    assert streams.clock.tolist() == [30, 30, 30]


def test_the_fit_takes_the_grid_point_with_the_least_squared_error():
    series = _series(2, 24, seed=1)
    fitted = fit_ets(series, 4)
    for i, x in enumerate(series):
        chosen = (fitted.alpha[i], fitted.beta[i], fitted.gamma[i], fitted.phi[i])
        start = (fitted.level[i], fitted.trend[i], fitted.season[i])
        best, _ = _reference_run(x, chosen, *start, 1)
        every = [_reference_run(x, p, *start, 1)[0] for p in PARAMETER_GRID[::7]]
        assert best <= min(every) + 1e-9
        assert chosen in {tuple(p) for p in PARAMETER_GRID}


def _reference_multi_step_loss(x: np.ndarray, params, start, horizon: int, stride: int) -> float:
    """Squared errors of the forecasts 1 to ``horizon`` steps ahead from every ``stride``-th origin of
    ``x`` (before its value there), within ``x``, summed."""
    total = 0.0
    for origin in range(0, len(x), stride):
        _, ahead = _reference_run(x[:origin], params, *start, horizon)
        target = x[origin : origin + horizon]
        error = ahead[: len(target)] - target
        total += float(np.nansum(error * error))
    return total


def test_with_a_horizon_the_fit_takes_the_least_multi_step_error():
    series = _series(2, 30, seed=2)
    series[0][[3, 11]] = np.nan
    fitted = fit_ets(series, 4, horizon=6)
    one_step = fit_ets(series, 4)
    assert not np.array_equal(fitted.alpha, one_step.alpha) or not np.array_equal(fitted.phi, one_step.phi)
    stride = -(-30 // (MAX_FORECASTS // 6))
    for i, x in enumerate(series):
        start = (fitted.level[i], fitted.trend[i], fitted.season[i])
        chosen = (fitted.alpha[i], fitted.beta[i], fitted.gamma[i], fitted.phi[i])
        best = _reference_multi_step_loss(x, chosen, start, 6, stride)
        every = [_reference_multi_step_loss(x, p, start, 6, stride) for p in PARAMETER_GRID[::37]]
        assert best <= min(every) + 1e-9


def test_a_trend_and_a_season_are_forecast_closely():
    t = np.arange(48)
    season = np.array([1.0, -2.0, 0.5, 0.5])
    x = 10.0 + 0.2 * t + season[t % 4]
    streams = fit_ets([x], 4)
    for value in x:
        streams.update(np.array([value]))
    truth = 10.0 + 0.2 * np.arange(48, 56) + season[np.arange(48, 56) % 4]
    seasonal_naive = np.tile(x[-4:], 2)
    error = np.abs(streams.forecast(8)[0] - truth)
    assert error.max() < 0.5 * np.abs(seasonal_naive - truth).max()
    assert streams.gamma[0] <= 0.05  # (a fixed season: little smoothing)


def test_rescaled_streams_forecast_the_rescaled_values():
    series = _series(3, 24, seed=3)
    streams = fit_ets(series, 4)
    scale, shift = np.array([2.0, 0.5, 10.0]), np.array([-1.0, 3.0, 100.0])
    rescaled = streams.rescaled(scale, shift)
    for t in range(24):
        values = np.array([s[t] for s in series])
        streams.update(values)
        rescaled.update(values * scale + shift)
    expected = streams.forecast(5) * scale[:, None] + shift[:, None]
    np.testing.assert_allclose(rescaled.forecast(5), expected, rtol=1e-12, atol=1e-9)


def test_a_season_of_one_has_no_seasonal_smoothing():
    streams = fit_ets(_series(2, 20), 1)
    assert streams.season.shape == (2, 1) and (streams.gamma == 0).all()


def test_restored_arrays_are_checked():
    streams = fit_ets(_series(2, 20), 4)
    arrays = {k: v.copy() for k, v in streams.arrays().items()}
    restored = ETSStreams.from_arrays(arrays, 2, 4)
    np.testing.assert_array_equal(restored.forecast(3), streams.forecast(3))
    for name, value, message in [
        ("phi", np.array([1.5, 0.9]), "parameters"),
        ("beta", arrays["alpha"] + 0.01, "parameters"),
        ("level", np.array([np.nan, 0.0]), "not finite"),
        ("clock", np.array([-1, 0]), "clocks"),
        ("season", np.zeros((2, 3)), "season must be floats of shape"),
        ("clock", np.zeros(2), "clock must be integers"),
    ]:
        with pytest.raises(ValueError, match=message):
            ETSStreams.from_arrays({**arrays, name: value}, 2, 4)
    with pytest.raises(ValueError, match="need"):
        ETSStreams.from_arrays({k: v for k, v in arrays.items() if k != "trend"}, 2, 4)


def test_the_partner_forecasts_the_mean_and_checks_its_parts_clocks():
    series = _series(2, 20)
    ets = fit_ets(series, 4)
    theta = ThetaStreams.empty(np.array([0.3, 0.6]), np.zeros((2, 4)))
    partner = PartnerStreams(theta.take(np.arange(2)), ets.take(np.arange(2)))
    for t in range(20):
        values = np.array([s[t] for s in series])
        partner.update(values)
        theta.update(values)
        ets.update(values)
    np.testing.assert_allclose(partner.forecast(5), 0.5 * (theta.forecast(5) + ets.forecast(5)), rtol=1e-12)
    arrays = partner.arrays()
    assert {"alpha", "ets_alpha", "ets_clock"} <= set(arrays)
    again = PartnerStreams.from_arrays(arrays, 2, 4)
    np.testing.assert_array_equal(again.forecast(5), partner.forecast(5))
    with pytest.raises(ValueError, match="clocks disagree"):
        PartnerStreams.from_arrays({**arrays, "ets_clock": arrays["ets_clock"] + 1}, 2, 4)
    assert PartnerStreams.from_arrays(theta.arrays(), 2, 4).ets is None


def test_the_partners_tail_forecasts_are_those_after_every_step():
    """Skipping the first forecasts (the held-out judgements start at the tails) streams every value."""
    from aaren_ts.estimators._theta_combination import _partner_forecasts

    values = np.stack([np.stack(_series(2, 30), axis=-1)] * 2)  # (2 series, 30 steps, 2 channels)
    values[1, 25:] = np.nan  # the second series ends earlier
    alpha, season = np.array([[0.3, 0.6], [0.5, 0.2]]), np.zeros((2, 2, 4))
    every = _partner_forecasts(values, alpha, season, 5, fit_ets(_series(4, 30), 4, 5))
    tail = _partner_forecasts(values, alpha, season, 5, fit_ets(_series(4, 30), 4, 5), skip=12)
    assert tail.shape == (2, 18, 5, 2)
    np.testing.assert_array_equal(tail, every[:, 12:])
    assert np.isfinite(tail).all()
