"""The future-known covariates' effect on forecasts, in the series' own units.

A forecaster with future-known covariates adds to each forecast a linear effect of their values at the
forecast's steps (:func:`aaren_ts.nn.forecast.future_effect`). :class:`FutureEffect` applies it to
covariates in original units for streams with their own standardisation; the engine calls it, and the
ONNX export writes the same module as a graph of its own, so the streamer computes it without PyTorch
and without a second implementation.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from aaren_ts.nn.forecast import ForecastNet, future_effect

__all__ = ["FutureEffect", "future_effect_at_steps"]


class FutureEffect(nn.Module):
    """``(future, mean, scale) -> effect``: the covariates' effect on each stream's forecasts.

    Inputs: ``future`` ``(R, T, n_future)`` float64, the covariates' values (original units) at the
    ``T = horizon`` forecast steps (NaN: not known there, no effect); ``mean`` and ``scale``
    ``(R, C + n_exog)`` float64, each stream's standardisation (channels, then covariates). Output:
    ``effect`` ``(R, T, C)`` float64, in the channels' original units.

    Parameters
    ----------
    module : ForecastNet
        The network; its coefficients are copied (float64) when this is built.
    """

    def __init__(self, module: ForecastNet) -> None:
        super().__init__()
        self.n_channels, self.n_future = module.n_channels, module.n_future
        self.register_buffer("coefficients", module.future_coefficients().detach().to(torch.float64))

    def forward(self, future: torch.Tensor, mean: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        c, f = self.n_channels, self.n_future
        z = (future - mean[:, None, c : c + f]) / scale[:, None, c : c + f]
        return future_effect(z, self.coefficients) * scale[:, None, :c]


def future_effect_at_steps(
    module: ForecastNet, mean: np.ndarray, scale: np.ndarray, future: np.ndarray, steps: np.ndarray
) -> np.ndarray:
    """:class:`FutureEffect` of ``module`` at some forecast steps of each stream.

    ``future`` ``(R, k, n_future)`` holds the covariates (original units) at the 0-based forecast
    steps ``steps`` (``(k,)`` shared by all streams, or ``(R, k)``; distinct within a stream); ``mean``
    and ``scale`` ``(R, C + n_exog)``. Returns ``(R, k, C)``, original units.
    """
    effect = FutureEffect(module)
    n = len(future)
    at = np.broadcast_to(steps, future.shape[:2])
    full = np.full((n, module.horizon, module.n_future), np.nan)
    full[np.arange(n)[:, None], at] = future
    device = effect.coefficients.device
    with torch.no_grad():
        out = effect(*(torch.as_tensor(a, dtype=torch.float64, device=device) for a in (full, mean, scale)))
    return out.cpu().numpy()[np.arange(n)[:, None], at]
