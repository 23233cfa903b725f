"""Series too short for a validation tail, in a group with too few tails to weigh the combination with
the Theta method (a single series; short series): the equal mean of the forecast and Theta's where
Theta forecasts the series' history clearly better than the seasonal naive forecast, the forecast
alone where it does not; a series with a tail keeps its forecast as its tail judged it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from aaren_ts.estimators._theta_combination import PRIOR_WEIGHT, partner_beats_naive
from aaren_ts.statistical.theta import fit_theta
from tests._params import TINY_FORECASTER

TINY = {**TINY_FORECASTER, "context_length": None, "max_epochs": 2}


def _trend(n: int = 120, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 10.0 + 0.05 * np.arange(n) + rng.normal(scale=0.3, size=n)


def _cycle(n: int = 120, seed: int = 0) -> np.ndarray:
    """A cycle of 9.6 steps: no seasonal period, which the Theta method's drift cannot follow."""
    rng = np.random.default_rng(seed)
    return 10.0 + np.sin(2 * np.pi * np.arange(n) / 9.6) + rng.normal(scale=0.05, size=n)


def _beats(values: np.ndarray, horizon: int = 8) -> bool:
    alpha, season = fit_theta([values], 1)
    return bool(partner_beats_naive(values[:, None], alpha, season, 1, horizon, 2.0)[0])


def test_the_partner_must_clearly_beat_the_naive_forecast_on_the_history():
    assert _beats(_trend())  # a drift the last value misses
    assert not _beats(_cycle())  # a cycle neither follows: no clear gain
    assert not _beats(_trend(12), horizon=8)  # no origin whose horizon the history covers


def _fit(values: np.ndarray, **params) -> AarenForecaster:
    y = pd.Series(values, index=pd.RangeIndex(len(values)))
    return AarenForecaster(**{**TINY, "horizon": 6, **params}).fit(y)


@pytest.mark.parametrize(("make", "combined"), [(_trend, True), (_cycle, False)])
def test_a_short_single_series_takes_the_equal_mean_where_theta_beats_the_naive_forecast(make, combined):
    values = make(35)  # a tail of 7 is shorter than horizon + 2: no tail, no weighing
    forecaster = _fit(values)
    report = forecaster.fit_report_.set_index("step")
    assert report.loc["naive_fallback", "decision"].startswith("none: no validation tail")
    decision = report.loc["theta_combination", "decision"]
    engine = forecaster.engine_
    if combined:
        assert decision == "equal mean with Theta: no tail"
        np.testing.assert_array_equal(engine.theta_weight, [[PRIOR_WEIGHT]])
        alone, mean = engine.predict(combined=False), engine.predict()
        assert not np.allclose(alone, mean)
    else:
        assert decision == "network alone: Theta no better than the naive forecast on the history"
        assert engine.theta is None
    # the equal mean is said, and switched off by name as the weighed combination is
    skipped = _fit(values, skip_steps=["theta_combination"])
    assert skipped.engine_.theta is None


def test_a_single_series_with_a_tail_is_not_given_the_prior():
    forecaster = _fit(_trend(120))  # a tail of 24
    decision = forecaster.fit_report_.set_index("step").loc["theta_combination", "decision"]
    assert not decision.startswith("equal mean") and "history" not in decision


def test_a_panel_whose_tails_weigh_the_combination_is_not_given_the_prior():
    y = pd.concat(
        {f"s{k}": pd.DataFrame({"y": _trend(120, seed=k)}) for k in range(4)}, names=["series", "time"]
    )
    forecaster = AarenForecaster(**{**TINY, "horizon": 6}).fit(y)
    decisions = forecaster.fit_report_.query("step == 'theta_combination'")["decision"]
    assert not decisions.str.startswith("equal mean").any()
