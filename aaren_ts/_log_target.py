"""Forecasting positive series on the log scale: which channels, and the maps both ways (numpy only).

Counts, sales, arrivals and loads are positive, and their seasonal swings and noise grow with their
level: an additive model forecasts their troughs with errors of the peaks' size (on tourism's quarterly
series, a winter trough of 1,500 forecast at 15,000). On the log scale the swings become additive and
every series' errors relative. :class:`~aaren_ts.AarenForecaster` (``target_transform``) trains, streams
and calibrates on the logarithm of such channels and maps its outputs back: point forecasts and
quantiles through the exponential (the map is increasing, so quantiles map exactly and the point
forecast becomes the median of the forecast distribution), standard deviations as the half-width of the
mapped interval of one standard deviation.

Shared by :class:`~aaren_ts.AarenForecaster` and :class:`~aaren_ts.onnx.OnnxStreamer`, which must run
where only numpy and ONNX Runtime are installed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "TARGET_TRANSFORMS",
    "choose_log_channels",
    "first_non_positive",
    "from_log",
    "positive_channels",
    "to_log",
]

#: The values of ``target_transform``: ``"auto"`` takes the logarithm of every channel (of every series)
#: whose observed values are all positive, ``"log"`` of every channel (all must be positive), ``None`` of
#: none.
TARGET_TRANSFORMS = ("auto", "log", None)


def positive_channels(values: np.ndarray, n_channels: int) -> np.ndarray:
    """``(n_channels,)`` bool: the channels among the first ``n_channels`` columns of ``values`` ``(T,
    width)`` with at least one observed value and none at or below zero (NaN: not observed)."""
    target = np.asarray(values, dtype=np.float64)[:, :n_channels]
    observed = np.isfinite(target)
    return observed.any(axis=0) & np.where(observed, target > 0.0, True).all(axis=0)


def choose_log_channels(parts: Sequence[np.ndarray], n_channels: int, mode: str | None) -> np.ndarray:
    """Which channels of which series are forecast on the log scale: ``(len(parts), n_channels)`` bool.

    ``parts`` are the series' values ``(T, width)``, the target channels first. ``mode`` is
    ``target_transform``: ``"auto"`` (the channels whose observed values are all positive), ``"log"``
    (every channel: the caller refuses a value at or below zero with :func:`first_non_positive`) or
    ``None`` (none).
    """
    if mode not in TARGET_TRANSFORMS:
        raise ValueError(f"target_transform must be one of {TARGET_TRANSFORMS}, got {mode!r}")
    if mode is None:
        return np.zeros((len(parts), n_channels), dtype=bool)
    if mode == "log":
        return np.ones((len(parts), n_channels), dtype=bool)
    return np.array([positive_channels(v, n_channels) for v in parts], dtype=bool).reshape(-1, n_channels)


def first_non_positive(values: np.ndarray, log: np.ndarray) -> tuple[int, ...] | None:
    """Index of the first observed value at or below zero in a log-scale channel, or ``None``.

    ``values`` ``(..., width)`` holds the target channels first; ``log`` ``(n_channels,)`` (or
    broadcastable to ``values[..., :n_channels]``) marks the log-scale channels.
    """
    log = np.asarray(log, dtype=bool)
    target = np.asarray(values, dtype=np.float64)[..., : log.shape[-1]]
    bad = log & np.isfinite(target) & (target <= 0.0)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


def to_log(values: np.ndarray, log: np.ndarray) -> np.ndarray:
    """``values`` ``(..., width)`` with the log-scale target channels (``log``, as for
    :func:`first_non_positive`) replaced by their natural logarithm; a new float64 array (NaN stays NaN).

    Every observed value there must be positive (check with :func:`first_non_positive` first)."""
    log = np.asarray(log, dtype=bool)
    out = np.array(values, dtype=np.float64)
    if log.any():
        c = log.shape[-1]
        target = out[..., :c]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[..., :c] = np.where(log, np.log(target), target)
    return out


def from_log(values: np.ndarray, log: np.ndarray) -> np.ndarray:
    """``values`` ``(..., n_channels)`` on the model's scale back in the series' units: the exponential
    of the log-scale channels (``log`` broadcastable to ``values``), the others as they are."""
    log = np.asarray(log, dtype=bool)
    values = np.asarray(values, dtype=np.float64)
    if not log.any():
        return values
    with np.errstate(over="ignore"):
        return np.where(log, np.exp(values), values)
