"""Pins the parts of sktime's behaviour the estimators rely on or work around.

The private attributes the forecaster restores (``aaren_ts/estimators/_sktime_state.py``): a release
of sktime that renames them fails here, by name, instead of breaking saved forecasters silently. And
the reason ``AarenClassifier`` keeps its own public ``fit``: sktime's ``fit`` resets the estimator
before it checks its input, so bad input to a second ``fit`` would erase the fitted model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sktime.classification.dummy import DummyClassifier
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


def test_sktime_still_resets_a_classifier_before_it_checks_the_input_of_fit() -> None:
    X = np.random.default_rng(0).normal(size=(6, 1, 10))
    y = np.array([0, 1] * 3)
    reference = DummyClassifier().fit(X, y)
    with pytest.raises(ValueError):
        reference.fit(X, y[:5])  # one label short
    assert not reference.is_fitted, (
        "sktime's fit now checks its input before it resets the estimator: AarenClassifier.fit, which "
        "validates first only to keep a fitted model on bad input, can be removed"
    )
