"""The streams' forecasts as sktime's frames: what :class:`~aaren_ts.AarenForecaster`'s ``predict``,
``predict_quantiles`` and ``predict_var`` return (and :func:`as_frame`, the frame of new observations).

Each function reads the forecaster's engine at every series' own cutoff for the steps of ``fh`` (both
under the engine's lock: one consistent state, even while another thread streams), adds
what the future-known covariates in ``X`` add, and maps the values back from the network's scale to the
series' own units, one frame over the panel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts.utils.normal import check_quantile_levels

__all__ = ["as_frame", "point_frame", "quantile_frame", "variance_frame"]


def point_frame(forecaster: Any, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each series' point forecast at its own cutoff for the steps of ``fh``."""
    f = forecaster
    with f.engine_.lock:
        steps, times = f._forecast_steps(fh, "predict")
        known = f._known_future(X, steps, times, "predict")
        loc = f.engine_.predict()
    values = [f._from_model_scale(loc[row, s - 1] + known[row], row) for row, s in enumerate(steps)]
    return f._frame(times, values)


def quantile_frame(
    forecaster: Any, fh: ForecastingHorizon, X: pd.DataFrame | None, alpha: list[float]
) -> pd.DataFrame:
    """Quantiles ``alpha`` of each series' forecast distribution, in sktime's columns."""
    f = forecaster
    alpha = [float(a) for a in alpha]
    check_quantile_levels(np.asarray(alpha), where="predict_quantiles")
    with f.engine_.lock:
        steps, times = f._forecast_steps(fh, "predict_quantiles")
        known = f._known_future(X, steps, times, "predict_quantiles")
        quantiles = f.engine_.predict_quantiles(alpha)
    frames = [
        f._frame(
            times,
            [f._from_model_scale(quantiles[r, s - 1, :, k] + known[r], r) for r, s in enumerate(steps)],
        )
        for k in range(len(alpha))
    ]
    columns = f._get_columns(method="predict_quantiles", alpha=alpha)
    values = np.stack([frame.to_numpy() for frame in frames], axis=-1)  # (rows, C, len(alpha))
    return pd.DataFrame(values.reshape(len(frames[0]), -1), index=frames[0].index, columns=columns)


def variance_frame(forecaster: Any, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each series' forecast variance: the squared half-width of its interval of one standard
    deviation, mapped back to the series' units."""
    f = forecaster
    with f.engine_.lock:
        steps, times = f._forecast_steps(fh, "predict_var")
        known = f._known_future(X, steps, times, "predict_var") if X is not None else [0.0] * len(steps)
        bounds = f.engine_.one_sigma_bounds()  # (R, 2, horizon, C), on the network's scale
    values = []
    for row, s in enumerate(steps):
        lower, upper = (f._from_model_scale(b[s - 1] + known[row], row) for b in bounds[row])
        values.append((0.5 * (upper - lower)) ** 2)
    return f._frame(times, values)


def as_frame(y: Any, columns: pd.Index, where: str) -> pd.DataFrame:
    """New observations ``y`` as a frame: a Series takes the fitted ``columns`` where there is one."""
    if isinstance(y, pd.Series):
        frame = y.to_frame()
        if len(columns) == 1:
            frame.columns = columns
        return frame
    if isinstance(y, pd.DataFrame):
        return y
    raise TypeError(f"{where}: y must be a pandas Series or DataFrame, got {type(y).__name__}")
