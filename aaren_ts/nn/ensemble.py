"""Several networks as one: :class:`ForecastEnsemble` and :class:`ClassifierEnsemble`.

A deep ensemble (Lakshminarayanan et al., 2017): networks of the same architecture, initialised
differently (and with their own dropout), each trained on its own loss; their forecasts are averaged.
The members' errors are partly independent, so the mean forecasts better than a typical member. Each
member streams with its own recurrent state, so an ensemble of ``K`` networks keeps ``K`` states and
costs ``K`` times one network per observation: still O(1) in the stream's length.

The members' distributions are combined by averaging their parameters: the mean of their means and,
for the scale parameters of a Gaussian or the offsets of a quantile head, the mean of those (the
quantile function of the combination is the mean of the members' quantile functions, "Vincentization"
of the forecasts, which keeps the head's family and so every interval, calibration and export path as
it is for one network).

In training mode the module returns every member's forecast (:class:`MemberForecasts`), and the loss
(:class:`~aaren_ts.nn.forecast_training.ForecastLoss`) averages the members' own losses, so each member
learns as it would alone; in evaluation mode (validation, prediction, streaming) it returns the
combined forecast, so early stopping watches the ensemble's validation loss.

A :class:`ClassifierEnsemble`'s members are trained apart, each as a classifier of its own
(:class:`~aaren_ts.AarenClassifier` with ``n_estimators > 1``); its class distribution is the mean of
theirs, after every step, so a stream of ``K`` members keeps ``K`` states (:class:`EnsembleState`)
and answers exactly as averaging the ``K`` classifiers' probabilities would.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from torch import nn

from aaren_ts.nn.classify import ClassifierModule, StreamState
from aaren_ts.nn.classify_loss import StepLogits
from aaren_ts.nn.forecast import Forecast, ForecastNet, WindowHistory, future_effect
from aaren_ts.nn.heads import DistributionHead

__all__ = [
    "MEMBER_SEED_STRIDE",
    "ClassifierEnsemble",
    "EnsembleState",
    "ForecastEnsemble",
    "MemberForecasts",
    "member_kernels",
    "member_networks",
    "member_seed",
]

#: Member ``k`` of an ensemble is seeded with ``seed + MEMBER_SEED_STRIDE * k`` (its initial weights,
#: dropout, batches, splits and random kernels), so member 0 is the network a single one would be.
MEMBER_SEED_STRIDE = 1000


def member_seed(seed: int | None, k: int) -> int | None:
    """The seed of member ``k`` (``None``, not reproducible, stays ``None``)."""
    return None if seed is None else int(seed) + MEMBER_SEED_STRIDE * int(k)


def member_kernels(random_kernels: dict[str, Any] | None, k: int) -> dict[str, Any] | None:
    """Member ``k``'s ``random_kernels`` (:class:`~aaren_ts.nn.classify.ClassifierModule`): the same
    dilations, biases per kernel and prefix lengths, the kernels drawn from member ``k``'s seed."""
    if random_kernels is None:
        return None
    return {**random_kernels, "seed": int(random_kernels["seed"]) + MEMBER_SEED_STRIDE * int(k)}


class MemberForecasts(NamedTuple):
    """Every member's forecast distribution: ``loc`` ``(K, B, N, T, C)``, ``params`` ``(K, B, N, T, C,
    n_params)`` (``K`` members), as a :class:`ForecastEnsemble` gives them in training mode."""

    loc: torch.Tensor
    params: torch.Tensor

    def member(self, k: int) -> Forecast:
        """Member ``k``'s forecast."""
        return Forecast(self.loc[k], self.params[k])


class ForecastEnsemble(nn.Module):
    """``n_members`` :class:`~aaren_ts.nn.forecast.ForecastNet` of the same parameters, as one module with
    the same interface: its forecast is the mean of theirs, its stream state the list of theirs.

    Parameters
    ----------
    n_members : int
        Networks in the ensemble (at least 2; each is created in turn, so their initial weights differ).
    **params
        The parameters of every member (:class:`~aaren_ts.nn.forecast.ForecastNet`).
    """

    def __init__(self, n_members: int, **params: Any) -> None:
        super().__init__()
        if int(n_members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got n_members={n_members}")
        self.members = nn.ModuleList(ForecastNet(**params) for _ in range(int(n_members)))

    @classmethod
    def of(cls, members: list[ForecastNet]) -> nn.Module:
        """The ensemble of ``members`` (the modules themselves, not copies); one member is itself."""
        if len(members) == 1:
            return members[0]
        ensemble = cls.__new__(cls)
        nn.Module.__init__(ensemble)
        ensemble.members = nn.ModuleList(members)
        return ensemble

    # ------------------------------------------------------------------ what every member shares
    @property
    def first(self) -> ForecastNet:
        return self.members[0]

    n_channels = property(lambda self: self.first.n_channels)
    context_length = property(lambda self: self.first.context_length)
    horizon = property(lambda self: self.first.horizon)
    sp = property(lambda self: self.first.sp)
    n_exog = property(lambda self: self.first.n_exog)
    n_future = property(lambda self: self.first.n_future)
    channel_independent = property(lambda self: self.first.channel_independent)
    history_length = property(lambda self: self.first.history_length)
    constant_state = property(lambda self: self.first.constant_state)
    backbone = property(lambda self: self.first.backbone)

    @property
    def distribution_head(self) -> DistributionHead:
        """The members' head family (its quantile function reads the combined parameters)."""
        return self.first.distribution_head

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> list[Any]:
        """Every member's encoder state before any observation, in member order."""
        return [member.init_state(batch_size, device) for member in self.members]

    def init_history(self, batch_size: int, device: torch.device | str | None = None) -> WindowHistory:
        """The window history (the observations themselves: one for all members)."""
        return self.first.init_history(batch_size, device)

    def reset_to_naive(self) -> None:
        """Make every member the (seasonal) naive forecast
        (:meth:`~aaren_ts.nn.forecast.ForecastNet.reset_to_naive`)."""
        for member in self.members:
            member.reset_to_naive()

    def naive_growth(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> torch.Tensor:
        return self.first.naive_growth(dtype, device)

    def naive_distribution(self, naive_std: torch.Tensor, n: int = 1) -> torch.Tensor:
        return self.first.naive_distribution(naive_std, n)

    def filled(self, x: torch.Tensor) -> torch.Tensor:
        return self.first.filled(x)

    def future_coefficients(self) -> torch.Tensor:
        """The mean of the members' (their effects add to the forecasts, so they average alike)."""
        return torch.stack([member.future_coefficients() for member in self.members]).mean(dim=0)

    def future_effect(self, future: torch.Tensor) -> torch.Tensor:
        return future_effect(future, self.future_coefficients())

    # ------------------------------------------------------------------ forecasts
    def forward(
        self, x: torch.Tensor, state: list[Any] | None = None, history: WindowHistory | None = None,
        return_state: bool = False, **kwargs: Any,
    ) -> Forecast | MemberForecasts | tuple[Forecast, list[Any], WindowHistory]:  # fmt: skip
        """The members' mean forecast (:meth:`~aaren_ts.nn.forecast.ForecastNet.forward`, same arguments;
        ``state`` is the list of the members' states); in training mode, every member's
        (:class:`MemberForecasts`)."""
        states = state if state is not None else [None] * len(self.members)
        outputs, new_states, new_history = [], [], None
        for member, member_state in zip(self.members, states, strict=True):
            forecast, member_state, new_history = member(
                x, member_state, history, return_state=True, **kwargs
            )
            outputs.append(forecast)
            new_states.append(member_state)
        loc = torch.stack([f.loc for f in outputs])
        params = torch.stack([f.params for f in outputs])
        if self.training:
            combined: Forecast | MemberForecasts = MemberForecasts(loc, params)
        else:
            combined = Forecast(loc.mean(dim=0), params.mean(dim=0))
        if return_state:
            return combined, new_states, new_history
        return combined


class EnsembleState(NamedTuple):
    """Where a batch of streams of a :class:`ClassifierEnsemble` stands: every member's
    :class:`~aaren_ts.nn.classify.StreamState`, in member order (all have seen the same steps)."""

    members: tuple[StreamState, ...]

    @property
    def seen(self) -> torch.Tensor:
        """int64 ``(batch,)``: real time points consumed per stream."""
        return self.members[0].seen


class ClassifierEnsemble(nn.Module):
    """``n_members`` :class:`~aaren_ts.nn.classify.ClassifierModule` as one module with their
    interface: its class distribution is the mean of theirs, its stream state an :class:`EnsembleState`.

    Parameters
    ----------
    n_members : int
        Networks in the ensemble (at least 2).
    random_kernels : dict or None, default=None
        Member 0's random kernels; member ``k`` draws its own (:func:`member_kernels`).
    **params
        The other parameters of every member (:class:`~aaren_ts.nn.classify.ClassifierModule`).
    """

    def __init__(self, n_members: int, random_kernels: dict[str, Any] | None = None, **params: Any) -> None:
        super().__init__()
        if int(n_members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got n_members={n_members}")
        self.members = nn.ModuleList(
            ClassifierModule(random_kernels=member_kernels(random_kernels, k), **params)
            for k in range(int(n_members))
        )

    @property
    def first(self) -> ClassifierModule:
        return self.members[0]

    n_channels = property(lambda self: self.first.n_channels)
    n_classes = property(lambda self: self.first.n_classes)
    d_model = property(lambda self: self.first.d_model)
    readout = property(lambda self: self.first.readout)
    kernels = property(lambda self: self.first.kernels)
    receptive_field = property(lambda self: self.first.receptive_field)
    step_outputs = property(lambda self: self.first.step_outputs)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> EnsembleState:
        """Every member's state of ``batch_size`` streams that have seen nothing."""
        return EnsembleState(tuple(member.init_state(batch_size, device) for member in self.members))

    def encode(
        self, x: torch.Tensor, mask: torch.Tensor, state: EnsembleState | None = None, every_step: bool = True
    ) -> tuple[torch.Tensor, EnsembleState]:
        """Every member's :meth:`~aaren_ts.nn.classify.ClassifierModule.encode`, their features side by
        side (member order) in one ``z``."""
        states = state.members if state is not None else [None] * len(self.members)
        features, new_states = [], []
        for member, member_state in zip(self.members, states, strict=True):
            z, member_state = member.encode(x, mask, member_state, every_step=every_step)
            features.append(z)
            new_states.append(member_state)
        return torch.cat(features, dim=-1), EnsembleState(tuple(new_states))

    def current_features(self, state: EnsembleState) -> torch.Tensor:
        """Every member's features after its last consumed step, side by side."""
        return torch.cat(
            [m.current_features(s) for m, s in zip(self.members, state.members, strict=True)], dim=-1
        )

    def member_logits(self, z: torch.Tensor) -> list[torch.Tensor]:
        """Each member's class scores from the features of :meth:`encode` (any leading shape)."""
        parts = z.chunk(len(self.members), dim=-1)
        return [member.logits(part) for member, part in zip(self.members, parts, strict=True)]

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        """The log of the mean of the members' class distributions (a softmax gives it back)."""
        return self._mean_distribution(self.member_logits(z))

    def _mean_distribution(self, logits: list[torch.Tensor]) -> torch.Tensor:
        log_probabilities = torch.stack([torch.log_softmax(s, dim=-1) for s in logits])
        return torch.logsumexp(log_probabilities, dim=0) - math.log(len(logits))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor | StepLogits:
        """The log of the mean of the members' class distributions at each series' last real step
        (with ``step_outputs``: after every step too, a :class:`~aaren_ts.nn.classify_loss.StepLogits`)."""
        outputs = [member(x, lengths) for member in self.members]
        if not isinstance(outputs[0], StepLogits):
            return self._mean_distribution(outputs)
        last = self._mean_distribution([o.last for o in outputs])
        steps = self._mean_distribution([o.steps for o in outputs])
        return StepLogits(last, steps, outputs[0].mask)


def member_networks(module: nn.Module) -> list[nn.Module]:
    """The networks of a module: an ensemble's members, or the network itself."""
    if isinstance(module, ForecastEnsemble | ClassifierEnsemble):
        return list(module.members)
    return [module]
