"""The linear model of each window (aaren_ts.nn.linear_blend): its least-squares fit against a float64
reference, the blend's forecasts against the lerp of the two, and the held-out scores of the shares."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.ensemble import ForecastEnsemble
from aaren_ts.nn.forecast import ForecastNet
from aaren_ts.nn.forecast_training import held_out_errors
from aaren_ts.nn.linear_blend import (
    LINEAR_SHARES,
    LinearMap,
    blend_linear,
    fit_linear_map,
    linear_share_errors,
)

P, T = 8, 3


def _net(local_norm: str | None = "standard", n_channels: int = 2, n_members: int = 1, **params):
    torch.manual_seed(0)
    kwargs = {
        "n_channels": n_channels,
        "context_length": P,
        "horizon": T,
        "encoder": EncoderConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16),
        "channel_independent": True,
        "local_norm": local_norm,
        **params,
    }
    module = ForecastNet(**kwargs) if n_members == 1 else ForecastEnsemble(n_members, **kwargs)
    for net in module.members if n_members > 1 else [module]:
        with torch.no_grad():  # a trained network's head is not zero
            net.head.weight.normal_(0, 0.1)
            net.head.bias.normal_(0, 0.1)
            net.skip.weight.normal_(0, 0.1)
            if net.future_weight is not None:
                net.future_weight.normal_(0, 0.5)
    return module.eval()


def _series(n_series: int = 3, length: int = 60, n_channels: int = 2, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(length)[:, None]
    return [
        (
            np.sin(2 * np.pi * t / 7 + rng.uniform(0, 6, n_channels))
            + 0.3 * rng.normal(size=(length, n_channels))
        ).astype(np.float32)
        for _ in range(n_series)
    ]


def _reference(series: list[np.ndarray], n_train: list[int], local_norm: str | None, ridge: float):
    """The weighted ridge least squares written out on every window, in float64 with NumPy."""
    design, target, weight = [], [], []
    for values, n in zip(series, n_train, strict=True):
        part = values[:n].astype(np.float64)
        for c in range(part.shape[1]):
            for end in range(P, n - T + 1):
                x, y = part[end - P : end, c], part[end : end + T, c]
                level = {"last": x[-1], "mean": x.mean(), "standard": x.mean(), None: 0.0}[local_norm]
                scale = np.sqrt(((x - x.mean()) ** 2).mean() + 1e-5) if local_norm == "standard" else 1.0
                design.append(np.append((x - level) / scale, 1.0))
                target.append((y - level) / scale)
                weight.append(scale**2)
    a, u, w = np.array(design), np.array(target), np.array(weight)[:, None]
    gram, cross = (a * w).T @ a, (a * w).T @ u
    gram[:P, :P] += np.eye(P) * ridge * np.diagonal(gram)[:P].mean()
    solution = np.linalg.solve(gram, cross)
    return solution[:P].T, solution[P]


@pytest.mark.parametrize("local_norm", ["standard", "last", "mean", None])
def test_the_fit_is_the_weighted_least_squares_of_every_window(local_norm):
    series = _series()
    n_train = [60, 45, 30]
    linear = fit_linear_map(_net(local_norm), series, n_train, ridge=1e-2)
    weight, bias = _reference(series, n_train, local_norm, ridge=1e-2)
    np.testing.assert_allclose(linear.weight.numpy(), weight, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(linear.bias.numpy(), bias, rtol=1e-4, atol=1e-5)


def _reference_with_future(series, n_train, n_future, ridge):
    """The joint least squares of the map and the future-known covariates' effects, one problem per
    horizon step, written out on every window (local_norm="standard"), in float64 with NumPy."""
    c = 2
    solutions = []
    for h in range(T):
        design, target = [], []
        for values, n in zip(series, n_train, strict=True):
            part = values[:n].astype(np.float64)
            for ch in range(c):
                for end in range(P, n - T + 1):
                    x, y = part[end - P : end, ch], part[end + h, ch]
                    scale = np.sqrt(((x - x.mean()) ** 2).mean() + 1e-5)
                    effects = np.zeros(c * n_future)
                    effects[ch * n_future : (ch + 1) * n_future] = part[end + h, c : c + n_future]
                    design.append(np.concatenate([np.append((x - x.mean()) / scale, 1.0) * scale, effects]))
                    target.append(y - x.mean())
        a, u = np.array(design), np.array(target)
        gram = a.T @ a
        gram[:P, :P] += np.eye(P) * ridge * np.diagonal(gram)[:P].mean()
        solutions.append(np.linalg.lstsq(gram, a.T @ u, rcond=None)[0])
    solution = np.array(solutions)  # (T, P + 1 + C * n_future)
    future = solution[:, P + 1 :].reshape(T, c, n_future).transpose(1, 0, 2)
    return solution[:, :P], solution[:, P], future


def test_future_known_covariates_enter_the_fit_jointly():
    # a daily-cycle effect the windows cannot see, known for the future (a calendar): fitted with the
    # map, per channel and step, one problem per step; the past-only covariate after it is not used
    rng = np.random.default_rng(1)
    series = []
    for values in _series():
        t = np.arange(len(values))
        calendar = np.stack([np.sin(2 * np.pi * t / 5), np.cos(2 * np.pi * t / 5)], axis=1)
        past_only = rng.normal(size=(len(values), 1))
        series.append(np.concatenate([values + calendar[:, :1] * [1.0, -2.0], calendar, past_only], axis=1))
    n_train = [60, 45, 30]
    module = _net(n_exog=3, n_future=2)
    linear = fit_linear_map(module, series, n_train, ridge=1e-2)
    weight, bias, future = _reference_with_future(series, n_train, 2, ridge=1e-2)
    np.testing.assert_allclose(linear.weight.numpy(), weight, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(linear.bias.numpy(), bias, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(linear.future.numpy(), future, rtol=1e-4, atol=1e-5)
    # the blend at share 1 forecasts what the map says, covariates included
    blend_linear(module, linear, 1.0)
    x = torch.as_tensor(series[0][None, :40], dtype=torch.float32)
    ahead = torch.as_tensor(series[0][1 : 40 + T, 2:4], dtype=torch.float32).unfold(0, T, 1).transpose(1, 2)
    with torch.no_grad():
        loc = module(x, future=ahead[None]).loc[0, P - 1 :]  # (40 - P + 1, T, C)
        z, level, scale, _ = module.normalize(x[0, :, :2].T.unfold(1, P, 1))  # (C, windows, P)
    expected = (z @ linear.weight.T + linear.bias) * scale + level  # (C, windows, T)
    expected = expected + torch.einsum("wtf,ctf->cwt", ahead[P - 1 :], linear.future)
    torch.testing.assert_close(loc, expected.permute(1, 2, 0), rtol=1e-4, atol=1e-4)


def test_the_fit_recovers_an_exact_linear_relation_and_leaves_out_gaps():
    # a sine's next values are a linear map of its last ones: the fitted map forecasts a fresh window of
    # another phase and amplitude exactly, and the windows that hold a gap are left out
    t = np.arange(300)
    series = (np.sin(2 * np.pi * t / 11)[:, None] * [1.0, 2.0]).astype(np.float64)
    series[150, 1] = np.nan
    linear = fit_linear_map(_net(None), [series], [len(series)], ridge=1e-9)
    fresh = 3.0 * np.sin(2 * np.pi * (np.arange(P + T) + 0.37) / 11)
    forecast = linear.weight.double().numpy() @ fresh[:P] + linear.bias.double().numpy()
    np.testing.assert_allclose(forecast, fresh[P:], atol=1e-3)


def test_no_full_window_gives_no_map():
    assert fit_linear_map(_net(), _series(length=P + T - 1), [P + T - 1] * 3) is None


@pytest.mark.parametrize("n_members", [1, 3])
@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_the_blend_forecasts_the_lerp_of_the_networks_and_the_map(n_members, share):
    module = _net(n_members=n_members, n_exog=1, n_future=1)
    linear = LinearMap(torch.randn(T, P) * 0.2, torch.randn(T) * 0.1)
    only_linear = _net(n_members=n_members, n_exog=1, n_future=1)
    blend_linear(only_linear, linear, 1.0)
    blended = _net(n_members=n_members, n_exog=1, n_future=1)
    blend_linear(blended, linear, share)
    x = torch.randn(4, 30, 3) * 2 + 5
    future = torch.randn(4, 30, T, 1)
    with torch.no_grad():
        own, lin, both = (m(x, future=future) for m in (module, only_linear, blended))
        naive = torch.tensor([[0.0, 0.5]] * 4)
        own_naive, lin_naive, both_naive = (
            m(x, future=future, naive=naive) for m in (module, only_linear, blended)
        )
    torch.testing.assert_close(both.loc, torch.lerp(own.loc, lin.loc, share), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(
        both_naive.loc, torch.lerp(own_naive.loc, lin_naive.loc, share), rtol=1e-5, atol=1e-5
    )
    torch.testing.assert_close(both.params, own.params)  # the distribution head is left as it is
    if share == 1.0:  # the map alone ignores the encoder and the covariates
        z, level, scale, _ = (
            only_linear.first.normalize(x[..., :2].unfold(1, P, 1))
            if n_members > 1
            else (only_linear.normalize(x[..., :2].unfold(1, P, 1)))
        )
        expected = ((z @ linear.weight.T + linear.bias) * scale + level).transpose(-1, -2)
        torch.testing.assert_close(lin.loc[:, P - 1 :], expected, rtol=1e-5, atol=1e-5)


def test_share_errors_score_the_networks_at_share_zero_as_the_held_out_judgement():
    module = _net(n_members=2)
    series = _series(n_series=4, length=80)
    n_train = [60, 60, 50, 80]  # the last series has no tail
    linear = fit_linear_map(module, series, n_train)
    errors, count = linear_share_errors(module, linear, series, n_train, "cpu")
    assert errors.shape == (len(LINEAR_SHARES), 4, 2)
    judged = held_out_errors(module, series, n_train, "cpu")
    np.testing.assert_allclose(errors[0], judged.error, rtol=1e-5)
    np.testing.assert_array_equal(count, judged.count)
    assert (count[3] == 0).all() and (errors[:, 3] == 0).all()
    # share 1 scores the map alone: the network made of it, judged the same way
    blend_linear(module, linear, 1.0)
    np.testing.assert_allclose(errors[-1], held_out_errors(module, series, n_train, "cpu").error, rtol=1e-5)
