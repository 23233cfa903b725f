"""Errors a user can act on: wrong shapes, probabilities and dtypes, and a horizon that cannot fit in
memory, each refused before any work with a message that says what is wrong and what to do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.estimators._forecast_training import memory_budget
from tests._params import TINY_FORECASTER


def _series(n: int = 60) -> pd.DataFrame:
    return pd.DataFrame({"y": 100.0 + np.random.default_rng(0).normal(size=n).cumsum()})


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    return AarenForecaster(**TINY_FORECASTER).fit(_series())


def test_a_3d_array_of_one_series_in_the_wrong_layout_says_which_layout_is_read() -> None:
    y = _series(144).to_numpy()[None]  # (1, 144, 1): one series as (n_series, n_timepoints, n_columns)
    with pytest.raises(ValueError, match=r"1 series of 1 time point\(s\) and 144 column\(s\).*numpy3D"):
        AarenForecaster(**TINY_FORECASTER).fit(y)
    AarenForecaster(**TINY_FORECASTER).fit(y.transpose(0, 2, 1))  # the layout the message asks for


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"coverage": []}, ValueError, "coverage is empty"),
        ({"coverage": "0.9"}, TypeError, "coverage must be a float or a list of floats"),
        ({"coverage": [0.9, "0.5"]}, TypeError, "holding a str"),
        ({"coverage": True}, TypeError, "holding a bool"),
    ],
)
def test_predict_interval_refuses_coverage_that_is_not_probabilities(fitted, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        fitted.predict_interval(fh=[1, 2], **kwargs)


@pytest.mark.parametrize(
    ("alpha", "error", "match"),
    [([], ValueError, "alpha is empty"), ("0.1", TypeError, "alpha must be a float or a list")],
)
def test_predict_quantiles_refuses_alpha_that_is_not_probabilities(fitted, alpha, error, match) -> None:
    with pytest.raises(error, match=match):
        fitted.predict_quantiles(fh=[1], alpha=alpha)
    assert fitted.predict_quantiles(fh=[1], alpha=np.array([0.1, 0.9])).shape == (1, 2)


def test_a_horizon_whose_calibration_cannot_fit_in_memory_is_refused_before_training() -> None:
    n_series = 16
    if 16384**2 * 2 * 4 * n_series <= memory_budget():  # (a Gaussian head: mean and scale)
        pytest.skip("a machine with more than 68 GB of memory")
    est = AarenForecaster(**{**TINY_FORECASTER, "horizon": 16384})
    panel = pd.concat({f"s{k}": _series(144) for k in range(n_series)}, names=["series", "time"])
    with pytest.raises(ValueError, match=r"horizon=16384 .*2.15 GB a series.*interval_calibration=None"):
        est.fit(panel)
    assert not hasattr(est, "net_")  # refused before training


def test_a_horizon_beyond_the_bound_is_refused_before_anything_is_built() -> None:
    est = AarenForecaster(**{**TINY_FORECASTER, "horizon": 100_000})
    with pytest.raises(ValueError, match=r"horizon must be None or an integer in \[1, 16384\], got 100000"):
        est.fit(_series(144))
    assert not hasattr(est, "net_")


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        (np.array([1 + 2j, 3 + 0j]), "complex128"),
        (np.array([True, False]), "bool"),
        (np.array(["101", "102"]), "(object|str)"),
        (pd.array([101.0, 102.0], dtype=object), "object"),
    ],
)
def test_pandas_input_that_is_not_real_numbers_is_refused_and_changes_nothing(fitted, values, dtype) -> None:
    before = fitted.predict(fh=[1, 2])
    y = pd.DataFrame({"y": values}, index=[60, 61])
    with pytest.raises(TypeError, match=rf"column 'y' has dtype {dtype}; the forecaster takes real numbers"):
        fitted.partial_update(y)
    with pytest.raises(TypeError):  # (sktime's own check, before the forecaster's, for most of these)
        fitted.update(y, update_params=False)
    pd.testing.assert_frame_equal(fitted.predict(fh=[1, 2]), before)
    assert fitted.n_seen_ == 60


def test_fit_refuses_booleans() -> None:
    with pytest.raises(TypeError, match="dtype bool"):
        AarenForecaster(**TINY_FORECASTER).fit(_series() > 100.0)


@pytest.mark.parametrize("convert", [lambda X: X > 0, lambda X: X.astype(str)])
def test_the_classifier_refuses_booleans_and_text(convert) -> None:
    X = np.random.default_rng(0).normal(size=(10, 2, 8))
    clf = AarenClassifier(d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=1, random_state=0)
    clf.fit(X, np.arange(10) % 2)
    with pytest.raises(TypeError, match="booleans and text are refused"):
        clf.predict_proba(convert(X))
    frame = pd.DataFrame(
        convert(X).transpose(0, 2, 1).reshape(-1, 2),
        index=pd.MultiIndex.from_product([range(10), range(8)]),
    )
    with pytest.raises(TypeError, match="booleans and text are refused"):
        clf.predict_proba(frame)


def test_fit_on_a_series_with_no_observed_value_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"at least 2 observed \(non-NaN\) values, its series have at most 0"
    ):
        AarenForecaster(**TINY_FORECASTER).fit(_series() * np.nan)


def test_fit_on_values_whose_spread_overflows_says_to_rescale() -> None:
    with pytest.raises(ValueError, match="rescale the series"):  # (the log scale would take them)
        AarenForecaster(**TINY_FORECASTER, target_transform=None).fit(_series() * 1e298)


@pytest.mark.parametrize(
    ("column", "match"),
    [
        (np.arange(60.0).astype(object), r"column .y. has dtype object.*y\.astype\(float\)"),
        (["a"] * 60, r"column .y. has dtype str"),
        (pd.Categorical(["a", "b"] * 30), r"column 'y' has dtype category"),
    ],
    ids=["numbers-as-objects", "strings", "categorical"],
)
def test_a_column_that_does_not_hold_numbers_is_named(fitted, column, match) -> None:
    y = pd.DataFrame({"y": column})
    with pytest.raises(TypeError, match=match):
        AarenForecaster(**TINY_FORECASTER).fit(y, fh=[1, 2])
    before = fitted.predict().to_numpy().copy()
    later = pd.DataFrame({"y": column}, index=pd.RangeIndex(60, 120))
    with pytest.raises(TypeError, match=match):
        fitted.update(later, update_params=False)
    np.testing.assert_array_equal(fitted.predict().to_numpy(), before)


def test_a_covariate_that_does_not_hold_numbers_is_named() -> None:
    y = _series()
    X = pd.DataFrame({"promo": ["yes", "no"] * 30}, index=y.index)
    with pytest.raises(TypeError, match=r"X.s column .promo. has dtype"):
        AarenForecaster(**TINY_FORECASTER).fit(y, X=X, fh=[1, 2])
