"""The torch module behind :class:`~aaren_ts.AarenForecaster`.

At every time step ``t`` the network sees one *token*: the window of the last ``context_length`` values
``x[t-P+1 .. t]`` (``P = context_length``), taken relative to a causal local level (its last value or its
mean), so the token does not depend on how much history came before it. The token is embedded linearly
and fed to a causal encoder (Aaren, or the KV-cached Transformer baseline), whose output at ``t``
summarises the whole history ``x[0 .. t]``. A linear head maps it to the next ``horizon`` values, plus
a direct linear map of the token's window to the horizon (a per-channel skip shared by all channels),
and the local level is added back. The untrained network is the last-value forecast (the skip repeats
the window's last value, the head is zero).

Beside the point forecast, a forecast-distribution head (:mod:`aaren_ts.nn.heads`: a Gaussian by
default, or quantiles trained with the pinball loss, or any registered family) gives the rest of each
forecast's distribution around it. It reads the encoder's output detached and learns from its own loss
on the point forecast's errors, so the point forecast trains exactly as it would without it.

Every position of a sequence produces its own forecast (the encoders are many-to-many), so a training
segment of ``S`` steps yields ``S`` forecasts, one per history length. Streaming needs only the
encoder's recurrent state and the last ``P - 1`` values (for the next tokens' windows): bounded memory
for Aaren, whatever the stream's length.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import nn

from aaren_ts.nn.config import EncoderConfig
from aaren_ts.nn.factory import make_encoder
from aaren_ts.nn.heads import DIRECT_GAIN, DistributionHead, make_head

__all__ = [
    "ENCODE_CHUNK",
    "INITIAL_FORECASTS",
    "LOCAL_NORMS",
    "Forecast",
    "ForecastNet",
    "WindowHistory",
    "future_effect",
    "pad_before_first",
]

LOCAL_NORMS = ("last", "mean", "standard", None)
INITIAL_FORECASTS = ("naive", "level")
#: Steps per forward pass when a long series is streamed through the network (bounds the attention's
#: memory): the engine's encoding and the held-out judgements alike.
ENCODE_CHUNK = 512
_STD_EPS = 1e-5  # added to the window variance before the square root (as RevIN does)
# The future-known covariates' effect is a direct regression whose target is of order one (a
# coefficient in the series' units), from zero: like a distribution head's outputs, it is multiplied by
# DIRECT_GAIN (see the design note design_notes/forecaster_direct_gain).


def pad_before_first(values: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
    """``values`` ``(B, N, C)`` with every step before a series' first known value replaced by it.

    The windows' padding rule: a window that reaches back before a series' first observation sees that
    first observation there (causal: every step that reads the padding comes after it). ``known``
    marks the observed values; a series with none keeps its values (NaN) unchanged.
    """
    total = values.shape[1]
    steps = torch.arange(total, device=values.device)[None, :, None]
    first = torch.where(known, steps, total).amin(dim=1, keepdim=True).clamp_max(total - 1)
    return torch.where(steps >= first, values, values.gather(1, first.expand_as(values)))


def future_effect(future: torch.Tensor, coefficients: torch.Tensor) -> torch.Tensor:
    """What future-known covariates add to a forecast: ``(..., T, n_future)`` to ``(..., T, C)``.

    ``future[..., h, :]`` are the standardised covariates at the forecast's step ``h + 1`` (NaN counts
    as zero: not known there); ``coefficients`` ``(C, T, n_future)`` the effect of one unit of each
    (:meth:`ForecastNet.future_coefficients`).
    """
    return torch.einsum("...tf,ctf->...tc", future.nan_to_num(0.0), coefficients.to(future.dtype))


def _all_true(mask: torch.Tensor) -> bool:
    """``bool(mask.all())`` of a boolean tensor, read as bytes (tens of times faster on CPU, big masks)."""
    return mask.numel() == 0 or bool(mask.view(torch.uint8).amin())


class WindowHistory(NamedTuple):
    """The recent values a stream keeps for its next windows.

    Attributes
    ----------
    values : torch.Tensor
        ``(B, H, C)`` values of the last ``H`` steps, missing ones carried forward (NaN only before
        a series' first observation).
    observed : torch.Tensor
        ``(B, H, C)`` bool, True where the value was observed rather than carried.
    """

    values: torch.Tensor
    observed: torch.Tensor

    def map(self, fn: Any) -> WindowHistory:
        """Apply ``fn`` to both tensors (e.g. ``lambda t: t[rows]``)."""
        return WindowHistory(fn(self.values), fn(self.observed))


class Forecast(NamedTuple):
    """A forecast distribution: the point forecast ``loc`` and the head's parameters ``params``.

    ``loc`` is ``(B, N, T, C)`` (from :meth:`ForecastNet.forward`), ``params`` ``(B, N, T, C, K)`` with
    ``K`` the head's :attr:`~aaren_ts.nn.heads.DistributionHead.n_params`, in the units of the
    network's input (the standardised series).
    """

    loc: torch.Tensor
    params: torch.Tensor


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
    sp : int, default=1
        Seasonal period of the naive forecast the untrained network makes.
    n_exog : int, default=0
        Exogenous variables (covariates) appended to the input's channels: each step's values are
        embedded into that step's token(s).
    n_future : int, default=0
        How many of them (the first ones) are known for the future: a linear map per horizon step and
        channel adds their values at the forecast step to the forecast (in the series' standardised
        units, after the local level), given as ``future`` to :meth:`forward`.
    distribution : str, default="normal"
        The forecast-distribution head (:func:`aaren_ts.nn.heads.make_head`).
    initial_forecast : {"naive", "level"}, default="naive"
        The forecast of the untrained network, which training corrects: ``"naive"`` the (seasonal)
        naive forecast of period ``sp`` (:meth:`reset_to_naive`), ``"level"`` the window's local level
        (the direct linear forecast starts at zero: the window's mean under ``local_norm="standard"``
        or ``"mean"``, its last value under ``"last"``).
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
        sp: int = 1,
        n_exog: int = 0,
        n_future: int = 0,
        distribution: str = "normal",
        initial_forecast: str = "naive",
    ) -> None:
        super().__init__()
        if initial_forecast not in INITIAL_FORECASTS:
            raise ValueError(f"initial_forecast must be one of {INITIAL_FORECASTS}, got {initial_forecast!r}")
        if not 0 <= n_future <= n_exog:
            raise ValueError(f"n_future must be in [0, n_exog={n_exog}], got {n_future}")
        self.n_exog, self.n_future = n_exog, n_future
        if not 1 <= sp <= context_length:
            raise ValueError(f"sp must be in [1, context_length={context_length}], got {sp}")
        self.sp = sp
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
        # which window positions hold a carried or padded value instead of an observation (zero at the
        # start; it tells the network which positions of a window are the padding before a series'
        # first value; design note design_notes/forecaster_missing_embedding)
        # (skip_init: zeros without drawing random numbers, so the other weights' initialisation, and
        # with it a seed's result on data without gaps, is what it was before this embedding existed)
        self.embed_missing = nn.utils.skip_init(nn.Linear, context_length * c_in, d_model, bias=False)
        nn.init.zeros_(self.embed_missing.weight)
        self.encoder = make_encoder(encoder)
        self.backbone = encoder.backbone
        self.head = nn.Linear(d_model, horizon * c_in)
        self.skip = nn.Linear(context_length, horizon)
        # the rest of every forecast's distribution: it reads the encoder's output detached (so the
        # point forecast trains as without it) and draws no random numbers at initialisation
        self.distribution_head: DistributionHead = make_head(distribution, d_model, horizon, c_in)
        self.channel_embedding = (
            nn.Parameter(torch.zeros(n_channels, d_model))
            if channel_embedding and channel_independent
            else None
        )
        # covariates: this step's values in the token, future-known ones straight into the forecast
        # (zero at the start, created without drawing random numbers: a model without them is unchanged)
        self.embed_exog = None
        if n_exog:
            self.embed_exog = nn.utils.skip_init(nn.Linear, n_exog, d_model, bias=False)
            nn.init.zeros_(self.embed_exog.weight)
        self.future_weight = nn.Parameter(torch.zeros(n_channels, horizon, n_future)) if n_future else None
        self.reset_to_naive()
        if initial_forecast == "level":
            with torch.no_grad():
                self.skip.weight.zero_()

    def reset_to_naive(self) -> None:
        """Make the network the (seasonal) naive forecast, as it is at initialisation.

        The skip repeats the window's last ``sp`` values (``sp = 1``: the last value; ``z * scale +
        level`` gives the values back for every ``local_norm``) and the encoder's head is zero, so
        training starts from the naive forecast and learns corrections to it. The encoder's own weights
        are left as they are (they do not reach the output while the head is zero).
        """
        with torch.no_grad():
            self.skip.weight.copy_(self.naive_weight())
            self.skip.bias.zero_()
            self.head.weight.zero_()
            self.head.bias.zero_()
            if self.future_weight is not None:
                self.future_weight.zero_()

    def naive_weight(self) -> torch.Tensor:
        """``(T, P)``: the linear map from a token's window (after the local level and scale) to the
        (seasonal) naive forecast: step ``t`` repeats the window's value ``sp`` steps before ``t``."""
        weight = torch.zeros_like(self.skip.weight)
        steps = torch.arange(self.horizon, device=weight.device)
        weight[steps, self.context_length - self.sp + steps % self.sp] = 1.0
        return weight

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> list[Any]:
        """Encoder state before any observation, for ``batch_size`` series."""
        rows = batch_size * self.n_channels if self.channel_independent else batch_size
        return self.encoder.init_state(rows, device)

    def init_history(self, batch_size: int, device: torch.device | str | None = None) -> WindowHistory:
        """Window history before any observation, for ``batch_size`` series (nothing observed)."""
        shape = (batch_size, self.history_length, self.n_channels)
        nothing = torch.full(shape, float("nan"), device=device)
        return WindowHistory(nothing, torch.zeros(shape, dtype=torch.bool, device=device))

    @property
    def constant_state(self) -> bool:
        """Whether a stream's state has a constant size (Aaren; a Transformer's KV cache grows)."""
        return self.backbone == "aaren"

    @property
    def history_length(self) -> int:
        """Steps of carried values a stream keeps for the next windows (``max(P - 1, 1)``)."""
        return max(self.context_length - 1, 1)

    def _carried(
        self, x: torch.Tensor, history: WindowHistory | None, lengths: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, WindowHistory]:
        """Values the windows see over the history followed by ``x``, and the new history.

        Returns ``values``, ``observed`` and ``carried`` of shape ``(B, H + N, C)`` (``H`` =
        :attr:`history_length`): a missing value is replaced by the last observed one before it
        (``carried`` marks those), and the values before a series' first observation by that first
        observation (causal: every step that reads them comes after it; ``carried`` marks this
        padding too); NaN remains only where nothing has been observed yet. Steps at or after ``lengths``
        (ragged batches) count as not observed and do not enter the new history, which holds the
        last ``H`` steps before each series' own end (carried values, NaN before the first
        observation). ``carried`` is ``None`` when nothing is carried or padded.
        """
        batch, n, c = x.shape
        if history is None:
            history = self.init_history(batch, x.device)
        observed = torch.isfinite(x)
        h = self.history_length
        if lengths is None and _all_true(observed) and _all_true(history.observed):
            # nothing missing (the common case): no value to carry
            values = torch.cat([history.values, x], dim=1)
            observed = torch.ones_like(values, dtype=torch.bool)
            return values, observed, None, WindowHistory(values[:, -h:], observed[:, -h:])
        if lengths is None and n == 1:
            return self._carried_one(x, observed, history)
        if lengths is not None:
            observed = observed & (torch.arange(n, device=x.device)[None, :, None] < lengths[:, None, None])
        values = torch.cat([history.values, torch.where(observed, x, float("nan"))], dim=1)
        observed = torch.cat([history.observed, observed], dim=1)
        steps = torch.arange(values.shape[1], device=x.device)[None, :, None]
        known = torch.isfinite(values)
        last_known = torch.where(known, steps, -1).cummax(dim=1).values
        last_value = values.gather(1, last_known.clamp_min(0))
        carried_forward = torch.where(last_known >= 0, last_value, float("nan"))
        filled = pad_before_first(carried_forward, known)
        ends = (lengths if lengths is not None else torch.full((batch,), n, device=x.device)).long()
        keep = (ends[:, None] + torch.arange(h, device=x.device)[None, :])[..., None].expand(-1, -1, c)
        new_history = WindowHistory(carried_forward.gather(1, keep), observed.gather(1, keep))
        return filled, observed, ~observed, new_history  # carried: gaps and the padding before the start

    def _carried_one(
        self, x: torch.Tensor, observed: torch.Tensor, history: WindowHistory
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, WindowHistory]:
        """:meth:`_carried` for one new step ``x`` ``(B, 1, C)`` with something missing (a stream's
        step): the history already holds carried values, NaN only before a series' first observation
        (as :meth:`_carried` leaves it, and as a restored state is checked to hold), so the new value
        is ``x`` where observed and the history's last value otherwise, with no scan over the history
        (the same values as the general case, in a fraction of its time)."""
        values = torch.cat([history.values, torch.where(observed, x, history.values[:, -1:])], dim=1)
        observed = torch.cat([history.observed, observed], dim=1)
        new_history = WindowHistory(values[:, 1:], observed[:, 1:])
        known = torch.isfinite(values)
        filled = values if _all_true(known) else pad_before_first(values, known)
        return filled, observed, ~observed, new_history

    def filled(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(B, N, C)`` with every missing value carried forward as the windows see it."""
        values, _, _, _ = self._carried(x, None, None)
        return values[:, self.history_length :]

    def future_effect(self, future: torch.Tensor) -> torch.Tensor:
        """What the future-known covariates add to the forecast: ``(..., T, n_future)`` to ``(..., T, C)``.

        ``future[..., h, :]`` are the covariates at the forecast's step ``h + 1`` (standardised; NaN,
        e.g. beyond a training segment's end, counts as zero).
        """
        return future_effect(future, self.future_coefficients())

    def future_coefficients(self) -> torch.Tensor:
        """``(C, T, n_future)``: effect on channel ``c`` at step ``t + 1`` of one unit of each covariate."""
        return self.future_weight * DIRECT_GAIN

    def tokens(
        self, windows: torch.Tensor, missing: torch.Tensor | None, exog: torch.Tensor | None
    ) -> tuple[torch.Tensor, ...]:
        """The encoder's tokens from the windows of every step, and what the heads need of them.

        Parameters
        ----------
        windows : torch.Tensor
            ``(B, N, C, P)`` values each step's window sees (missing ones carried, no NaN).
        missing : torch.Tensor or None
            ``(B, N, C, P)`` 1.0 where a window position holds a carried or padded value (``None``:
            nothing is).
        exog : torch.Tensor or None
            ``(B, N, n_exog)`` standardised covariates of every step (no NaN).

        Returns
        -------
        tokens : torch.Tensor
            ``(B', N, d_model)``, ``B' = B * C`` with channel-independent tokens (channel fastest).
        z, level, scale, window_std : torch.Tensor or None
            ``(B', N, c_in, P)`` windows after the local level (and scale), and the ``(B', N, c_in, 1)``
            level, scale (``local_norm="standard"`` only) and standard deviation of each window.
        """
        batch, n, c, p = windows.shape
        if self.channel_independent:
            windows = windows.permute(0, 2, 1, 3).reshape(batch * c, n, 1, p)
            if missing is not None:
                missing = missing.permute(0, 2, 1, 3).reshape(batch * c, n, 1, p)
        z, level, scale, window_std = self.normalize(windows)
        tokens = self.embed(z.flatten(-2))
        if missing is not None:  # (nothing carried: the embedding of zeros adds nothing)
            tokens = tokens + self.embed_missing(missing.flatten(-2))
        if self.channel_embedding is not None:  # rows are (series, channel) pairs, channel fastest
            tokens = tokens + self.channel_embedding.repeat(batch, 1)[:, None, :]
        if exog is not None:  # the same covariates in every channel's token of a step
            embedded = self.embed_exog(exog)  # (B, N, d_model)
            tokens = tokens + (embedded.repeat_interleave(c, dim=0) if self.channel_independent else embedded)
        return tokens, z, level, scale, window_std

    def normalize(
        self, windows: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor]:
        """Each window ``(..., P)`` after the local level (and scale) of ``local_norm``: ``z``, and the
        ``(..., 1)`` level, scale (``local_norm="standard"`` only, else ``None``) and standard deviation
        of each window. A forecast ``f`` of ``z``'s units is ``f * scale + level`` in the window's."""
        scale = None
        if self.local_norm == "last":
            level = windows[..., -1:]
        elif self.local_norm in ("mean", "standard"):
            level = windows.mean(-1, keepdim=True)
        else:
            level = None
        z = windows - level if level is not None else windows
        if self.local_norm == "standard":
            # two-pass variance from the centred window (torch's var is several times slower on CPU here)
            scale = ((z * z).mean(-1, keepdim=True) + _STD_EPS).sqrt()
            z = z / scale
            window_std = scale
        else:
            centred = windows - windows.mean(-1, keepdim=True)
            window_std = ((centred * centred).mean(-1, keepdim=True) + _STD_EPS).sqrt()
        return z, level, scale, window_std

    def distribution(
        self,
        h: torch.Tensor,
        z: torch.Tensor,
        level: torch.Tensor | None,
        scale: torch.Tensor | None,
        window_std: torch.Tensor,
        batch: int,
        naive: torch.Tensor | None = None,
        spread: torch.Tensor | None = None,
        naive_std: torch.Tensor | None = None,
        max_std: torch.Tensor | None = None,
    ) -> Forecast:
        """The forecast distributions (``loc`` ``(B, N, T, C)``, ``params`` ``(B, N, T, C, K)``) from the
        encoder's output ``h`` ``(B', N, d_model)``.

        ``z``, ``level``, ``scale`` and ``window_std`` are :meth:`tokens`' for the same steps. The mean
        leaves out the future-known covariates' effect (:meth:`future_effect`). ``naive`` ``(B, C)``
        is the (seasonal) naive forecast's share in the mean of each series' channels, in [0, 1] (0:
        the network's forecast, 1: the naive one; bool: 0 or 1), and ``spread`` ``(B, C)``
        multiplies the head's scale parameters (its :attr:`~aaren_ts.nn.heads.DistributionHead.scaled`
        ones) of each series' channels.
        ``naive_std`` ``(B, C)``, where positive, replaces a channel's distribution by the naive
        method's own (:meth:`naive_distribution`; ignored by a head without a Gaussian member).
        ``max_std`` ``(B, C)``, where positive, caps the head's distribution before ``spread``: no
        quantile farther from the mean than a Gaussian's of standard deviation ``max_std`` growing as
        the naive method's (:meth:`naive_growth`,
        :meth:`~aaren_ts.nn.heads.DistributionHead.capped`).
        """
        n, c = h.shape[1], self.n_channels
        out = self.head(h).unflatten(-1, (self.c_in, self.horizon)) + self.skip(z)  # (B', n, c_in, T)
        if naive is not None:
            # rows are (series, channel) pairs, channel fastest, or series with every channel in a token
            share = naive.to(out.dtype)
            rows = share.reshape(-1, 1, 1, 1) if self.channel_independent else share[:, None, :, None]
            # (where the share is 0 the network's forecast is kept as it is, even beside a NaN)
            out = torch.where(rows > 0, torch.lerp(out, z @ self.naive_weight().T, rows), out)
        if scale is not None:
            out = out * scale
        if level is not None:
            out = out + level
        params = self.distribution_head(h.detach(), window_std)  # (B', n, c_in, T, K)
        params = self._to_output(params, batch, c, n)  # (B, n, T, C, K)
        if max_std is not None:
            limit = torch.where(max_std > 0, max_std, torch.inf).to(params.dtype)
            growth = self.naive_growth(params.dtype, params.device)
            cap = limit[:, None, None, :] * growth[None, None, :, None]  # (B, 1, T, C)
            params = self.distribution_head.capped(params, cap.expand(-1, n, -1, -1))
        if spread is not None:
            scaled = torch.tensor(self.distribution_head.scaled, device=params.device)
            params = params * torch.where(scaled, spread[:, None, None, :, None].to(params.dtype), 1.0)
        if naive_std is not None and self.distribution_head.has_normal:
            own = (naive_std > 0)[:, None, None, :, None]
            params = torch.where(own, self.naive_distribution(naive_std, n).to(params.dtype), params)
        return Forecast(self._to_output(out, batch, c, n), params)

    def naive_distribution(self, naive_std: torch.Tensor, n: int = 1) -> torch.Tensor:
        """The (seasonal) naive method's forecast distribution, as the head's parameters ``(B, n, T, C,
        K)``: Gaussian, with the standard deviation ``naive_std`` ``(B, C)`` of its one-step errors
        growing as the square root of the cycles ahead, ``sqrt(ceil(t / sp))`` at step ``t`` (the
        errors of successive cycles adding up as a random walk's)."""
        growth = self.naive_growth(naive_std.dtype, naive_std.device)
        std = naive_std[:, None, None, :] * growth[None, None, :, None]  # (B, 1, T, C)
        return self.distribution_head.from_normal(std.expand(-1, n, -1, -1))

    def naive_growth(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> torch.Tensor:
        """``(T,)``: the naive method's error standard deviation at each forecast step in units of its
        one-step one, ``sqrt(ceil(t / sp))``."""
        steps = torch.arange(1, self.horizon + 1, device=device, dtype=dtype)
        return torch.ceil(steps / self.sp).sqrt()

    def forward(
        self,
        x: torch.Tensor,
        state: list[Any] | None = None,
        history: WindowHistory | None = None,
        last_only: bool = False,
        return_state: bool = False,
        lengths: torch.Tensor | None = None,
        future: torch.Tensor | None = None,
        naive: torch.Tensor | None = None,
        spread: torch.Tensor | None = None,
        naive_std: torch.Tensor | None = None,
        max_std: torch.Tensor | None = None,
    ) -> Forecast | tuple[Forecast, list[Any], WindowHistory]:
        """Forecast distributions at every step of ``x`` ``(B, N, C)``: ``loc`` and ``scale`` of shape
        ``(B, N, T, C)`` (``(B, 1, T, C)`` if ``last_only``).

        NaN in ``x`` marks a missing observation: its token is not seen by the encoder (the state
        carries over it), and windows carry the last observed value, with a missing-value indicator
        per window position embedded beside the values. ``lengths`` ``(B,)`` makes a ragged batch:
        series ``b`` has ``lengths[b]`` real steps, the rest is padding that changes nothing, and
        ``last_only`` then reads each series' forecast after its own last step. With
        ``state``/``history`` (from a previous call with ``return_state=True``) the computation
        continues those series exactly; ``return_state`` also returns the new state and history.

        With covariates, ``x`` is ``(B, N, C + n_exog)``: the series' channels, then the covariates
        (finite where the series is); ``future`` ``(B, N, T, n_future)`` (``(B, 1, T, n_future)`` with
        ``last_only``) holds the future-known ones at every forecast step, and their effect
        (:meth:`future_effect`) is added to the mean. Without ``future`` the mean leaves it out (a
        stream adds it when the future values are known).

        ``naive`` ``(B, C)`` is the (seasonal) naive forecast's share in the mean forecast of each
        series' channels, in [0, 1] (bool: 0 or 1; above 0 where the network did not clearly beat it
        on their held-out data), and ``spread`` ``(B, C)`` multiplies the scale parameters of the
        distribution head for each series' channels (chosen on their held-out data), and
        ``naive_std`` ``(B, C)``, where positive, gives a channel the naive method's own distribution
        instead (:meth:`naive_distribution`); ``max_std`` ``(B, C)``, where positive, caps the head's
        spread (:meth:`distribution`).
        """
        exog = None
        if self.n_exog:
            x, exog = x[..., : self.n_channels], x[..., self.n_channels :].nan_to_num(0.0)
        batch, n, c = x.shape
        p = self.context_length
        values, observed, carried, new_history = self._carried(x, history, lengths)
        offset = self.history_length - (p - 1)
        # NaN remains only before a series' first observation, so only where something is carried
        windows = values[:, offset:] if carried is None else values[:, offset:].nan_to_num(0.0)
        windows = windows.unfold(1, p, 1)  # (B, N, C, P)
        missing = None if carried is None else carried[:, offset:].to(x.dtype).unfold(1, p, 1)
        token_mask = observed[:, self.history_length :]  # (B, N, C)
        if self.channel_independent:
            token_mask = token_mask.permute(0, 2, 1).reshape(batch * c, n)
        else:
            token_mask = token_mask.any(-1)
        tokens, z, level, scale, window_std = self.tokens(windows, missing, exog)
        all_seen = _all_true(token_mask)
        if n == 1 and state is not None and not self.training and not torch.is_grad_enabled():
            # one new observation per stream: the encoder's step (same result, far less overhead)
            h, state = self.encoder.step(tokens[:, 0], state, None if all_seen else token_mask[:, 0])
            h = h[:, None]
        else:
            h, state = self.encoder(tokens, None if all_seen else token_mask, state)
        if last_only:
            rows = h.shape[0]
            if lengths is None:
                last = torch.full((rows,), n - 1, dtype=torch.long, device=x.device)
            else:
                last = (lengths.long() - 1).clamp_min(0)
                last = last.repeat_interleave(c) if self.channel_independent else last
            pick = torch.arange(rows, device=x.device)
            h, z = h[pick, last][:, None], z[pick, last][:, None]
            level = level[pick, last][:, None] if level is not None else None
            scale = scale[pick, last][:, None] if scale is not None else None
            window_std = window_std[pick, last][:, None]
        forecast = self.distribution(h, z, level, scale, window_std, batch, naive, spread, naive_std, max_std)
        if future is not None and self.future_weight is not None:
            forecast = Forecast(forecast.loc + self.future_effect(future), forecast.params)
        if return_state:
            return forecast, state, new_history
        return forecast

    def _to_output(self, out: torch.Tensor, batch: int, c: int, n: int) -> torch.Tensor:
        """``(B', n, c_in, T, ...)`` per token row to ``(B, n, T, C, ...)`` per series."""
        extra = out.shape[4:]
        if self.channel_independent:
            out = out.reshape(batch, c, n, self.horizon, *extra)
            return out.permute(0, 2, 3, 1, *range(4, 4 + len(extra)))
        return out.transpose(2, 3)
