"""The seasonal period of a panel of series, detected from their training data (``sp="auto"``).

A seasonal cycle of period ``m`` makes the changes of a series (its first differences) correlated with
the changes ``m`` steps before: quarterly tourism at 4, hourly loads at 24, monthly sales at 12. A random
walk's changes are not correlated at any lag, and a trend only shifts their mean. So the period is read
from the autocorrelation of the first differences, pooled over the series of the panel (weighted by
their lengths): the smallest lag whose pooled autocorrelation peaks within :data:`NEAR_BEST` of the
largest (a daily cycle in hourly data rather than the weekly one that contains it), provided it is
clearly above what white noise gives at that many observations and at least :data:`MIN_CORRELATION`.
Otherwise the series are not seasonal (period 1).
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
    total = np.zeros(max_sp + 1)
    weight = np.zeros(max_sp + 1)
    for values in series:
        values = np.asarray(values, dtype=np.float64)
        columns = values.reshape(len(values), -1).T
        for column in columns:
            changes = np.diff(column[np.isfinite(column)])
            n = len(changes)
            if n < 6:
                continue
            changes = changes - changes.mean()
            variance = float(changes @ changes)
            if variance <= 0.0:
                continue
            lags = np.arange(2, min(max_sp, n // 3) + 1)
            for lag in lags:
                acf = float(changes[lag:] @ changes[:-lag]) / variance
                total[lag] += n * acf
                weight[lag] += n
    counted = weight > 0
    if not counted[2:].any():
        return 1
    pooled = np.full(max_sp + 1, -np.inf)
    pooled[counted] = total[counted] / weight[counted]
    pooled[:2] = -np.inf
    best = float(pooled.max())
    bar = max(MIN_CORRELATION, _NOISE_SIGMAS / np.sqrt(weight[int(pooled.argmax())]))
    if best < bar:
        return 1
    # a peak: at least its neighbours' (smooth cycles correlate at the lags beside the period too)
    right = np.append(pooled[1:], -np.inf)
    peaks = (pooled >= np.roll(pooled, 1)) & (pooled >= right) & (pooled >= max(NEAR_BEST * best, bar))
    return int(np.flatnonzero(peaks)[0])
