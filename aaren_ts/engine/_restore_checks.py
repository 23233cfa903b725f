"""The checks :meth:`ForecastEngine.restore <aaren_ts.engine.ForecastEngine.restore>` makes on saved
stream tensors before anything changes: first their structure, shapes, dtypes and counters
(:func:`check_layout`), then their values, which must be ones a stream of the engine's network can hold,
so a crafted or damaged file is refused instead of crashing a kernel or continuing a stream wrongly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from aaren_ts.engine.calibration import Calibration
from aaren_ts.nn.forecast import WindowHistory
from aaren_ts.nn.state import flatten_state, unflatten_state
from aaren_ts.utils.limits import MAX_STANDARDISED

__all__ = ["MAX_COUNT", "check_calibration", "check_layout", "check_stream_values", "restore_streams"]

#: The most steps a restored stream may have counted (2**53: every count below is exact in float64).
MAX_COUNT = 2**53


def check_layout(
    engine: Any, tensors: Sequence[torch.Tensor], n_seen: Any, n_observed: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Refuse saved tensors whose number, dtypes or shapes differ from ``engine.tensors()``'s, or
    counters that are not one consistent count per stream; return the counters as int64 arrays."""
    expected = engine.tensors()
    if len(tensors) != len(expected):
        raise ValueError(f"the saved streams hold {len(tensors)} tensors; this model's have {len(expected)}")
    for k, (got, want) in enumerate(zip(tensors, expected, strict=True)):
        growing = not engine.module.constant_state  # a KV cache: its length is the stream's
        fits = got.dtype == want.dtype and (
            got.shape == want.shape or (growing and got.shape[0] == want.shape[0] and got.dim() == want.dim())
        )
        if not fits:
            raise ValueError(
                f"saved stream tensor {k} has dtype {got.dtype} and shape {tuple(got.shape)}; "
                f"this model's is {want.dtype} with shape {tuple(want.shape)}"
            )
    n = len(engine)
    n_seen = np.asarray(n_seen, dtype=np.int64)
    n_observed = np.asarray(n_observed, dtype=np.int64)
    if n_seen.shape != (n,) or n_observed.shape != (n,):
        raise ValueError(f"the saved stream counters do not hold one value for each of {n} series")
    if (n_seen < 0).any() or (n_observed < 0).any() or (n_observed > n_seen).any():
        raise ValueError("the saved stream counters are inconsistent (negative, or more observed than seen)")
    if (n_seen > MAX_COUNT).any():
        raise ValueError(f"the saved stream counters exceed {MAX_COUNT} steps: not a real stream's")
    return n_seen, n_observed


def check_stream_values(engine: Any, tensors: Sequence[torch.Tensor], n_observed: np.ndarray) -> None:
    """The saved encoder states and histories must hold values a stream of ``engine`` (the
    :class:`~aaren_ts.engine.ForecastEngine` restoring them) can have.

    Every value the network computes with is standardised and bounded by
    :data:`MAX_STANDARDISED` (beyond it float32 arithmetic overflows); NaN appears only in a
    history, before a series' first observation; ``-inf`` only where a fresh state holds it (a
    log-normaliser before any token).
    """
    n_state = len(flatten_state(engine.state))
    fresh = flatten_state(engine.module.init_state(1, "cpu"))
    for k, (got, empty) in enumerate(zip(tensors[:n_state], fresh, strict=True)):
        if not got.is_floating_point():
            continue
        values = got.double()
        allowed = (
            torch.isneginf(values)
            if bool(torch.isneginf(empty).any())
            else torch.zeros_like(values, dtype=torch.bool)
        )
        if not bool(((values.abs() <= MAX_STANDARDISED) | allowed).all()):
            raise ValueError(
                f"saved stream tensor {k} (encoder state) holds NaN, infinite or out-of-range "
                f"values (beyond {MAX_STANDARDISED:g})"
            )
    values, observed = tensors[n_state].double(), tensors[n_state + 1]
    known = ~torch.isnan(values)
    if not bool((values[known].abs() <= MAX_STANDARDISED).all()) or bool((observed & ~known).any()):
        raise ValueError(
            f"the saved window history holds infinite or out-of-range values (beyond "
            f"{MAX_STANDARDISED:g}), or observed values that are NaN"
        )
    if bool((known.int().cummax(dim=1).values.bool() & ~known).any()):  # (B, H, C): time is dim 1
        raise ValueError(
            "the saved window history holds NaN after a known value (a stream's history is NaN only "
            "before its first observation)"
        )
    if bool((torch.as_tensor(n_observed == 0) & known.flatten(1).any(dim=1).cpu()).any()):
        raise ValueError("the saved window history holds values of a series that has observed none")


def check_calibration(engine: Any, tensors: Sequence[torch.Tensor], n_seen: np.ndarray) -> None:
    """The saved calibration's counters and forecasts must be ones a stream can have."""
    forecast, params = tensors[-5:-3] if engine.calibration is not None else tensors[-2:]
    if not (_bounded(forecast) and _bounded(params)):
        raise ValueError(
            f"the saved forecasts hold non-finite or out-of-range values (beyond {MAX_STANDARDISED:g})"
        )
    advanced = torch.as_tensor(n_seen > 0, device=params.device)  # (the others' are the fresh ones)
    if not bool(engine.head.valid_params(params[advanced].double()).all()):
        raise ValueError(f"the saved forecasts hold parameters no {engine.head.name!r} distribution has")
    if engine.calibration is None:
        return
    levels, issued, n_issued = tensors[-3:]
    if (n_issued < 0).any() or (n_issued.cpu().numpy() > n_seen).any():
        raise ValueError("the saved interval calibration's issued-forecast counts are negative or too large")
    if not (_bounded(levels) and _bounded(issued)):
        raise ValueError(
            "the saved interval calibration holds non-finite or out-of-range values "
            f"(beyond {MAX_STANDARDISED:g})"
        )
    filled = torch.arange(engine.horizon, device=n_issued.device)[None, :] < n_issued[:, None]  # slots
    if not bool(engine.head.valid_params(issued[filled][..., 1:].double()).all()):
        raise ValueError(
            f"the saved interval calibration holds forecasts no {engine.head.name!r} distribution has"
        )


def _bounded(values: torch.Tensor) -> bool:
    """Whether every value of ``values`` is finite and at most :data:`MAX_STANDARDISED` in magnitude."""
    return bool((values.double().abs() <= MAX_STANDARDISED).all())


def restore_streams(engine: Any, tensors: Sequence[Any], n_seen: Any, n_observed: Any) -> None:
    """Check saved stream ``tensors`` and counters against ``engine`` (:func:`check_layout`,
    :func:`check_stream_values`, :func:`check_calibration`), then put them in place of its streams'."""
    tensors = [torch.as_tensor(t) for t in tensors]
    n_seen, n_observed = check_layout(engine, tensors, n_seen, n_observed)
    check_stream_values(engine, tensors, n_observed)
    check_calibration(engine, tensors, n_seen)
    tensors = [t.to(engine.device) for t in tensors]
    if engine.calibration is not None:
        n_parts = len(fields(Calibration))
        engine.calibration = Calibration(*tensors[-n_parts:])
        del tensors[-n_parts:]
    *state, values, observed, forecast, params = tensors
    engine.state = unflatten_state(engine.state, state)
    engine.history = WindowHistory(values, observed)
    engine.forecast, engine.params = forecast, params
    engine.n_seen, engine.n_observed = n_seen.copy(), n_observed.copy()
