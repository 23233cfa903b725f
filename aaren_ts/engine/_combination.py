"""What :class:`~aaren_ts.engine.ForecastEngine` combines the network's forecasts with: the (seasonal)
naive method's, and the Theta method's (with exponential smoothing's).

:func:`checked_naive` checks the naive method's shares, spread factors and standard deviations
:meth:`~aaren_ts.engine.ForecastEngine.use_naive` takes, and :func:`fallback_arguments` turns them into
the network's arguments for a batch of streams. :func:`checked_theta` and :func:`restored_theta` build
the Theta streams :meth:`~aaren_ts.engine.ForecastEngine.use_theta` and
:meth:`~aaren_ts.engine.ForecastEngine.restore_theta` take, each checked first;
:func:`advance_theta` advances them beside the network's, :func:`theta_shift` is what they add to its
forecasts and :func:`theta_arrays` what is saved of them. Each returns its result and changes nothing
of the engine's: the engine stores it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from aaren_ts.statistical.ets import ETSStreams
from aaren_ts.statistical.partner import PartnerStreams, combination_shift, stream_rows
from aaren_ts.statistical.theta import ThetaStreams

__all__ = [
    "advance_theta",
    "checked_naive",
    "checked_theta",
    "fallback_arguments",
    "restored_theta",
    "theta_arrays",
    "theta_shift",
]


def checked_naive(
    naive: Any, spread: Any, naive_std: Any, max_std: Any, expected: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``naive``, ``spread``, ``naive_std`` and ``max_std`` as :meth:`~aaren_ts.engine.ForecastEngine.
    use_naive` takes them, as float64 copies of shape ``expected`` (``None``: the neutral 1 for the
    spread, 0 for the deviations); ``ValueError`` on any that does not fit."""
    naive = np.asarray(naive)
    if naive.shape != expected or naive.dtype.kind not in "bf" or not ((naive >= 0) & (naive <= 1)).all():
        raise ValueError(
            f"use_naive: expected shares in [0, 1] (or bools) of shape {expected}, got {naive.dtype} "
            f"{naive.shape}"
        )
    naive = naive.astype(np.float64)
    spread = np.ones(expected) if spread is None else np.asarray(spread, dtype=np.float64)
    if spread.shape != expected or not (np.isfinite(spread) & (spread > 0)).all():
        raise ValueError(f"use_naive: spread must hold {expected} finite positive factors")
    deviations = {}
    for name, value in (("naive_std", naive_std), ("max_std", max_std)):
        value = np.zeros(expected) if value is None else np.asarray(value, dtype=np.float64)
        if value.shape != expected or not (np.isfinite(value) & (value >= 0)).all():
            raise ValueError(
                f"use_naive: {name} must hold {expected} finite non-negative standard deviations"
            )
        deviations[name] = value.copy()
    return naive.copy(), spread.copy(), deviations["naive_std"], deviations["max_std"]


def fallback_arguments(engine: Any, rows: np.ndarray) -> dict[str, torch.Tensor]:
    """The network's ``naive``, ``spread``, ``naive_std`` and ``max_std`` arguments for ``engine``'s
    streams at ``rows`` (each left out where it changes nothing)."""
    out = {}
    if (engine.naive[rows] > 0).any():
        out["naive"] = torch.as_tensor(engine.naive[rows], dtype=torch.float32, device=engine.device)
    if (engine.spread[rows] != 1.0).any():
        out["spread"] = torch.as_tensor(engine.spread[rows], dtype=torch.float32, device=engine.device)
    if (engine.naive_std[rows] > 0).any():
        out["naive_std"] = torch.as_tensor(engine.naive_std[rows], dtype=torch.float32, device=engine.device)
    if (engine.max_std[rows] > 0).any():
        out["max_std"] = torch.as_tensor(engine.max_std[rows], dtype=torch.float32, device=engine.device)
    return out


def checked_theta(
    alpha: Any, season: Any, weight: Any, ets: ETSStreams | None, n: int, c: int, n_seen: np.ndarray
) -> tuple[PartnerStreams, np.ndarray]:
    """The Theta streams (with exponential smoothing's ``ets``) of ``n`` series of ``c`` channels and
    the network's weights, from what :meth:`~aaren_ts.engine.ForecastEngine.use_theta` takes;
    ``ValueError`` on any that does not fit, or where the streams have consumed values (``n_seen``)."""
    alpha, weight = np.asarray(alpha, dtype=np.float64), np.asarray(weight, dtype=np.float64)
    season = np.asarray(season, dtype=np.float64)
    if alpha.shape != (n, c) or not ((alpha > 0) & (alpha < 1)).all():
        raise ValueError(f"use_theta: alpha must hold {(n, c)} smoothing parameters in (0, 1)")
    if weight.shape != (n, c) or not ((weight >= 0) & (weight <= 1)).all():
        raise ValueError(f"use_theta: weight must hold {(n, c)} weights in [0, 1]")
    if season.ndim != 3 or season.shape[:2] != (n, c) or not np.isfinite(season).all():
        raise ValueError(f"use_theta: season must hold finite seasonal components of shape {(n, c)} + (sp,)")
    if ets is not None:
        ets = ETSStreams.from_arrays(ets.arrays(), n * c, season.shape[-1])  # (checked copies)
        if ets.clock.any():
            raise ValueError("use_theta: the exponential smoothing streams must be at their first step")
    if n_seen.any():
        raise ValueError("use_theta: the streams have consumed values; call it before they do")
    return PartnerStreams(ThetaStreams.empty(alpha.ravel(), season.reshape(n * c, -1)), ets), weight.copy()


def restored_theta(
    arrays: dict[str, np.ndarray], n: int, c: int, n_seen: np.ndarray
) -> tuple[PartnerStreams, np.ndarray]:
    """The Theta streams and weights :meth:`~aaren_ts.engine.ForecastEngine.theta_arrays` gave, for
    ``n`` series of ``c`` channels, checked (:meth:`~aaren_ts.statistical.partner.PartnerStreams.
    from_arrays`, and each stream's clock against the ``n_seen`` steps its series has seen);
    ``ValueError`` naming what does not fit."""
    arrays = dict(arrays)
    weight = np.asarray(arrays.pop("weight", None), dtype=np.float64)
    if weight.shape != (n, c) or not ((weight >= 0) & (weight <= 1)).all():
        raise ValueError(f"the saved Theta weights must be {(n, c)} numbers in [0, 1]")
    season = np.asarray(arrays.get("season", np.zeros((0, 0))))
    sp = season.shape[-1] if season.ndim == 2 else 0
    theta = PartnerStreams.from_arrays(arrays, n * c, sp)
    if not np.array_equal(theta.clock.reshape(n, c), np.broadcast_to(np.asarray(n_seen)[:, None], (n, c))):
        raise ValueError("the saved Theta streams' clocks disagree with the steps their series have seen")
    return theta, weight


def advance_theta(theta: PartnerStreams, rows: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> None:
    """Advance the Theta streams ``theta`` of the series at ``rows`` through ``values`` ``(R, N, C)``
    (model units; row ``i`` takes its first ``lengths[i]`` steps)."""
    theta_rows = stream_rows(rows, values.shape[2]).reshape(len(rows), -1)
    for t in range(values.shape[1]):
        live = t < lengths
        if not live.any():
            break
        theta.update(values[live, t].ravel(), theta_rows[live].ravel())


def theta_shift(
    engine: Any, rows: np.ndarray, point: np.ndarray, theta: PartnerStreams | None = None
) -> np.ndarray:
    """What the combination with the Theta method adds to ``engine``'s forecasts ``point`` ``(R,
    horizon, C)`` (model units) of the series at ``rows`` (:func:`~aaren_ts.statistical.partner.
    combination_shift`; ``theta``: those series' streams instead of the engine's, one per row and
    channel)."""
    if engine.theta is None:
        return np.zeros_like(point)
    streams, series = (engine.theta, rows) if theta is None else (theta, np.arange(len(rows)))
    return combination_shift(streams, engine.theta_weight[rows], point, series)


def theta_arrays(theta: PartnerStreams, weight: np.ndarray) -> dict[str, np.ndarray]:
    """Copies of the Theta streams' arrays and of the network's weights ``weight`` (``"weight"``), as
    :func:`restored_theta` takes them."""
    return {**{k: v.copy() for k, v in theta.arrays().items()}, "weight": weight.copy()}
