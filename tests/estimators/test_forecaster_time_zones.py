"""Times with a time zone, as pandas takes them: another zone's times are converted to the model's;
a mix of time-zone-aware and naive times is refused, and the forecaster is left as it was."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts import AarenForecaster
from tests._params import TINY_FORECASTER

INDEX = pd.date_range("2024-01-01", periods=80, freq="h", tz="Europe/Berlin")
Y = pd.DataFrame({"y": 10 + np.sin(np.arange(80) / 3)}, index=INDEX)


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    return AarenForecaster(**TINY_FORECASTER).fit(Y[:60])


def test_the_next_hour_in_another_zone_is_the_next_step(fitted) -> None:
    in_utc = ForecastingHorizon(pd.DatetimeIndex([INDEX[60].tz_convert("UTC")]), is_relative=False)
    forecast = fitted.predict(fh=in_utc)
    assert list(forecast.index) == [INDEX[60]]  # labelled in the model's zone
    pd.testing.assert_frame_equal(forecast, fitted.predict(fh=[1]), check_freq=False)


def test_an_update_in_another_zone_continues_the_series(fitted) -> None:
    f = AarenForecaster(**TINY_FORECASTER).fit(Y[:60])
    update = Y[60:62].copy()
    update.index = update.index.tz_convert("UTC")
    f.partial_update(update)
    assert f.cutoff[0] == INDEX[61] and str(f.cutoff.tz) == "Europe/Berlin"
    assert list(f.predict(fh=[1]).index) == [INDEX[62]]


def test_a_time_in_the_past_in_another_zone_is_refused(fitted) -> None:
    past = ForecastingHorizon(pd.DatetimeIndex([INDEX[50].tz_convert("UTC")]), is_relative=False)
    with pytest.raises(NotImplementedError, match="in-sample"):
        fitted.predict(fh=past)


def test_naive_times_for_an_aware_model_are_refused_and_change_nothing(fitted) -> None:
    before = fitted.predict(fh=[1, 2])
    naive = Y[60:61].copy()
    naive.index = naive.index.tz_localize(None)
    with pytest.raises(ValueError, match="have no time zone, but the cutoff"):
        fitted.partial_update(naive)
    with pytest.raises(ValueError, match="have no time zone, but the cutoff"):
        fitted.predict(fh=ForecastingHorizon(naive.index, is_relative=False))
    pd.testing.assert_frame_equal(fitted.predict(fh=[1, 2]), before)


def test_aware_times_for_a_naive_model_are_refused() -> None:
    naive_y = Y.copy()
    naive_y.index = naive_y.index.tz_localize(None)
    f = AarenForecaster(**TINY_FORECASTER).fit(naive_y[:60])
    with pytest.raises(ValueError, match=r"have a time zone \(Europe/Berlin\), but the cutoff"):
        f.partial_update(Y[60:61])
