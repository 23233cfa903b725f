"""The checks :class:`~aaren_ts.engine.ForecastEngine` makes on what it is given before anything
changes: new series' scaling (:func:`checked_scaling`, :func:`checked_log_target`) and new observations
(:func:`check_values`), each refusal naming the series (:func:`series_label`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from aaren_ts.utils.limits import MAX_SCALE, MAX_STANDARDISED

__all__ = ["check_values", "checked_log_target", "checked_scaling", "series_label"]


def series_label(series_id: Hashable) -> str:
    """How errors name a series: ``"series 'H1'"``, or ``"y"`` for a single series (id ``None``)."""
    return "y" if series_id is None else f"series {series_id!r}"


def checked_scaling(
    ids: Sequence[Hashable], width: int, mean: Any, scale: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``mean`` and ``scale`` of the new series ``ids`` as float64 ``(len(ids), width)``: finite, the
    scales positive (and at most ``MAX_SCALE``); ``ValueError`` naming the series otherwise."""
    n = len(ids)
    mean, scale = np.asarray(mean), np.asarray(scale)
    for name, value in (("mean", mean), ("scale", scale)):
        if value.dtype.kind not in "iuf" or value.shape != (n, width):
            raise ValueError(
                f"add: the series' {name} must be real numbers of shape ({n}, {width}) (one per "
                f"channel and covariate of each series), got dtype {value.dtype}, shape {value.shape}"
            )
    mean, scale = mean.astype(np.float64), scale.astype(np.float64)
    bad = ~(np.isfinite(mean) & (scale > 0) & (scale <= MAX_SCALE)).all(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"add: new {series_label(ids[row])} would be standardised by mean {mean[row].tolist()} and "
            f"scale {scale[row].tolist()}; the mean must be finite and the scale positive and at most "
            f"{MAX_SCALE:.3g} (values so large that their spread overflows? rescale the series)"
        )
    return mean, scale


def checked_log_target(n: int, n_channels: int, log_target: Any) -> np.ndarray:
    """Which channels of ``n`` new series are on the log scale, bool ``(n, n_channels)`` (``None``:
    none); ``ValueError`` on another shape or dtype."""
    log_target = np.zeros((n, n_channels), dtype=bool) if log_target is None else np.asarray(log_target)
    if log_target.shape != (n, n_channels) or log_target.dtype != bool:
        raise ValueError(
            f"add: log_target must be a bool array of shape {(n, n_channels)}, got "
            f"{log_target.dtype} {log_target.shape}"
        )
    return log_target


def check_values(
    ids: Sequence[Hashable],
    mean: np.ndarray,
    scale: np.ndarray,
    rows: np.ndarray,
    values: np.ndarray,
    where: str,
) -> None:
    """Refuse observations ``values`` ``(R, N, C + n_exog)`` (original units) of the series at ``rows``
    (``ids``, ``mean`` and ``scale``: every series'): :meth:`ForecastEngine.check_values
    <aaren_ts.engine.ForecastEngine.check_values>`."""
    if np.isinf(values).any():
        bad = int(np.argwhere(np.isinf(values))[0, 0])
        raise ValueError(
            f"{where}: {series_label(ids[rows[bad]])} holds an infinite value; "
            "use NaN for a missing observation"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        z = np.abs(values - mean[rows, None, :]) / scale[rows, None, :]
    if (z > MAX_STANDARDISED).any():
        bad = np.argwhere(z > MAX_STANDARDISED)[0]
        raise ValueError(
            f"{where}: {series_label(ids[rows[bad[0]]])} holds {values[tuple(bad)]!r}, "
            f"{z[tuple(bad)]:.3g} standard deviations from its mean: beyond {MAX_STANDARDISED:g}, "
            "the model's float32 arithmetic would overflow (a unit or sensor error?)"
        )
