"""The seasonal period of a panel of series, detected from their training data (``sp="auto"``).

A seasonal cycle of period ``m`` makes the changes of a series (its first differences) correlated with
the changes ``m`` steps before: quarterly tourism at 4, hourly loads at 24, monthly sales at 12. A random
walk's changes are not correlated at any lag, and a trend only shifts their mean. So the period is read
from the autocorrelation of the first differences, pooled over the series of the panel (weighted by
their lengths), contrasted with the autocorrelation at half the lag (where a cycle's changes are out of
phase): the smallest lag where that contrast peaks within :data:`NEAR_BEST` of its highest peak (a
daily cycle in hourly data rather than the weekly one that contains it), provided the autocorrelation
there is clearly above what white noise gives at that many observations and at least
:data:`MIN_CORRELATION`. Otherwise the series are not seasonal (period 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MIN_CORRELATION", "NEAR_BEST", "detect_sp"]

#: The pooled autocorrelation of the changes a period needs at least.
MIN_CORRELATION = 0.2
#: A shorter lag is preferred when its autocorrelation is at least this fraction of the largest.
NEAR_BEST = 0.8
_NOISE_SIGMAS = 3.0  # and it must exceed this many standard errors of white noise's (1 / sqrt(n))


def detect_sp(series: Sequence[np.ndarray], max_sp: int) -> int:
    """The seasonal period of ``series`` (each ``(n_i,)`` or ``(n_i, C)``; NaN for missing values).

    Parameters
    ----------
    series : sequence of ndarray
        The training values of every series (channels pooled like series).
    max_sp : int
        Longest period considered (a period needs at least three cycles of a series to count there).

    Returns
    -------
    int
        The detected period, or 1 when no lag from 2 to ``max_sp`` stands out.
    """
    total = np.zeros(max_sp + 2)
    weight = np.zeros(max_sp + 2)
    for values in series:
        values = np.asarray(values, dtype=np.float64)
        for column in values.reshape(len(values), -1).T:
            with np.errstate(over="ignore", invalid="ignore"):  # (an overflowing change counts as unknown)
                changes = np.diff(column)  # NaN next to a missing value: those pairs do not count
                known = np.isfinite(changes)
            n = int(known.sum())
            if n < 6:
                continue
            centred = np.where(known, changes - changes[known].mean(), 0.0)
            peak = float(np.abs(centred).max())
            if not 0.0 < peak < np.inf:
                continue
            centred /= peak  # (the products stay finite whatever the series' magnitude)
            variance = float(centred @ centred)
            if variance <= 0.0:
                continue
            for lag in range(1, min(max_sp + 1, len(changes) // 3) + 1):
                total[lag] += n * float(centred[lag:] @ centred[:-lag]) / variance
                weight[lag] += n
    counted = weight > 0
    if not counted[2 : max_sp + 1].any():
        return 1
    pooled = np.full(max_sp + 2, np.nan)
    pooled[counted] = total[counted] / weight[counted]
    # a cycle of period m puts its changes in phase at lag m and out of phase at m / 2: the contrast
    # between the two tells a cycle from the short-range correlation of a smooth or noisy series
    lags = np.arange(1, max_sp + 2)
    contrast = np.full(max_sp + 3, -np.inf)
    contrast[lags] = pooled[lags] - pooled[np.maximum(lags // 2, 1)]
    candidates = np.arange(2, max_sp + 1)
    scores = contrast[candidates]
    # a peak: above the lag before and at least the lag after (a cycle's contrast is high at the lags
    # beside its period too)
    peaks = np.flatnonzero((scores > contrast[candidates - 1]) & (scores >= contrast[candidates + 1]))
    peaks = peaks[np.isfinite(scores[peaks])]
    if not len(peaks):
        return 1
    top = float(scores[peaks].max())
    for peak in peaks:
        lag = candidates[peak]
        bar = max(MIN_CORRELATION, _NOISE_SIGMAS / np.sqrt(weight[lag]))
        if scores[peak] >= NEAR_BEST * top and pooled[lag] >= bar:
            return int(lag)
    return 1
