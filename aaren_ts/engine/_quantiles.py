"""The forecast distributions' quantiles that :class:`~aaren_ts.engine.ForecastEngine` reads: at the
nominal levels, or at each stream's calibrated ones, through the head's quantile function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from aaren_ts.engine._combination import theta_shift
from aaren_ts.utils.normal import gaussian_z

__all__ = ["one_sigma_bounds", "quantiles"]

_ONE_SIGMA = 0.6826894921370859  # coverage of mean +- one standard deviation of a Gaussian


def normal_scores(engine: Any, coverage: Sequence[float], rows: np.ndarray) -> np.ndarray:
    """``z`` of the central intervals of ``coverage``, ``(R, len(coverage), horizon, C)``, of
    ``engine``'s streams at ``rows``: the nominal ones, or each stream's calibrated ones."""
    calibration = engine.calibration
    if calibration is not None:
        if len(rows) < len(engine):
            calibration = calibration.take(torch.as_tensor(rows, device=calibration.levels.device))
        return calibration.z(coverage)
    z = gaussian_z(np.asarray(coverage))
    return np.broadcast_to(z[None, :, None, None], (len(rows), len(z), engine.horizon, engine.n_channels))


def quantiles_at(engine: Any, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The forecasts' quantiles at probabilities ``Phi(z)``, ``z`` ``(R, A, horizon, C)``: ``(R, A,
    horizon, C)`` in original units (through the head's quantile function, in float64)."""
    index = torch.as_tensor(rows, device=engine.forecast.device)
    loc = engine.forecast[index].double()[:, None]
    params = engine.params[index].double()[:, None]
    with torch.no_grad():
        values = engine.head.quantile(loc, params, torch.as_tensor(z, device=loc.device))
    c = engine.n_channels
    values = values.cpu().numpy()
    values = values * engine.scale[rows, None, None, :c] + engine.mean[rows, None, None, :c]
    if engine.theta is not None:
        values = values + theta_shift(engine, rows, engine._original_units(engine.forecast, rows))[:, None]
    return values


def quantiles(engine: Any, alpha: Sequence[float], rows: np.ndarray) -> np.ndarray:
    """Quantiles ``(R, horizon, C, len(alpha))`` of the forecast distributions of ``engine``'s streams
    at ``rows``, original units."""
    z = normal_scores(engine, [abs(2.0 * a - 1.0) for a in alpha], rows)  # (R, len(alpha), T, C)
    z = z * np.sign(np.asarray(alpha) - 0.5)[None, :, None, None]
    return np.moveaxis(quantiles_at(engine, z, rows), 1, -1)


def one_sigma_bounds(engine: Any, rows: np.ndarray) -> np.ndarray:
    """Bounds ``(R, 2, horizon, C)`` (lower, upper) of the central interval of one standard deviation's
    nominal coverage of the forecasts of ``engine``'s streams at ``rows``."""
    z = normal_scores(engine, [_ONE_SIGMA], rows)
    return quantiles_at(engine, np.concatenate([-z, z], axis=1), rows)
