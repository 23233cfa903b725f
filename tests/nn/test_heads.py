"""The forecast-distribution heads: quantiles, tail probabilities and losses agree with each other."""

from __future__ import annotations

import math

import pytest
import torch

from aaren_ts.nn.heads import HEADS, NormalHead, QuantileHead, make_head


def _forecast(name: str, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """A head with random weights and the forecast it makes: ``loc`` ``(4, 3, 2)``, ``params``."""
    torch.manual_seed(seed)
    head = make_head(name, 8, 3, 1)
    torch.nn.init.normal_(head.linear.weight, std=0.05)
    h = torch.randn(4, 2, 8)
    params = head(h, torch.rand(4, 2, 1, 1) + 0.5)  # (4, N=2, c_in=1, T=3, K)
    params = params[:, :, 0]  # (4, 2, 3, K): as (B, N, T, C=2...) for the checks below
    loc = torch.randn(4, 2, 3)
    return head, loc.double(), params.double().detach()


@pytest.mark.parametrize("name", ["normal", "quantile"])
def test_quantiles_increase_with_the_normal_score_and_the_median_is_the_point_forecast(name: str) -> None:
    head, loc, params = _forecast(name)
    z = torch.linspace(-4.0, 4.0, 81, dtype=torch.float64)[:, None, None, None]
    values = head.quantile(loc, params, z)
    assert (values.diff(dim=0) > 0).all()
    torch.testing.assert_close(head.quantile(loc, params, torch.tensor(0.0, dtype=torch.float64)), loc)


@pytest.mark.parametrize("name", ["normal", "quantile"])
def test_the_tail_probability_of_a_quantile_is_its_level(name: str) -> None:
    head, loc, params = _forecast(name, seed=1)
    for z in (-3.0, -1.96, -0.5, 0.3, 1.0, 2.5):
        y = head.quantile(loc, params, torch.tensor(z, dtype=torch.float64))
        expected = math.erfc(abs(z) / math.sqrt(2.0))
        torch.testing.assert_close(head.p_value(loc, params, y), torch.full_like(loc, expected))


@pytest.mark.parametrize("name", ["normal", "quantile"])
def test_heads_are_equivariant_to_the_series_scale(name: str) -> None:
    head, loc, params = _forecast(name, seed=2)
    factor, shift = 7.5, -3.0
    scaled = params * torch.tensor([factor if s else 1.0 for s in head.scaled], dtype=params.dtype)
    z = torch.tensor([-2.0, 0.7], dtype=torch.float64)[:, None, None, None]
    torch.testing.assert_close(
        head.quantile(loc * factor + shift, scaled, z), head.quantile(loc, params, z) * factor + shift
    )
    y = loc + torch.randn_like(loc)
    torch.testing.assert_close(
        head.p_value(loc * factor + shift, scaled, y * factor + shift), head.p_value(loc, params, y)
    )


def test_the_pinball_loss_is_smallest_at_the_true_quantiles() -> None:
    torch.manual_seed(3)
    head = QuantileHead(8, 1, 1)
    levels = torch.tensor(head.levels())
    target = torch.distributions.Exponential(1.0).sample((20000,))  # skewed: quantiles far from symmetric
    truth = -torch.log1p(-levels)  # the exponential's quantiles
    loc = torch.zeros(20000)
    best = head.loss(loc, (truth - 0.0).expand(20000, -1), target).mean()
    for shift in (-0.2, 0.2):
        assert head.loss(loc, (truth + shift).expand(20000, -1), target).mean() > best


def test_the_normal_head_starts_at_one_window_standard_deviation() -> None:
    head = NormalHead(8, 2, 1)
    window_std = torch.full((3, 4, 1, 1), 2.0)
    std = head(torch.randn(3, 4, 8), window_std)
    torch.testing.assert_close(
        std, torch.full_like(std, 2.0 * 1.0 + math.log1p(math.exp(-4.0))), atol=1e-3, rtol=0
    )


def test_the_quantile_head_starts_at_the_gaussian_quantiles_of_the_window() -> None:
    head = QuantileHead(8, 2, 1)
    params = head(torch.randn(3, 4, 8), torch.full((3, 4, 1, 1), 2.0))
    normal = torch.distributions.Normal(0.0, 2.0).icdf(torch.tensor(head.levels()))
    torch.testing.assert_close(params, normal.expand_as(params), atol=0.03, rtol=0)


def test_an_unknown_head_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="normal"):
        make_head("cauchy", 8, 2, 1)
    assert {"normal", "quantile"} <= set(HEADS)


@pytest.mark.parametrize("name", ["normal", "quantile"])
def test_the_gaussian_member_has_a_gaussians_quantiles_and_tail_probabilities(name: str) -> None:
    head = make_head(name, 8, 3, 1).double()
    std = torch.tensor([[0.5, 2.0], [1.0, 3.0]], dtype=torch.float64)
    params = head.from_normal(std)
    assert params.shape == (2, 2, head.n_params) and head.valid_params(params).all()
    loc = torch.tensor([[1.0, -2.0], [0.0, 5.0]], dtype=torch.float64)
    # between the quantile head's levels, at them and beyond the outermost
    for z in (-3.5, -1.96, -0.3, 0.0, 0.8, 1.2816, 2.9):
        expected = loc + z * std
        torch.testing.assert_close(head.quantile(loc, params, torch.tensor(z)), expected)
        p = head.p_value(loc, params, expected)
        torch.testing.assert_close(p, torch.full_like(p, math.erfc(abs(z) / math.sqrt(2.0))))


def test_a_head_without_a_gaussian_member_says_so() -> None:
    from aaren_ts.nn.heads import DistributionHead

    class Bare(DistributionHead):
        name = "bare"

    assert not Bare(8, 3, 1).has_normal and make_head("normal", 8, 3, 1).has_normal
    with pytest.raises(NotImplementedError, match="bare"):
        Bare(8, 3, 1).from_normal(torch.ones(2))


@pytest.mark.parametrize("name", ["normal", "quantile"])
def test_a_capped_distribution_is_no_wider_than_the_gaussian_cap(name: str) -> None:
    head, loc, params = _forecast(name, seed=3)
    params = params * torch.exp(torch.randn(params.shape[:-1], dtype=torch.float64))[..., None]
    cap = torch.full(params.shape[:-1], 0.8, dtype=torch.float64)
    capped = head.capped(params, cap)
    assert head.valid_params(capped).all()
    # parameters already inside the Gaussian's are unchanged, the others drawn in to it
    bound = head.from_normal(cap)
    inside = params.abs() <= bound.abs()
    assert (~inside).any() and inside.any()
    torch.testing.assert_close(capped[inside], params[inside])
    torch.testing.assert_close(capped[~inside], bound[~inside])
    # so no quantile lies beyond the Gaussian's (the quantile head's: at and between its levels)
    for z in (-2.3, -1.96, -0.7, 0.3, 1.2816, 2.3):
        z = torch.tensor(z, dtype=torch.float64)
        offset = head.quantile(loc, capped, z) - loc
        assert (offset.abs() <= z.abs() * cap + 1e-12).all()
    torch.testing.assert_close(head.capped(params, torch.full_like(cap, torch.inf)), params)


def test_a_head_without_a_gaussian_member_is_not_capped() -> None:
    from aaren_ts.nn.heads import DistributionHead

    class Bare(DistributionHead):
        name = "bare"

    params = torch.randn(3, 2)
    assert Bare(8, 3, 1).capped(params, torch.full((3,), 1e-3)) is params
