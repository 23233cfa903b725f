"""The Aaren encoder: pre-norm residual blocks of Aaren attention and feed-forward layers."""

from __future__ import annotations

import ctypes
import threading
from operator import attrgetter
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from aaren_ts.nn._native import AarenLayer, load_fused_step
from aaren_ts.nn.aaren import Aaren
from aaren_ts.nn.blocks import HeadedEncoder, pre_norm_residual, run_stack
from aaren_ts.nn.functional import AarenState, aaren_step

__all__ = ["AarenEncoder"]

_DATA_PTR = torch.Tensor.data_ptr
_VERSION = attrgetter("_version")


class AarenEncoder(HeadedEncoder):
    """Stacked Aaren blocks; the whole stack is an RNN.

    Trained in parallel on whole sequences (:meth:`forward`), it then consumes one token at a time
    (:meth:`step`) with ``O(n_layers * d_model**2)`` work and ``O(n_layers * d_model)`` state, whatever
    the history length. Stepping through a sequence gives the same outputs as :meth:`forward`.

    Parameters
    ----------
    d_model, n_heads, n_layers, d_ff, dropout, bias, fast_dropout
        Sizes of the stack (``dropout=0.0``, ``bias=True`` and ``fast_dropout=False`` by default):
        the fields of :class:`~aaren_ts.nn.EncoderConfig` of the same names. :meth:`from_config`
        builds the encoder from that object.

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

    backbone = "aaren"
    mixer_class = Aaren

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

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        # load_state_dict may swap the parameter objects themselves (assign=True): rebuild the plan
        self.__dict__.pop("_step_plan", None)
        super()._load_from_state_dict(*args, **kwargs)


def _drop_step_plan(module: AarenEncoder, incompatible_keys: Any) -> None:
    """Former load-state-dict hook, kept so that encoders pickled with it registered still unpickle."""
    module.__dict__.pop("_step_plan", None)


class _PlanLayer(NamedTuple):
    """One block's weights in a :class:`_StepPlan`: its norms, and its projections input-major.

    Projections are stored "in x out" (the transpose of :class:`torch.nn.Linear`'s weight), ready for
    ``addmm`` and for the fused C kernel, which reads them through :meth:`native_fields`.
    """

    norm_mixer: nn.LayerNorm
    w_sv: torch.Tensor  # (d_model, n_heads + d_model): folded scores, then values
    b_sv: torch.Tensor
    w_out: torch.Tensor
    b_out: torch.Tensor
    norm_ff: nn.LayerNorm
    w_1: torch.Tensor
    b_1: torch.Tensor
    w_2: torch.Tensor
    b_2: torch.Tensor
    n_heads: int
    head_dim: int

    @classmethod
    def of(cls, block: nn.Module) -> _PlanLayer:
        """The weights of ``block``, a :class:`~aaren_ts.nn.blocks.ResidualBlock` of :class:`Aaren`."""
        mixer, ff = block.mixer, block.feed_forward
        w_sv, b_sv = mixer._fold_score_value()
        if b_sv is None:
            b_sv = w_sv.new_zeros(w_sv.shape[0])
        b_out = mixer.out.bias if mixer.out.bias is not None else b_sv.new_zeros(mixer.d_model)
        return cls(
            norm_mixer=block.norm_mixer,
            w_sv=w_sv.t().contiguous(),
            b_sv=b_sv.contiguous(),
            w_out=mixer.out.weight.t().contiguous(),
            b_out=b_out,
            norm_ff=block.norm_ff,
            w_1=ff.hidden.weight.t().contiguous(),
            b_1=ff.hidden.bias,
            w_2=ff.output.weight.t().contiguous(),
            b_2=ff.output.bias,
            n_heads=mixer.n_heads,
            head_dim=mixer.head_dim,
        )

    def mix(self, h: torch.Tensor, state: AarenState) -> tuple[torch.Tensor, AarenState]:
        """:meth:`Aaren.step` without a mask, on these weights."""
        batch = h.shape[0]
        s, v = torch.addmm(self.b_sv, h, self.w_sv).split([self.n_heads, h.shape[1]], dim=-1)
        o, state = aaren_step(state, s, v.view(batch, self.n_heads, self.head_dim))
        return torch.addmm(self.b_out, o.view(batch, -1), self.w_out), state

    def feed_forward(self, h: torch.Tensor) -> torch.Tensor:
        """:class:`~aaren_ts.nn.blocks.FeedForward` in inference, on these weights."""
        return torch.addmm(self.b_2, F.gelu(torch.addmm(self.b_1, h, self.w_1)), self.w_2)

    def block(self, x: torch.Tensor, state: AarenState) -> tuple[torch.Tensor, AarenState]:
        """The residual block (:func:`~aaren_ts.nn.blocks.pre_norm_residual`) on these weights."""
        mix = lambda h: self.mix(h, state)  # noqa: E731
        return pre_norm_residual(x, mix, self.norm_mixer, self.norm_ff, self.feed_forward)

    def native_fields(self) -> dict[str, torch.Tensor | None]:
        """The tensors behind the pointer fields of the C struct :class:`~aaren_ts.nn._native.AarenLayer`."""
        n1, n2 = self.norm_mixer, self.norm_ff
        return {
            "ln1_w": n1.weight, "ln1_b": n1.bias, "w_sv": self.w_sv, "b_sv": self.b_sv,
            "w_out": self.w_out, "b_out": self.b_out, "ln2_w": n2.weight, "ln2_b": n2.bias,
            "w_1": self.w_1, "b_1": self.b_1, "w_2": self.w_2, "b_2": self.b_2,
        }  # fmt: skip


# Largest batch the fused C step serves. It removes per-operation overhead, which dominates small
# batches, but its matrix-vector loops lose to PyTorch's matrix products on many streams at once (one
# thread, default sizes: 27 vs 161 us at 1 stream, 203 vs 212 at 32, 298 vs 237 at 48, 62 vs 29 ms at
# 10 000).
_NATIVE_MAX_BATCH = 32


class _StepPlan:
    """Pre-transposed weights of an :class:`AarenEncoder` for lean token-by-token inference.

    At batch size 1 a step is a few dozen tiny operations, so dispatch overhead, not arithmetic, sets its
    cost. The plan holds each layer's weights ready for ``addmm`` (:class:`_PlanLayer`) and, on CPU in
    float32, for the fused C kernel of :mod:`aaren_ts.nn._native`; it is rebuilt whenever any parameter
    changes (its storage or in-place version counter), so it never serves stale weights. Its PyTorch step
    runs the same block and stack functions as the general path, with :meth:`_PlanLayer.mix` as mixer.
    """

    def __init__(self, encoder: AarenEncoder) -> None:
        self.params = list(encoder.parameters())
        self.key = self._key(self.params)
        with torch.no_grad():
            self.layers = [_PlanLayer.of(block) for block in encoder.layers]
        self.norm = encoder.norm
        first = self.layers[0]
        self.d_model, self.n_heads, self.head_dim = encoder.d_model, first.n_heads, first.head_dim
        self.d_ff = first.w_1.shape[1]
        self.native = self._native_layers()
        self.state_shapes: dict[int, list[torch.Size]] = {}

    @staticmethod
    def _key(params: list[torch.Tensor]) -> tuple[list[int], list[int]]:
        # map() over C-level getters: this check runs on every step, so it is kept cheap
        return list(map(_DATA_PTR, params)), list(map(_VERSION, params))

    def is_current(self) -> bool:
        """Whether every parameter still has the storage and version the plan was built from.

        (``load_state_dict``, which may swap the parameter objects themselves, drops the plan: see
        :meth:`AarenEncoder._load_from_state_dict`.)
        """
        return self.key == self._key(self.params)

    def _native_layers(self) -> Any:
        """ctypes descriptions of the weights for the fused C step, or ``None`` where it does not apply."""
        fields = [layer.native_fields() for layer in self.layers]
        tensors = [self.norm.weight, self.norm.bias, *(t for f in fields for t in f.values())]
        usable = all(
            t is not None and t.device.type == "cpu" and t.dtype == torch.float32 and t.is_contiguous()
            for t in tensors
        )
        lib = load_fused_step() if usable else None
        if lib is None:
            return None
        structs = (AarenLayer * len(self.layers))()
        for struct, named, layer in zip(structs, fields, self.layers, strict=True):
            for name, t in named.items():
                setattr(struct, name, t.data_ptr())
            struct.ln1_eps, struct.ln2_eps = layer.norm_mixer.eps, layer.norm_ff.eps
        pointer_arrays = [(ctypes.c_void_p * len(self.layers))() for _ in range(6)]
        return lib, structs, pointer_arrays, threading.Lock()

    def step(self, x: torch.Tensor, state: list[AarenState]) -> tuple[torch.Tensor, list[AarenState]]:
        if self.native is not None and x.shape[0] <= _NATIVE_MAX_BATCH:
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
        """The step through PyTorch operations: the general stack and block on the plan's weights."""
        return run_stack(x, self.layers, state, _PlanLayer.block, self.norm)
