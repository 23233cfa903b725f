"""The torch module behind :class:`~aaren_ts.estimators.classifier.AarenClassifier`.

``input projection (+ position) -> causal encoder (Aaren or KV-cached Transformer) -> causal readout ->
linear head``.

Everything is causal, so the module gives a class distribution after every time step, and everything
is a recurrence, so a stream of observations can be consumed chunk by chunk with the same result as
the whole series at once. The stream state (:class:`StreamState`) holds the encoder's state, the
readout's running statistics and the number of real time points seen per series.

Readouts (``z_t`` is the feature vector the head classifies at step ``t``, ``y_i`` the encoder output):

* ``"last"``: ``z_t = y_t``, the encoder output at the last real step;
* ``"mean"``: ``z_t = mean_{i<=t} y_i``, a causal running mean (state: float64 sum and count);
* ``"attention"``: ``z_t = sum_{i<=t} softmax_i(w·y_i) W_v y_i``, attention pooling with a learned
  query, which is one more Aaren attention (state: an :class:`~aaren_ts.nn.functional.AarenState`).

All three update in O(1) per step from their state.

With ``random_kernels`` (:class:`~aaren_ts.nn.rocket.RandomKernelFeatures`, MiniRocket's features as
a stream), each step's threshold counts also feed linear maps fitted outside the network (ridge
classifiers on their running means, one per prefix length, set with
:meth:`ClassifierModule.set_kernel_head`); after ``t`` steps the map of the longest prefix length up to
``t`` scores the running means. Since each map is linear, the running mean of its per-step scores is
its score of the running means, so a stream keeps one running sum per class and prefix length. In
eval mode the class distribution is a weighted mean of the head's and of those scores' (times a
factor per prefix length fitted with them, a temperature), the head's scores also times a factor, and
both the factor and the head's weight chosen per prefix length (:meth:`ClassifierModule.set_head_gains`:
a network trained on whole series is overconfident after a few steps, and the better model of the two
differs from one prefix length to the next); in training mode the head's alone, so the network trains
as it would without them.

The network's training loss, :class:`~aaren_ts.nn.classify_loss.ClassificationLoss`, is in
:mod:`aaren_ts.nn.classify_loss` (also importable from here).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch
from torch import nn

from aaren_ts.nn.classify_loss import ClassificationLoss, StepLogits
from aaren_ts.nn.config import EncoderConfig
from aaren_ts.nn.dropout import Dropout
from aaren_ts.nn.factory import make_encoder
from aaren_ts.nn.functional import AarenState, aaren_attention, aaren_step
from aaren_ts.nn.rocket import N_KERNELS, RandomKernelFeatures
from aaren_ts.nn.stem import DilatedStem

__all__ = [
    "READOUTS",
    "ClassificationLoss",
    "ClassifierModule",
    "StepLogits",
    "StreamState",
    "position_periods",
]

READOUTS = ("last", "mean", "attention")
_KERNEL_BLOCK_VALUES = 2**24  # values per block of the random kernels' work (64 MiB in float32)


def position_periods(length: float, n_frequencies: int) -> tuple[float, ...] | None:
    """The ``position_periods`` of :class:`ClassifierModule` for series of about ``length`` steps:
    ``n_frequencies`` periods from twice ``length`` down, each half the one before (the slowest wave
    rises over the whole series, the fastest repeats every few steps of a long one); ``None`` for 0."""
    if n_frequencies <= 0:
        return None
    return tuple(2.0 * max(float(length), 1.0) * 0.5**k for k in range(int(n_frequencies)))


class StreamState(NamedTuple):
    """Where a batch of streams stands.

    Attributes
    ----------
    encoder : list
        Per-layer encoder state (``AarenState`` or ``KVCache``).
    readout : tuple of torch.Tensor or AarenState
        Readout state: ``(z,)`` for ``"last"``, ``(sum, count)`` for ``"mean"``, an ``AarenState`` for
        ``"attention"``.
    seen : torch.Tensor
        int64 ``(batch,)``: real time points consumed per stream.
    context : torch.Tensor
        ``(batch, receptive_field - 1, n_channels)``: the last real inputs, the left context of the
        causal convolution that embeds each step (zeros before the first step).
    kernel_scores : torch.Tensor
        float64 ``(batch, n_prefixes * n_classes)``: the sums over the real steps of the random
        kernels' per-step class scores of every prefix length's map (``(batch, 0)`` without
        ``random_kernels``).
    """

    encoder: list[Any]
    readout: Any
    seen: torch.Tensor
    context: torch.Tensor
    kernel_scores: torch.Tensor


class ClassifierModule(nn.Module):
    """Causal sequence classifier with a class distribution at every time step.

    Parameters
    ----------
    n_channels : int
        Input channels.
    n_classes : int
        Number of classes.
    encoder : EncoderConfig
        Kind and sizes of the encoder (see :func:`aaren_ts.nn.make_encoder`); its dropout is also
        applied before the head.
    readout : {"last", "mean", "attention"}
        How the per-step feature vector is formed (see the module docstring).
    kernel_size : int, default=3
        Width of the causal convolution that embeds each step from it and the ``kernel_size - 1``
        steps before it (``1``: a per-step linear projection). It gives the encoder local order
        information; a stream keeps the last ``kernel_size - 1`` inputs in its state.
    dilations : sequence of int or None, default=None
        ``None``: one convolution of ``kernel_size`` consecutive steps. Otherwise a
        :class:`~aaren_ts.nn.stem.DilatedStem`: one causal convolution of ``kernel_size`` taps per
        dilation, mixed position-wise; a stream then keeps the last ``receptive_field - 1`` inputs,
        ``receptive_field = (kernel_size - 1) * max(dilations) + 1``.
    step_outputs : bool, default=False
        What :meth:`forward` returns: the logits at each series' last real step (``False``), or the
        :class:`~aaren_ts.nn.classify_loss.StepLogits` (those, plus the logits at every step and the
        mask of real steps) that a loss on every prefix
        (:class:`~aaren_ts.nn.classify_loss.ClassificationLoss` with ``prefix_weight > 0``) needs.
    random_kernels : dict or None, default=None
        The arguments of a :class:`~aaren_ts.nn.rocket.RandomKernelFeatures` (``dilations``,
        ``n_biases``, ``seed``) whose class distribution is mixed with the head's in eval mode, and
        ``prefix_lengths``, the ascending step counts from which each of their linear maps applies;
        ``None``: none.
    position_periods : sequence of float or None, default=None
        Periods, in steps, of sines and cosines of each step's index in its series (0 for the first)
        that a linear map adds to the step's embedding (:meth:`position_embedding`), so that the
        encoder knows when in a series each step comes; a stream reads the index from the steps it
        has seen. ``None``: none. (Aaren's learned query weighs a prefix's steps by their contents
        alone: without it, order reaches the network only through the convolution's few steps and
        through which prefix each output summarises.)
    """

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        encoder: EncoderConfig,
        readout: str = "mean",
        kernel_size: int = 3,
        dilations: Sequence[int] | None = None,
        step_outputs: bool = False,
        random_kernels: dict[str, Any] | None = None,
        position_periods: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        if kernel_size < 1:
            raise ValueError(f"kernel_size must be at least 1, got {kernel_size}")
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
        d_model = encoder.d_model
        self.d_model = d_model
        self.readout = readout
        self.n_channels = n_channels
        self.kernel_size = kernel_size
        self.step_outputs = step_outputs
        self.embed: nn.Module
        if dilations is None:
            self.embed = nn.Conv1d(n_channels, d_model, kernel_size)
            self.receptive_field = kernel_size
        else:
            self.embed = DilatedStem(n_channels, d_model, kernel_size, dilations)
            self.receptive_field = self.embed.receptive_field
        self.n_classes = n_classes
        self.kernels: RandomKernelFeatures | None = None
        if random_kernels is not None:
            config = dict(random_kernels)
            prefixes = torch.as_tensor(config.pop("prefix_lengths"), dtype=torch.int64)
            self.kernels = RandomKernelFeatures(n_channels, **config)
            self.receptive_field = max(self.receptive_field, self.kernels.receptive_field)
            # the ridge maps of the kernels' running means, one per prefix length (set_kernel_head),
            # and the factor on their scores
            self.register_buffer("kernel_prefixes", prefixes)
            n_maps = len(prefixes) * n_classes
            # (float64: a float32 product's rounding depends on the row's place in the batch)
            weight = torch.zeros(n_maps, self.kernels.n_features, dtype=torch.float64)
            self.register_buffer("kernel_weight", weight)
            self.register_buffer("kernel_bias", torch.zeros(len(prefixes), n_classes))
            self.register_buffer("kernel_gain", torch.ones(len(prefixes), dtype=torch.float64))
            # the factor on the network's class scores at each prefix length and the weight of its
            # class distribution in the mixture (set_head_gains)
            self.register_buffer("head_gain", torch.ones(len(prefixes), dtype=torch.float64))
            self.register_buffer("head_weight", torch.full((len(prefixes),), 0.5, dtype=torch.float64))
        self.position: nn.Linear | None = None
        if position_periods is not None:
            periods = torch.as_tensor(tuple(position_periods), dtype=torch.float64)
            if periods.ndim != 1 or not len(periods) or not bool((periods > 0).all()):
                raise ValueError(f"position_periods must be positive numbers, got {position_periods}")
            # (float64: the angles of a long stream's late steps keep their digits)
            self.register_buffer("position_frequency", 2.0 * math.pi / periods)
            self.position = nn.Linear(2 * len(periods), d_model)
        self.encoder = make_encoder(encoder)
        if readout == "attention":
            self.pool_score = nn.Linear(d_model, 1)
            self.pool_value = nn.Linear(d_model, d_model)
        self.head = nn.Sequential(
            Dropout(encoder.dropout, fast=encoder.fast_dropout), nn.Linear(d_model, n_classes)
        )

    # ----------------------------------------------------------------------------------- state
    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> StreamState:
        """State of ``batch_size`` streams that have seen nothing."""
        if device is None:
            device = self.head[1].weight.device
        d = self.d_model
        if self.readout == "last":
            readout: Any = (torch.zeros(batch_size, d, device=device),)
        elif self.readout == "mean":
            readout = (
                torch.zeros(batch_size, d, device=device, dtype=torch.float64),
                torch.zeros(batch_size, device=device, dtype=torch.float64),
            )
        else:
            readout = AarenState.initial((batch_size,), d, device=device)
        n_scores = 0 if self.kernels is None else len(self.kernel_prefixes) * self.n_classes
        return StreamState(
            self.encoder.init_state(batch_size, device),
            readout,
            torch.zeros(batch_size, dtype=torch.int64, device=device),
            torch.zeros(batch_size, self.receptive_field - 1, self.n_channels, device=device),
            torch.zeros(batch_size, n_scores, device=device, dtype=torch.float64),
        )

    def current_features(self, state: StreamState) -> torch.Tensor:
        """Feature vector after the last consumed step, from the state alone (:meth:`step_features`)."""
        return self.step_features(state.readout, state.kernel_scores, state.seen)

    def step_features(self, readout: Any, kernel_scores: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        """What :meth:`logits` reads after a step: the readout's features ``(batch, d_model)``, followed
        with ``random_kernels`` by ``_kernel_features`` (``n_classes + 2``)."""
        z = self.readout_features(readout)
        if self.kernels is None:
            return z
        return torch.cat([z, self._kernel_features(kernel_scores, seen).to(z.dtype)], dim=-1)

    def _kernel_features(self, sums: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """``(..., n_classes + 2)`` after ``counts`` steps: the kernels' class logits (the scores of
        their running means, from the sums ``(..., n_prefixes * n_classes)``, times their factor), the
        factor on the network's scores and the weight of the network's class distribution, all those
        of the longest prefix length up to ``counts``."""
        per_map = sums.unflatten(-1, (len(self.kernel_prefixes), self.n_classes))
        which = self._map_in_use(counts)
        picked = per_map.gather(-2, which[..., None, None].expand(*which.shape, 1, self.n_classes))[..., 0, :]
        return self._features_of_map(picked, counts, which)

    def _map_in_use(self, counts: torch.Tensor) -> torch.Tensor:
        """Index of the kernels' map after ``counts`` steps: the longest prefix length up to it."""
        return ((counts.unsqueeze(-1) >= self.kernel_prefixes).sum(dim=-1) - 1).clamp_min(0)

    def _features_of_map(self, sums: torch.Tensor, counts: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
        """``_kernel_features`` from the sums ``(..., n_classes)`` of the map in use, ``which``."""
        mean = sums / counts.to(sums.dtype).clamp_min(1.0).unsqueeze(-1)
        logits = self.kernel_gain.to(sums.dtype)[which].unsqueeze(-1) * (
            mean + self.kernel_bias.to(sums.dtype)[which]
        )
        gain = self.head_gain.to(sums.dtype)[which].unsqueeze(-1)
        weight = self.head_weight.to(sums.dtype)[which].unsqueeze(-1)
        return torch.cat([logits, gain, weight], dim=-1)

    def _kernel_blocks(
        self, window: torch.Tensor, per_step: int | None = None, by_series: bool = True
    ) -> Iterator[tuple[slice, int, int, torch.Tensor]]:
        """``(rows, start, stop, part)`` over the series and the last ``n`` steps of ``window``
        ``(batch, receptive_field - 1 + n, n_channels)``: blocks small enough that their ``per_step``
        values per series and step (default: all the indicators) take about 64 MiB, each the whole
        ``n`` steps of as many series as fit (else steps of one series), ``part`` the window the
        kernels read for series ``rows``, steps ``start`` to ``stop``. (A block reads the
        ``receptive_field - 1`` steps before it again: blocks of a few steps of every series cost the
        longest dilations several times the work, and predicting UWaveGestureLibrary's test split
        took twice as long.) ``by_series=False``: every series in each block (the exported step
        graph, whose number of series is not fixed)."""
        r = self.receptive_field - 1
        n = window.shape[1] - r
        per_step = self.kernels.n_features if per_step is None else per_step
        reach = r - (self.kernels.receptive_field - 1)
        if by_series:
            rows = max(1, _KERNEL_BLOCK_VALUES // max(1, n * per_step))
            block = max(1, _KERNEL_BLOCK_VALUES // (min(rows, window.shape[0]) * per_step))
        else:
            rows, block = window.shape[0], max(1, _KERNEL_BLOCK_VALUES // max(1, window.shape[0] * per_step))
        for first in range(0, window.shape[0], rows) if by_series else (0,):
            series = slice(first, first + rows) if by_series else slice(None)
            for start in range(0, n, block):
                stop = min(n, start + block)
                yield series, start, stop, window[series, start + reach : r + stop]

    def set_kernel_head(self, weight: torch.Tensor, bias: torch.Tensor, gain: Any) -> None:
        """Set the linear maps ``(n_prefixes, n_classes, n_features)``, ``(n_prefixes, n_classes)`` of
        the random kernels' running means to class scores (ridge classifiers' ``coef_`` and
        ``intercept_``), one per prefix length, and the factors ``gain`` (one, or one per prefix
        length) that make their scores logits."""
        self.kernel_weight.copy_(torch.as_tensor(weight, dtype=self.kernel_weight.dtype).flatten(0, 1))
        self.kernel_bias.copy_(torch.as_tensor(bias, dtype=self.kernel_bias.dtype))
        self.kernel_gain.copy_(
            torch.as_tensor(gain, dtype=self.kernel_gain.dtype).expand_as(self.kernel_gain)
        )

    def set_head_gains(self, gains: Any, weights: Any = None) -> None:
        """Set the factor on the network's class scores and the weight in ``[0, 1]`` of its class
        distribution in the mixture with the kernels' (``None``: unchanged; 0.5 after construction),
        one, or one per prefix length of the kernels' maps (the longest up to the steps seen
        applies)."""
        weights = torch.as_tensor(self.head_weight if weights is None else weights, dtype=torch.float64)
        if not bool(((weights >= 0.0) & (weights <= 1.0)).all()):
            raise ValueError(f"the network's weights in the mixture must lie in [0, 1], got {weights}")
        self.head_gain.copy_(torch.as_tensor(gains, dtype=self.head_gain.dtype).expand_as(self.head_gain))
        self.head_weight.copy_(weights.expand_as(self.head_weight))

    def kernel_step_scores(self, window: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        """The random kernels' class scores ``(batch, n, n_prefixes * n_classes)`` (every prefix
        length's map) of each of the last ``n`` steps of
        ``window`` ``(batch, receptive_field - 1 + n, n_channels)``, all real, the first after
        ``seen`` ``(batch,)`` steps of its series, computed ``n``-step blocks at a time small enough
        that the indicators of a block take about 64 MiB."""
        steps = seen[:, None] + torch.arange(window.shape[1] - (self.receptive_field - 1), device=seen.device)
        out = [
            self.kernels(part, steps[:, start:stop]).double() @ self.kernel_weight.T
            for _, start, stop, part in self._kernel_blocks(window, by_series=False)
        ]
        if not out:
            return window.new_zeros(window.shape[0], 0, self.kernel_weight.shape[0], dtype=torch.float64)
        return torch.cat(out, dim=1)

    def _kernel_step_features(
        self, window: torch.Tensor, mask: torch.Tensor, seen: torch.Tensor, sums: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``_kernel_features`` after every step of a chunk, and the sums after it.

        ``window`` ``(batch, receptive_field - 1 + n, n_channels)`` ends with the chunk's ``n`` steps,
        ``mask`` ``(batch, n)`` marks the real ones, ``seen`` ``(batch,)`` counts the steps before
        it and ``sums`` ``(batch, n_prefixes * n_classes)`` are the maps' sums there. A step needs
        the sums of the map in use only: the indicator counts of the chunk up to each step are mapped
        by the map that step uses (each step once, not by every map), on top of that map's sums
        before the chunk, and every map's sums are advanced once, at the end, from the chunk's
        counts. Returns ``(batch, n, n_classes + 2)`` and the new sums.
        """
        n_maps = len(self.kernel_prefixes)
        weight = self.kernel_weight.unflatten(0, (n_maps, self.n_classes))  # (P, n_classes, F)
        previous = sums.unflatten(-1, (n_maps, self.n_classes))
        after = seen[:, None] + mask.cumsum(dim=1)  # steps seen after each step of the chunk
        which = self._map_in_use(after)  # (B, n)
        scores = sums.new_zeros(*mask.shape, self.n_classes)
        counts = sums.new_zeros(window.shape[0], self.kernels.n_features)  # of the chunk so far
        steps = after - 1  # each real step's index in its series
        for rows, start, stop, part in self._kernel_blocks(window):
            real = mask[rows, start:stop, None].to(part.dtype)
            running = (self.kernels(part, steps[rows, start:stop]) * real).double()
            if stop - start > 1:
                running.cumsum_(dim=1)
            if start:
                running += counts[rows, None]  # (b, m, F): the chunk's counts after each step
            in_use = which[rows, start:stop]
            block = scores[rows, start:stop]  # (a view)
            maps = in_use.unique().tolist()
            for p in maps:
                if len(maps) == 1:  # (a stream's step, or a block of one map: no copies)
                    block.copy_(previous[rows, p][:, None] + running @ weight[p].T)
                    continue
                at = in_use == p
                before = previous[rows, p][:, None].expand(*at.shape, self.n_classes)[at]
                block[at] = before + running[at] @ weight[p].T
            counts[rows] = running[:, -1]
        return self._features_of_map(scores, after, which), sums + counts @ self.kernel_weight.T

    def kernel_chunk_scores(
        self, window: torch.Tensor, mask: torch.Tensor, seen: torch.Tensor
    ) -> torch.Tensor:
        """The sums over the real steps (``mask`` ``(batch, n)``) of the last ``n`` steps of ``window``
        ``(batch, receptive_field - 1 + n, n_channels)`` of the random kernels' class scores, every
        prefix length's map, ``seen`` ``(batch,)`` steps of each series before them: ``(batch,
        n_prefixes * n_classes)`` float64. The indicators are counted first
        (:meth:`~aaren_ts.nn.rocket.RandomKernelFeatures.counts`), then mapped once."""
        counts = window.new_zeros(window.shape[0], self.kernels.n_features, dtype=torch.float64)
        steps = seen[:, None] + mask.cumsum(dim=1) - 1  # each real step's index in its series
        # (counts hold one slot's indicators at a time, and one dilation's responses per channel of
        # the whole kernels and their four truncations: longer blocks than for every step's features)
        per_step = self.kernels.n_features // len(self.kernels.dilations) + 5 * N_KERNELS * self.n_channels
        for rows, start, stop, part in self._kernel_blocks(window, per_step):
            counts[rows] += self.kernels.counts(part, mask[rows, start:stop], steps[rows, start:stop])
        return counts @ self.kernel_weight.T

    def readout_features(self, readout: Any) -> torch.Tensor:
        """Feature vector ``(batch, d_model)`` of a readout state."""
        if self.readout == "last":
            return readout[0]
        if self.readout == "mean":
            total, count = readout
            return (total / count.clamp_min(1.0).unsqueeze(-1)).to(self.head[1].weight.dtype)
        return readout.output().to(self.head[1].weight.dtype)

    def readout_step(self, y: torch.Tensor, readout: Any) -> Any:
        """The readout state after one more real step of every stream, its encoder output ``y``
        ``(batch, d_model)``: the recurrent form of the chunk computation in :meth:`encode`."""
        if self.readout == "last":
            return (y,)
        if self.readout == "mean":
            total, count = readout
            return (total + y.to(total.dtype), count + 1.0)
        s = self.pool_score(y)[:, 0] / math.sqrt(self.d_model)
        _, pooled = aaren_step(AarenState(*readout), s, self.pool_value(y))
        return pooled

    # ------------------------------------------------------------------------------- computing
    def _readout(self, y: torch.Tensor, mask: torch.Tensor, prev: Any) -> tuple[torch.Tensor, Any]:
        batch, n, d = y.shape
        if self.readout == "last":
            (z_prev,) = prev
            pos = torch.arange(n, device=y.device).expand(batch, n)
            idx = torch.where(mask, pos, torch.full_like(pos, -1)).cummax(dim=1).values
            got = y.gather(1, idx.clamp_min(0).unsqueeze(-1).expand(batch, n, d))
            z = torch.where((idx >= 0).unsqueeze(-1), got, z_prev.unsqueeze(1).to(y.dtype))
            return z, (z[:, -1] if n else z_prev,)
        if self.readout == "mean":
            total, count = prev
            m = mask.to(torch.float64)
            sums = total.unsqueeze(1) + torch.cumsum(y.to(torch.float64) * m.unsqueeze(-1), dim=1)
            counts = count.unsqueeze(1) + torch.cumsum(m, dim=1)
            z = (sums / counts.clamp_min(1.0).unsqueeze(-1)).to(y.dtype)
            if n == 0:
                return z, prev
            return z, (sums[:, -1], counts[:, -1])
        s = self.pool_score(y).squeeze(-1) / math.sqrt(d)
        v = self.pool_value(y)
        z, st = aaren_attention(s, v, mask, state=prev, return_state=True)
        return z, st

    def encode(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        state: StreamState | None = None,
        every_step: bool = True,
    ) -> tuple[torch.Tensor, StreamState]:
        """Features at every step of a chunk, continuing ``state``.

        Parameters
        ----------
        x : torch.Tensor
            ``(batch, n, n_channels)``, already scaled.
        mask : torch.Tensor
            Bool ``(batch, n)``, True at real steps.
        state : StreamState, optional
            Where each stream stands; a fresh state when omitted.
        every_step : bool, default=True
            With ``random_kernels`` in eval mode: ``False`` leaves the kernels' features out of ``z``
            and only advances their sums in the state (one product with the maps per chunk instead
            of one per step), for callers that read the answer after the chunk
            (:meth:`current_features`).

        Returns
        -------
        z : torch.Tensor
            ``(batch, n, d_model)`` (and the kernels' features after them, see :meth:`step_features`);
            at a padded step it repeats the previous real step's features.
        state : StreamState
            The state after the chunk.
        """
        if state is None:
            state = self.init_state(x.shape[0], x.device)
        h, context, full = self._embed(x, mask, state.context, state.seen)
        if h.shape[1] == 1 and not self.training and not torch.is_grad_enabled() and bool(mask.all()):
            # one new time point of every stream: the encoder's step (same result, far less overhead)
            y, enc_state = self.encoder.step(h[:, 0], state.encoder)
            y = y[:, None]
        else:
            y, enc_state = self.encoder(h, mask, state.encoder)
        z, readout_state = self._readout(y, mask, state.readout)
        seen = state.seen + mask.sum(dim=1)
        kernel_scores = state.kernel_scores
        if self.kernels is not None and not self.training and not every_step:
            kernel_scores = kernel_scores + self.kernel_chunk_scores(full, mask, state.seen)
        elif self.kernels is not None and not self.training:  # (training: the head alone, see logits)
            features, kernel_scores = self._kernel_step_features(full, mask, state.seen, kernel_scores)
            z = torch.cat([z, features.to(z.dtype)], dim=-1)
        return z, StreamState(enc_state, readout_state, seen, context, kernel_scores)

    def embed_window(self, full: torch.Tensor) -> torch.Tensor:
        """The embedding ``(B, n, d_model)`` of the last ``n`` steps of ``full`` ``(B, receptive_field -
        1 + n, C)``."""
        stem = self.embed.receptive_field if isinstance(self.embed, DilatedStem) else self.kernel_size
        part = full[:, self.receptive_field - stem :]
        return self.embed(part.transpose(1, 2)).transpose(1, 2)

    def position_embedding(self, steps: torch.Tensor) -> torch.Tensor | float:
        """What :meth:`encode` adds to the embedding of the steps of index ``steps`` (any shape, 0 for a
        series' first step): the linear map of the sines and cosines of the steps' angles at each of
        ``position_periods``, ``(*steps.shape, d_model)``; ``0.0`` without them."""
        if self.position is None:
            return 0.0
        angles = steps.to(torch.float64).unsqueeze(-1) * self.position_frequency
        waves = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
        return self.position(waves.to(self.position.weight.dtype))

    def _embed(
        self, x: torch.Tensor, mask: torch.Tensor, context: torch.Tensor, seen: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Causal convolution over ``[context, x]`` (returned too), plus the position of each step
        after the ``seen`` ``(B,)`` before the chunk; real steps are a prefix of each row of ``x``."""
        full = torch.cat([context.to(x.dtype), x], dim=1)  # (B, k-1+n, C)
        h = self.embed_window(full)  # (B, n, d)
        if self.position is not None:
            steps = seen.unsqueeze(1) + torch.arange(x.shape[1], device=x.device)
            h = h + self.position_embedding(steps).to(h.dtype)
        if self.receptive_field == 1:
            return h, context, full
        n_real = mask.sum(dim=1, keepdim=True)  # the new context ends at the last real step
        idx = n_real + torch.arange(self.receptive_field - 1, device=x.device).unsqueeze(0)
        new_context = full.gather(1, idx.unsqueeze(-1).expand(-1, -1, full.shape[-1]))
        return h, new_context, full

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        """Class scores from features (any leading shape). With ``random_kernels``, in eval mode, the
        last ``n_classes + 2`` features are the kernels' logits, the factor on the head's scores and
        the weight ``w`` of the head's distribution (``_kernel_features``), and the result is the
        log of ``w`` times the head's class distribution plus ``1 - w`` times the kernels', in
        float64; in training mode
        the features are the readout's alone (:meth:`encode` skips the kernels) and so are the
        scores."""
        if self.kernels is None or self.training:
            return self.head(z[..., : self.d_model])
        # (in float64: float32 exp and log round differently in vectorised blocks and their tails, so
        # a series' answer would depend on its place in the batch)
        linear = self.head[1]  # (eval mode: the dropout before it is the identity)
        own = nn.functional.linear(
            z[..., : self.d_model].contiguous().double(), linear.weight.double(), linear.bias.double()
        )
        own = torch.log_softmax(z[..., -2:-1].double() * own, dim=-1)
        kernels = z[..., self.d_model : self.d_model + self.n_classes].double()
        kernels = torch.log_softmax(kernels, dim=-1)
        weight = z[..., -1:].double()
        return torch.logaddexp(own + torch.log(weight), kernels + torch.log1p(-weight))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor | StepLogits:
        """Logits at each series' last real step (with ``step_outputs``: a
        :class:`~aaren_ts.nn.classify_loss.StepLogits`).

        ``x`` is ``(batch, T, C)`` zero-padded and ``lengths`` ``(batch,)``.

        The batch is trimmed to its longest series first, so padding beyond it costs nothing.
        """
        lengths = lengths.to(torch.int64)
        t_max = int(lengths.max())
        x = x[:, :t_max]
        mask = torch.arange(t_max, device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        z, state = self.encode(x, mask, every_step=self.step_outputs)
        if not self.step_outputs:
            if self.kernels is not None and not self.training:  # (z holds no kernel features)
                return self.logits(self.current_features(state))
            last = z[torch.arange(x.shape[0], device=x.device), (lengths - 1).clamp_min(0)]
            return self.logits(last)
        steps = self.logits(z)
        last = steps[torch.arange(x.shape[0], device=x.device), (lengths - 1).clamp_min(0)]
        return StepLogits(last, steps, mask)
