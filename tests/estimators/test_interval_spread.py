"""Each series' spread factor, chosen on its held-out tail by the interval score and pooled with the
panel's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts.estimators import _interval_spread
from aaren_ts.estimators._interval_spread import (
    CAP_PAIRS,
    NAIVE_CAP,
    POOLED_VALUES,
    WIDENING,
    best_spread,
    best_spread_log,
    cross_fitted_score,
    log_interval_score,
    naive_error_std,
    tail_intervals,
)
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


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_on_the_log_scale_the_spread_minimises_the_score_in_the_series_units(alpha):
    rng = np.random.default_rng(2)
    n, scale = 1500, 0.6
    loc = rng.normal(0, 1, n)
    lower, upper = -rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    error = rng.standard_t(4, n)

    def in_units(s):  # the score of the mapped interval, computed directly (level 7 scales it)
        y = 7 * np.exp(scale * (loc + error))
        low, high = 7 * np.exp(scale * (loc + s * lower)), 7 * np.exp(scale * (loc + s * upper))
        return np.mean(high - low + 2 / alpha * (np.maximum(low - y, 0) + np.maximum(y - high, 0)))

    s = best_spread_log(loc, lower, upper, error, scale, alpha)
    grid = np.exp(np.linspace(np.log(0.05), np.log(5), 4001))
    best = min(in_units(g) for g in grid)
    assert in_units(s) <= best * (1 + 1e-6)
    ratio = log_interval_score(loc, s * lower, s * upper, error, scale, alpha) / in_units(s)
    assert np.isclose(ratio, np.exp(-scale * loc.max()) / 7)  # the level only scales the score
    # the exponential skews the mapped interval: its factor differs from the symmetric one's
    assert abs(s - best_spread(lower, upper, error, alpha)) > 0.01
    # a tiny scale is (almost) the series' own scale: the two choices meet
    tiny = best_spread_log(loc, lower, upper, error, 1e-6, alpha)
    np.testing.assert_allclose(tiny, best_spread(lower, upper, error, alpha), rtol=1e-3)
    assert best_spread_log(loc[:0], lower[:0], upper[:0], error[:0], scale, alpha) == 1.0


def test_each_series_gets_its_own_factor_pooled_with_the_panels(monkeypatch):
    monkeypatch.setattr(_interval_spread, "WIDENING", 1.0)
    monkeypatch.setattr(_interval_spread, "OWN_FACTOR_SHARE", 1.0)  # (a lone channel keeps its own)
    net = ForecastNet(1, 4, 2, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()
    rng = np.random.default_rng(1)
    # the untrained network is the last value; a calm walk, a wild one, and one without a tail
    series = [np.cumsum(rng.normal(0, sd, 200))[:, None].astype(np.float32) for sd in (0.1, 3.0, 1.0)]
    n_train = [160, 160, 200]
    naive = np.zeros((3, 1), dtype=bool)
    spread = tail_intervals(net, series, n_train, naive, "cpu").spread[:, 0]
    assert spread[0] < spread[2] < spread[1]
    # the tailless series takes the panel's factor; the others lean towards it by the tail's length
    weight = 40 / (40 + POOLED_VALUES)
    own = np.exp((np.log(spread[:2]) - (1 - weight) * np.log(spread[2])) / weight)
    np.testing.assert_allclose(np.exp(np.log(own).mean()), spread[2], rtol=1e-9)
    assert WIDENING > 1.0  # (the default widens what the tail alone says)
    # log-scale channels are scored in the series' units: the same choice where the map is almost linear
    tiny = tail_intervals(net, series, n_train, naive, "cpu", log_scale=np.full((3, 1), 1e-6)).spread
    np.testing.assert_allclose(tiny[:, 0], spread, rtol=1e-3)
    wide = tail_intervals(net, series, n_train, naive, "cpu", log_scale=np.full((3, 1), 1.0)).spread
    assert not np.allclose(wide[:, 0], spread, rtol=1e-2)
    # the two scales' factors are pooled apart: alone on the log scale, the first keeps its own factor;
    # the tailless series takes the own scale's pool, which holds the second's alone
    split = tail_intervals(net, series, n_train, naive, "cpu", log_scale=np.array([[1e-6], [0.0], [0.0]]))
    np.testing.assert_allclose(split.spread[:, 0], [own[0], own[1], own[1]], rtol=1e-3)


def test_the_naive_error_std_is_the_rms_of_the_seasonal_differences():
    values = np.array([[1.0, 0.0], [2.0, np.nan], [4.0, 1.0], [3.0, 1.0], [np.nan, 5.0]])
    # sp = 2: pairs (0, 2), (1, 3), (2, 4)
    expected = [np.sqrt((3.0**2 + 1.0**2) / 2), np.sqrt((1.0**2 + 4.0**2) / 2)]
    np.testing.assert_allclose(naive_error_std(values, 2), expected)
    assert np.isnan(naive_error_std(values[:2], 2)).all()  # no pair


def _walks(rng, train_sd, tail_sd, n=3, n_train=200, n_tail=120):
    return [
        np.cumsum(np.concatenate([rng.normal(0, train_sd, n_train), rng.normal(0, tail_sd, n_tail)]))[
            :, None
        ].astype(np.float32)
        for _ in range(n)
    ], [n_train] * n


def test_naive_intervals_are_taken_where_they_score_better_on_the_tail():
    net = ForecastNet(1, 4, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()
    rng = np.random.default_rng(0)
    series, n_train = _walks(rng, 1.0, 1.0)
    naive = np.zeros((3, 1), dtype=bool)
    candidates = np.array([[True], [True], [False]])
    head_forward = net.distribution_head.forward
    noise = torch.Generator().manual_seed(0)

    def erratic(h, window_std):  # widths that swing from one forecast to the next, whatever the errors
        params = head_forward(h, window_std)
        return params * torch.exp(2.0 * torch.randn(params.shape, generator=noise))

    net.distribution_head.forward = erratic
    chosen = tail_intervals(net, series, n_train, naive, "cpu", naive_point=candidates)
    expected = [naive_error_std(s[:200].astype(np.float64), 1)[0] for s in series[:2]]
    np.testing.assert_allclose(chosen.naive_std[:2, 0], expected, rtol=1e-6)
    assert chosen.naive_std[2, 0] == 0.0  # not a candidate: its point forecast is the network's
    # the candidates choose between the two intervals uncapped; the network's series is capped
    assert (chosen.max_std[:2] == 0).all() and chosen.max_std[2, 0] > 0
    net.distribution_head.forward = head_forward
    # a naive method whose training errors understate the tail's misses and loses: the head is kept
    series, n_train = _walks(rng, 0.01, 1.0)
    kept = tail_intervals(net, series, n_train, naive, "cpu", naive_point=candidates)
    assert (kept.naive_std == 0.0).all()
    assert (kept.max_std[:2] == 0).all()  # (the head's intervals as they were compared)
    # without the choice, the same series' head would be capped and its factor chosen around the cap
    assert (tail_intervals(net, series, n_train, naive, "cpu").max_std > 0).all()


def test_a_head_without_a_gaussian_member_keeps_its_intervals(monkeypatch):
    net = ForecastNet(1, 4, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()

    from aaren_ts.nn.heads import DistributionHead

    monkeypatch.setattr(type(net.distribution_head), "from_normal", DistributionHead.from_normal)
    assert not net.distribution_head.has_normal
    series, n_train = _walks(np.random.default_rng(0), 1.0, 1.0)
    candidates = np.ones((3, 1), dtype=bool)
    naive = np.zeros((3, 1), dtype=bool)
    assert (tail_intervals(net, series, n_train, naive, "cpu", naive_point=candidates).naive_std == 0).all()


def test_the_heads_spread_is_capped_at_the_naive_methods_before_the_factor():
    net = ForecastNet(1, 4, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean", sp=2).eval()
    rng = np.random.default_rng(2)
    # a daily-like cycle whose windows swing far more than the series changes from cycle to cycle, a
    # walk, and a series too short for the cap (fewer than CAP_PAIRS naive pairs)
    t = np.arange(240)
    cycle = (5.0 * np.sin(2 * np.pi * t / 2) + rng.normal(0, 0.05, 240))[:, None].astype(np.float32)
    walk = np.cumsum(rng.normal(0, 1.0, 240))[:, None].astype(np.float32)
    short = rng.normal(0, 1.0, CAP_PAIRS + 1)[:, None].astype(np.float32)
    series, n_train = [cycle, walk, short], [200, 200, CAP_PAIRS + 1]
    chosen = tail_intervals(net, series, n_train, np.zeros((3, 1), dtype=bool), "cpu")
    expected = [NAIVE_CAP * naive_error_std(s[:200].astype(np.float64), 2)[0] for s in series[:2]]
    np.testing.assert_allclose(chosen.max_std[:2, 0], expected, rtol=1e-6)
    assert chosen.max_std[2, 0] == 0.0  # CAP_PAIRS - 1 pairs
    # the network's distribution with the cap and the factor: at most factor x cap x the naive growth
    x = torch.as_tensor(cycle[None])
    spread = torch.as_tensor(chosen.spread[:1], dtype=torch.float32)
    cap = torch.as_tensor(chosen.max_std[:1], dtype=torch.float32)
    free = net(x, spread=spread).params[0, 10:, :, 0, 0]  # (steps, T): a Gaussian's std
    capped = net(x, spread=spread, max_std=cap).params[0, 10:, :, 0, 0]
    bound = spread[0, 0] * cap[0, 0] * net.naive_growth()
    assert (free > bound).any() and (capped <= bound * (1 + 1e-6)).all()
    torch.testing.assert_close(capped, torch.minimum(free, bound.expand_as(free)))


def test_the_cross_fitted_score_scores_each_half_of_the_tail_with_the_others_factor():
    rng = np.random.default_rng(3)
    origin = np.repeat(np.arange(10), 4)  # ten origins, four steps each
    lower, upper = -np.ones(40), np.ones(40)
    error = np.where(origin < 5, 0.5, 2.0) * rng.standard_normal(40)
    base, alpha = np.zeros(40), 0.05
    first = origin < 5
    s_first = WIDENING * best_spread(lower[first], upper[first], error[first], alpha)
    s_second = WIDENING * best_spread(lower[~first], upper[~first], error[~first], alpha)
    expected = (
        20 * _score(s_second, lower[first], upper[first], error[first], alpha)
        + 20 * _score(s_first, lower[~first], upper[~first], error[~first], alpha)
    ) / 40
    score = cross_fitted_score(lower, upper, error, base, origin, 0.0, alpha)
    np.testing.assert_allclose(score, expected, rtol=1e-12)
    # a factor fitted on the other half scores worse than the whole tail's own optimum
    assert score > _score(best_spread(lower, upper, error, alpha), lower, upper, error, alpha)
    # one origin: no halves, the whole tail's factor
    one = np.zeros(40, dtype=int)
    s = WIDENING * best_spread(lower, upper, error, alpha)
    np.testing.assert_allclose(
        cross_fitted_score(lower, upper, error, base, one, 0.0, alpha), _score(s, lower, upper, error, alpha)
    )


def test_a_single_series_compares_the_naive_intervals_with_a_factor_not_fitted_on_that_tail(monkeypatch):
    monkeypatch.setattr(_interval_spread, "OWN_FACTOR_SHARE", 1.0)  # (its own factor, as in a panel)
    net = ForecastNet(1, 4, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()
    head_forward = net.distribution_head.forward
    # widths that do not follow the window's swings, so only the factor can fit them to the tail
    net.distribution_head.forward = lambda h, window_std: head_forward(h, torch.ones_like(window_std))
    rng = np.random.default_rng(0)
    # the tail turns from calm to wild: the factor fitted on all of it is a compromise that beats the
    # naive method's intervals there; one fitted on either half fits the other badly
    steps = np.concatenate([rng.normal(0, 1.0, 200), rng.normal(0, 0.1, 60), rng.normal(0, 4.0, 60)])
    series = [np.cumsum(steps)[:, None].astype(np.float32)]
    alone = tail_intervals(
        net, series, [200], np.zeros((1, 1), bool), "cpu", naive_point=np.ones((1, 1), bool)
    )
    expected = naive_error_std(series[0][:200].astype(np.float64), 1)[0]
    np.testing.assert_allclose(alone.naive_std[0, 0], expected, rtol=1e-6)  # the naive method's own
    # in a panel the factor is pooled with the others' and compared as it is: the head's kept
    panel = tail_intervals(
        net, series * 2, [200] * 2, np.zeros((2, 1), bool), "cpu", naive_point=np.ones((2, 1), bool)
    )
    assert (panel.naive_std == 0).all()
    np.testing.assert_allclose(panel.spread[:, 0], alone.spread[0, 0])  # (the same factor either way)


def test_a_lone_series_factor_leans_on_the_naive_methods_width(monkeypatch):
    net = ForecastNet(1, 4, 2, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "mean").eval()
    rng = np.random.default_rng(4)
    series = [np.cumsum(rng.normal(0, 1.0, 240))[:, None].astype(np.float32)]
    no_naive = np.zeros((1, 1), dtype=bool)

    def factors(share, panel=1):
        monkeypatch.setattr(_interval_spread, "OWN_FACTOR_SHARE", share)
        out = tail_intervals(net, series * panel, [200] * panel, np.zeros((panel, 1), bool), "cpu")
        return out.spread[:, 0]

    own, naive_width = factors(1.0)[0], factors(0.0)[0]
    assert abs(np.log(own / naive_width)) > 0.05  # (the two differ here)
    np.testing.assert_allclose(factors(0.5)[0], np.sqrt(own * naive_width), rtol=1e-9)
    # the naive method's width follows its training errors: a rougher training part, a wider prior
    rough = series[0].copy()
    rough[:100] += rng.normal(0, 3.0, (100, 1)).astype(np.float32)
    monkeypatch.setattr(_interval_spread, "OWN_FACTOR_SHARE", 0.0)
    wider = tail_intervals(net, [rough], [200], no_naive, "cpu").spread[0, 0]
    assert wider > 1.5 * naive_width
    # in a panel the factor is pooled with the others' instead: the share changes nothing
    np.testing.assert_allclose(factors(0.0, panel=2), factors(1.0, panel=2), rtol=1e-12)
