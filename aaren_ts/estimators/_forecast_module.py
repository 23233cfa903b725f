"""The torch module behind :class:`~aaren_ts.AarenForecaster`.

At every time step ``t`` the network sees one *token*: the window of the last ``context_length`` values
``x[t-P+1 .. t]`` (``P = context_length``), taken relative to a causal local level (its last value or its
mean), so the token does not depend on how much history came before it. The token is embedded linearly
and fed to a causal encoder (Aaren, or the KV-cached Transformer baseline), whose output at ``t``
summarises the whole history ``x[0 .. t]``. A linear head maps it to the next ``horizon`` values, plus
a direct linear map of the token's window to the horizon (a per-channel skip shared by all channels),
and the local level is added back.

Every position of a sequence produces its own forecast (the encoders are many-to-many), so a training
segment of ``S`` steps yields ``S`` forecasts, one per history length. Streaming needs only the
encoder's recurrent state and the last ``P - 1`` values (for the next tokens' windows): bounded memory
for Aaren, whatever the stream's length.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from aaren_ts.nn import EncoderConfig, make_encoder

__all__ = ["LOCAL_NORMS", "ForecastNet", "masked_mse"]

LOCAL_NORMS = ("last", "mean", "standard", None)
_STD_EPS = 1e-5  # added to the window variance before the square root (as RevIN does)


class ForecastNet(nn.Module):
    """Direct multi-horizon forecaster over a causal encoder, one forecast per time step.

    Parameters
    ----------
    n_channels : int
        Number of channels of the series.
    context_length : int
        Length ``P`` of the window each token embeds.
    horizon : int
        Number of future steps ``T`` predicted at every position.
    encoder : EncoderConfig
        Kind and sizes of the causal encoder.
    channel_independent : bool
        If True, every channel is a separate univariate series through shared weights (the batch
        holds ``batch * n_channels`` series); otherwise a token is the window of all channels.
    local_norm : {"last", "mean", "standard", None}
        Level subtracted from each token's window and added back to its forecast; ``"standard"`` also
        divides the window by its standard deviation and multiplies the forecast by it (RevIN-style
        instance normalisation, per token, so it stays causal and streams); ``None``: no local level.
    channel_embedding : bool, default=False
        With ``channel_independent``, add a learned vector per channel to that channel's tokens
        (initialised at zero), so the shared weights can tell the channels apart.
    """

    def __init__(
        self,
        n_channels: int,
        context_length: int,
        horizon: int,
        encoder: EncoderConfig,
        channel_independent: bool,
        local_norm: str,
        channel_embedding: bool = False,
    ) -> None:
        super().__init__()
        if local_norm not in LOCAL_NORMS:
            raise ValueError(f"local_norm must be one of {LOCAL_NORMS}, got {local_norm!r}")
        self.n_channels = n_channels
        self.context_length = context_length
        self.horizon = horizon
        self.channel_independent = channel_independent
        self.local_norm = local_norm
        c_in = 1 if channel_independent else n_channels
        self.c_in = c_in
        d_model = encoder.d_model
        self.embed = nn.Linear(context_length * c_in, d_model)
        self.encoder = make_encoder(encoder)
        self.head = nn.Linear(d_model, horizon * c_in)
        self.skip = nn.Linear(context_length, horizon)
        self.channel_embedding = (
            nn.Parameter(torch.zeros(n_channels, d_model))
            if channel_embedding and channel_independent
            else None
        )
        # The encoder's contribution starts at zero: training begins from the linear skip forecast.
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> list[Any]:
        """Encoder state before any observation, for ``batch_size`` series."""
        rows = batch_size * self.n_channels if self.channel_independent else batch_size
        return self.encoder.init_state(rows, device)

    def _windows(self, x: torch.Tensor, history: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows ``(B, N, C, P)`` of every step of ``x`` ``(B, N, C)`` and the new history.

        ``history`` ``(B, P-1, C)`` holds the values before ``x``; ``None`` means ``x`` starts the series,
        and the missing values are filled with the first observation (causal edge padding).
        """
        p = self.context_length
        if history is None:
            history = x[:, :1].expand(-1, p - 1, -1)
        full = torch.cat([history, x], dim=1)
        windows = full.unfold(1, p, 1)  # (B, N, C, P)
        new_history = full[:, full.shape[1] - (p - 1) :]
        return windows, new_history

    def forward(
        self,
        x: torch.Tensor,
        state: list[Any] | None = None,
        history: torch.Tensor | None = None,
        last_only: bool = False,
        return_state: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, list[Any], torch.Tensor]:
        """Forecasts at every step of ``x`` ``(B, N, C)``: ``(B, N, T, C)`` (``(B, 1, T, C)`` if
        ``last_only``).

        With ``state``/``history`` (from a previous call with ``return_state=True``) the computation
        continues that series exactly; ``return_state`` also returns the new state and history.
        """
        batch, n, c = x.shape
        windows, new_history = self._windows(x, history)
        if self.channel_independent:
            windows = windows.permute(0, 2, 1, 3).reshape(batch * c, n, 1, self.context_length)
        scale = None
        if self.local_norm == "last":
            level = windows[..., -1:]
        elif self.local_norm in ("mean", "standard"):
            level = windows.mean(-1, keepdim=True)
            if self.local_norm == "standard":
                scale = (windows.var(-1, keepdim=True, correction=0) + _STD_EPS).sqrt()
        else:
            level = None
        z = windows - level if level is not None else windows
        if scale is not None:
            z = z / scale
        tokens = self.embed(z.flatten(-2))
        if self.channel_embedding is not None:  # rows are (series, channel) pairs, channel fastest
            tokens = tokens + self.channel_embedding.repeat(batch, 1)[:, None, :]
        if n == 1 and state is not None and not self.training and not torch.is_grad_enabled():
            # one new observation of a stream: the encoder's step (same result, far less overhead)
            h, state = self.encoder.step(tokens[:, 0], state)
            h = h[:, None]
        else:
            h, state = self.encoder(tokens, None, state)
        if last_only:
            h, z = h[:, -1:], z[:, -1:]
            level = level[:, -1:] if level is not None else None
            scale = scale[:, -1:] if scale is not None else None
            n = 1
        out = self.head(h).unflatten(-1, (self.c_in, self.horizon)) + self.skip(z)  # (B', n, c_in, T)
        if scale is not None:
            out = out * scale
        if level is not None:
            out = out + level
        if self.channel_independent:
            out = out.reshape(batch, c, n, self.horizon).permute(0, 2, 3, 1)
        else:
            out = out.transpose(-1, -2)
        if return_state:
            return out, state, new_history
        return out


def masked_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the finite entries of ``target`` (NaN marks a future not observed)."""
    valid = torch.isfinite(target)
    diff = torch.where(valid, pred - torch.nan_to_num(target), torch.zeros_like(pred))
    return (diff**2).sum() / valid.sum().clamp_min(1)


class MaskedMSELoss(nn.Module):
    """:func:`masked_mse` as a loss module (skorch's ``criterion``)."""

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return masked_mse(pred, target)
