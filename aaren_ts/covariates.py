"""Calendar covariates computed from a time index, for forecasters that take exogenous variables.

Calendar effects (the hour of the day, the day of the week, ...) are known for any future time, so they
are the simplest covariates to pass for the forecast horizon::

    from aaren_ts import AarenForecaster
    from aaren_ts.covariates import calendar_covariates

    f = AarenForecaster(horizon=24).fit(y, X=calendar_covariates(y.index))  # y: hourly
    future = pd.date_range(y.index[-1], periods=25, freq="h")[1:]  # the next 24 hours
    f.predict(fh=range(1, 25), X=calendar_covariates(future))

Each cyclic feature is encoded as the sine and cosine of its phase, so midnight sits next to 23:00 and
Sunday next to Monday, with two columns per feature whatever its period; ``harmonics=k`` adds the sine
and cosine of 2, ..., k times the phase, so a linear effect of them can take any shape of the cycle
that is smooth to that order (12 harmonics of the hour of the day: any effect per hour).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["CALENDAR_FEATURES", "calendar_covariates"]

#: The features :func:`calendar_covariates` knows, with the period of each cycle.
CALENDAR_FEATURES: dict[str, str] = {
    "minute_of_hour": "60 minutes",
    "hour_of_day": "24 hours",
    "day_of_week": "7 days",
    "day_of_month": "the month's length",
    "day_of_year": "the year's length",
    "month_of_year": "12 months",
}


def _phase(times: pd.DatetimeIndex, feature: str) -> np.ndarray:
    """Position of every time in the feature's cycle, in [0, 1)."""
    if feature == "minute_of_hour":
        return (times.minute + times.second / 60.0) / 60.0
    if feature == "hour_of_day":
        return (times.hour + times.minute / 60.0 + times.second / 3600.0) / 24.0
    if feature == "day_of_week":
        return (times.dayofweek + times.hour / 24.0) / 7.0
    if feature == "day_of_month":
        return (times.day - 1 + times.hour / 24.0) / times.days_in_month
    if feature == "day_of_year":
        return (times.dayofyear - 1 + times.hour / 24.0) / np.where(times.is_leap_year, 366.0, 365.0)
    if feature == "month_of_year":
        return (times.month - 1) / 12.0
    raise ValueError(f"unknown calendar feature {feature!r}; choose from {list(CALENDAR_FEATURES)}")


def calendar_covariates(
    index: pd.Index,
    features: Sequence[str] = ("hour_of_day", "day_of_week"),
    harmonics: int = 1,
) -> pd.DataFrame:
    """Sine and cosine of calendar cycles at every time of ``index``.

    Parameters
    ----------
    index : pandas DatetimeIndex or PeriodIndex, or a MultiIndex whose last level is one
        The times (of a series, a panel, or a forecast horizon); the result has this index, so it
        lines up with ``y`` or with the forecast.
    features : sequence of str, default=("hour_of_day", "day_of_week")
        Cycles to encode, among :data:`CALENDAR_FEATURES`.
    harmonics : int, default=1
        Sines and cosines per feature: of its phase times 1, ..., ``harmonics``.

    Returns
    -------
    pandas.DataFrame
        Two columns per feature and harmonic, ``"<feature>_sin"`` and ``"<feature>_cos"`` (the first
        harmonic), ``"<feature>_sin<k>"`` and ``"<feature>_cos<k>"`` (the ``k``-th), with values in
        [-1, 1].

    Raises
    ------
    TypeError
        If the times are not dates (a plain integer index has no calendar).
    ValueError
        For an unknown feature, no feature, or ``harmonics`` below 1.

    Examples
    --------
    >>> import pandas as pd
    >>> from aaren_ts.covariates import calendar_covariates
    >>> times = pd.date_range("2024-01", periods=3, freq="6h")
    >>> X = calendar_covariates(times, ["hour_of_day"])
    >>> X.round(3).to_numpy().tolist()
    [[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]]
    """
    features = list(features)
    if not features:
        raise ValueError("calendar_covariates: features is empty")
    if isinstance(harmonics, bool) or not isinstance(harmonics, (int, np.integer)) or harmonics < 1:
        raise ValueError(
            f"calendar_covariates: harmonics must be an integer of at least 1, got {harmonics!r}"
        )
    times = index.get_level_values(-1) if isinstance(index, pd.MultiIndex) else index
    if isinstance(times, pd.PeriodIndex):
        times = times.to_timestamp()
    if not isinstance(times, pd.DatetimeIndex):
        raise TypeError(
            "calendar_covariates: the times must be a DatetimeIndex or PeriodIndex, "
            f"got {type(times).__name__}"
        )
    columns = {}
    for feature in features:
        angle = 2.0 * np.pi * np.asarray(_phase(times, feature), dtype=np.float64)
        for k in range(1, int(harmonics) + 1):
            suffix = "" if k == 1 else str(k)
            columns[f"{feature}_sin{suffix}"] = np.sin(k * angle)
            columns[f"{feature}_cos{suffix}"] = np.cos(k * angle)
    return pd.DataFrame(columns, index=index)
