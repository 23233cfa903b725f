"""Each series' spread factor, chosen on its held-out tail by the interval score and pooled with the
panel's."""

from __future__ import annotations

import numpy as np
import pytest

from aaren_ts.estimators import _interval_spread
from aaren_ts.estimators._interval_spread import POOLED_VALUES, WIDENING, best_spread, tail_spreads
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.forecast import ForecastNet


def _score(s, lower, upper, error, alpha):
    low, high = s * lower, s * upper
    return np.mean(high - low + 2 / alpha * (np.maximum(low - error, 0) + np.maximum(error - high, 0)))


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_best_spread_is_the_exact_minimum_of_the_interval_score(alpha):
    rng = np.random.default_rng(0)
    n = 2000
    lower, upper = -rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    error = rng.standard_t(4, n)
    s = best_spread(lower, upper, error, alpha)
    grid = np.linspace(0.01, 10, 20001)
    scores = [_score(g, lower, upper, error, alpha) for g in grid]
    assert _score(s, lower, upper, error, alpha) <= min(scores) + 1e-12
    # symmetric intervals of one width: the share of misses is alpha
    half = np.ones(n)
    s = best_spread(-half, half, error, alpha)
    assert abs(np.mean(np.abs(error) > s) - alpha) <= 1.5 / n  # (one observation: the minimum sits on one)
    assert best_spread(-half[:0], half[:0], error[:0], alpha) == 1.0


def test_each_series_gets_its_own_factor_pooled_with_the_panels(monkeypatch):
    monkeypatch.setattr(_interval_spread, "WIDENING", 1.0)
    net = ForecastNet(1, 4, 2, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()
    rng = np.random.default_rng(1)
    # the untrained network is the last value; a calm walk, a wild one, and one without a tail
    series = [np.cumsum(rng.normal(0, sd, 200))[:, None].astype(np.float32) for sd in (0.1, 3.0, 1.0)]
    n_train = [160, 160, 200]
    naive = np.zeros((3, 1), dtype=bool)
    spread = tail_spreads(net, series, n_train, naive, "cpu")[:, 0]
    assert spread[0] < spread[2] < spread[1]
    # the tailless series takes the panel's factor; the others lean towards it by the tail's length
    weight = 40 / (40 + POOLED_VALUES)
    own = np.exp((np.log(spread[:2]) - (1 - weight) * np.log(spread[2])) / weight)
    np.testing.assert_allclose(np.exp(np.log(own).mean()), spread[2], rtol=1e-9)
    assert WIDENING > 1.0  # (the default widens what the tail alone says)
