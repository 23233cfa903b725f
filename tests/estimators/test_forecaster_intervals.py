"""Forecast intervals of AarenForecaster: the spread head, quantiles, streaming and online calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import ndtri

from aaren_ts import AarenForecaster
from aaren_ts.engine._native import load_aci_step
from aaren_ts.engine.calibration import CALIBRATION_COVERAGES, Calibration
from aaren_ts.estimators._forecast_data import SegmentDataset, pad_segments
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.forecast import ENCODE_CHUNK, ForecastNet
from aaren_ts.nn.forecast_training import (
    ForecastLoss,
    HeldOutErrors,
    _long_run_variance,
    held_out_errors,
    masked_mae,
    masked_mse,
    masked_smape,
    tail_batches,
)
from aaren_ts.nn.heads import NormalHead
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "context_length": 8,
    "max_epochs": 3,
    "horizon": 5,
}
ATOL = 1e-5


def _noisy_season(n: int, noise: float | np.ndarray, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return pd.Series(10 + 3 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 1, n) * noise, name="y")


# ---------------------------------------------------------------------------- the network and its loss
def test_mae_loss_is_the_mean_absolute_error_over_finite_targets():
    torch.manual_seed(0)
    net = ForecastNet(1, 6, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "standard")
    torch.nn.init.normal_(net.head.weight, std=0.1)
    x, target = torch.randn(2, 20, 1), torch.randn(2, 20, 3, 1)
    target[1, 5:] = float("nan")
    pred = net(x)
    loss = ForecastLoss(point_loss="mae")(pred, target)
    valid = torch.isfinite(target)
    expected = (pred.loc - target.nan_to_num())[valid].abs().mean()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(masked_mae(pred.loc, target), expected)


def _newey_west(d: np.ndarray, lags: int) -> float:
    """``n`` times the Bartlett-weighted long-run variance of ``d``, term by term."""
    c, n = d - d.mean(), len(d)
    total = sum(c[t] * c[t] for t in range(n))
    for k in range(1, lags + 1):
        total += 2 * (1 - k / (lags + 1)) * sum(c[t] * c[t + k] for t in range(n - k))
    return max(total, 0.0)


def test_long_run_variance_is_newey_wests_over_each_rows_valid_run():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(3, 30, 2))
    valid = np.zeros((3, 30, 2), dtype=bool)
    valid[0, 4:25], valid[1, :], valid[2, 10:12] = True, True, True
    d[~valid] = 1e6  # never read
    got = _long_run_variance(torch.as_tensor(d), torch.as_tensor(valid), lags=3).numpy()
    for b in range(3):
        for ch in range(2):
            assert got[b, ch] == pytest.approx(_newey_west(d[b, valid[b, :, ch], ch], lags=3), rel=1e-10)


def test_a_series_keeps_the_network_on_a_clear_gain_and_a_significant_one_where_the_panel_shows_none():
    def tails(error, naive_error, variance, count=10):
        error, naive_error, variance = (
            np.array(v, dtype=float)[:, None] for v in (error, naive_error, variance)
        )
        return HeldOutErrors(error, naive_error, np.full(error.shape, count), variance)

    # a single series 20 % better by chance (gain 20, standard error 20): not significant, falls back
    assert tails([80.0], [100.0], [400.0]).falls_back().tolist() == [[True]]
    # the same gain with a standard error of 5 is significant: the network stays
    assert tails([80.0], [100.0], [25.0]).falls_back().tolist() == [[False]]
    # a significant gain but within the margin: falls back
    assert tails([95.0], [100.0], [1.0]).falls_back().tolist() == [[True]]
    # a panel that shows a significant gain: each series needs only the margin, and a series without
    # a tail follows the panel
    panel = tails([50.0, 80.0, 99.0, 0.0], [100.0, 100.0, 100.0, 0.0], [25.0, 400.0, 400.0, 0.0])
    panel.count[3] = 0
    assert panel.falls_back()[:, 0].tolist() == [False, False, True, False]
    # the same series where the panel shows no significant gain: each must show one alone; the series
    # without a tail falls back with the panel
    panel = tails([50.0, 80.0, 99.0, 0.0], [100.0, 100.0, 100.0, 0.0], [2500.0, 400.0, 400.0, 0.0])
    panel.count[3] = 0
    assert panel.falls_back()[:, 0].tolist() == [True, True, True, True]


def test_a_fallen_back_series_weighs_the_naive_forecast_by_the_tail_errors_where_the_panel_learns():
    def tails(error, naive_error, variance):
        error, naive_error, variance = (
            np.array(v, dtype=float)[:, None] for v in (error, naive_error, variance)
        )
        return HeldOutErrors(error, naive_error, np.full(error.shape, 10), variance)

    # the panel shows a gain: the series that fall back (within the margin, or worse) take the naive
    # forecast with the inverse-error weight error / (error + naive_error), the others the network alone
    panel = tails([20.0, 95.0, 130.0, 0.0], [100.0, 100.0, 100.0, 0.0], [25.0, 100.0, 100.0, 0.0])
    assert panel.pooled_gain()
    np.testing.assert_allclose(panel.naive_share()[:, 0], [0.0, 95 / 195, 130 / 230, 1.0])
    # no gain across the panel: a series that falls back takes the naive forecast alone
    panel = tails([20.0, 95.0, 130.0], [100.0, 100.0, 100.0], [2500.0, 400.0, 400.0])
    assert not panel.pooled_gain()
    assert panel.naive_share()[:, 0].tolist() == [1.0, 1.0, 1.0]


def test_held_out_errors_score_the_forecasts_from_the_whole_history():
    """An alternating series the network forecasts exactly, but for one jump the naive misses less."""
    torch.manual_seed(0)
    net = ForecastNet(1, 2, 1, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, None)
    series = np.zeros((40, 1), dtype=np.float32)
    series[1::2] = 1.0  # alternates 0, 1: the last value is always wrong by 1
    series[-1] = 100.0  # and once very wrong
    with torch.no_grad():  # forecast the alternation from the window (x[t-1], x[t]): x[t-1]
        net.skip.weight.zero_()
        net.skip.weight[0, 0] = 1.0
    # forecasts issued at steps 29..38 score the tail 30..39: the network misses only the jump (by 99),
    # the last value misses every step by 1 and the jump by 100
    for loss, expected in (("mae", (99.0, 109.0)), ("mse", (99.0**2, 9 + 100.0**2))):
        tails = held_out_errors(net, [series, series[:30]], [30, 30], "cpu", loss=loss)
        error, naive_error, count = tails.error, tails.naive_error, tails.count
        np.testing.assert_allclose([error[0, 0], naive_error[0, 0]], expected, rtol=1e-6)
        assert count.tolist() == [[10], [0]]  # the second series has no tail
        assert error[1, 0] == naive_error[1, 0] == tails.variance[1, 0] == 0.0
        # horizon 1: the differences of neighbouring origins share no target, so no lag enters
        origins = np.arange(29, 39)
        power = {"mae": 1, "mse": 2}[loss]
        target = series[origins + 1, 0]
        d = np.abs(series[origins - 1, 0] - target) ** power - np.abs(series[origins, 0] - target) ** power
        assert tails.variance[0, 0] == pytest.approx(_newey_west(d, lags=0), rel=1e-6)
        if loss == "mae":  # the network gains exactly 1 at every origin: a certain gain
            assert np.all(d == -1.0) and tails.improvement_t()[0, 0] == np.inf
        else:
            t = -d.sum() / np.sqrt(_newey_west(d, lags=0))
            assert tails.improvement_t()[0, 0] == pytest.approx(t, rel=1e-6)
        assert tails.improvement_t()[1, 0] == 0.0  # nothing scored
    assert net.training  # left as it was


@pytest.mark.parametrize("channel_independent", [True, False])
def test_tail_batches_continue_the_streams_where_the_tails_begin(channel_independent):
    """The part before a batch's first forecast that reaches a tail is streamed into a state (in
    blocks), and the forecasts from there on are those the whole series gives, gaps and covariates
    included; ``before`` holds the streamed values."""
    torch.manual_seed(0)
    net = ForecastNet(
        2, 6, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), channel_independent, "standard", sp=2,
        n_exog=1, n_future=1,
    ).eval()  # fmt: skip
    rng = np.random.default_rng(0)
    lengths, n_train = [1400, 900, 50], [1200, ENCODE_CHUNK + 300, 50]  # (the third: no tail)
    series = [rng.normal(size=(n, 3)).astype(np.float32) for n in lengths]
    series[0][700:720, 0] = np.nan  # a gap in the streamed part
    series[1][850:860, 1] = np.nan  # and one in the tail
    with torch.no_grad():
        (batch,) = list(tail_batches(net, series, n_train, "cpu", batch_size=8))
        assert batch.chunk == [0, 1] and batch.start == ENCODE_CHUNK + 299
        assert batch.origins(n_train).tolist() == [1200 - 1 - batch.start, 0]
        assert batch.lengths.tolist() == [1400 - batch.start, 900 - batch.start]
        streamed = batch.forecast(net)
        scored = batch.scored(n_train)
        for i, k in enumerate(batch.chunk):  # from the training part's last step to the series' last
            steps = np.flatnonzero(scored[i].numpy())
            assert steps.tolist() == list(range(n_train[k] - 1 - batch.start, lengths[k] - batch.start))
        for i, k in enumerate(batch.chunk):
            whole = torch.as_tensor(series[k])[None]
            after = torch.cat([whole[:, 1:], torch.full((1, 3, 3), float("nan"))], 1).unfold(1, 3, 1)
            future = after.transpose(-1, -2)[..., 2:3]
            expected = net(whole, future=future).loc[0, batch.start :]
            got = streamed.loc[i, : lengths[k] - batch.start]
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(batch.before[i].numpy(), series[k][: batch.start])
            np.testing.assert_array_equal(
                batch.after[i, 0, :, :2].numpy(), series[k][batch.start + 1 : batch.start + 4, :2]
            )


def test_loss_value_is_the_mse_and_the_likelihood_trains_only_the_spread():
    torch.manual_seed(0)
    net = ForecastNet(2, 6, 3, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "standard")
    torch.nn.init.normal_(net.head.weight, std=0.1)
    torch.nn.init.normal_(net.distribution_head.linear.weight, std=0.1)
    x, target = torch.randn(2, 20, 2), torch.randn(2, 20, 3, 2)
    target[0, 3] = float("nan")
    pred = net(x)
    loss = ForecastLoss()(pred, target)
    torch.testing.assert_close(loss, masked_mse(pred.loc, target))
    loss.backward()
    with_nll = {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}
    net.zero_grad()
    masked_mse(net(x).loc, target).backward()
    for name, p in net.named_parameters():
        if name.startswith("distribution_head."):
            assert p.grad is None and with_nll[name].abs().sum() > 0  # learns from the likelihood only
        else:
            torch.testing.assert_close(with_nll[name], p.grad)  # the mean forecast trains as without it


def test_spread_is_positive_and_follows_the_window_scale():
    torch.manual_seed(0)
    net = ForecastNet(1, 12, 4, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "standard").eval()
    x = torch.randn(3, 30, 1)
    with torch.no_grad():
        small, large = net(x).params[..., 0], net(10.0 * x).params[..., 0]
    assert (small > 0).all()
    # relative part (one window standard deviation at initialisation) scales; the floor does not
    torch.testing.assert_close(large[:, 1:] - 0.0181, 10.0 * (small[:, 1:] - 0.0181), rtol=1e-2, atol=1e-3)


# ---------------------------------------------------------------------------- sktime's interface
def test_quantiles_never_cross_and_match_the_intervals():
    y = _noisy_season(200, 0.5)
    f = AarenForecaster(**TINY).fit(y[:150])
    f.partial_update(y[150:])  # calibrated levels, possibly uneven across the tracked coverages
    alpha = np.linspace(0.01, 0.99, 25)
    q = f.predict_quantiles(fh=range(1, 6), alpha=list(alpha)).to_numpy()
    assert np.all(np.diff(q, axis=1) >= 0)
    median = f.predict_quantiles(fh=range(1, 6), alpha=[0.5]).to_numpy()[:, 0]
    np.testing.assert_allclose(median, f.predict(fh=range(1, 6)).to_numpy())
    interval = f.predict_interval(fh=range(1, 6), coverage=[0.8]).to_numpy()
    np.testing.assert_allclose(interval, f.predict_quantiles(fh=range(1, 6), alpha=[0.1, 0.9]).to_numpy())
    assert np.all(f.predict_var(fh=range(1, 6)).to_numpy() > 0)


def test_uncalibrated_intervals_are_the_gaussian_quantiles():
    y = _noisy_season(150, 0.5)
    f = AarenForecaster(**TINY, interval_calibration=None).fit(y)
    mean = f.predict(fh=[1, 2, 3]).to_numpy()
    std = np.sqrt(f.predict_var(fh=[1, 2, 3]).to_numpy()[:, 0])
    q = f.predict_quantiles(fh=[1, 2, 3], alpha=[0.025, 0.975]).to_numpy()
    np.testing.assert_allclose(q[:, 0], mean - ndtri(0.975) * std, rtol=1e-9)
    np.testing.assert_allclose(q[:, 1], mean + ndtri(0.975) * std, rtol=1e-9)
    np.testing.assert_allclose(std, f.engine_.params[0, :3, 0, 0].double().numpy() * f.scale_[0], rtol=1e-6)


def test_panel_intervals_come_per_series_in_the_panel_format():
    index = pd.MultiIndex.from_product([["a", "b"], range(80)], names=["series", "time"])
    y = pd.DataFrame(
        {"y": np.r_[_noisy_season(80, 0.3).to_numpy(), 5 * _noisy_season(80, 1.0, 1).to_numpy()]}
    )
    y.index = index
    f = AarenForecaster(**TINY).fit(y)
    pi = f.predict_interval(fh=[1, 2], coverage=0.9)
    assert pi.index.equals(f.predict(fh=[1, 2]).index)
    width = (pi.iloc[:, 1] - pi.iloc[:, 0]).groupby(level=0).mean()
    assert width["b"] > width["a"]  # each series' own scale


# ---------------------------------------------------------------------------- streaming
@pytest.mark.parametrize("calibration", [0.05, None])
def test_streamed_intervals_do_not_depend_on_chunking(calibration):
    y = _noisy_season(260, np.r_[np.full(180, 0.3), np.full(80, 1.5)])
    params = {**TINY, "interval_calibration": calibration}
    chunked = AarenForecaster(**params).fit(y[:120])
    one_call = AarenForecaster(**params).fit(y[:120])  # the same weights (same seed)
    one_call.partial_update(y[120:])
    for start, stop in [(120, 121), (121, 150), (150, 151), (151, 260)]:
        chunked.partial_update(y[start:stop])
    fh = range(1, 6)
    np.testing.assert_allclose(
        chunked.predict_interval(fh=fh, coverage=[0.5, 0.8, 0.95]).to_numpy(),
        one_call.predict_interval(fh=fh, coverage=[0.5, 0.8, 0.95]).to_numpy(),
        atol=ATOL * 10,
        rtol=ATOL,
    )
    if calibration is not None:
        # on CPU with the C calibration step every chunk is stepped through it: exactly the same levels
        exact = load_aci_step() is not None
        torch.testing.assert_close(
            chunked.engine_.calibration.levels,
            one_call.engine_.calibration.levels,
            atol=0 if exact else 1e-6,
            rtol=0,
        )


def test_calibration_update_equals_a_step_by_step_reference():
    rng = np.random.default_rng(0)
    horizon, channels, n, rate = 3, 2, 40, 0.05
    loc = torch.as_tensor(rng.normal(size=(1, n, horizon, channels)), dtype=torch.float32)
    scale = torch.as_tensor(rng.uniform(0.5, 1.5, size=(1, n, horizon, channels)), dtype=torch.float32)
    y = torch.as_tensor(rng.normal(size=(1, n, channels)) * 1.3, dtype=torch.float32)
    y[0, 7, 1] = float("nan")
    state = Calibration.fresh(1, horizon, channels, "cpu")
    for start, stop in [(0, 5), (5, 6), (6, 40)]:  # chunked, as streaming does
        state.advance(
            y[:, start:stop],
            loc[:, start:stop],
            scale[:, start:stop, ..., None],
            torch.tensor([stop - start]),
            rate,
            NormalHead(1, 1, 1),
        )
    # reference: one observation at a time, every forecast issued h steps before judged with its level
    levels = np.array([[1 - c] * channels for c in CALIBRATION_COVERAGES], dtype=np.float64)
    levels = np.repeat(levels[:, None, :], horizon, axis=1)  # (L, T, C)
    for t in range(n):
        for h in range(1, horizon + 1):
            s = t - h
            if s < 0:
                continue
            for c in range(channels):
                if torch.isnan(y[0, t, c]):
                    continue
                score = abs(float(y[0, t, c]) - float(loc[0, s, h - 1, c])) / float(scale[0, s, h - 1, c])
                for k, cov in enumerate(CALIBRATION_COVERAGES):
                    z = ndtri(1 - 0.5 * min(max(levels[k, h - 1, c], 1e-6), 1.0))
                    levels[k, h - 1, c] += rate * ((1 - cov) - float(score > z))
    np.testing.assert_allclose(state.levels[0].numpy(), levels, atol=1e-5)
    newest = state.newest_first()
    np.testing.assert_allclose(newest[0, ..., 0].numpy(), loc[0, -horizon:].flip(0).numpy())
    np.testing.assert_allclose(newest[0, ..., 1].numpy(), scale[0, -horizon:].flip(0).numpy())
    assert int(state.n_issued[0]) == n


def test_fit_calibrates_on_the_validation_tails():
    y = _noisy_season(300, 0.5)
    f = AarenForecaster(**TINY).fit(y)  # validation_fraction 0.2: a 60-step tail
    nominal = Calibration.fresh(1, TINY["horizon"], 1, "cpu").levels
    assert not torch.allclose(f.engine_.calibration.levels, nominal)
    no_tail = AarenForecaster(**TINY, validation_fraction=None).fit(y)
    torch.testing.assert_close(no_tail.engine_.calibration.levels, nominal)


@pytest.mark.slow
def test_calibration_restores_coverage_after_the_noise_level_changes():
    noise = np.r_[np.full(400, 1.2), np.full(600, 0.3)]  # the noise falls fourfold after fit
    y = _noisy_season(1000, noise, seed=3)
    params = {**TINY, "max_epochs": 5}
    coverage, width = {}, {}
    for calibration in (0.02, None):
        f = AarenForecaster(**params, interval_calibration=calibration).fit(y[:400])
        hits, widths = [], []
        for t in range(400, 999):
            lower, upper = f.predict_interval(fh=[1], coverage=0.9).to_numpy()[0]
            hits.append(lower <= y.iloc[t] <= upper)
            widths.append(upper - lower)
            f.partial_update(y[t : t + 1])
        coverage[calibration] = np.mean(hits[200:])  # after the calibration has had time to react
        width[calibration] = np.mean(widths[200:])
    assert coverage[None] > 0.98  # the network's own intervals are still sized for the noisy part
    assert abs(coverage[0.02] - 0.9) < 0.04, coverage
    assert width[0.02] < 0.8 * width[None]


def test_save_load_keeps_the_calibration(tmp_path):
    y = _noisy_season(200, 0.5)
    f = AarenForecaster(**TINY, interval_calibration=0.05).fit(y[:150])
    f.partial_update(y[150:])
    loaded = AarenForecaster.load(f.save(tmp_path / "calibrated"))
    torch.testing.assert_close(loaded.engine_.calibration.levels, f.engine_.calibration.levels)
    pd.testing.assert_frame_equal(
        loaded.predict_interval(fh=[1, 2, 3], coverage=0.9), f.predict_interval(fh=[1, 2, 3], coverage=0.9)
    )
    more = _noisy_season(210, 0.5)[200:]
    more.index = range(200, 210)
    loaded.partial_update(more)
    f.partial_update(more)
    torch.testing.assert_close(loaded.engine_.calibration.levels, f.engine_.calibration.levels)


def test_smape_loss_is_the_metric_on_each_series_own_scale():
    """``masked_smape`` on standardised values equals :func:`aaren_ts.metrics.smape`'s per-value
    error on the values mapped back, for a channel on its own scale and one on the log scale, over
    the finite targets only."""
    gen = torch.Generator().manual_seed(0)
    z, pred = torch.randn(2, 5, 3, 1, generator=gen), torch.randn(2, 5, 3, 1, generator=gen)
    z[1, 3:] = float("nan")
    mean, scale = torch.tensor([[6.0], [0.5]]), torch.tensor([[2.0], [0.4]])
    offset, log_scale = torch.tensor([[3.0], [0.0]]), torch.tensor([[0.0], [0.4]])  # row 1: log scale
    got = masked_smape(pred, z, offset, log_scale)
    own = (lambda v: mean[0] + scale[0] * v[0], lambda v: torch.exp(mean[1] + scale[1] * v[1]))
    errors = []
    for back in own:
        y, f = back(z).double(), back(pred).double()
        valid = torch.isfinite(y)
        errors.append((2 * (y - f).abs() / (y.abs() + f.abs()))[valid])
    torch.testing.assert_close(got.double(), torch.cat(errors).mean(), rtol=1e-5, atol=1e-6)


def test_segments_carry_each_series_levels_to_the_smape_loss():
    """With ``levels``, every item's target holds its series' offset and log scale beside the values,
    the batches stack them, and the loss refuses an smape target without them."""
    series = [np.arange(12, dtype=np.float32)[:, None], np.ones((9, 1), dtype=np.float32)]
    levels = [np.array([[1.5], [0.0]]), np.array([[0.0], [0.7]])]
    plain = SegmentDataset(series, 4, 2)
    with_levels = SegmentDataset(series, 4, 2, levels=levels)
    items = [with_levels[i] for i in range(len(with_levels))]
    for (x, target), (x0, target0) in zip(items, [plain[i] for i in range(len(plain))], strict=True):
        torch.testing.assert_close(x, x0)
        torch.testing.assert_close(target["values"], target0, equal_nan=True)
    _, batch = pad_segments(items)
    rows = [k for k, _ in with_levels.stretches]  # (the series of each item)
    assert sorted(set(rows)) == [0, 1]
    assert batch["offset"][:, 0].tolist() == [[1.5, 0.0][r] for r in rows]
    assert batch["log_scale"][:, 0].tolist() == pytest.approx([[0.0, 0.7][r] for r in rows])
    net = ForecastNet(1, 4, 2, EncoderConfig("aaren", 8, 2, 1, 16, 0.0), True, "standard")
    x, _ = pad_segments([plain[i] for i in range(len(plain))])
    pred = net(x)
    loss = ForecastLoss(point_loss="smape")
    expected = masked_smape(pred.loc, batch["values"], batch["offset"], batch["log_scale"])
    torch.testing.assert_close(loss(pred, batch), expected)
    with pytest.raises(ValueError, match="levels"):
        loss(pred, batch["values"])


@pytest.mark.parametrize("target_transform", ["log", None])
def test_a_network_trains_on_the_smape_of_the_series_own_scale(target_transform):
    """``loss`` entries may be ``"smape"``: that network trains on each series' sMAPE (the series
    reach its loss with their levels, on the log scale or their own), fine-tunes on new observations
    and after ``pretrain``, and the forecaster forecasts as any other."""
    y = _noisy_season(140, 0.3)
    params = {**TINY, "loss": ("mse", "smape"), "n_estimators": 2, "target_transform": target_transform}
    forecaster = AarenForecaster(**params).fit(y[:120])
    assert forecaster.member_losses_ == ("mse", "smape")
    assert forecaster.log_target_.all() == (target_transform == "log")
    before = forecaster.predict(fh=[1, 2, 3])
    assert np.isfinite(before.to_numpy()).all()
    smape_member = forecaster.net_.module_.members[1]
    weights = {k: v.clone() for k, v in smape_member.state_dict().items()}
    forecaster.update(y[120:], update_params=True)
    assert any(not torch.equal(weights[k], v) for k, v in smape_member.state_dict().items())
    assert np.isfinite(forecaster.predict(fh=[1, 2, 3]).to_numpy()).all()
    panel = pd.concat({k: _noisy_season(100, 0.3, seed=k).to_frame() for k in range(3)})  # (a panel)
    pretrained = AarenForecaster(**params, update_epochs=1).pretrain(panel).fit(y[100:].to_frame())
    assert np.isfinite(pretrained.predict(fh=[1, 2, 3]).to_numpy()).all()


def test_the_smape_loss_refuses_a_series_with_values_at_or_below_zero():
    """sMAPE is relative to positive values: ``loss`` with ``"smape"`` on a panel with a series
    that reaches zero is refused before training, naming the series, and a fitted forecaster is
    left as it was."""
    good = _noisy_season(100, 0.3)
    bad = good.copy()
    bad.iloc[40] = 0.0
    panel = pd.concat({"a": good.to_frame(), "b": bad.to_frame()})
    forecaster = AarenForecaster(**{**TINY, "loss": ("mse", "smape"), "n_estimators": 2}).fit(good)
    before = forecaster.predict(fh=[1, 2])
    with pytest.raises(ValueError, match=r"loss 'smape'.*'b'.*at or below zero"):
        forecaster.fit(panel)
    np.testing.assert_array_equal(forecaster.predict(fh=[1, 2]).to_numpy(), before.to_numpy())
    auto = AarenForecaster(**{**TINY, "n_estimators": 3}).fit(panel)  # ("auto": the absolute error)
    assert "smape" not in auto.member_losses_
