"""Dropout with masks from 16-bit random integers: torch's dropout in distribution, seeded as torch's."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from aaren_ts.nn import EncoderConfig, make_encoder
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.dropout import Dropout, dropout

N = 1_000_000


@pytest.mark.parametrize("p", [0.1, 0.2, 0.5, 0.9])
def test_each_element_is_kept_with_probability_one_minus_p_and_scaled_to_keep_the_mean(p: float) -> None:
    torch.manual_seed(0)
    y = dropout(torch.ones(N), p)
    kept = y != 0
    dropped = round(p * 65536)
    assert torch.equal(y[kept], torch.full_like(y[kept], 65536 / (65536 - dropped)))
    fraction = kept.double().mean().item()
    sigma = math.sqrt(p * (1 - p) / N)
    assert abs(fraction - (1 - dropped / 65536)) < 5 * sigma
    assert abs(y.double().mean().item() - 1.0) < 5 * sigma / (1 - p)


def test_the_four_integers_of_a_draw_are_independent() -> None:
    """Each 64-bit draw gives four neighbouring elements' integers: their masks must not agree more
    than chance (a lane taken twice, or a shifted view, would correlate them)."""
    torch.manual_seed(1)
    kept = (dropout(torch.ones(4 * N), 0.5) != 0).double().view(N, 4)
    correlation = torch.corrcoef(kept.T)
    off_diagonal = correlation[~torch.eye(4, dtype=torch.bool)]
    assert off_diagonal.abs().max().item() < 5 / math.sqrt(N)
    # and the pattern is not the same from one word to the next
    assert torch.corrcoef(torch.stack([kept[:-1, 0], kept[1:, 0]]))[0, 1].abs().item() < 5 / math.sqrt(N)


def test_masks_follow_torchs_seed() -> None:
    x = torch.randn(3, 50, 8)
    torch.manual_seed(5)
    first = dropout(x, 0.3)
    torch.manual_seed(5)
    assert torch.equal(dropout(x, 0.3), first)
    assert not torch.equal(dropout(x, 0.3), first)  # (the generator moved on)


def test_the_gradient_is_the_mask_times_the_scale() -> None:
    torch.manual_seed(2)
    x = torch.randn(4, 33, 7, requires_grad=True)
    y = dropout(x, 0.25)
    weight = torch.randn_like(y)
    (y * weight).sum().backward()
    multiplier = torch.where(y != 0, 65536 / (65536 - 16384), 0.0)
    torch.testing.assert_close(x.grad, weight * multiplier, rtol=0, atol=0)
    torch.testing.assert_close(y, x.detach() * multiplier, rtol=0, atol=0)


def test_outside_training_and_without_probability_it_is_the_identity() -> None:
    x = torch.randn(5, 6)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    layer = Dropout(0.5).eval()
    assert layer(x) is x


def test_fast_false_is_torchs_dropout() -> None:
    x = torch.randn(6, 40)
    torch.manual_seed(3)
    expected = F.dropout(x, 0.2, training=True)
    torch.manual_seed(3)
    assert torch.equal(dropout(x, 0.2, fast=False), expected)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_a_probability_outside_zero_to_one_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(p)
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(3), p)


def test_empty_and_strided_inputs() -> None:
    assert dropout(torch.ones(0, 5), 0.5).shape == (0, 5)
    x = torch.randn(8, 10).T  # not contiguous
    y = dropout(x, 0.5)
    kept = y != 0
    torch.testing.assert_close(y[kept], 2 * x[kept])


@pytest.mark.parametrize("backbone", ["aaren", "transformer"])
def test_the_encoder_config_chooses_the_masks_and_eval_outputs_do_not_depend_on_them(backbone: str) -> None:
    sizes = {"backbone": backbone, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "dropout": 0.3}
    fast = make_encoder(EncoderConfig(**sizes, fast_dropout=True))
    slow = make_encoder(EncoderConfig(**sizes))
    slow.load_state_dict(fast.state_dict())
    assert all(layer.mixer.dropout.fast for layer in fast.layers)
    assert all(layer.feed_forward.fast_dropout for layer in fast.layers)
    assert not any(layer.mixer.dropout.fast for layer in slow.layers)
    x = torch.randn(2, 12, 8)
    torch.testing.assert_close(fast.eval()(x)[0], slow.eval()(x)[0], rtol=0, atol=0)
    fast.train()
    torch.manual_seed(0)
    a = fast(x)[0]
    torch.manual_seed(0)
    b = fast(x)[0]
    torch.manual_seed(1)
    c = fast(x)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_the_classifier_heads_dropout_follows_the_encoder() -> None:
    config = EncoderConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.2, fast_dropout=True)
    module = ClassifierModule(n_channels=2, n_classes=3, encoder=config)
    assert module.head[0].fast and module.head[0].p == 0.2
