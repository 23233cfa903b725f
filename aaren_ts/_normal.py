"""Gaussian interval half-widths in numpy alone (no torch, no scipy).

Shared by :class:`~aaren_ts.AarenForecaster` and :class:`~aaren_ts.onnx.OnnxStreamer`, which must run
where only numpy and ONNX Runtime are installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

__all__ = ["CALIBRATION_COVERAGES", "gaussian_z", "interpolate_z"]

# Nominal coverages whose levels each stream tracks; other coverages interpolate between them.
CALIBRATION_COVERAGES = (0.5, 0.8, 0.9, 0.95, 0.99)

_STANDARD_NORMAL = NormalDist()


def gaussian_z(coverage: Sequence[float] | np.ndarray | float) -> np.ndarray:
    """Standard normal quantile of ``(1 + coverage) / 2``: the half-width, in standard deviations.

    ``coverage`` lies in ``[0, 1]``: 0 gives 0 and 1 gives infinity.
    """
    values = np.asarray(coverage, dtype=np.float64)
    flat = [
        0.0 if c <= 0 else np.inf if c >= 1 else _STANDARD_NORMAL.inv_cdf(0.5 + 0.5 * float(c))
        for c in values.ravel()
    ]
    return np.asarray(flat, dtype=np.float64).reshape(values.shape)


def interpolate_z(tracked: np.ndarray, coverage: Sequence[float] | np.ndarray) -> np.ndarray:
    """Half-widths at any ``coverage`` from calibrated ones at :data:`CALIBRATION_COVERAGES`.

    Parameters
    ----------
    tracked : ndarray of shape (n_streams, L, ...)
        Calibrated half-widths (in standard deviations) of the ``L`` tracked coverages, in their order.
    coverage : sequence of float
        The coverages wanted, each in ``[0, 1)``.

    Returns
    -------
    ndarray of shape (n_streams, len(coverage), ...)
        The tracked half-widths made non-decreasing in coverage, interpolated linearly in the nominal
        ``z`` (and scaled by the nearest tracked ratio outside their range), so quantiles never cross.
    """
    tracked = np.maximum.accumulate(np.asarray(tracked, dtype=np.float64), axis=1)
    nominal = gaussian_z(CALIBRATION_COVERAGES)
    wanted = gaussian_z(np.asarray(coverage, dtype=np.float64).ravel())
    out = np.empty((tracked.shape[0], len(wanted), *tracked.shape[2:]))
    for k, zc in enumerate(wanted):
        if zc <= nominal[0]:
            out[:, k] = tracked[:, 0] * (zc / nominal[0])
        elif zc >= nominal[-1]:
            out[:, k] = tracked[:, -1] * (zc / nominal[-1])
        else:
            i = int(np.searchsorted(nominal, zc, side="right")) - 1
            w = (zc - nominal[i]) / (nominal[i + 1] - nominal[i])
            out[:, k] = (1.0 - w) * tracked[:, i] + w * tracked[:, i + 1]
    return out
