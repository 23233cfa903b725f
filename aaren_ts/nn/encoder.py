"""The Aaren encoder: pre-norm residual blocks of Aaren attention and feed-forward layers."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from aaren_ts.nn.aaren import Aaren
from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.functional import AarenState

__all__ = ["AarenEncoder"]


class AarenEncoder(StackedEncoder):
    """Stacked Aaren blocks; the whole stack is an RNN.

    Trained in parallel on whole sequences (:meth:`forward`), it then consumes one token at a time
    (:meth:`step`) with ``O(n_layers * d_model**2)`` work and ``O(n_layers * d_model)`` state, whatever
    the history length. Stepping through a sequence gives the same outputs as :meth:`forward`.

    Parameters
    ----------
    d_model : int
        Size of the token vectors.
    n_heads : int
        Heads per Aaren layer.
    n_layers : int
        Number of blocks.
    d_ff : int
        Hidden size of the feed-forward layers.
    dropout : float, default=0.0
        Dropout on each residual branch.
    bias : bool, default=True
        Biases in the attention projections.

    Examples
    --------
    >>> import torch
    >>> enc = AarenEncoder(d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    >>> x = torch.randn(3, 20, 16)
    >>> y, state = enc(x)
    >>> state = enc.init_state(3)
    >>> for t in range(20):
    ...     y_t, state = enc.step(x[:, t], state)
    >>> torch.allclose(y_t, y[:, -1], atol=1e-5)
    True
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_layers: int,
        d_ff: int,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__(
            lambda: Aaren(d_model, n_heads, dropout=dropout, bias=bias),
            d_model=d_model,
            n_layers=n_layers,
            d_ff=d_ff,
            dropout=dropout,
        )

    def step(
        self, x_t: torch.Tensor, state: list[Any], mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[Any]]:
        """Encode one more token per sequence, ``x_t`` ``(batch, d_model)``, in ``O(1)`` time and memory.

        In inference (eval mode, gradients off, no mask) this runs a lean path over cached,
        pre-transposed weights: at batch size 1 the cost of a step is mostly per-operation overhead.
        The result is the same as the general path.
        """
        if mask_t is not None or self.training or torch.is_grad_enabled() or bias_free(self):
            return super().step(x_t, state, mask_t)
        plan = self.__dict__.get("_step_plan")
        if plan is None or not plan.is_current(self):
            plan = _StepPlan(self)
            self.__dict__["_step_plan"] = plan
        return plan.step(x_t, state)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_step_plan", None)  # derived from the weights; never pickled
        return state


def bias_free(encoder: AarenEncoder) -> bool:
    """Whether the encoder was built with ``bias=False`` (the lean step path assumes biases)."""
    return encoder.layers[0].mixer.out.bias is None


class _StepPlan:
    """Pre-transposed weights of an :class:`AarenEncoder` for lean token-by-token inference.

    At batch size 1 a step is a few dozen tiny operations, so dispatch overhead, not arithmetic, sets its
    cost. The plan holds each layer's weights ready for ``addmm`` and is rebuilt whenever any parameter
    changes (its storage or in-place version counter), so it never serves stale weights.
    """

    def __init__(self, encoder: AarenEncoder) -> None:
        self.params = list(encoder.parameters())
        self.key = self._key(self.params)
        self.layers = []
        with torch.no_grad():
            for layer in encoder.layers:
                mixer, ff = layer.mixer, layer.feed_forward
                w_sv, b_sv = mixer._fold_score_value()
                self.layers.append(
                    (
                        layer.norm_mixer,
                        w_sv.t().contiguous(),
                        b_sv if b_sv is not None else torch.zeros(w_sv.shape[0]),
                        [mixer.n_heads, mixer.d_model],
                        (mixer.n_heads, mixer.head_dim),
                        mixer.out.weight.t().contiguous(),
                        mixer.out.bias if mixer.out.bias is not None else torch.zeros(mixer.d_model),
                        layer.norm_ff,
                        ff.hidden.weight.t().contiguous(),
                        ff.hidden.bias,
                        ff.output.weight.t().contiguous(),
                        ff.output.bias,
                    )
                )
        self.norm = encoder.norm

    @staticmethod
    def _key(params: list[torch.Tensor]) -> list[tuple[int, int]]:
        return [(p.data_ptr(), p._version) for p in params]

    def is_current(self, encoder: AarenEncoder) -> bool:
        return self.key == self._key(self.params) and self.params[0] is next(encoder.parameters())

    def step(self, x: torch.Tensor, state: list[AarenState]) -> tuple[torch.Tensor, list[AarenState]]:
        batch = x.shape[0]
        new_state = []
        for (n1, w_sv, b_sv, sizes, heads, w_out, b_out, n2, w_1, b_1, w_2, b_2), st in zip(
            self.layers, state, strict=True
        ):
            h = F.layer_norm(x, n1.normalized_shape, n1.weight, n1.bias, n1.eps)
            s, v = torch.addmm(b_sv, h, w_sv).split(sizes, dim=-1)
            s = s.to(st.m.dtype)
            m = torch.logaddexp(st.m, s)
            alpha = torch.exp(s - m)
            a = torch.lerp(st.a, v.view(batch, *heads).to(st.a.dtype), alpha.unsqueeze(-1))
            new_state.append(AarenState(m, torch.maximum(st.c, alpha), a))
            x = x + torch.addmm(b_out, a.view(batch, -1).to(x.dtype), w_out)
            h = F.layer_norm(x, n2.normalized_shape, n2.weight, n2.bias, n2.eps)
            x = x + torch.addmm(b_2, F.gelu(torch.addmm(b_1, h, w_1)), w_2)
        n = self.norm
        return F.layer_norm(x, n.normalized_shape, n.weight, n.bias, n.eps), new_state
