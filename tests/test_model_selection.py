"""``aaren_ts.model_selection.cross_validation``: rolling-origin backtests over a series or a panel."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sktime.forecasting.naive import NaiveForecaster

from aaren_ts import AarenForecaster
from aaren_ts.model_selection import cross_validation

TINY = AarenForecaster.get_test_params()[0]


# sktime's notice, at every construction of one of its forecasters, that a default will change
pytestmark = pytest.mark.filterwarnings("ignore:The default of config ``remember_data``:FutureWarning")


def _panel(lengths=(60, 50), freq="h") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frames = []
    for k, n in enumerate(lengths):
        time = pd.date_range("2024-01-01", periods=n, freq=freq)
        values = np.sin(np.arange(n) / 3) + 0.1 * rng.standard_normal(n) + k
        index = pd.MultiIndex.from_arrays([[f"s{k}"] * n, time], names=["unique_id", "ds"])
        frames.append(pd.DataFrame({"v": values}, index=index))
    return pd.concat(frames)


def test_single_series_windows_and_truth() -> None:
    y = pd.Series(np.arange(30.0) ** 1.5, name="load")
    cv = cross_validation(NaiveForecaster(), y, n_windows=3, fh=4, step_length=2)
    assert list(cv.columns) == ["window", "cutoff", "time", "y", "y_pred"]
    assert len(cv) == 3 * 4
    # the last window ends with the series; earlier ones start step_length earlier each
    assert cv.groupby("window")["cutoff"].first().tolist() == [21, 23, 25]
    assert cv["time"].iloc[-1] == 29
    np.testing.assert_array_equal(cv["y"], y.loc[cv["time"]].to_numpy())
    # refit=False streams the observations between cutoffs: the naive forecast is the last one seen
    np.testing.assert_array_equal(cv["y_pred"], y.loc[cv["cutoff"]].to_numpy())


def test_refit_fits_at_every_cutoff() -> None:
    y = pd.Series(np.arange(30.0) ** 1.5)
    cv = cross_validation(NaiveForecaster(strategy="mean"), y, n_windows=2, fh=[1, 3], refit=True)
    assert cv["cutoff"].tolist() == [23, 23, 26, 26]  # step_length defaults to max(fh) = 3
    assert cv["time"].tolist() == [24, 26, 27, 29]
    means = [y.iloc[:24].mean(), y.iloc[:27].mean()]
    np.testing.assert_allclose(cv["y_pred"], np.repeat(means, 2))


def test_the_forecaster_passed_is_left_unfitted() -> None:
    f = NaiveForecaster()
    cross_validation(f, pd.Series(np.arange(20.0)), n_windows=2, fh=2)
    assert not f.is_fitted


@pytest.mark.parametrize("refit", [False, True])
def test_aaren_panel_datetime(refit: bool) -> None:
    y = _panel()
    cv = cross_validation(
        AarenForecaster(**TINY), y, n_windows=3, fh=4, step_length=2, refit=refit, coverage=0.8
    )
    assert list(cv.columns) == [
        "unique_id",
        "window",
        "cutoff",
        "time",
        "y",
        "y_pred",
        "lower_0.8",
        "upper_0.8",
    ]
    assert len(cv) == 2 * 3 * 4
    truth = y["v"].loc[list(zip(cv["unique_id"], cv["time"], strict=True))].to_numpy()
    np.testing.assert_array_equal(cv["y"], truth)
    # every series' windows are placed from its own end (the series differ in length)
    for sid, part in cv.groupby("unique_id"):
        assert part["time"].max() == y.loc[sid].index.max()
        assert (part["time"] > part["cutoff"]).all()
        assert part.groupby("window")["cutoff"].first().diff().dropna().eq(pd.Timedelta(hours=2)).all()
    assert np.isfinite(cv["y_pred"]).all()
    assert (cv["lower_0.8"] <= cv["y_pred"]).all() and (cv["y_pred"] <= cv["upper_0.8"]).all()


def test_aaren_streaming_equals_fit_then_update() -> None:
    """refit=False is one fit before the first cutoff, then update(update_params=False) per window."""
    y = _panel(lengths=(40, 40))
    cv = cross_validation(AarenForecaster(**TINY), y, n_windows=2, fh=3)
    f = AarenForecaster(**TINY)
    first = y.groupby(level=0).head(34)
    f.fit(first, fh=[1, 2, 3])
    f.update(y.groupby(level=0).head(37).drop(first.index), update_params=False)
    expected = f.predict(fh=[1, 2, 3])
    got = cv[cv["window"] == 1].set_index(["unique_id", "time"])["y_pred"]
    np.testing.assert_allclose(got.to_numpy(), expected["v"].to_numpy(), rtol=1e-5)


def test_multivariate_integer_index_and_covariates() -> None:
    n = 40
    y = pd.DataFrame({"a": np.sin(np.arange(n) / 4), "b": np.cos(np.arange(n) / 5)})
    X = pd.DataFrame({"x": np.arange(n + 5) % 7 / 7.0})  # X may reach beyond y
    cv = cross_validation(AarenForecaster(**TINY), y, X, n_windows=2, fh=3)
    assert list(cv.columns[:4]) == ["channel", "window", "cutoff", "time"]
    assert len(cv) == 2 * 2 * 3
    for channel, part in cv.groupby("channel"):
        np.testing.assert_array_equal(part["y"], y[channel].loc[part["time"]].to_numpy())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_windows": 0, "fh": 2}, ValueError, "n_windows must be at least 1"),
        ({"n_windows": 2.0, "fh": 2}, TypeError, "n_windows must be an int"),
        ({"n_windows": 2, "fh": 0}, ValueError, "fh must hold steps of 1 or more"),
        ({"n_windows": 2, "fh": [1, -1]}, ValueError, "fh must hold steps of 1 or more"),
        ({"n_windows": 2, "fh": "2"}, TypeError, "fh must be an int"),
        ({"n_windows": 2, "fh": 2, "step_length": 0}, ValueError, "step_length must be at least 1"),
        ({"n_windows": 2, "fh": 2, "refit": "yes"}, TypeError, "refit must be True or False"),
        ({"n_windows": 2, "fh": 2, "coverage": 1.5}, ValueError, r"coverage must be a number in \(0, 1\)"),
        ({"n_windows": 2, "fh": 2, "coverage": []}, ValueError, "coverage is empty"),
        ({"n_windows": 9, "fh": 6}, ValueError, "series 's1' has 50 observations, too few"),
    ],
)
def test_bad_arguments(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        cross_validation(NaiveForecaster(), _panel(), **kwargs)


def test_bad_data() -> None:
    with pytest.raises(TypeError, match="y must be a pandas Series or DataFrame"):
        cross_validation(NaiveForecaster(), np.arange(10.0), n_windows=1, fh=1)
    y = pd.Series(np.arange(10.0))
    with pytest.raises(ValueError, match="X lacks 2 rows of y's index"):
        cross_validation(NaiveForecaster(), y, pd.DataFrame({"x": np.arange(8.0)}), n_windows=1, fh=1)
    with pytest.raises(ValueError, match="not sorted by time"):
        cross_validation(NaiveForecaster(), y.iloc[::-1], n_windows=1, fh=1)


def test_hierarchical_panel_with_an_sktime_forecaster() -> None:
    from sktime.utils._testing.hierarchical import _make_hierarchical

    y = _make_hierarchical(hierarchy_levels=(2, 2), min_timepoints=20, max_timepoints=30, random_state=0)
    cv = cross_validation(NaiveForecaster(), y, n_windows=2, fh=3, coverage=0.9)
    assert list(cv.columns[:3]) == ["h0", "h1", "window"]
    assert len(cv) == 4 * 2 * 3
    truth = y.iloc[:, 0].loc[list(zip(cv["h0"], cv["h1"], cv["time"], strict=True))]
    np.testing.assert_array_equal(cv["y"], truth.to_numpy())
    np.testing.assert_array_equal(
        cv["y_pred"], y.iloc[:, 0].loc[list(zip(cv["h0"], cv["h1"], cv["cutoff"], strict=True))]
    )
