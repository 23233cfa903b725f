"""Pins the private parts of sktime the forecaster relies on (see ``aaren_ts/estimators/_sktime_state.py``).

A release of sktime that renames them fails here, by name, instead of breaking saved forecasters
silently.
"""

from __future__ import annotations

import pandas as pd
from sktime.datasets import load_airline
from sktime.forecasting.naive import NaiveForecaster

from aaren_ts.estimators._sktime_state import SKTIME_ATTRIBUTES


def test_sktime_still_keeps_the_state_a_loaded_forecaster_restores() -> None:
    reference = NaiveForecaster()
    reference.set_config(remember_data=True)  # (so that sktime creates its data slots itself)
    y = load_airline()
    reference.fit(y, X=pd.DataFrame({"x": range(len(y))}, index=y.index), fh=[1, 2])
    missing = [name for name in SKTIME_ATTRIBUTES if not hasattr(reference, name)]
    assert missing == [], f"sktime no longer has {missing}: update _sktime_state"
    assert callable(reference._set_cutoff)
    cutoff = pd.PeriodIndex(["1961-01"], freq="M")
    reference._set_cutoff(cutoff)
    assert reference.cutoff.equals(cutoff)
