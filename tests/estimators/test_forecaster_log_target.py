"""Positive series forecast on the log scale (``target_transform``): which channels, exact streaming,
the maps back, refusals that change nothing, and persistence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtri

from aaren_ts import AarenForecaster
from aaren_ts.utils.log_target import (
    NonPositiveValueWarning,
    changes_grow_with_level,
    choose_log_channels,
    first_non_positive,
    from_log,
    to_log,
)

TINY = {
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 32,
    "context_length": 8,
    "max_epochs": 2,
    "horizon": 4,
    "sp": 4,
    "device": "cpu",
    "random_state": 0,
    "target_transform": "auto",
}
RTOL = 1e-5


def _multiplicative(n: int, level: float, seed: int) -> np.ndarray:
    """A positive quarterly series whose seasonal swings grow with its level (as tourism's do)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    trend = level * np.exp(0.01 * t)
    return trend * (1 + 0.6 * np.sin(2 * np.pi * t / 4)) * np.exp(rng.normal(0, 0.05, n))


def _panel(n: int = 60) -> pd.DataFrame:
    """Two positive series and one that crosses zero (kept on its own scale by ``"auto"``)."""
    rng = np.random.default_rng(3)
    series = {
        "pos_a": _multiplicative(n, 100.0, 0),
        "signed": np.sin(np.arange(n) / 2.0) + rng.normal(0, 0.1, n),
        "pos_b": _multiplicative(n, 5.0, 1),
    }
    return pd.concat(
        {k: pd.DataFrame({"y": v}, index=pd.RangeIndex(n)) for k, v in series.items()},
        names=["series", "time"],
    )


def _time_slice(y: pd.DataFrame, start: int, stop: int) -> pd.DataFrame:
    t = y.index.get_level_values(1)
    return y[(t >= start) & (t < stop)]


def test_the_maps_are_inverse_and_only_touch_log_channels():
    values = np.array([[1.0, -2.0, 7.0], [np.nan, 3.0, 0.5]])  # two channels, then a covariate
    log = np.array([True, False])
    encoded = to_log(values, log)
    np.testing.assert_array_equal(encoded[:, 1:], values[:, 1:])
    np.testing.assert_allclose(encoded[0, 0], 0.0)
    assert np.isnan(encoded[1, 0])
    np.testing.assert_allclose(from_log(encoded[:, :2], log), values[:, :2])
    assert first_non_positive(values, log) is None
    assert first_non_positive(values, np.array([True, True])) == (0, 1)
    parts = [values, np.array([[2.0, 1.0, -1.0]]), np.full((2, 3), np.nan)]
    assert not choose_log_channels(parts, 2, None).any() and choose_log_channels(parts, 2, "log").all()


def test_auto_takes_logs_where_changes_grow_with_the_level():
    rng = np.random.default_rng(0)
    growing = _multiplicative(200, 100.0, 0)  # swings proportional to the level
    walk = 20.0 + 0.4 * np.arange(200) + rng.normal(0, 1.0, 200)  # changes of one size from 20 to 100
    signed = rng.normal(0, 1.0, 200)
    short = np.array([5.0, np.nan, 7.0])  # no two consecutive observations
    values = np.stack([growing, walk, signed], axis=1)  # (the middle one: additive)
    assert changes_grow_with_level(values, 3, lag=4).tolist() == [True, False, False]
    assert not changes_grow_with_level(short[:, None], 1)[0]
    # a level that moves by a factor of ten: its steps, one size on the log scale, pass (lag 1)
    trend = np.exp(np.linspace(0.0, np.log(10.0), 200) + rng.normal(0, 0.05, 200))
    assert changes_grow_with_level(trend[:, None], 1)[0]
    chosen = choose_log_channels([values, np.full((2, 3), np.nan)], 3, "auto", lag=4)
    assert chosen.tolist() == [[True, False, False], [False, False, False]]


def test_auto_takes_logs_of_positive_series_only_and_predicts_in_their_units():
    y = _panel()
    f = AarenForecaster(**TINY).fit(y)
    assert f.log_target_["y"].tolist() == [True, False, True]
    pred = f.predict(fh=[1, 2, 3, 4])
    # the point forecast of a log-scale channel is the exponential of the network's, on each series' units
    loc = f.engine_.predict()
    for row, name in enumerate(["pos_a", "signed", "pos_b"]):
        expected = np.exp(loc[row, :, 0]) if row != 1 else loc[row, :, 0]
        np.testing.assert_allclose(pred.xs(name, level=0)["y"].to_numpy(), expected, rtol=1e-12)
    assert (pred.xs("pos_b", level=0)["y"] > 0).all()


def test_quantiles_map_exactly_and_the_variance_is_the_mapped_one_sigma_interval():
    y = _panel()
    f = AarenForecaster(**TINY, interval_calibration=None).fit(y)
    fh = [1, 2, 3, 4]
    q = f.predict_quantiles(fh=fh, alpha=[0.025, 0.5, 0.975])
    log_loc = np.log(f.predict(fh=fh).xs("pos_a", level=0)["y"].to_numpy())
    std = f.engine_.params[0, :, 0, 0].double().numpy() * f.scale_.loc["pos_a", "y"]  # log-scale std
    pos_a = q.xs("pos_a", level=0).to_numpy()
    np.testing.assert_allclose(pos_a[:, 0], np.exp(log_loc - ndtri(0.975) * std), rtol=1e-6)
    np.testing.assert_allclose(pos_a[:, 1], np.exp(log_loc), rtol=1e-9)  # the median: the point forecast
    np.testing.assert_allclose(pos_a[:, 2], np.exp(log_loc + ndtri(0.975) * std), rtol=1e-6)
    var = f.predict_var(fh=fh).xs("pos_a", level=0)["y"].to_numpy()
    np.testing.assert_allclose(np.sqrt(var), np.exp(log_loc) * np.sinh(std), rtol=1e-6)
    assert (pos_a[:, 2] - pos_a[:, 1] > pos_a[:, 1] - pos_a[:, 0]).all()  # skewed up, as a positive series


def test_streaming_on_the_log_scale_is_exact_whatever_the_chunks():
    y = _panel(80)
    fit_part = _time_slice(y, 0, 50)
    whole = AarenForecaster(**TINY).fit(fit_part)
    chunked = AarenForecaster(**TINY).fit(fit_part)
    whole.update(_time_slice(y, 50, 80), update_params=False)
    for start in range(50, 80, 7):
        chunked.update(_time_slice(y, start, min(start + 7, 80)), update_params=False)
    for method in ("predict", "predict_var"):
        a = getattr(whole, method)(fh=[1, 2, 3, 4]).to_numpy()
        b = getattr(chunked, method)(fh=[1, 2, 3, 4]).to_numpy()
        np.testing.assert_allclose(b, a, rtol=RTOL)
    arrays = AarenForecaster(**TINY).fit(fit_part)
    rest = _time_slice(y, 50, 80)["y"].to_numpy().reshape(3, 30)[:, :, None]
    for t in range(30):
        arrays.partial_update_array(rest[:, t])
    np.testing.assert_allclose(arrays.predict_array(), whole.predict_array(), rtol=RTOL)
    np.testing.assert_allclose(
        arrays.predict_quantiles_array([0.1, 0.9]), whole.predict_quantiles_array([0.1, 0.9]), rtol=RTOL
    )


def test_auto_takes_a_later_non_positive_value_as_missing_with_a_warning():
    y = _panel(60)
    f = AarenForecaster(**TINY).fit(_time_slice(y, 0, 50))
    gap = AarenForecaster(**TINY).fit(_time_slice(y, 0, 50))
    bad = _time_slice(y, 50, 52).copy()
    bad.loc[("pos_b", 51), "y"] = 0.0
    bad.loc[("signed", 51), "y"] = 0.0  # the signed series stays on its own scale: an ordinary value
    missing = bad.copy()
    missing.loc[("pos_b", 51), "y"] = np.nan
    message = r"update: series 'pos_b', channel 'y', holds a value at or below zero.*missing"
    with pytest.warns(NonPositiveValueWarning, match=message):
        f.update(bad, update_params=False)
    gap.update(missing, update_params=False)
    with pytest.warns(NonPositiveValueWarning, match=r"series 'pos_a', channel 'y', holds a value at or"):
        f.partial_update_array(np.array([[-1.0], [0.0], [2.0]]))
    gap.partial_update_array(np.array([[np.nan], [0.0], [2.0]]))
    for method in ("predict", "predict_var"):
        pd.testing.assert_frame_equal(getattr(f, method)(fh=[1, 2]), getattr(gap, method)(fh=[1, 2]))
    assert (f.predict(fh=[1, 2]).loc[["pos_a", "pos_b"]] > 0).all().all()


def test_log_refuses_a_later_non_positive_value_and_changes_nothing():
    y = _panel(60).drop(index="signed", level=0)
    f = AarenForecaster(**{**TINY, "target_transform": "log"}).fit(_time_slice(y, 0, 50))
    before = f.predict(fh=[1, 2])
    bad = _time_slice(y, 50, 52).copy()
    bad.loc[("pos_b", 51), "y"] = 0.0
    with pytest.raises(ValueError, match=r"'pos_b', channel 'y', holds 0 at 51.*target_transform='log'"):
        f.update(bad, update_params=False)
    with pytest.raises(ValueError, match=r"series 'pos_a', channel 'y', holds -1 at step 0.*log scale"):
        f.partial_update_array(np.array([[-1.0], [2.0]]))
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), before)
    assert list(f.n_seen_) == [50, 50]


def test_log_refuses_a_non_positive_series_in_fit_naming_it():
    with pytest.raises(
        ValueError, match=r"fit: series 'signed', channel 'y', holds .*target_transform='log'"
    ):
        AarenForecaster(**{**TINY, "target_transform": "log"}).fit(_panel())
    with pytest.raises(ValueError, match="target_transform"):
        AarenForecaster(**{**TINY, "target_transform": "boxcox"}).fit(_panel())


def test_a_new_series_chooses_its_own_scale_and_none_keeps_every_series_on_its_own():
    y = _panel(60)
    f = AarenForecaster(**TINY).fit(_time_slice(y, 0, 50))
    new = pd.concat(
        {"pos_c": pd.DataFrame({"y": _multiplicative(30, 20.0, 5)}, index=pd.RangeIndex(30))},
        names=["series", "time"],
    )
    f.update(new, update_params=False)
    assert f.log_target_.loc["pos_c", "y"]
    plain = AarenForecaster(**{**TINY, "target_transform": None}).fit(y)
    assert not plain.log_target_.to_numpy().any()
    np.testing.assert_allclose(
        plain.mean_["y"].to_numpy(), y.groupby(level=0, sort=False)["y"].mean(), rtol=0.2
    )


def test_the_log_scale_survives_save_and_load(tmp_path):
    y = _panel(60)
    f = AarenForecaster(**TINY).fit(_time_slice(y, 0, 50))
    f.save(tmp_path / "log.zip")
    g = AarenForecaster.load(tmp_path / "log.zip")
    assert g.log_target_.equals(f.log_target_)
    for est in (f, g):
        est.update(_time_slice(y, 50, 60), update_params=False)
    pd.testing.assert_frame_equal(g.predict(fh=[1, 2]), f.predict(fh=[1, 2]))
    with pytest.warns(NonPositiveValueWarning, match="log scale"):
        g.partial_update_array(np.array([[0.0], [1.0], [1.0]]))


def test_a_single_series_and_its_windows_on_the_log_scale():
    y = pd.Series(_multiplicative(60, 50.0, 2))
    # ("log": two epochs beat the naive forecast nowhere, so "auto" would move to the own scale)
    f = AarenForecaster(**{**TINY, "target_transform": "log"}).fit(y)
    assert f.log_target_.tolist() == [True]
    windows = np.stack([y.to_numpy()[k : k + 20] for k in range(0, 40, 10)])[..., None]
    loc, std = f.predict_windows(windows, return_std=True)
    assert (loc > 0).all() and (std > 0).all()
    streamed = f.stream_forecasts(pd.Series(_multiplicative(70, 50.0, 2)[60:], index=range(60, 70)))
    f.update(pd.Series(_multiplicative(70, 50.0, 2)[60:], index=range(60, 70)), update_params=False)
    np.testing.assert_allclose(streamed[-1], f.predict_array()[0], rtol=RTOL)
    with pytest.raises(ValueError, match="log scale"):
        f.predict_windows(-windows)


@pytest.mark.parametrize("mode", ["auto", "log"])
def test_auto_tries_the_own_scale_where_the_log_scale_beats_the_naive_forecast_nowhere(mode, monkeypatch):
    from aaren_ts.estimators._forecast_decisions import ValidationTails
    from aaren_ts.nn.forecast_training import HeldOutErrors

    scales = []
    judge = ValidationTails.judge_against_naive

    def spy(self, module, loss, log_scale=None, labels=None):
        scales.append(log_scale.copy())
        return judge(self, module, loss, log_scale, labels)

    monkeypatch.setattr(ValidationTails, "judge_against_naive", spy)
    # the network loses everywhere (so it becomes the naive forecast), whatever the scale
    monkeypatch.setattr(HeldOutErrors, "falls_back", lambda self: np.ones(self.error.shape, dtype=bool))
    y = pd.Series(_multiplicative(80, 50.0, 4))
    f = AarenForecaster(**{**TINY, "target_transform": mode}).fit(y)
    assert (scales[0] > 0).all()  # first the log scale
    if mode == "auto":  # then the series' own scale, which it keeps
        assert len(scales) == 2 and not (scales[1] > 0).any()
        assert f.log_target_.tolist() == [False]
    else:  # "log" insists on the log scale
        assert len(scales) == 1 and f.log_target_.tolist() == [True]
    fh = np.arange(1, TINY["horizon"] + 1)
    np.testing.assert_allclose(f.predict(fh=fh).to_numpy().ravel(), y.to_numpy()[-4:], rtol=1e-4)
