"""The Aaren encoder: pre-norm residual blocks of Aaren attention and feed-forward layers."""

from __future__ import annotations

import ctypes
import threading
from operator import attrgetter
from typing import Any

import torch
from torch.nn import functional as F

from aaren_ts.nn._native import AarenLayer, load_fused_step
from aaren_ts.nn.aaren import Aaren
from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.functional import AarenState

__all__ = ["AarenEncoder"]

_DATA_PTR = torch.Tensor.data_ptr
_VERSION = attrgetter("_version")


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
        self.register_load_state_dict_post_hook(_drop_step_plan)

    def step(
        self, x_t: torch.Tensor, state: list[Any], mask_t: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[Any]]:
        """Encode one more token per sequence, ``x_t`` ``(batch, d_model)``, in ``O(1)`` time and memory.

        In inference (eval mode, gradients off, no mask) this runs a lean path over cached,
        pre-transposed weights: at batch size 1 the cost of a step is mostly per-operation overhead.
        On CPU with float32 weights the whole step is one call of a fused C kernel, compiled on first
        use (see :func:`aaren_ts.nn.fused_step_available`); elsewhere it is a short sequence of PyTorch
        operations. The result is the same as the general path (to float32 round-off).
        """
        if mask_t is not None or self.training or torch.is_grad_enabled():
            return super().step(x_t, state, mask_t)
        plan = self.__dict__.get("_step_plan")
        if plan is None or not plan.is_current():
            plan = _StepPlan(self)
            self.__dict__["_step_plan"] = plan
        return plan.step(x_t, state)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_step_plan", None)  # derived from the weights; never pickled
        return state


def _drop_step_plan(module: AarenEncoder, incompatible_keys: Any) -> None:
    """After ``load_state_dict`` (which may swap parameter objects, ``assign=True``) rebuild the plan."""
    module.__dict__.pop("_step_plan", None)


class _StepPlan:
    """Pre-transposed weights of an :class:`AarenEncoder` for lean token-by-token inference.

    At batch size 1 a step is a few dozen tiny operations, so dispatch overhead, not arithmetic, sets its
    cost. The plan holds each layer's weights ready for ``addmm`` (and, on CPU in float32, for the fused
    C kernel of :mod:`aaren_ts.nn._native`), and is rebuilt whenever any parameter changes (its storage
    or in-place version counter), so it never serves stale weights.
    """

    def __init__(self, encoder: AarenEncoder) -> None:
        self.params = list(encoder.parameters())
        self.key = self._key(self.params)
        self.layers = []
        with torch.no_grad():
            for layer in encoder.layers:
                mixer, ff = layer.mixer, layer.feed_forward
                w_sv, b_sv = mixer._fold_score_value()
                zeros = torch.zeros(w_sv.shape[0], dtype=w_sv.dtype, device=w_sv.device)
                self.layers.append(
                    (
                        layer.norm_mixer,
                        w_sv.t().contiguous(),
                        b_sv.contiguous() if b_sv is not None else zeros,
                        [mixer.n_heads, mixer.d_model],
                        (mixer.n_heads, mixer.head_dim),
                        mixer.out.weight.t().contiguous(),
                        mixer.out.bias if mixer.out.bias is not None else zeros[: mixer.d_model],
                        layer.norm_ff,
                        ff.hidden.weight.t().contiguous(),
                        ff.hidden.bias,
                        ff.output.weight.t().contiguous(),
                        ff.output.bias,
                    )
                )
        self.norm = encoder.norm
        first = encoder.layers[0].mixer
        self.d_model, self.n_heads, self.head_dim = first.d_model, first.n_heads, first.head_dim
        self.d_ff = encoder.layers[0].feed_forward.hidden.out_features
        self.native = self._native_layers()
        self.state_shapes: dict[int, list[torch.Size]] = {}

    @staticmethod
    def _key(params: list[torch.Tensor]) -> tuple[list[int], list[int]]:
        # map() over C-level getters: this check runs on every step, so it is kept cheap
        return list(map(_DATA_PTR, params)), list(map(_VERSION, params))

    def is_current(self) -> bool:
        """Whether every parameter still has the storage and version the plan was built from.

        (``load_state_dict``, which may swap the parameter objects themselves, drops the plan through
        a hook registered by :class:`AarenEncoder`.)
        """
        return self.key == self._key(self.params)

    def _native_layers(self) -> Any:
        """ctypes descriptions of the weights for the fused C step, or ``None`` where it does not apply."""
        # per layer, in the order of the fields of AarenLayer (then its two eps)
        per_layer = [
            (n1.weight, n1.bias, w_sv, b_sv, w_out, b_out, n2.weight, n2.bias, w_1, b_1, w_2, b_2)
            for n1, w_sv, b_sv, _, _, w_out, b_out, n2, w_1, b_1, w_2, b_2 in self.layers
        ]
        tensors = [self.norm.weight, self.norm.bias, *(t for weights in per_layer for t in weights)]
        usable = all(
            t is not None and t.device.type == "cpu" and t.dtype == torch.float32 and t.is_contiguous()
            for t in tensors
        )
        lib = load_fused_step() if usable else None
        if lib is None:
            return None
        structs = (AarenLayer * len(self.layers))()
        for struct, weights, layer in zip(structs, per_layer, self.layers, strict=True):
            for (name, _), t in zip(AarenLayer._fields_[: len(weights)], weights, strict=True):
                setattr(struct, name, t.data_ptr())
            struct.ln1_eps, struct.ln2_eps = layer[0].eps, layer[7].eps
        pointer_arrays = [(ctypes.c_void_p * len(self.layers))() for _ in range(6)]
        return lib, structs, pointer_arrays, threading.Lock()

    def step(self, x: torch.Tensor, state: list[AarenState]) -> tuple[torch.Tensor, list[AarenState]]:
        if self.native is not None:
            out = self._step_native(x, state)
            if out is not None:
                return out
        return self._step_torch(x, state)

    def _step_native(
        self, x: torch.Tensor, state: list[AarenState]
    ) -> tuple[torch.Tensor, list[AarenState]] | None:
        """The fused C step; ``None`` when the inputs are outside what it handles (then use torch)."""
        lib, structs, (m_in, c_in, a_in, m_out, c_out, a_out), lock = self.native
        if (
            x.dim() != 2
            or x.shape[1] != self.d_model
            or x.dtype != torch.float32
            or x.device.type != "cpu"
            or len(state) != len(structs)
        ):
            return None  # the PyTorch step handles it (or raises the usual error)
        batch = x.shape[0]
        flat = [t for st in state for t in st]  # m, c, a of every layer
        # The C code reads and writes raw float64 CPU memory of exactly these shapes: check it all.
        if [t.shape for t in flat] != self._state_shapes(batch) or not all(
            t.dtype == torch.float64 and t.is_cpu for t in flat
        ):
            return None
        flat = [t.contiguous() for t in flat]  # states from forward() can be strided views
        x = x.contiguous()
        y = torch.empty_like(x)
        new = [torch.empty_like(t) for t in flat]
        n = self.norm
        with lock:  # the pointer arrays are shared by every caller of this plan
            for i in range(len(state)):
                m_in[i], c_in[i], a_in[i] = (t.data_ptr() for t in flat[3 * i : 3 * i + 3])
                m_out[i], c_out[i], a_out[i] = (t.data_ptr() for t in new[3 * i : 3 * i + 3])
            status = lib.aaren_encoder_step(
                len(structs), structs, n.weight.data_ptr(), n.bias.data_ptr(), n.eps,
                batch, self.d_model, self.n_heads, self.d_ff, x.data_ptr(), y.data_ptr(),
                m_in, c_in, a_in, m_out, c_out, a_out,
            )  # fmt: skip
        if status != 0:
            raise MemoryError("the fused Aaren step could not allocate its scratch memory")
        return y, [AarenState(*new[i : i + 3]) for i in range(0, len(new), 3)]

    def _state_shapes(self, batch: int) -> list[torch.Size]:
        """Shapes of the flattened ``[m, c, a]`` of every layer for ``batch`` sequences (cached)."""
        shapes = self.state_shapes.get(batch)
        if shapes is None:
            one = [torch.Size((batch, self.n_heads))] * 2 + [torch.Size((batch, self.n_heads, self.head_dim))]
            shapes = self.state_shapes[batch] = one * len(self.layers)
        return shapes

    def _step_torch(self, x: torch.Tensor, state: list[AarenState]) -> tuple[torch.Tensor, list[AarenState]]:
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
