r"""Forecast accuracy as the M4 and tourism competitions measure it: sMAPE, MAPE, MASE, OWA, MSIS, coverage.

The measures take many series at once, either as sktime ``pd-multiindex`` panels (a DataFrame with a
two-level MultiIndex (series id, time) and one column, or a Series with such an index; what
:func:`aaren_ts.datasets.load_m4` returns and sktime's forecasters predict) or as arrays (a 2-D array
with one row per series, or a list of 1-D arrays). Every measure is computed per series, over its
forecast horizon, then averaged over the series with equal weights, as in the competition; pass
``per_series=True`` for the per-series values.

For a series with test values :math:`y_1..y_h`, forecasts :math:`\hat y_1..\hat y_h` and training
values :math:`x_1..x_n`, with seasonal period :math:`m`:

- sMAPE :math:`= \frac{1}{h}\sum_t \frac{200\,|y_t - \hat y_t|}{|y_t| + |\hat y_t|}` (in percent);
- MAPE :math:`= \frac{1}{h}\sum_t \frac{100\,|y_t - \hat y_t|}{|y_t|}` (in percent; the tourism
  competition's measure);
- the in-sample scale :math:`s = \frac{1}{n-m}\sum_{t=m+1}^{n} |x_t - x_{t-m}|` (the seasonal naive
  forecast's in-sample error);
- MASE :math:`= \frac{1}{h}\sum_t |y_t - \hat y_t| \,/\, s`;
- MSIS of a prediction interval :math:`[l_t, u_t]` at level :math:`1-\alpha`
  :math:`= \frac{1}{h}\sum_t \big[(u_t - l_t) + \frac{2}{\alpha}(l_t - y_t)\mathbb 1\{y_t < l_t\}
  + \frac{2}{\alpha}(y_t - u_t)\mathbb 1\{y_t > u_t\}\big] \,/\, s`;
- OWA :math:`= \frac12\big(\frac{\text{sMAPE}}{\text{sMAPE}_{\text{Naive2}}}
  + \frac{\text{MASE}}{\text{MASE}_{\text{Naive2}}}\big)`, from the totals (averages over all
  series) of the method and of the competition's Naive2 benchmark;
- coverage of :math:`[l_t, u_t]` :math:`= \frac{1}{h}\sum_t \mathbb 1\{l_t \le y_t \le u_t\}` (a fraction).

The published M4 Hourly figures to compare with are in :data:`aaren_ts.datasets.reference.M4_HOURLY`.
Reference: Makridakis, Spiliotis, Assimakopoulos, "The M4 Competition: 100,000 time series and 61
forecasting methods", International Journal of Forecasting 36(1), 2020.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from aaren_ts.metrics._inputs import (
    Panel,
    PanelSeries,
    align,
    as_series,
    check_finite,
    interval,
    pair,
    place,
    series_name,
)

__all__ = ["NAIVE2", "coverage", "mape", "mase", "msis", "owa", "smape"]


def _naive2_totals() -> dict[str, tuple[float, float]]:
    from aaren_ts.datasets.reference import M4_NAIVE2

    return {freq: (totals["smape"], totals["mase"]) for freq, totals in M4_NAIVE2.items()}


#: Naive2's published (sMAPE, MASE) totals by M4 frequency: OWA's defaults. Only Hourly is recorded (from
#: :data:`aaren_ts.datasets.reference.M4_NAIVE2`); for another frequency pass ``naive2=`` to :func:`owa`.
NAIVE2: dict[str, tuple[float, float]] = _naive2_totals()


def _check_sp(sp: object) -> int:
    if isinstance(sp, bool) or not isinstance(sp, (int, np.integer)) or sp < 1:
        raise ValueError(f"sp (the seasonal period m) must be an int >= 1, got {sp!r}")
    return int(sp)


def _scales(y_train: Panel, reference: PanelSeries, ref_role: str, sp: int) -> np.ndarray:
    """The in-sample mean absolute seasonal difference of each series' training part, in reference order."""
    train = align(reference, as_series(y_train, "y_train"), ref_role, "y_train", same_times=False)
    check_finite(train, "y_train")
    scales = np.empty(len(reference.ids))
    for k, (series_id, x) in enumerate(zip(train.ids, train.values, strict=True)):
        label = series_name(series_id, train.is_panel)
        if x.size <= sp:
            raise ValueError(
                f"y_train: {label} has {x.size} values; its in-sample seasonal scale with sp={sp} needs "
                f"more than {sp}"
            )
        scales[k] = np.mean(np.abs(x[sp:] - x[:-sp]))
        if scales[k] == 0:
            raise ValueError(
                f"y_train: {label} repeats itself exactly every {sp} steps (in-sample seasonal naive error "
                "0), so its scaled error is undefined"
            )
    return scales


def _result(values: np.ndarray, ids: list[Hashable], per_series: bool, name: str) -> float | pd.Series:
    if per_series:
        return pd.Series(values, index=pd.Index(ids, name="series"), name=name)
    return float(np.mean(values))


def smape(y_true: Panel, y_pred: Panel, *, per_series: bool = False) -> float | pd.Series:
    """Symmetric mean absolute percentage error (in percent), as the M4 competition defines it.

    Per series, the mean over its horizon of ``200 |y - y_pred| / (|y| + |y_pred|)``; then the mean over
    the series. A step where ``y`` and ``y_pred`` are both 0 counts as 0.

    Parameters
    ----------
    y_true : pd-multiindex DataFrame or Series, 2-D array or list of 1-D arrays
        The test values of every series (see the module's description of panels).
    y_pred : same kind as ``y_true``
        The forecasts: the same series and, for panels, the same time index per series (in any row
        order); for arrays, the same shape, row by row.
    per_series : bool, default=False
        Return the per-series values (a Series indexed by the series ids, or row numbers for arrays)
        instead of their mean.

    Returns
    -------
    float or pandas.Series
        sMAPE in percent (0 to 200).

    Raises
    ------
    ValueError
        If the series or time indexes differ (the message names the series), or a value is NaN or
        infinite (named by series and time).
    TypeError
        If one argument is a panel and the other an array, or the values are not numbers.

    Examples
    --------
    >>> from aaren_ts.metrics import smape
    >>> round(smape([[100.0, 200.0]], [[110.0, 180.0]]), 4)
    10.0251
    """
    true, pred = pair(y_true, y_pred)
    values = np.empty(len(true.ids))
    for k, (y, f) in enumerate(zip(true.values, pred.values, strict=True)):
        denominator = np.abs(y) + np.abs(f)
        terms = np.divide(200.0 * np.abs(y - f), denominator, out=np.zeros_like(y), where=denominator > 0)
        values[k] = terms.mean()
    return _result(values, true.ids, per_series, "smape")


def mape(y_true: Panel, y_pred: Panel, *, per_series: bool = False) -> float | pd.Series:
    """Mean absolute percentage error (in percent), as the tourism forecasting competition scores it.

    Per series, the mean over its horizon of ``100 |y - y_pred| / |y|``; then the mean over the series.

    Parameters
    ----------
    y_true : pd-multiindex DataFrame or Series, 2-D array or list of 1-D arrays
        The test values of every series (see the module's description of panels); none may be 0.
    y_pred : same kind as ``y_true``
        The forecasts (same series and time indexes as ``y_true``).
    per_series : bool, default=False
        Return the per-series values instead of their mean.

    Returns
    -------
    float or pandas.Series
        MAPE in percent.

    Raises
    ------
    ValueError
        As :func:`smape`; also when a test value is 0 (the percentage error is undefined there; named
        by series and time).

    Examples
    --------
    >>> from aaren_ts.metrics import mape
    >>> mape([[100.0, 200.0]], [[110.0, 180.0]])
    10.0
    """
    true, pred = pair(y_true, y_pred)
    values = np.empty(len(true.ids))
    for k, (series_id, y, f) in enumerate(zip(true.ids, true.values, pred.values, strict=True)):
        zero = np.flatnonzero(y == 0)
        if zero.size:
            raise ValueError(
                f"y_true is 0 in {series_name(series_id, true.is_panel)} {place(true, k, int(zero[0]))}: its "
                "percentage error is undefined (use smape or mase there)"
            )
        values[k] = np.mean(100.0 * np.abs(y - f) / np.abs(y))
    return _result(values, true.ids, per_series, "mape")


def mase(
    y_true: Panel, y_pred: Panel, *, y_train: Panel, sp: int, per_series: bool = False
) -> float | pd.Series:
    """Mean absolute scaled error, as the M4 competition defines it.

    Per series, the mean absolute error over its horizon divided by the in-sample mean absolute
    seasonal difference of its training part, ``mean |x_t - x_{t-sp}|``; then the mean over the series.

    Parameters
    ----------
    y_true : pd-multiindex DataFrame or Series, 2-D array or list of 1-D arrays
        The test values of every series.
    y_pred : same kind as ``y_true``
        The forecasts (same series and time indexes as ``y_true``).
    y_train : same kind as ``y_true``
        The training part of every series (the same series; lengths may differ from the test's).
    sp : int
        Seasonal period ``m`` of the scale (M4: Hourly 24, Monthly 12, Quarterly 4, otherwise 1;
        the ``sp`` of :class:`~aaren_ts.datasets.M4Data`).
    per_series : bool, default=False
        Return the per-series values instead of their mean.

    Returns
    -------
    float or pandas.Series
        MASE.

    Raises
    ------
    ValueError
        If the series or time indexes differ, a value is NaN or infinite, a training part has no more
        than ``sp`` values, or its seasonal differences are all 0 (each named by series).
    TypeError
        If the arguments mix panels and arrays.

    Examples
    --------
    >>> from aaren_ts.metrics import mase
    >>> mase([[5.0, 7.0]], [[4.0, 8.0]], y_train=[[1.0, 2.0, 4.0]], sp=1)
    0.6666666666666666
    """
    sp = _check_sp(sp)
    true, pred = pair(y_true, y_pred)
    scales = _scales(y_train, true, "y_true", sp)
    errors = np.array([np.mean(np.abs(y - f)) for y, f in zip(true.values, pred.values, strict=True)])
    return _result(errors / scales, true.ids, per_series, "mase")


def msis(
    y_true: Panel,
    lower: Panel,
    upper: Panel,
    *,
    y_train: Panel,
    sp: int,
    alpha: float = 0.05,
    per_series: bool = False,
) -> float | pd.Series:
    """Mean scaled interval score of prediction intervals, as the M4 competition defines it.

    Per series, the mean over its horizon of the interval score
    ``(u - l) + 2/alpha (l - y) 1{y < l} + 2/alpha (y - u) 1{y > u}``, divided by the same in-sample
    scale as :func:`mase`; then the mean over the series. M4 scored 95 % intervals (``alpha=0.05``).

    Parameters
    ----------
    y_true : pd-multiindex DataFrame or Series, 2-D array or list of 1-D arrays
        The test values of every series.
    lower, upper : same kind as ``y_true``
        The interval's bounds (same series and time indexes as ``y_true``), ``lower <= upper``.
    y_train : same kind as ``y_true``
        The training part of every series.
    sp : int
        Seasonal period ``m`` of the scale (M4 Hourly: 24).
    alpha : float, default=0.05
        The intervals' nominal level is ``1 - alpha``.
    per_series : bool, default=False
        With ``True``, one score for each series (a ``pandas.Series``) instead of the mean score.

    Returns
    -------
    float or pandas.Series
        MSIS.

    Raises
    ------
    ValueError
        As :func:`mase`; also when ``alpha`` is not in (0, 1) or a lower bound exceeds its upper bound
        (named by series and time).

    Examples
    --------
    >>> from aaren_ts.metrics import msis
    >>> msis([[10.0, 20.0]], [[8.0, 21.0]], [[12.0, 23.0]], y_train=[[1.0, 3.0, 5.0]], sp=1)
    11.5
    """
    sp = _check_sp(sp)
    if not (isinstance(alpha, (float, int)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    true, low, high = interval(y_true, lower, upper)
    scales = _scales(y_train, true, "y_true", sp)
    scores = np.array(
        [
            mean_interval_score(y, l_k, u_k, alpha)
            for y, l_k, u_k in zip(true.values, low.values, high.values, strict=True)
        ]
    )
    return _result(scores / scales, true.ids, per_series, "msis")


def mean_interval_score(y: np.ndarray, lower: np.ndarray, upper: np.ndarray, alpha: float) -> float:
    """The mean interval score of level ``1 - alpha`` of ``[lower, upper]`` for the observations ``y``
    (arrays of one shape): the width, plus ``2 / alpha`` times the distance of each miss (the
    numerator of :func:`msis`, unscaled)."""
    missed = np.maximum(lower - y, 0.0) + np.maximum(y - upper, 0.0)
    return float(np.mean(upper - lower + (2.0 / alpha) * missed))


def coverage(y_true: Panel, lower: Panel, upper: Panel, *, per_series: bool = False) -> float | pd.Series:
    """Empirical coverage of prediction intervals: the fraction of test values inside their interval.

    Per series, the fraction of its horizon with ``lower <= y <= upper``; then the mean over the
    series (with equal horizons, the fraction of all test values). A well calibrated 95 % interval
    covers about 0.95.

    Parameters
    ----------
    y_true, lower, upper : pd-multiindex DataFrame or Series, 2-D array or list of 1-D arrays
        The test values of every series and their intervals' bounds, as :func:`msis` takes them.
    per_series : bool, default=False
        Return the per-series values instead of their mean.

    Returns
    -------
    float or pandas.Series
        Coverage, from 0 to 1.

    Raises
    ------
    ValueError
        As :func:`smape`; also when a lower bound exceeds its upper bound (named by series and time).

    Examples
    --------
    >>> from aaren_ts.metrics import coverage
    >>> coverage([[10.0, 20.0]], [[8.0, 21.0]], [[12.0, 23.0]])
    0.5
    """
    true, low, high = interval(y_true, lower, upper)
    inside = [
        np.mean((l_k <= y) & (y <= u_k))
        for y, l_k, u_k in zip(true.values, low.values, high.values, strict=True)
    ]
    return _result(np.asarray(inside, dtype=np.float64), true.ids, per_series, "coverage")


def owa(
    smape_value: float,
    mase_value: float,
    *,
    frequency: str | None = None,
    naive2: tuple[float, float] | None = None,
) -> float:
    """Overall weighted average: sMAPE and MASE relative to the Naive2 benchmark, as in the M4 competition.

    ``OWA = (sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2) / 2``, from totals (the averages over all series
    that :func:`smape` and :func:`mase` return). Below 1 is better than Naive2.

    Parameters
    ----------
    smape_value : float
        The method's sMAPE (percent), e.g. ``smape(y_test, y_pred)``.
    mase_value : float
        The method's MASE, e.g. ``mase(y_test, y_pred, y_train=y_train, sp=24)``.
    frequency : str, optional
        An M4 frequency whose published Naive2 totals to use (:data:`NAIVE2`; only ``"Hourly"``:
        sMAPE 18.383, MASE 2.395). Give this or ``naive2``.
    naive2 : tuple of (float, float), optional
        Naive2's (sMAPE, MASE) totals on the same series, for data or frequencies without recorded
        totals.

    Returns
    -------
    float
        OWA.

    Raises
    ------
    ValueError
        If neither or both of ``frequency`` and ``naive2`` are given, the frequency has no recorded
        totals, or a value is not a positive finite number (negative for the method's scores).

    Examples
    --------
    >>> from aaren_ts.metrics import owa
    >>> round(owa(13.912, 1.193, frequency="Hourly"), 3)
    0.627
    >>> owa(18.383, 2.395, frequency="Hourly")
    1.0
    """
    if (frequency is None) == (naive2 is None):
        raise ValueError(
            "owa needs Naive2's totals: pass frequency= (published totals recorded for "
            f"{', '.join(NAIVE2)}) or naive2=(sMAPE, MASE), not both"
        )
    if frequency is not None:
        by_name = {name.casefold(): totals for name, totals in NAIVE2.items()}
        if not isinstance(frequency, str) or frequency.casefold() not in by_name:
            raise ValueError(
                f"no published Naive2 totals are recorded for frequency {frequency!r} (recorded: "
                f"{', '.join(NAIVE2)}); pass naive2=(sMAPE, MASE) computed on the same series"
            )
        naive2_smape, naive2_mase = by_name[frequency.casefold()]
    else:
        try:
            naive2_smape, naive2_mase = (float(v) for v in naive2)  # type: ignore[union-attr]
        except (TypeError, ValueError) as error:
            raise ValueError(f"naive2 must be a pair (sMAPE, MASE) of numbers, got {naive2!r}") from error
    for name, value, strictly in (
        ("smape_value", smape_value, False),
        ("mase_value", mase_value, False),
        ("Naive2's sMAPE", naive2_smape, True),
        ("Naive2's MASE", naive2_mase, True),
    ):
        if not np.isfinite(value) or value < 0 or (strictly and value == 0):
            sign = "positive" if strictly else "non-negative"
            raise ValueError(f"{name} must be a {sign} number, got {value}")
    return 0.5 * (float(smape_value) / naive2_smape + float(mase_value) / naive2_mase)
