"""Forecast-distribution heads: one class per family, the one place that knows a family.

A forecasting network (:class:`~aaren_ts.nn.forecast.ForecastNet`) makes a point forecast ``loc`` at
every step; a head turns the encoder's output into the rest of the forecast distribution around it.
A head defines, for its family:

* its parameters beside ``loc`` (:attr:`~DistributionHead.n_params` per horizon step and channel, and
  which of them are in the series' units, :attr:`~DistributionHead.scaled`), computed by ``forward``;
* its training loss (:meth:`~DistributionHead.loss`: a negative log-likelihood or a pinball loss);
* its quantile function on the normal scale (:meth:`~DistributionHead.quantile`: the quantile at
  probability ``Phi(z)``), from which every interval and quantile is read;
* the two-sided tail probability of an observation (:meth:`~DistributionHead.p_value`), which the
  online interval calibration of :mod:`aaren_ts.engine.calibration` judges forecasts by;
* optionally, its member closest to a Gaussian of a given standard deviation
  (:meth:`~DistributionHead.from_normal`): a series forecast by the naive method can then take the
  naive method's own intervals.

The network, its training loss, the streams' calibration, the ONNX export and the torch-free
streamer all go through this interface: adding a family is one subclass registered with
:func:`register_head`, then ``AarenForecaster(distribution=<its name>)``. Everything a head computes
at inference must be exportable to ONNX (elementwise arithmetic, ``exp``, ``log``, ``sqrt``,
``erfc``, ``gather``...): the exported step evaluates :meth:`~DistributionHead.p_value`, and the file
carries :meth:`~DistributionHead.quantile` as a graph of its own.

Shapes: ``loc`` is ``(..., T, C)``; parameters are ``(..., T, C, n_params)`` in the same units as
``loc``; ``z`` and ``y`` broadcast against ``loc``. A head must be equivariant to the series' scale:
multiplying ``loc``, ``y`` and the :attr:`~DistributionHead.scaled` parameters by ``s`` (and shifting
``loc`` and ``y`` alike) multiplies (and shifts) its quantiles alike and leaves its p-values.
"""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist
from typing import ClassVar

import torch
from torch import nn
from torch.nn.functional import softplus

__all__ = ["HEADS", "DistributionHead", "NormalHead", "QuantileHead", "make_head", "register_head"]

# The heads' raw outputs start at zero (weights created as zeros, without drawing random numbers, so a
# seed's point forecast does not depend on the head). Adam moves a weight by about ``lr`` per step,
# hundreds of steps from these direct regressions' targets (of order one); their outputs are
# multiplied by this gain, which for Adam is the same as ten times the learning rate for the head.
DIRECT_GAIN = 10.0

HEADS: dict[str, type[DistributionHead]] = {}


def register_head(cls: type[DistributionHead]) -> type[DistributionHead]:
    """Make ``cls`` available by its :attr:`~DistributionHead.name` (use as a class decorator)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a name to be registered")
    HEADS[cls.name] = cls
    return cls


def make_head(name: str, d_model: int, horizon: int, c_in: int) -> DistributionHead:
    """The registered head ``name`` for an encoder of width ``d_model``."""
    if name not in HEADS:
        raise ValueError(f"unknown forecast distribution {name!r}; registered: {sorted(HEADS)}")
    return HEADS[name](d_model, horizon, c_in)


# erfc(x) = t exp(-x^2 + P(t)), t = 1 / (1 + x / 2), P of degree 9 (the Chebyshev fit of Numerical
# Recipes' erfcc, fractional error below 1.2e-7): the C calibration kernel's form, lowest degree first
_ERFC_FIT = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def two_sided_tail(x: torch.Tensor) -> torch.Tensor:
    """``erfc(x)`` for ``x >= 0``: the two-sided tail probability of a standard normal beyond ``x *
    sqrt(2)``.

    ``torch.erfc``, except in an ONNX export: ONNX has ``Erf`` and no ``Erfc``, and ``1 - Erf`` in
    float32 keeps no digit of a p-value of ``1e-6``, the least level the calibration decides on (an
    exported stream's levels then moved differently from the estimator's wherever an observation lay
    about 4.9 standard deviations out); there it is the fit above, as the C calibration kernel
    computes it (about 1e-6 relative or better down to p-values of 1e-6).
    """
    if not torch.onnx.is_in_onnx_export():
        return torch.erfc(x)
    t = 1.0 / (1.0 + 0.5 * x)
    poly = torch.full_like(t, _ERFC_FIT[-1])
    for coefficient in reversed(_ERFC_FIT[:-1]):
        poly = coefficient + t * poly
    return t * torch.exp(poly - x * x)


def _zero_linear(d_in: int, d_out: int) -> nn.Linear:
    """A linear layer starting at zero, created without drawing random numbers."""
    layer = nn.utils.skip_init(nn.Linear, d_in, d_out)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class DistributionHead(nn.Module):
    """One family of forecast distributions around the network's point forecast.

    Parameters
    ----------
    d_model : int
        Width of the encoder output the head reads.
    horizon : int
        Forecast steps ``T``.
    c_in : int
        Channels of one token (1 with channel-independent tokens).
    """

    #: Registry key (the ``distribution`` parameter of the forecaster).
    name: ClassVar[str] = ""
    #: Parameters beside the location, per horizon step and channel.
    n_params: ClassVar[int] = 0
    #: For each parameter: whether it is in the series' units (scaled with it) or a shape (unitless).
    scaled: ClassVar[tuple[bool, ...]] = ()

    def __init__(self, d_model: int, horizon: int, c_in: int) -> None:
        super().__init__()
        self.horizon, self.c_in = horizon, c_in

    def forward(self, h: torch.Tensor, window_std: torch.Tensor) -> torch.Tensor:
        """Parameters ``(B', N, c_in, T, n_params)`` from the encoder's output ``h`` ``(B', N, d_model)``
        (detached by the caller: the point forecast trains as without the head) and each token
        window's standard deviation ``(B', N, c_in, 1)`` (the natural unit of its spread)."""
        raise NotImplementedError

    def loss(self, loc: torch.Tensor, params: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Elementwise training loss of the distribution against ``target`` (finite entries only are
        used by the caller); ``loc`` is detached."""
        raise NotImplementedError

    def quantile(self, loc: torch.Tensor, params: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """The quantile at probability ``Phi(z)`` (``Phi`` the standard normal distribution function):
        ``z = 0`` is the median, ``z = +-1.96`` the bounds of the central 95 % interval."""
        raise NotImplementedError

    def p_value(self, loc: torch.Tensor, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Two-sided tail probability of ``y``: the largest miscoverage level whose central interval
        still contains it (``y`` lies outside the central interval of level ``a`` exactly when this is
        below ``a``): ``2 min(F(y), 1 - F(y))`` with ``F`` the distribution function."""
        raise NotImplementedError

    @property
    def has_normal(self) -> bool:
        """Whether the family has a Gaussian member (overrides :meth:`from_normal`)."""
        return type(self).from_normal is not DistributionHead.from_normal

    def from_normal(self, std: torch.Tensor) -> torch.Tensor:
        """Parameters ``(..., n_params)`` of the family's member whose quantiles around the location are
        those of a Gaussian of standard deviation ``std`` ``(...)`` (exactly, or at the family's own
        levels). A family that has no such member raises ``NotImplementedError`` (the default); its
        series keep the head's own intervals."""
        raise NotImplementedError(f"the {self.name!r} head has no Gaussian member")

    def capped(self, params: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        """``params`` ``(..., n_params)`` with the distribution's quantiles drawn in, where they lie
        farther from the location, to those of the Gaussian of standard deviation ``std`` ``(...)``.

        The scaled parameters of both built-in families are signed distances from the location (a
        standard deviation, quantile offsets) that grow with the spread, so each is clipped at its
        Gaussian value (:meth:`from_normal`): a lower quantile from below, an upper one from above
        (quantiles at fixed levels: at and between the levels). A family whose parameters are not such
        distances overrides this; one without a Gaussian member is returned unchanged.
        """
        if not self.has_normal:
            return params
        bound = self.from_normal(std).to(params.dtype)
        clipped = torch.where(bound < 0, torch.maximum(params, bound), torch.minimum(params, bound))
        scaled = torch.tensor(self.scaled, device=params.device)
        return torch.where(scaled, clipped, params)

    def valid_params(self, params: torch.Tensor) -> torch.Tensor:
        """Whether each ``(..., n_params)`` of ``params`` describes a distribution of the family:
        bool ``(...)``. Restored streams are checked with it. By default, finite parameters are valid;
        a family with constraints (a positive spread, ordered quantiles) narrows this."""
        return torch.isfinite(params).all(-1)


@register_head
class NormalHead(DistributionHead):
    """A Gaussian around the point forecast; its standard deviation is learnt by maximum likelihood.

    The standard deviation is a softplus of a linear map of the encoder's output in units of the token
    window's standard deviation, plus a softplus floor in the series' standardised units (so a flat
    window, as at a series' first steps, does not give a zero-width forecast). At initialisation it is
    one window standard deviation (``softplus(0.5413) = 1``) plus ``softplus(-4) = 0.018``.
    """

    name = "normal"
    n_params = 1
    scaled = (True,)
    _RELATIVE_OFFSET = 0.5413
    _ABSOLUTE_OFFSET = -4.0

    def __init__(self, d_model: int, horizon: int, c_in: int) -> None:
        super().__init__(d_model, horizon, c_in)
        self.linear = _zero_linear(d_model, 2 * horizon * c_in)

    def forward(self, h: torch.Tensor, window_std: torch.Tensor) -> torch.Tensor:
        raw = self.linear(h) * DIRECT_GAIN
        relative, absolute = raw.unflatten(-1, (2, self.c_in, self.horizon)).unbind(-3)
        std = softplus(relative + self._RELATIVE_OFFSET) * window_std + softplus(
            absolute + self._ABSOLUTE_OFFSET
        )
        return std[..., None]

    def loss(self, loc: torch.Tensor, params: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        scale = params[..., 0]
        z = (target - loc) / scale
        return scale.log() + 0.5 * z * z

    def quantile(self, loc: torch.Tensor, params: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return loc + z * params[..., 0]

    def from_normal(self, std: torch.Tensor) -> torch.Tensor:
        return std[..., None]

    def valid_params(self, params: torch.Tensor) -> torch.Tensor:
        """A finite, positive standard deviation."""
        return torch.isfinite(params[..., 0]) & (params[..., 0] > 0)

    def p_value(self, loc: torch.Tensor, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # erfc of |z| rather than 2 min(F, 1 - F): exact in the tails, where 1 - F loses every digit
        return two_sided_tail((y - loc).abs() / params[..., 0] * (1.0 / math.sqrt(2.0)))


@register_head
class QuantileHead(DistributionHead):
    """Quantiles at fixed levels around the point forecast, trained with the pinball loss.

    The median is the point forecast; the other levels are offsets from it that grow outwards
    (cumulative softplus steps, in units of the token window's standard deviation plus a small floor
    in the series' units), so quantiles never cross. Between and beyond the levels the distribution
    is interpolated and extrapolated with Gaussian tails fitted to the nearest two levels (linear in
    the normal quantile ``z``), so every quantile and every tail probability is defined. Skewed and
    heavy-tailed errors are followed where a Gaussian would be wide and still miss.
    """

    name = "quantile"
    #: Quantile levels below the median (their mirror images above it are learnt too).
    LEVELS: ClassVar[tuple[float, ...]] = (0.01, 0.025, 0.05, 0.1, 0.25)
    n_params = 2 * len(LEVELS)
    scaled = (True,) * n_params
    _FLOOR = 0.01

    def __init__(self, d_model: int, horizon: int, c_in: int) -> None:
        super().__init__(d_model, horizon, c_in)
        k = len(self.LEVELS)
        self.linear = _zero_linear(d_model, 2 * k * horizon * c_in)
        # the normal scores of the levels (increasing; the median's 0 in the middle) are the knots of
        # the quantile function; the steps between them start as a Gaussian's of one window std
        below = [NormalDist().inv_cdf(level) for level in self.LEVELS]
        z = [*below, 0.0, *(-v for v in reversed(below))]
        self.register_buffer("knots", torch.tensor(z), persistent=False)
        outward = [-v for v in reversed(below)]  # the levels' distances from the median, inner first
        steps = torch.tensor([outward[0]] + [b - a for a, b in itertools.pairwise(outward)])
        self.register_buffer("initial_steps", torch.log(torch.expm1(steps)), persistent=False)

    def levels(self) -> list[float]:
        """The quantile levels of the ``n_params`` parameters, in increasing order."""
        return [*self.LEVELS, *(1.0 - v for v in reversed(self.LEVELS))]

    def forward(self, h: torch.Tensor, window_std: torch.Tensor) -> torch.Tensor:
        k = len(self.LEVELS)
        raw = (self.linear(h) * DIRECT_GAIN).unflatten(-1, (2, k, self.c_in, self.horizon))
        raw = raw.permute(0, 1, 4, 5, 2, 3)  # (B', N, c_in, T, side, k): the inner level first
        steps = softplus(raw + self.initial_steps) * window_std[..., None, None] + self._FLOOR / k
        distance = steps.cumsum(-1)  # of each level from the median, inner level first
        return torch.cat([-distance[..., 0, :].flip(-1), distance[..., 1, :]], dim=-1)  # increasing

    def from_normal(self, std: torch.Tensor) -> torch.Tensor:
        """The Gaussian's quantiles at the levels (their normal scores times ``std``): exact at every
        probability, as the interpolation between the levels is linear in the normal score."""
        k = len(self.LEVELS)
        z = torch.cat([self.knots[:k], self.knots[k + 1 :]]).to(std.dtype)
        return std[..., None] * z

    def _values(self, loc: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
        """The quantiles at the knots, the median in the middle: ``(..., 2 k + 1)``."""
        k = len(self.LEVELS)
        zero = torch.zeros_like(params[..., :1])
        return torch.cat([params[..., :k], zero, params[..., k:]], dim=-1) + loc[..., None]

    def loss(self, loc: torch.Tensor, params: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        levels = torch.tensor(self.levels(), dtype=params.dtype, device=params.device)
        error = target[..., None] - (loc[..., None] + params)
        return torch.maximum(levels * error, (levels - 1.0) * error).sum(-1)

    def valid_params(self, params: torch.Tensor) -> torch.Tensor:
        """Finite quantile offsets, increasing, below the median then above it."""
        k = len(self.LEVELS)
        zero = torch.zeros_like(params[..., :1])
        knots = torch.cat([params[..., :k], zero, params[..., k:]], dim=-1)
        return torch.isfinite(params).all(-1) & (knots.diff(dim=-1) > 0).all(-1)

    def quantile(self, loc: torch.Tensor, params: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return _piecewise_linear(z.to(loc.dtype), self.knots.to(loc.dtype), self._values(loc, params))

    def p_value(self, loc: torch.Tensor, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = _piecewise_linear_inverse(y, self.knots.to(loc.dtype), self._values(loc, params))
        return two_sided_tail(z.abs() * (1.0 / math.sqrt(2.0)))


def _piecewise_linear(x: torch.Tensor, knots: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``values`` ``(..., K)`` at the increasing ``knots`` ``(K,)``, interpolated linearly at ``x``
    ``(...)`` and extrapolated with the slope of the outermost segments."""
    shape = torch.broadcast_shapes(x.shape, values.shape[:-1])
    x, values = x.expand(shape), values.expand(*shape, values.shape[-1])
    # the segment of each x: how many inner knots lie at or below it
    segment = (x[..., None] >= knots[1:-1]).sum(-1)  # 0 .. K - 2
    x0 = knots[segment]
    x1 = knots[segment + 1]
    y0 = values.gather(-1, segment[..., None])[..., 0]
    y1 = values.gather(-1, (segment + 1)[..., None])[..., 0]
    return y0 + (x - x0) * (y1 - y0) / (x1 - x0)


def _piecewise_linear_inverse(y: torch.Tensor, knots: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The ``x`` where :func:`_piecewise_linear` takes the value ``y`` (values increasing in x)."""
    shape = torch.broadcast_shapes(y.shape, values.shape[:-1])
    y, values = y.expand(shape), values.expand(*shape, values.shape[-1])
    segment = (y[..., None] >= values[..., 1:-1]).sum(-1)
    x0 = knots[segment]
    x1 = knots[segment + 1]
    y0 = values.gather(-1, segment[..., None])[..., 0]
    y1 = values.gather(-1, (segment + 1)[..., None])[..., 0]
    return x0 + (y - y0) * (x1 - x0) / (y1 - y0).clamp_min(1e-12)
