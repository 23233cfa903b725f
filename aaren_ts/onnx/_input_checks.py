"""The checks :class:`~aaren_ts.onnx.OnnxStreamer` makes on what its calls are given, before any
stream moves: observations and covariates (:func:`check_observations`, :func:`check_magnitude`) and
probabilities (:func:`checked_probabilities`). numpy alone (the streamer runs without PyTorch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aaren_ts.utils.limits import MAX_STANDARDISED, first_beyond
from aaren_ts.utils.normal import check_quantile_levels

__all__ = ["check_magnitude", "check_observations", "checked_probabilities"]


def checked_probabilities(values: Any, name: str) -> np.ndarray:
    """``values`` as a flat float64 array of probabilities, each strictly between 0 and 1."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers strictly between 0 and 1, got {values!r}")
    arr = arr.astype(np.float64).ravel()
    check_quantile_levels(arr, name)
    return arr


def check_observations(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array (shape unchecked); a clear error for non-real or non-finite."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":
        raise TypeError(
            f"{name} must hold real numbers (integers or floats), got an array of dtype {arr.dtype}: "
            "booleans, complex numbers, text and objects are refused rather than converted"
        )
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        where = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(
            f"{name} holds a non-finite value (NaN or inf) at index {where}; the exported step "
            "takes observed values only"
        )
    return arr


def check_magnitude(
    arr: np.ndarray, mean: np.ndarray, scale: np.ndarray, name: str, where: Callable[..., str]
) -> None:
    """Refuse ``arr`` if a value, standardised with ``mean`` and ``scale`` (broadcast to it), lies
    more than :data:`~aaren_ts.utils.limits.MAX_STANDARDISED` standard deviations out; ``where(*index)``
    describes the value's position."""
    standardised = (arr - mean) / scale
    index = first_beyond(standardised)
    if index is None:
        return
    raise ValueError(
        f"{name}: the value {arr[index]:.6g} ({where(*index)}) lies {abs(standardised[index]):.3g} "
        f"standard deviations from the training mean; the exported step computes in float32 and "
        f"takes at most {MAX_STANDARDISED:.0e}, as larger values would overflow and poison the "
        "stream's forecasts: check the value and its units (the streams are unchanged)"
    )
