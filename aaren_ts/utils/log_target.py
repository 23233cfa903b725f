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
    "NonPositiveValueWarning",
    "changes_grow_with_level",
    "choose_log_channels",
    "first_non_positive",
    "from_log",
    "missing_where_non_positive",
    "positive_channels",
    "to_log",
]

#: The values of ``target_transform``: ``"auto"`` takes the logarithm of every channel (of every series)
#: whose observed values are all positive and whose changes grow with its level
#: (:func:`changes_grow_with_level`), ``"log"`` of every channel (all must be positive), ``None`` of none.
TARGET_TRANSFORMS = ("auto", "log", None)


class NonPositiveValueWarning(UserWarning):
    """A later value at or below zero in a channel that ``target_transform="auto"`` put on the log
    scale: it is taken as missing (the stream carries on as over a gap)."""


def positive_channels(values: np.ndarray, n_channels: int) -> np.ndarray:
    """``(n_channels,)`` bool: the channels among the first ``n_channels`` columns of ``values`` ``(T,
    width)`` with at least one observed value and none at or below zero (NaN: not observed)."""
    target = np.asarray(values, dtype=np.float64)[:, :n_channels]
    observed = np.isfinite(target)
    return observed.any(axis=0) & np.where(observed, target > 0.0, True).all(axis=0)


def changes_grow_with_level(values: np.ndarray, n_channels: int, lag: int = 1) -> np.ndarray:
    """``(n_channels,)`` bool: the positive channels of ``values`` ``(T, width)`` whose changes over
    ``lag`` steps (the seasonal period) are better described as relative than as absolute.

    Box and Cox's choice between their transformations with ``lambda = 1`` (the values themselves) and
    ``lambda = 0`` (their logarithm), made on the changes over ``lag`` steps (the seasonal naive
    forecast's errors):
    the Gaussian likelihood of the changes, with the log's Jacobian, is higher on the log scale when
    their root mean square there is below their root mean square on the series' own scale divided by
    the series' geometric mean. Seasonal swings and noise that scale with the level (hourly loads,
    tourist arrivals) pass; a random walk's steps, of one size whatever its level, do not. A channel
    with fewer than two observed changes does not.
    """
    target = np.asarray(values, dtype=np.float64)[:, :n_channels]
    positive = positive_channels(values, n_channels)
    out = np.zeros(n_channels, dtype=bool)
    for j in np.flatnonzero(positive):
        x = target[:, j]
        later, earlier = x[lag:], x[: len(x) - lag]
        pairs = np.isfinite(later) & np.isfinite(earlier)
        if pairs.sum() < 2:
            continue
        raw = (later - earlier)[pairs]
        logs = np.log(later[pairs]) - np.log(earlier[pairs])
        geometric_mean = np.exp(np.mean(np.log(x[np.isfinite(x)])))
        out[j] = np.sqrt(np.mean(logs**2)) < np.sqrt(np.mean(raw**2)) / geometric_mean
    return out


def choose_log_channels(
    parts: Sequence[np.ndarray], n_channels: int, mode: str | None, lag: int = 1
) -> np.ndarray:
    """Which channels of which series are forecast on the log scale: ``(len(parts), n_channels)`` bool.

    ``parts`` are the series' values ``(T, width)``, the target channels first. ``mode`` is
    ``target_transform``: ``"auto"`` (:func:`changes_grow_with_level` over ``lag`` steps), ``"log"``
    (every channel: the caller refuses a value at or below zero with :func:`first_non_positive`) or
    ``None`` (none).
    """
    if mode not in TARGET_TRANSFORMS:
        raise ValueError(f"target_transform must be one of {TARGET_TRANSFORMS}, got {mode!r}")
    if mode is None:
        return np.zeros((len(parts), n_channels), dtype=bool)
    if mode == "log":
        return np.ones((len(parts), n_channels), dtype=bool)
    chosen = [changes_grow_with_level(v, n_channels, lag) for v in parts]
    return np.array(chosen, dtype=bool).reshape(-1, n_channels)


def first_non_positive(values: np.ndarray, log: np.ndarray) -> tuple[int, ...] | None:
    """Index of the first observed value at or below zero in a log-scale channel, or ``None``.

    ``values`` ``(..., width)`` holds the target channels first; ``log`` ``(n_channels,)`` (or
    broadcastable to ``values[..., :n_channels]``) marks the log-scale channels.
    """
    bad = _non_positive(values, log)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _non_positive(values: np.ndarray, log: np.ndarray) -> np.ndarray:
    """Bool ``values[..., :n_channels]``: the observed values at or below zero in log-scale channels."""
    log = np.asarray(log, dtype=bool)
    target = np.asarray(values, dtype=np.float64)[..., : log.shape[-1]]
    return log & np.isfinite(target) & (target <= 0.0)


def missing_where_non_positive(values: np.ndarray, log: np.ndarray) -> np.ndarray:
    """``values`` ``(..., width)`` with every observed value at or below zero in a log-scale target
    channel (``log``, as for :func:`first_non_positive`) replaced by NaN (missing); a new float64 array."""
    out = np.array(values, dtype=np.float64)
    bad = _non_positive(out, log)
    out[..., : bad.shape[-1]][bad] = np.nan
    return out


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
