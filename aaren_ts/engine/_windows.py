"""Forecasts :class:`~aaren_ts.engine.ForecastEngine` computes beside its streams, leaving them as they
are: :func:`stream_forecasts`, the forecasts a stream would make after each of some new values, and
:func:`forecast_windows`, the forecasts after separate histories, each encoded from scratch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from aaren_ts.engine._combination import fallback_arguments, theta_shift
from aaren_ts.nn.forecast import ENCODE_CHUNK
from aaren_ts.statistical.partner import stream_rows

__all__ = ["forecast_windows", "point_in_original_units", "stream_forecasts"]


def stream_forecasts(
    engine: Any, row: int, values: np.ndarray, future: np.ndarray | None = None
) -> np.ndarray:
    """:meth:`ForecastEngine.stream_forecasts <aaren_ts.engine.ForecastEngine.stream_forecasts>` of
    ``engine``: the mean forecasts ``(N, horizon, C)`` its stream at ``row`` would make after each of
    ``values``, without advancing it."""
    engine.check_values(np.array([row]), values[None], "stream_forecasts")
    mean, scale = engine.mean[row], engine.scale[row]
    x = torch.as_tensor((values - mean) / scale, dtype=torch.float32, device=engine.device)[None]
    out = []
    with engine.lock:
        state, history = engine.take(torch.tensor([row], device=engine.device))
        with torch.no_grad():
            for start in range(0, x.shape[1], ENCODE_CHUNK):
                pred, state, history = engine.module(
                    x[:, start : start + ENCODE_CHUNK],
                    state=state,
                    history=history,
                    return_state=True,
                    **fallback_arguments(engine, np.array([row])),
                )
                out.append(pred.loc[0].cpu().numpy().astype(np.float64))
        point = point_in_original_units(engine, row, np.concatenate(out), future)
        if engine.theta is None:
            return point
        rows, c = np.array([row]), engine.n_channels
        theta = engine.theta.take(stream_rows(rows, c))
        shifts = []
        for step in range(len(values)):
            theta.update(values[step, :c])
            shifts.append(theta_shift(engine, rows, point[step][None], theta)[0])
    return point + np.stack(shifts) if shifts else point


def forecast_windows(
    engine: Any, windows: np.ndarray, row: int = 0, batch_size: int = 256, future: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`ForecastEngine.forecast_windows <aaren_ts.engine.ForecastEngine.forecast_windows>` of
    ``engine``: point forecast and standard deviation ``(n, horizon, C)`` after each of the separate
    histories ``windows``, in batches of ``batch_size``."""
    if engine.theta is not None and (engine.theta_weight[row] < 1.0).any():
        raise ValueError(
            "forecast_windows: the forecasts are combined with the Theta method's, whose state is "
            "each series' own stream: windows encoded from scratch have none (forecast from the "
            "streams, or fit with combination=None)"
        )
    mean, scale = engine.mean[row], engine.scale[row]
    c, head = engine.n_channels, engine.head
    locs, stds = [], []
    with torch.no_grad():
        for start in range(0, len(windows), batch_size):
            x = torch.as_tensor((windows[start : start + batch_size] - mean) / scale, dtype=torch.float32)
            fallback = fallback_arguments(engine, np.full(len(x), row))
            pred = engine.module(x.to(engine.device), last_only=True, **fallback)
            loc, params = pred.loc[:, 0].double(), pred.params[:, 0].double()
            half = head.quantile(loc, params, torch.tensor(1.0, dtype=torch.float64))
            half = half - head.quantile(loc, params, torch.tensor(-1.0, dtype=torch.float64))
            locs.append(loc.cpu().numpy())
            stds.append(0.5 * half.cpu().numpy())
    if not locs:
        empty = np.zeros((0, engine.horizon, c))
        return empty, empty.copy()
    point = point_in_original_units(engine, row, np.concatenate(locs), future)
    return point, np.concatenate(stds) * scale[:c]


def point_in_original_units(engine: Any, row: int, loc: np.ndarray, future: np.ndarray | None) -> np.ndarray:
    """Forecasts ``loc`` ``(n, horizon, C)`` of ``engine``'s series at ``row``, standardised, in its
    original units, with the effect of the future-known covariates ``future`` ``(n, horizon, n_future)``."""
    c = engine.n_channels
    point = loc * engine.scale[row, :c] + engine.mean[row, :c]
    if future is not None and engine.n_future:
        point = point + engine.future_effect(np.full(len(point), row), future, np.arange(engine.horizon))
    return point
