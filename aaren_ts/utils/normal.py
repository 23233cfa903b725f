"""Gaussian interval half-widths in numpy alone (no torch, no scipy).

Shared by :class:`~aaren_ts.AarenForecaster` and :class:`~aaren_ts.onnx.OnnxStreamer`, which must run
where only numpy and ONNX Runtime are installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

__all__ = [
    "CALIBRATION_COVERAGES",
    "MIN_LEVEL",
    "MIN_PROBABILITY",
    "check_quantile_levels",
    "gaussian_z",
    "interpolate_z",
    "level_z",
]

# Nominal coverages whose levels each stream tracks; other coverages interpolate between them.
CALIBRATION_COVERAGES = (0.5, 0.8, 0.9, 0.95, 0.99)
MIN_LEVEL = 1e-6  # a level at or below zero would mean an infinite interval: z is capped at this level's

# Wichura's AS 241 (Applied Statistics 37(3), 1988) rational approximations of the normal quantile
# (relative error about 1e-16), central region and tail region up to 1 - 1e-12: the algorithm of
# statistics.NormalDist.inv_cdf (tests/test_normal.py checks they agree), written with numpy so
# that it runs on whole arrays of levels, in the forecaster and in the torch-free ONNX streamer
# alike (scipy is not needed). A level of at least MIN_LEVEL never reaches the far tail.
_AS241_CENTRAL = (
    (3.3871328727963666080, 133.14166789178437745, 1971.5909503065514427, 13731.693765509461125,
     45921.953931549871457, 67265.770927008700853, 33430.575583588128105, 2509.0809287301226727),
    (1.0, 42.313330701600911252, 687.18700749205790830, 5394.1960214247511077,
     21213.794301586595867, 39307.895800092710610, 28729.085735721942674, 5226.4952788528545610),
)  # fmt: skip
_AS241_TAIL = (
    (1.42343711074968357734, 4.63033784615654529590, 5.76949722146069140550, 3.64784832476320460504,
     1.27045825245236838258, 0.241780725177450611770, 0.0227238449892691845833,
     0.000774545014278341407640),
    (1.0, 2.05319162663775882187, 1.67638483018380384940, 0.689767334985100004550,
     0.148103976427480074590, 0.0151986665636164571966, 0.000547593808499534494600,
     1.05075007164441684324e-9),
)  # fmt: skip


def _polynomial(coefficients: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = out * x + c
    return out


def level_z(levels: np.ndarray) -> np.ndarray:
    """``z`` of two-sided miscoverage ``levels``: the standard normal quantile of ``1 - level / 2``.

    Levels are clipped to ``[MIN_LEVEL, 1]`` (a level of one or more: an empty interval, ``z = 0``).
    Computed in float64 whatever the input's dtype.
    """
    tail = 0.5 * np.clip(np.asarray(levels, dtype=np.float64), MIN_LEVEL, 1.0)  # upper-tail probability
    q = 0.5 - tail
    r = 0.180625 - q * q
    central = q * _polynomial(_AS241_CENTRAL[0], r) / _polynomial(_AS241_CENTRAL[1], r)
    s = np.sqrt(-np.log(tail)) - 1.6
    outer = _polynomial(_AS241_TAIL[0], s) / _polynomial(_AS241_TAIL[1], s)
    return np.where(q <= 0.425, central, outer)


_STANDARD_NORMAL = NormalDist()

#: The smallest probability (and one minus the largest) of a quantile: nearer to 0 or 1, the central
#: interval it bounds has a coverage that rounds to 1, whose half-width is infinite.
MIN_PROBABILITY = 1e-16


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


def check_quantile_levels(alpha: np.ndarray, name: str = "alpha", where: str | None = None) -> None:
    """Refuse probabilities ``alpha`` (float64) that are not strictly between 0 and 1, or are closer to
    either than :data:`MIN_PROBABILITY` (the quantiles, and the intervals they bound, would be
    infinite in float64); ``ValueError`` naming the argument ``name`` (and the call ``where``)."""
    prefix = "" if where is None else f"{where}: "
    if alpha.size == 0:
        raise ValueError(f"{prefix}{name} is empty: give at least one probability strictly between 0 and 1")
    if not np.all((alpha >= MIN_PROBABILITY) & (alpha <= 1.0 - MIN_PROBABILITY)):
        raise ValueError(
            f"{prefix}{name} must lie strictly between 0 and 1, at least {MIN_PROBABILITY:g} from either "
            f"(the quantiles there are infinite), got {alpha.tolist()}"
        )


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
