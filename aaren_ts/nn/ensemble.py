"""Several forecasting networks as one: :class:`ForecastEnsemble`.

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
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import nn

from aaren_ts.nn.forecast import Forecast, ForecastNet, WindowHistory, future_effect
from aaren_ts.nn.heads import DistributionHead

__all__ = ["ForecastEnsemble", "MemberForecasts", "member_networks"]


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
        """Make every member the (seasonal) naive forecast (:meth:`ForecastNet.reset_to_naive`)."""
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
        """The members' mean forecast (:meth:`ForecastNet.forward`, same arguments; ``state`` is the
        list of the members' states); in training mode, every member's (:class:`MemberForecasts`)."""
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


def member_networks(module: nn.Module) -> list[ForecastNet]:
    """The networks of a forecasting module: a :class:`ForecastEnsemble`'s members, or the network itself."""
    return list(module.members) if isinstance(module, ForecastEnsemble) else [module]  # type: ignore[list-item]
