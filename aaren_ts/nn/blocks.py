"""Pre-norm residual stacks shared by the Aaren encoder and the Transformer baseline.

A block is ``x + mixer(norm(x))`` followed by ``x + feed_forward(norm(x))``; the mixer is the only part
that looks across time. Any mixer with ``forward(x, mask, state) -> (y, state)``,
``step(x_t, state, mask_t) -> (y_t, state)`` and ``init_state(batch_size, device)`` can be stacked, so
the Aaren encoder and its Transformer baseline share everything else.

The block and the stack are each written once, as functions (:func:`pre_norm_residual` and
:func:`run_stack`) that take the mixer as a callable: the parallel forward, the general token step and
:class:`~aaren_ts.nn.AarenEncoder`'s lean inference step all run them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from aaren_ts.nn.config import EncoderConfig, head_dim
from aaren_ts.nn.dropout import dropout as apply_dropout

__all__ = [
    "FeedForward",
    "HeadedEncoder",
    "ResidualBlock",
    "StackedEncoder",
    "head_dim",
    "layer_norm",
    "pre_norm_residual",
    "run_stack",
]

Mix = Callable[[torch.Tensor], tuple[torch.Tensor, Any]]
"""A sequence mixer bound to its state (and mask): normalised tokens in, ``(output, new state)`` out."""


def layer_norm(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    """``norm(x)`` as a functional call (module-call overhead matters at one token per call)."""
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def pre_norm_residual(
    x: torch.Tensor,
    mix: Mix,
    norm_mixer: nn.LayerNorm,
    norm_ff: nn.LayerNorm,
    feed_forward: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[torch.Tensor, Any]:
    """The block, written once: ``x + mix(norm_mixer(x))``, then ``x + feed_forward(norm_ff(x))``.

    ``x`` is ``(..., d_model)``: whole sequences or one token per sequence, as ``mix`` expects.
    Returns the block's output and the mixer's new state.
    """
    h, state = mix(layer_norm(x, norm_mixer))
    x = x + h
    return x + feed_forward(layer_norm(x, norm_ff)), state


def run_stack(
    x: torch.Tensor,
    layers: Sequence[Any],
    states: Sequence[Any],
    block: Callable[[Any, torch.Tensor, Any], tuple[torch.Tensor, Any]],
    final_norm: nn.LayerNorm,
) -> tuple[torch.Tensor, list[Any]]:
    """The stack, written once: ``x, state_l = block(layer_l, x, state_l)`` per layer, then the final norm."""
    new_states = []
    for layer, layer_state in zip(layers, states, strict=True):
        x, layer_state = block(layer, x, layer_state)
        new_states.append(layer_state)
    return layer_norm(x, final_norm), new_states


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
    fast_dropout : bool, default=False
        Its masks from 16-bit random integers on CPU (:func:`aaren_ts.nn.dropout.dropout`).
    """

    fast_dropout: bool = False  # (the class's default: a layer pickled before the option trains as it did)

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, fast_dropout: bool = False) -> None:
        super().__init__()
        self.hidden = nn.Linear(d_model, d_ff)
        self.output = nn.Linear(d_ff, d_model)
        self.p, self.fast_dropout = dropout, fast_dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Functional calls: this also runs once per token in streaming, where module calls cost.
        h = F.gelu(F.linear(x, self.hidden.weight, self.hidden.bias))
        if self.training and self.p > 0:
            h = apply_dropout(h, self.p, fast=self.fast_dropout)
        y = F.linear(h, self.output.weight, self.output.bias)
        if self.training and self.p > 0:
            y = apply_dropout(y, self.p, fast=self.fast_dropout)
        return y


class ResidualBlock(nn.Module):
    """``x + mixer(LayerNorm(x))`` then ``x + FeedForward(LayerNorm(x))`` (see :func:`pre_norm_residual`)."""

    def __init__(
        self, mixer: nn.Module, d_model: int, d_ff: int, dropout: float = 0.0, fast_dropout: bool = False
    ) -> None:
        super().__init__()
        self.norm_mixer = nn.LayerNorm(d_model)
        self.mixer = mixer
        self.norm_ff = nn.LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, fast_dropout)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, state: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """Whole sequences ``x`` ``(batch, N, d_model)``."""
        return self.apply_block(x, lambda h: self.mixer(h, mask, state))

    def step(
        self, x_t: torch.Tensor, state: Any, mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, Any]:
        """One token per sequence, ``x_t`` ``(batch, d_model)``."""
        return self.apply_block(x_t, lambda h: self.mixer.step(h, state, mask_t))

    def apply_block(self, x: torch.Tensor, mix: Mix) -> tuple[torch.Tensor, Any]:
        """:func:`pre_norm_residual` with this block's norms and feed-forward and the given mixer call."""
        return pre_norm_residual(x, mix, self.norm_mixer, self.norm_ff, self.feed_forward.forward)


class StackedEncoder(nn.Module):
    """A stack of :class:`ResidualBlock` with a final LayerNorm; its state is one state per layer.

    Parameters
    ----------
    config : EncoderConfig
        Sizes of the stack (``d_model``, ``n_layers``, ``d_ff``, ``dropout``; the mixer reads the rest).
    make_mixer : callable
        Called once per layer with ``config``; returns the layer's sequence mixer.
    """

    def __init__(self, config: EncoderConfig, make_mixer: Callable[[EncoderConfig], nn.Module]) -> None:
        super().__init__()
        if config.n_layers < 1:
            raise ValueError(f"n_layers must be at least 1, got {config.n_layers}")
        self.config = config
        self.d_model = config.d_model
        self.layers = nn.ModuleList(
            ResidualBlock(
                make_mixer(config), config.d_model, config.d_ff, config.dropout, config.fast_dropout
            )
            for _ in range(config.n_layers)
        )
        self.norm = nn.LayerNorm(config.d_model)

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
        return run_stack(x, self.layers, states, lambda layer, h, st: layer(h, mask, st), self.norm)

    def step(
        self, x_t: torch.Tensor, state: list[Any], mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[Any]]:
        """Encode one more token per sequence, ``x_t`` ``(batch, d_model)``."""
        return run_stack(x_t, self.layers, state, lambda layer, h, st: layer.step(h, st, mask_t), self.norm)


class HeadedEncoder(StackedEncoder):
    """A :class:`StackedEncoder` of one multi-head mixer class: the constructor the encoders share.

    Subclasses name their ``backbone`` (as in :class:`EncoderConfig`) and their ``mixer_class``, built
    per layer as ``mixer_class(d_model, n_heads, dropout=dropout, bias=bias, fast_dropout=fast_dropout)``.

    Parameters
    ----------
    d_model, n_heads, n_layers, d_ff, dropout, bias, fast_dropout
        Sizes of the stack: the fields of :class:`~aaren_ts.nn.EncoderConfig` of the same names
        (:meth:`from_config` takes that object itself).
    """

    backbone: ClassVar[str]
    mixer_class: ClassVar[type[nn.Module]]

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_layers: int,
        d_ff: int,
        dropout: float = 0.0,
        bias: bool = True,
        fast_dropout: bool = False,
    ) -> None:
        config = EncoderConfig(self.backbone, d_model, n_heads, n_layers, d_ff, dropout, bias, fast_dropout)
        super().__init__(config, self._make_mixer)

    @classmethod
    def _make_mixer(cls, config: EncoderConfig) -> nn.Module:
        return cls.mixer_class(
            config.d_model,
            config.n_heads,
            dropout=config.dropout,
            bias=config.bias,
            fast_dropout=config.fast_dropout,
        )

    @classmethod
    def from_config(cls, config: EncoderConfig) -> HeadedEncoder:
        """The encoder with the sizes of ``config`` (of this class's backbone, whatever ``config`` names)."""
        return cls(**config.sizes())
