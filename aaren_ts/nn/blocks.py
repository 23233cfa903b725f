"""Pre-norm residual stacks shared by the Aaren encoder and the Transformer baseline.

A block is ``x + mixer(norm(x))`` followed by ``x + feed_forward(norm(x))``; the mixer is the only part
that looks across time. Any mixer with ``forward(x, mask, state) -> (y, state)``,
``step(x_t, state, mask_t) -> (y_t, state)`` and ``init_state(batch_size, device)`` can be stacked, so
the Aaren encoder and its Transformer baseline share everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["FeedForward", "ResidualBlock", "StackedEncoder"]


class FeedForward(nn.Module):
    """Position-wise ``Linear -> GELU -> Dropout -> Linear -> Dropout``.

    Parameters
    ----------
    d_model : int
        Input and output size.
    d_ff : int
        Hidden size.
    dropout : float, default=0.0
        Dropout probability after the activation and after the output layer.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.hidden = nn.Linear(d_model, d_ff)
        self.output = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Functional calls: this also runs once per token in streaming, where module calls cost.
        h = F.gelu(F.linear(x, self.hidden.weight, self.hidden.bias))
        if self.training and self.p > 0:
            h = F.dropout(h, self.p, training=True)
        y = F.linear(h, self.output.weight, self.output.bias)
        if self.training and self.p > 0:
            y = F.dropout(y, self.p, training=True)
        return y


class ResidualBlock(nn.Module):
    """``x + mixer(LayerNorm(x))`` then ``x + FeedForward(LayerNorm(x))``."""

    def __init__(self, mixer: nn.Module, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm_mixer = nn.LayerNorm(d_model)
        self.mixer = mixer
        self.norm_ff = nn.LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, state: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """Whole sequences ``x`` ``(batch, N, d_model)``."""
        h, state = self.mixer(self.norm_mixer(x), mask, state)
        x = x + h
        return x + self.feed_forward(self.norm_ff(x)), state

    def step(
        self, x_t: torch.Tensor, state: Any, mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, Any]:
        """One token per sequence, ``x_t`` ``(batch, d_model)``."""
        # Functional layer norms: module-call overhead matters at one token per call.
        n1, n2 = self.norm_mixer, self.norm_ff
        h = F.layer_norm(x_t, n1.normalized_shape, n1.weight, n1.bias, n1.eps)
        h, state = self.mixer.step(h, state, mask_t)
        x_t = x_t + h
        h = F.layer_norm(x_t, n2.normalized_shape, n2.weight, n2.bias, n2.eps)
        return x_t + self.feed_forward.forward(h), state


class StackedEncoder(nn.Module):
    """A stack of :class:`ResidualBlock` with a final LayerNorm; its state is one state per layer.

    Parameters
    ----------
    make_mixer : callable
        Called once per layer with no arguments; returns the layer's sequence mixer.
    d_model, n_layers, d_ff, dropout
        Sizes of the stack.
    """

    def __init__(
        self,
        make_mixer: Callable[[], nn.Module],
        d_model: int,
        n_layers: int,
        d_ff: int,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"n_layers must be at least 1, got {n_layers}")
        self.d_model = d_model
        self.layers = nn.ModuleList(
            ResidualBlock(make_mixer(), d_model, d_ff, dropout) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> list[Any]:
        """State before any token: one per layer."""
        if device is None:
            device = self.norm.weight.device
        return [layer.mixer.init_state(batch_size, device) for layer in self.layers]

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: list[Any] | None = None,
    ) -> tuple[torch.Tensor, list[Any]]:
        """Encode ``x`` ``(batch, N, d_model)`` in parallel, optionally continuing ``state``.

        Returns the outputs at every position ``(batch, N, d_model)`` and the state after the last
        token. ``mask`` (bool ``(batch, N)``, True = real token) keeps padding out of every layer's
        mixing; outputs at padded positions are finite but meaningless.
        """
        states = state if state is not None else [None] * len(self.layers)
        if len(states) != len(self.layers):
            raise ValueError(f"state has {len(states)} layers, the encoder {len(self.layers)}")
        new_states = []
        for layer, layer_state in zip(self.layers, states, strict=True):
            x, layer_state = layer(x, mask, layer_state)
            new_states.append(layer_state)
        return self.norm(x), new_states

    def step(
        self, x_t: torch.Tensor, state: list[Any], mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[Any]]:
        """Encode one more token per sequence, ``x_t`` ``(batch, d_model)``."""
        new_states = []
        for layer, layer_state in zip(self.layers, state, strict=True):
            x_t, layer_state = layer.step(x_t, layer_state, mask_t)
            new_states.append(layer_state)
        norm = self.norm
        return F.layer_norm(x_t, norm.normalized_shape, norm.weight, norm.bias, norm.eps), new_states
