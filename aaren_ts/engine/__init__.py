"""Streams of a trained network: their states and what is done with them.

:class:`ForecastEngine` keeps one recurrent state per series of a forecaster (with the recent values
its windows need, its current forecast distribution and its online interval calibration) and does the
work: advance any subset of streams, forecast, add series, give and restore its tensors;
``ClassifierStreams`` does the same for a classifier's streams. They work on arrays; the
estimators adapt pandas and scikit-learn/sktime conventions to them.
"""

from aaren_ts.engine.calibration import Calibration
from aaren_ts.engine.classify import ClassifierStreams
from aaren_ts.engine.forecast import MAX_STANDARDISED, ForecastEngine  # (the bound of aaren_ts.utils.limits)

__all__ = ["MAX_STANDARDISED", "Calibration", "ClassifierStreams", "ForecastEngine"]
