"""The streaming engine of a classifying network: one recurrent state per stream, and the work.

:class:`ClassifierStreams` holds a batch of streams of a :class:`~aaren_ts.nn.classify.ClassifierModule`
(or of every member of a :class:`~aaren_ts.nn.ensemble.ClassifierEnsemble`)
(the encoder's state, the readout's running statistics, the time points each has seen and the left
context of the embedding convolution) and does what they do: start them, advance any of them by the
next time points (ragged, in blocks), give the current class probabilities, and give and restore the
state's tensors. It works on standardised arrays; the estimator checks and scales its input. Every
call that changes the streams holds :attr:`ClassifierStreams.lock`, and changes nothing when it
refuses its input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from aaren_ts.engine._streams import Streams
from aaren_ts.engine.early import ConfidenceRule, EarlyDecisions
from aaren_ts.nn.classify import ClassifierModule, StreamState
from aaren_ts.nn.ensemble import ClassifierEnsemble, EnsembleState
from aaren_ts.nn.state import flatten_state, unflatten_state

__all__ = ["ClassifierStreams"]


class ClassifierStreams(Streams):
    """The streams of a :class:`~aaren_ts.nn.classify.ClassifierModule` (none until :meth:`advance`
    starts them); built as :class:`~aaren_ts.engine._streams.Streams` is, from the network and a device.

    Attributes
    ----------
    state : StreamState, EnsembleState or None
        Every stream's state, batched (an ensemble's: every member's); ``None`` before the first
        :meth:`advance` (or after :meth:`reset`).
    early : EarlyDecisions or None
        Every stream's early decision under the rule given to :meth:`advance` (``None`` with the
        state).
    """

    def __init__(self, module: ClassifierModule | ClassifierEnsemble, device: torch.device | str) -> None:
        super().__init__(module, device)
        self.state: StreamState | EnsembleState | None = None
        self.early: EarlyDecisions | None = None

    def __len__(self) -> int:
        return 0 if self.state is None else len(self.state.seen)

    def reset(self) -> None:
        """End every stream; the next :meth:`advance` starts new ones."""
        with self.lock:
            self.state = None
            self.early = None

    def advance(self, values: np.ndarray, lengths: np.ndarray, rule: ConfidenceRule | None = None) -> None:
        """Advance the streams by ``values`` ``(n, T, C)`` (standardised; row ``i`` holds ``lengths[i]``
        real time points, the rest is padding); the first call starts ``n`` streams.

        With a ``rule``, every stream's early decision (:attr:`early`) is updated after each of its new
        time points, as :meth:`decide_early` does over whole series.

        Raises
        ------
        ValueError
            If streams are ongoing and ``n`` is another number; nothing changes then.
        """
        n = len(values)
        with self.lock:
            if self.state is not None and n != len(self):
                raise ValueError(
                    f"X_new holds {n} series but {len(self)} streams are ongoing; pass one series per "
                    "stream (or call reset_stream() to start new streams)"
                )
            state = self.state if self.state is not None else self.module.init_state(n, self.device)
            early = self.early if self.early is not None else EarlyDecisions(n, self.device)
            if values.shape[1] == 0:  # no time point for any stream: nothing advances
                self.state, self.early = state, early
                return
            x = torch.as_tensor(values, device=self.device)
            steps = torch.arange(values.shape[1], device=self.device)
            mask = steps[None, :] < torch.as_tensor(lengths, device=self.device)[:, None]
            with torch.no_grad():
                deciding = rule is not None and bool((early.decided_at == 0).any())
                z, new_state = self.module.encode(x, mask, state, every_step=deciding)
                if deciding:
                    early = early.copy()  # changed below; the streams change only if all goes well
                    self._decide(early, z, mask, state.seen, rule)
            self.state, self.early = new_state, early

    def _decide(
        self,
        early: EarlyDecisions,
        z: torch.Tensor,
        mask: torch.Tensor,
        seen: torch.Tensor,
        rule: ConfidenceRule,
    ) -> None:
        """Update ``early`` after every step of a chunk: features ``z`` ``(n, T, d)``, real steps
        ``mask``, ``seen`` time points before the chunk."""
        early.update_chunk(torch.softmax(self.module.logits(z), dim=-1), mask, seen, rule)

    def decide_early(
        self, values: np.ndarray, lengths: np.ndarray, rule: ConfidenceRule, batch_size: int = 256
    ) -> tuple[np.ndarray, np.ndarray]:
        """Early decisions on whole series (the streams are not touched).

        Parameters
        ----------
        values : ndarray
            ``(n, T, C)`` standardised, row ``i`` holding ``lengths[i]`` real time points.
        lengths : ndarray
            ``(n,)`` series lengths.
        rule : ConfidenceRule
        batch_size : int, default=256
            Series per forward pass.

        Returns
        -------
        classes : ndarray
            int64 ``(n,)``: the decided class index; a series never confident enough is decided at
            its last time point with its final prediction.
        decided_at : ndarray
            int64 ``(n,)``: the number of time points seen when each series was decided.
        """
        n = len(lengths)
        classes = np.empty(n, dtype=np.int64)
        decided_at = np.empty(n, dtype=np.int64)
        for start in range(0, n, batch_size):
            sl = slice(start, start + batch_size)
            t_max = max(int(lengths[sl].max()), 1)
            x = torch.as_tensor(values[sl, :t_max], device=self.device)
            real = torch.as_tensor(lengths[sl], device=self.device)
            mask = torch.arange(t_max, device=self.device)[None, :] < real[:, None]
            with torch.no_grad():
                z, state = self.module.encode(x, mask)
                early = EarlyDecisions(len(real), self.device)
                self._decide(early, z, mask, torch.zeros_like(real, dtype=torch.int64), rule)
                final = self.module.logits(self.module.current_features(state)).argmax(dim=-1)
            undecided = early.decided_at == 0
            classes[sl] = torch.where(undecided, final, early.decided_class).cpu().numpy()
            decided_at[sl] = torch.where(undecided, state.seen, early.decided_at).cpu().numpy()
        return classes, decided_at

    def early_decisions(self) -> tuple[np.ndarray, np.ndarray]:
        """The streams' decisions: class index (-1 while undecided) and time points seen when decided
        (0 while undecided).

        Raises
        ------
        ValueError
            Without ongoing streams.
        """
        with self.lock:
            if self.state is None or self.early is None:
                raise ValueError(
                    "no ongoing streams: pass X to predict_early, or feed series with "
                    "partial_update(X_new) first"
                )
            return self.early.decided_class.cpu().numpy(), self.early.decided_at.cpu().numpy()

    def predict_proba(self) -> np.ndarray:
        """Class probabilities ``(n_streams, n_classes)`` after each stream's last time point."""
        with self.lock:
            state = self.state
            if state is None:
                raise ValueError(
                    "no ongoing streams: pass X to predict, or feed series with partial_update(X_new) first"
                )
            empty = (state.seen == 0).nonzero().flatten().tolist()
            if empty:
                raise ValueError(f"streams {empty} have not received any time point yet; nothing to predict")
            with torch.no_grad():
                logits = self.module.logits(self.module.current_features(state))
                return torch.softmax(logits, dim=-1).double().cpu().numpy()

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of the streams' state (none without streams)."""
        with self.lock:
            return [] if self.state is None else flatten_state(self.state)

    def early_tensors(self) -> list[torch.Tensor]:
        """The tensors of the streams' early decisions (none without streams)."""
        with self.lock:
            return [] if self.early is None else [t.clone() for t in self.early.tensors()]

    def restore(
        self,
        tensors: Sequence[torch.Tensor] | None,
        n_streams: int,
        early: Sequence[torch.Tensor] | None = None,
    ) -> None:
        """Load what :meth:`tensors` (and :meth:`early_tensors`) gave for ``n_streams`` streams
        (``None``: no streams; no ``early``: no decision taken yet).

        Every tensor is checked against the state this network makes for that many streams
        (structure, shape, dtype; finite where it must be; counts not negative) before anything
        changes.

        Raises
        ------
        ValueError
            Naming the first tensor that does not fit.
        """
        if tensors is None:
            self.reset()
            return
        template = self.module.init_state(int(n_streams), self.device)
        expected = flatten_state(template)
        tensors = [torch.as_tensor(t) for t in tensors]
        if int(n_streams) < 1 or len(tensors) != len(expected):
            raise ValueError(
                f"the saved streams hold {len(tensors)} tensors for {n_streams} streams; this model's "
                f"streams have {len(expected)}"
            )
        for k, (got, want) in enumerate(zip(tensors, expected, strict=True)):
            if got.dtype != want.dtype or got.shape != want.shape:
                raise ValueError(
                    f"saved stream tensor {k} has dtype {got.dtype} and shape {tuple(got.shape)}; this "
                    f"model's is {want.dtype} with shape {tuple(want.shape)}"
                )
        state = unflatten_state(template, [t.to(self.device) for t in tensors])
        members = state.members if isinstance(state, EnsembleState) else (state,)
        if any((member.seen < 0).any() for member in members):
            raise ValueError("the saved streams' time-point counts are negative")
        if any((member.seen != state.seen).any() for member in members):
            raise ValueError("the saved streams' networks disagree on the time points each stream has seen")
        held = [t for m in members for t in (*flatten_state(m.readout), m.context, m.kernel_scores)]
        if not all(torch.isfinite(t).all() for t in held):
            raise ValueError("the saved streams' readout, context or kernel scores hold non-finite values")
        if early:
            decisions = EarlyDecisions.from_tensors(
                [torch.as_tensor(t).to(self.device) for t in early], n_streams
            )
        else:
            decisions = EarlyDecisions(int(n_streams), self.device)
        with self.lock:
            self.state = state
            self.early = decisions
