"""Exogenous variables of AarenForecaster: tokens, future-known effects, streaming, bad X."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster
from aaren_ts.covariates import calendar_covariates
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "context_length": 12,
    "max_epochs": 3,
    "horizon": 4,
}
ATOL = 1e-5


def _driven(n: int, seed: int = 0) -> tuple[pd.Series, pd.DataFrame]:
    """A series driven by a known input ``u`` (and a measured ``w`` that does not matter)."""
    rng = np.random.default_rng(seed)
    u, w = rng.normal(size=n), rng.normal(size=n)
    y = pd.Series(5.0 + 3.0 * u + 0.3 * rng.normal(size=n), name="y")
    return y, pd.DataFrame({"u": u, "w": w})


def _snapshot(f: AarenForecaster) -> list[torch.Tensor]:
    return [t.clone() for t in f.stream_state_tensors()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_a_known_future_input_cuts_the_error_by_more_than_half():
    y, X = _driven(1300)
    errors = {}
    for use_x in (False, True):
        f = AarenForecaster(**{**TINY, "max_epochs": 10})
        f.fit(y[:1100], X=X[:1100] if use_x else None)
        pred = f.predict(fh=[1, 2, 3, 4], X=X[1100:1104] if use_x else None).to_numpy()
        squared = [(pred - y[1100:1104].to_numpy()) ** 2]
        for t in range(1100, 1296):  # stream on, scoring every forecast
            f.partial_update(y[t : t + 1], X=X[t : t + 1] if use_x else None)
            pred = f.predict(fh=[1, 2, 3, 4], X=X[t + 1 : t + 5] if use_x else None).to_numpy()
            squared.append((pred - y[t + 1 : t + 5].to_numpy()) ** 2)
        errors[use_x] = float(np.mean(squared))
    assert errors[True] < 0.5 * errors[False], errors


def test_streaming_with_covariates_does_not_depend_on_chunking():
    y, X = _driven(200)
    params = {**TINY, "past_covariates": ["w"], "interval_calibration": 0.05}
    chunked = AarenForecaster(**params).fit(y[:120], X=X[:120])
    one_call = AarenForecaster(**params).fit(y[:120], X=X[:120])
    one_call.partial_update(y[120:], X=X[120:])
    for start, stop in [(120, 121), (121, 150), (150, 200)]:
        chunked.partial_update(y[start:stop], X=X[start:stop])
    future = X[200:204] if len(X) > 200 else None
    future = pd.DataFrame({"u": [0.1, -0.2, 0.3, 0.0]}, index=range(200, 204)) if future is None else future
    np.testing.assert_allclose(
        chunked.predict_interval(fh=[1, 2, 3, 4], X=future, coverage=0.9).to_numpy(),
        one_call.predict_interval(fh=[1, 2, 3, 4], X=future, coverage=0.9).to_numpy(),
        atol=1e-4,
        rtol=ATOL,
    )
    torch.testing.assert_close(chunked.engine_.calibration.levels, one_call.engine_.calibration.levels)


def test_streamed_forecast_equals_encoding_the_whole_series_with_its_covariates():
    y, X = _driven(150)
    f = AarenForecaster(**TINY).fit(y[:100], X=X[:100])
    for t in range(100, 150, 7):
        f.partial_update(y[t : t + 7], X=X[t : t + 7])
    future = pd.DataFrame({"u": [0.5, -1.0, 0.0, 2.0], "w": 0.0}, index=range(150, 154))
    streamed = f.predict(fh=[1, 2, 3, 4], X=future).to_numpy()
    module = f.net_.module_
    mean, scale = f.engine_.mean[0], f.engine_.scale[0]
    values = np.concatenate([y.to_numpy()[:, None], X.to_numpy()], axis=1)
    x = torch.as_tensor((values - mean) / scale, dtype=torch.float32)[None]
    future_z = (future[["u", "w"]].to_numpy() - mean[1:]) / scale[1:]  # both are future-known here
    with torch.no_grad():
        out = module(x, last_only=True, future=torch.as_tensor(future_z, dtype=torch.float32)[None, None])
    direct = out.loc[0, 0, :, 0].numpy() * scale[0] + mean[0]
    np.testing.assert_allclose(streamed, direct, atol=1e-4, rtol=1e-5)


def test_windows_with_their_covariates_forecast_as_the_stream_does():
    # predict_windows encodes each history from scratch with its covariates over the window and the
    # future-known ones at the forecast steps (the past-only one's values there are ignored)
    y, X = _driven(150)
    f = AarenForecaster(**TINY, past_covariates=["w"]).fit(y[:100], X=X[:100])
    f.partial_update(y[100:150], X=X[100:150])
    future = pd.DataFrame({"u": [0.5, -1.0, 0.0, 2.0], "w": np.nan}, index=range(150, 154))
    streamed = f.predict(fh=[1, 2, 3, 4], X=future).to_numpy()
    covariates = pd.concat([X, future]).to_numpy().copy()
    windows = np.stack([y.to_numpy()[:, None], y.to_numpy()[:, None] + 1.0])
    both = f.predict_windows(windows, X=np.stack([covariates, covariates]))
    np.testing.assert_allclose(both[0, :, 0], streamed, rtol=1e-5, atol=1e-4)
    assert not np.allclose(both[1], both[0])
    changed = covariates.copy()
    changed[150:, 0] += 1.0  # the future-known input at the forecast steps moves the forecast
    moved = f.predict_windows(windows[:1], X=changed[None])[0]
    effect = f.engine_.future_effect(np.array([0]), np.ones((1, 4, 1)), np.arange(4))[0]
    effect -= f.engine_.future_effect(np.array([0]), np.zeros((1, 4, 1)), np.arange(4))[0]
    np.testing.assert_allclose(moved - both[0], effect, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="X is required"):
        f.predict_windows(windows)
    with pytest.raises(ValueError, match="X must have shape"):
        f.predict_windows(windows, X=np.stack([covariates, covariates])[:, :-1])
    covariates[151, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        f.predict_windows(windows[:1], X=covariates[None])
    plain = AarenForecaster(**TINY).fit(y[:100])
    with pytest.raises(ValueError, match="fitted without covariates"):
        plain.predict_windows(windows, X=np.stack([covariates, covariates]))


def test_stream_forecasts_with_covariates_are_the_forecasts_of_each_update():
    y, X = _driven(160)
    f = AarenForecaster(**TINY, past_covariates=["w"]).fit(y[:100], X=X[:100])
    ahead = X.iloc[100:154]  # y's 50 times, then the horizon after them
    all_at_once = f.stream_forecasts(y[100:150], X=ahead)
    assert all_at_once.shape == (50, 4, 1) and f.n_seen_ == 100  # the stream has not moved
    for i in (0, 17, 49):
        step = AarenForecaster(**TINY, past_covariates=["w"]).fit(y[:100], X=X[:100])
        step.partial_update(y[100 : 101 + i], X=X.iloc[100 : 101 + i])
        expected = step.predict(fh=[1, 2, 3, 4], X=X.iloc[101 + i : 105 + i]).to_numpy()
        np.testing.assert_allclose(all_at_once[i, :, 0], expected, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="X is required"):
        f.stream_forecasts(y[100:150])
    with pytest.raises(ValueError, match="len\\(y\\) \\+ horizon_"):
        f.stream_forecasts(y[100:150], X=X.iloc[100:150])
    with pytest.raises(ValueError, match="at y's times"):
        f.stream_forecasts(y[100:150], X=X.iloc[101:155])


def test_past_covariates_are_not_needed_for_the_horizon():
    y, X = _driven(120)
    f = AarenForecaster(**TINY, past_covariates=["w"]).fit(y, X=X)
    assert list(f.exog_columns_) == ["u", "w"] and f.n_future_ == 1
    future = pd.DataFrame({"u": [0.0, 1.0]}, index=[120, 121])
    assert f.predict(fh=[1, 2], X=future).shape == (2,)
    with pytest.raises(ValueError, match="past_covariates"):
        AarenForecaster(**TINY, past_covariates=["nope"]).fit(y, X=X)


@pytest.mark.parametrize(
    ("future", "message"),
    [
        (None, "X is required"),
        (pd.DataFrame({"w": [0.0] * 4}, index=range(120, 124)), r"lacks the column\(s\) \['u'\]"),
        (pd.DataFrame({"u": [0.0] * 3, "w": 0.0}, index=range(120, 123)), "no row at 123"),
        (pd.DataFrame({"u": [0.0, np.nan, 0.0, 0.0], "w": 0.0}, index=range(120, 124)), "non-finite"),
    ],
)
def test_predict_needs_the_future_covariates_of_the_horizon(future, message):
    y, X = _driven(120)
    f = AarenForecaster(**TINY).fit(y, X=X)
    before = _snapshot(f)
    with pytest.raises(ValueError, match=message):
        f.predict(fh=[1, 2, 3, 4], X=future)
    assert _same(before, _snapshot(f))


@pytest.mark.parametrize(
    ("bad_x", "message"),
    [
        (None, "X is required"),
        (pd.DataFrame({"u": [0.0] * 5}, index=range(120, 125)), r"lacks the column\(s\) \['w'\]"),
        (pd.DataFrame({"u": 0.0, "w": [0.0, 0.0, np.nan, 0.0, 0.0]}, index=range(120, 125)), "non-finite"),
        (pd.DataFrame({"u": 0.0, "w": [0.0] * 4}, index=range(120, 124)), "no row at 124"),
        (
            pd.DataFrame({"u": ["a"] * 5, "w": 0.0}, index=range(120, 125)),
            r"X's column 'u' has dtype",
        ),
    ],
)
def test_bad_covariates_in_updates_are_rejected_and_change_nothing(bad_x, message):
    y, X = _driven(125)
    f = AarenForecaster(**TINY).fit(y[:120], X=X[:120])
    before, cutoff = _snapshot(f), f.cutoff
    error = TypeError if "dtype" in message else ValueError
    with pytest.raises(error, match=message):
        f.partial_update(y[120:], X=bad_x)
    with pytest.raises(error, match=message):
        f.update(y[120:], X=bad_x, update_params=False)
    assert _same(before, _snapshot(f)) and f.cutoff.equals(cutoff)


def test_without_covariates_in_fit_x_is_ignored():
    y, X = _driven(100)
    f = AarenForecaster(**TINY).fit(y)
    assert f.exog_columns_ is None and f.n_exog_ == 0
    np.testing.assert_array_equal(
        f.predict(fh=[1, 2], X=X.iloc[:2].set_axis([100, 101])).to_numpy(), f.predict(fh=[1, 2]).to_numpy()
    )


def test_array_paths_with_covariates_equal_the_pandas_paths():
    y, X = _driven(140)
    pandas_f = AarenForecaster(**TINY).fit(y[:120], X=X[:120])
    array_f = AarenForecaster(**TINY).fit(y[:120], X=X[:120])
    pandas_f.partial_update(y[120:130], X=X[120:130])
    array_f.partial_update_array(y.to_numpy()[None, 120:130, None], X=X.to_numpy()[None, 120:130])
    future = X.iloc[130:134]
    np.testing.assert_allclose(
        array_f.predict_array(X=future[["u", "w"]].to_numpy()[None])[0, :, 0],
        pandas_f.predict(fh=[1, 2, 3, 4], X=future).to_numpy(),
        atol=ATOL,
    )
    # (u and w are both future-known here: the array holds them in the order of exog_columns_)
    assert list(array_f.exog_columns_) == ["u", "w"]
    with pytest.raises(ValueError, match="shape"):
        array_f.partial_update_array(np.zeros((1, 1, 1)), X=np.zeros((1, 1, 3)))


def test_panel_with_covariates_and_a_new_series():
    rng = np.random.default_rng(1)
    frames_y, frames_x = [], []
    for name, n in (("a", 90), ("b", 70)):
        idx = pd.MultiIndex.from_product([[name], range(n)], names=["series", "time"])
        u = rng.normal(size=n)
        frames_y.append(pd.DataFrame({"y": 2.0 * u + rng.normal(0, 0.1, n)}, index=idx))
        frames_x.append(pd.DataFrame({"u": u}, index=idx))
    y, X = pd.concat(frames_y), pd.concat(frames_x)
    f = AarenForecaster(**TINY).fit(y, X=X)
    future = pd.DataFrame(
        {"u": 0.0},
        index=pd.MultiIndex.from_tuples(
            [("a", 90 + k) for k in range(4)] + [("b", 70 + k) for k in range(4)]
        ),
    )
    assert f.predict(fh=[1, 2, 3, 4], X=future).shape == (8, 1)
    with pytest.raises(ValueError, match="no rows for series 'b'"):
        f.predict(fh=[1], X=future.loc[["a"]])
    new_idx = pd.MultiIndex.from_product([["c"], range(5)], names=["series", "time"])
    f.partial_update(
        pd.DataFrame({"y": np.arange(5.0)}, index=new_idx), X=pd.DataFrame({"u": 1.0}, index=new_idx)
    )
    assert f.series_ids_ == ["a", "b", "c"]
    # the window paths belong to a single series (each is scaled with its statistics)
    with pytest.raises(ValueError, match="single series, not a panel"):
        f.predict_windows(np.zeros((1, 12, 1)), X=np.zeros((1, 16, 1)))
    with pytest.raises(ValueError, match="single series, not a panel"):
        f.stream_forecasts(y.loc[["a"]])


def test_save_load_keeps_the_covariates(tmp_path):
    y, X = _driven(130)
    f = AarenForecaster(**TINY, past_covariates=["w"]).fit(y[:120], X=X[:120])
    loaded = AarenForecaster.load(f.save(tmp_path / "with_x"))
    assert list(loaded.exog_columns_) == ["u", "w"] and loaded.n_future_ == 1
    for model in (f, loaded):
        model.partial_update(y[120:125], X=X[120:125])
    future = X[["u"]].iloc[125:129]
    pd.testing.assert_frame_equal(
        loaded.predict_interval(fh=[1, 2, 3, 4], X=future), f.predict_interval(fh=[1, 2, 3, 4], X=future)
    )


# ---------------------------------------------------------------------------- calendar covariates
def test_calendar_covariates_encode_cycles_by_sine_and_cosine():
    hours = pd.date_range("2024-01-01", periods=3, freq="6h")
    X = calendar_covariates(hours, ["hour_of_day"])
    np.testing.assert_allclose(X.to_numpy(), [[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]], atol=1e-12)
    week = calendar_covariates(pd.period_range("2024-01-01", periods=8, freq="D"), ["day_of_week"])
    np.testing.assert_allclose(week.iloc[0], week.iloc[7])  # a week later: the same phase
    assert list(week.columns) == ["day_of_week_sin", "day_of_week_cos"]
    panel = pd.MultiIndex.from_product([["a", "b"], hours])
    assert calendar_covariates(panel).index.equals(panel)
    with pytest.raises(TypeError, match="DatetimeIndex or PeriodIndex"):
        calendar_covariates(pd.RangeIndex(3))
    with pytest.raises(ValueError, match="unknown calendar feature"):
        calendar_covariates(hours, ["fortnight"])
    # harmonics: the k-th sine and cosine of the phase; with 12, any effect per hour is linear in them
    day = pd.date_range("2024-01-01", periods=48, freq="h")
    X = calendar_covariates(day, ["hour_of_day"], harmonics=12)
    names = ["hour_of_day_sin", "hour_of_day_cos", "hour_of_day_sin2", "hour_of_day_cos2"]
    assert list(X.columns[:4]) == names
    np.testing.assert_allclose(X["hour_of_day_cos3"], np.cos(3 * 2 * np.pi * day.hour / 24), atol=1e-12)
    per_hour = np.random.default_rng(0).normal(size=24)[day.hour]
    design = np.column_stack([np.ones(48), X.to_numpy()])
    fitted = design @ np.linalg.lstsq(design, per_hour, rcond=None)[0]
    np.testing.assert_allclose(fitted, per_hour, atol=1e-9)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="harmonics"):
            calendar_covariates(day, ["hour_of_day"], harmonics=bad)


# ---------------------------------------------------------------------------- static covariates
def _stores(n: int = 120, ids: tuple[str, ...] = ("a", "b", "c", "d")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A panel whose seasonal amplitude is a per-series feature ``size``, with a varying input ``u``."""
    rng = np.random.default_rng(1)
    ys, xs = {}, {}
    for k, series_id in enumerate(ids):
        size = float(k + 1)
        t = np.arange(n)
        u = rng.normal(size=n)
        ys[series_id] = pd.DataFrame({"y": 50 + size * np.sin(2 * np.pi * t / 12) + 0.1 * rng.normal(size=n)})
        xs[series_id] = pd.DataFrame({"size": np.full(n, size), "u": u})
    return pd.concat(ys, names=["store", "time"]), pd.concat(xs, names=["store", "time"])


def test_static_covariates_are_standardised_over_the_panel_and_reach_the_forecast(tmp_path):
    y, X = _stores()
    # (the last value: a forecast the network beats here; the networks alone, as the linear map of each
    # window does not read the covariates)
    settings = {**TINY, "max_epochs": 4, "sp": 1, "skip_steps": ["linear_share"]}
    f = AarenForecaster(**settings, past_covariates=["u"], static_covariates=["size"])
    f.fit(y, X=X)
    assert list(f.exog_columns_) == ["u", "size"] and f.n_future_ == 0
    np.testing.assert_allclose(f.static_mean_, [2.5])  # sizes 1..4, each series weighted once
    np.testing.assert_allclose(f.static_scale_, [np.std([1.0, 2.0, 3.0, 4.0])])
    column = f.n_channels_ + 1
    np.testing.assert_allclose(f.engine_.mean[:, column], 2.5)  # not each series' own (constant) value
    pred = f.predict(fh=[1, 2])  # no X needed: nothing in it is known ahead
    # two new stores with the same history and inputs, of different sizes: the size reaches the forecast
    new_y = pd.concat({"small": y.loc["a"], "large": y.loc["a"]}, names=["store", "time"])
    new_x = pd.concat(
        {"small": X.loc["a"].assign(size=1.0), "large": X.loc["a"].assign(size=4.0)}, names=["store", "time"]
    )
    f.partial_update(new_y, X=new_x)
    assert not np.allclose(f.predict(fh=[1, 2]).loc["small"], f.predict(fh=[1, 2]).loc["large"])
    f.save(tmp_path / "stores.zip")
    loaded = AarenForecaster.load(tmp_path / "stores.zip")
    np.testing.assert_allclose(loaded.static_mean_, f.static_mean_)
    np.testing.assert_allclose(loaded.predict(fh=[1, 2]).to_numpy(), f.predict(fh=[1, 2]).to_numpy())
    assert pred.index.get_level_values(0).unique().tolist() == ["a", "b", "c", "d"]


def test_a_static_covariate_that_varies_within_a_series_is_refused_by_name():
    y, X = _stores()
    X.loc[("c", 7), "size"] = 9.0
    f = AarenForecaster(**TINY, past_covariates=["u"], static_covariates=["size"])
    with pytest.raises(ValueError, match=r"static_covariates \['size'\] vary in series 'c'"):
        f.fit(y, X=X)
