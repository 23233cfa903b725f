"""Random dilated kernels with thresholds, computed as a stream: MiniRocket's features in O(1) per step.

MiniRocket [1]_ convolves a series with 84 fixed kernels of length 9 (weights ``-1`` except ``2`` at
three of the nine taps) at dilations spread exponentially up to the series length, sums the responses
over a random subset of channels, and pools each response by the proportion of positive values (PPV)
after subtracting biases drawn from quantiles of the responses on training series.
:class:`RandomKernelFeatures` computes the same kind of features as a stream. With
``alignment="causal"`` the response at step ``t`` reads the steps ``t - 8 d, ..., t`` only (zeros
before the series' start, the channels' training mean after standardisation), so each step gives one
binary vector (the response above each bias), and the PPV after step ``t`` is the running mean of
those vectors up to ``t``: a sum and a count per stream, updated in O(1) per step from a window of
the last ``8 max(d)`` inputs.

With ``alignment="centred"`` (the classifier's) the PPV after step ``t`` is MiniRocket's own, with
its padding, of the series seen so far: the responses centred on the steps ``0, ..., t``, zeros read
before the start and after ``t``. The centres up to ``t - 4 d`` are whole responses (the causal ones,
``4 d`` steps late); the last ``4 d`` are cut short at ``t``, and the one centred ``k`` steps back
keeps the taps up to ``4 + k // d``: four truncations, each of the responses ending at one of the
last ``d`` steps. So every step adds its whole response and the four cut ones ending at it, and takes
back the four that ended ``d`` steps before (which the window still holds): the running sum is still
one per class and prefix length, the window the same, each step's term a small signed count. A stream
step does a few times the causal kernels' work; a batch less than that, where the truncations follow
from one another (``P_m(s) = P_{m-1}(s - d) + w_{4+m} x_s``) and a series' counts telescope to the
cut responses at its last and first ``d`` steps.

:doc:`/design_notes/classifier_kernel_pooling` records how the centred pooling compared with the
causal one and with ``"skip_start"``, what it costs, and the poolings tried and not kept (the excess
over the threshold, MultiRocket's [2]_ other statistics, Hydra's [3]_ features, and others).

The kernels, channel subsets and dilations are fixed at construction from a seed; the biases are
buffers set from training data by :meth:`RandomKernelFeatures.fit_biases`.

References
----------
.. [1] A. Dempster, D. F. Schmidt and G. I. Webb, "MiniRocket: A very fast (almost) deterministic
   transform for time series classification", Proceedings of the 27th ACM SIGKDD Conference on
   Knowledge Discovery and Data Mining, pp. 248-257, 2021.
.. [2] C. W. Tan, A. Dempster, C. Bergmeir and G. I. Webb, "MultiRocket: multiple pooling operators
   and transformations for fast and effective time series classification", Data Mining and Knowledge
   Discovery, 36(5), pp. 1623-1646, 2022.
.. [3] A. Dempster, D. F. Schmidt and G. I. Webb, "Hydra: competing convolutional kernels for fast and
   accurate time series classification", Data Mining and Knowledge Discovery, 37(5), pp. 1779-1805,
   2023.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import nn

__all__ = ["ALIGNMENTS", "KERNEL_LENGTH", "RandomKernelFeatures", "default_dilations"]

KERNEL_LENGTH = 9
_TAPS = np.array(list(itertools.combinations(range(KERNEL_LENGTH), 3)))  # the 84 kernels' taps of weight 2
N_KERNELS = len(_TAPS)
_GOLDEN = (np.sqrt(5.0) + 1.0) / 2.0
_HALF = (KERNEL_LENGTH - 1) // 2  # the taps on either side of a kernel's centre
_GROUPED_STEPS = 4  # chunks of at most this many steps compute a dilation's slots together
#: Which responses a step counts (``alignment`` of :class:`RandomKernelFeatures`).
ALIGNMENTS = ("causal", "skip_start", "centred")


def default_dilations(length: float, n_dilations: int = 32) -> tuple[int, ...]:
    """MiniRocket's dilations for series of ``length`` steps: ``n_dilations`` slots spread
    exponentially from 1 to ``(length - 1) / 8``, rounded down, so the short dilations fill several
    slots each (in increasing order). :class:`RandomKernelFeatures` gives every slot its own
    thresholds: as in MiniRocket, a dilation's share of the features is its share of the slots. See
    :doc:`/design_notes/classifier_kernels` for how this compared with one slot per dilation."""
    top = np.log2(max((float(length) - 1.0) / (KERNEL_LENGTH - 1), 1.0))
    return tuple(int(d) for d in np.floor(2.0 ** np.linspace(0.0, top, n_dilations)))


def _mix_channels(conv: torch.Tensor, channels: torch.Tensor) -> torch.Tensor:
    """Each kernel's responses summed over its channels, for every slot of a dilation at once:
    ``conv`` ``(B, C, ..., N_KERNELS, n)``, ``channels`` ``(S, N_KERNELS, C)`` 0/1 -> ``(B, S, ...,
    N_KERNELS, n)``. (A sum over the few channels, one product each, without the copies an ``einsum``
    makes to batch over the kernels.)"""
    inner = (1,) * (conv.dim() - 4)  # (the dimensions between the channels and the kernels)
    weights = channels.reshape(channels.shape[0], *inner, N_KERNELS, channels.shape[2], 1)
    out = conv[:, None, 0] * weights[..., 0, :]
    for c in range(1, conv.shape[1]):
        out.addcmul_(conv[:, None, c], weights[..., c, :])
    return out


def _count_above(values: torch.Tensor, bias: torch.Tensor, counted: torch.Tensor) -> torch.Tensor:
    """How many of ``values`` ``(B, S, N_KERNELS, n)`` lie above each of ``bias`` ``(1, S, N_KERNELS,
    n_biases, 1)`` at the steps where ``counted`` ``(B, n)`` is True: ``(B, S, N_KERNELS, n_biases)``
    in the values' dtype (whole numbers, exact below 2**24); with ``counted`` ``(B, n, P)``, ``P``
    such sums at once, ``(B, S, N_KERNELS, n_biases, P)``. (The indicators in that dtype and a
    matrix product with ``counted``: about a third of the time of summing a bool tensor.)"""
    batch, slots, kernels, n = values.shape
    above = values.new_empty(batch, slots, kernels, bias.shape[3], n)
    torch.gt(values[:, :, :, None, :], bias, out=above)
    weights = counted.to(values.dtype)
    several = weights.dim() == 3
    sums = torch.bmm(above.reshape(batch, -1, n), weights if several else weights[:, :, None])
    return sums.reshape(above.shape[:4] + sums.shape[2:]) if several else sums.reshape(above.shape[:4])


class RandomKernelFeatures(nn.Module):
    """MiniRocket-style kernels at several dilations, streamed: per-step counts above each threshold.

    Parameters
    ----------
    n_channels : int
        Input channels.
    dilations : sequence of int
        Positive dilations, one per slot (:func:`default_dilations`); a dilation that fills ``k``
        slots has ``k`` times the thresholds, the next terms of the same quantile sequence in each
        slot. Slots of one dilation next to each other share its convolution.
    n_biases : int
        Thresholds per kernel and slot; there are ``84 * len(dilations) * n_biases`` features.
    seed : int, default=0
        Seeds the channel subsets.
    alignment : {"causal", "skip_start", "centred"}, default="causal"
        Which responses a step counts. ``"causal"``: the response ending at the step (``8 d`` steps
        back, zeros before the series' start). ``"skip_start"``: the same from step ``4 d`` of a
        series on (0-based) only, where the kernel's centre has reached the series. ``"centred"``:
        after step ``t``, the proportion is that of the responses centred on the steps ``0, ..., t``
        with zeros before the series' start and after step ``t``, MiniRocket's pooling of the prefix
        (with padding): the responses ``(KERNEL_LENGTH - 1) / 2 * d`` steps back whole, and the
        last ``4 d`` centres read with the kernel cut short at step ``t``. Each of those cut
        responses is one of four truncations ending at a step of the last ``d`` ones, so every
        step adds the new ones and takes back those that left: still one sum per class in a stream,
        each step's term a small signed count instead of an indicator. The last two need each
        step's index in its series (``steps`` of :meth:`forward` and :meth:`counts`).

    Attributes
    ----------
    receptive_field : int
        Steps each step's features read: ``8 * max(dilations) + 1``.
    n_features : int
    """

    def __init__(
        self,
        n_channels: int,
        dilations: Sequence[int],
        n_biases: int,
        seed: int = 0,
        alignment: str = "causal",
    ) -> None:
        super().__init__()
        if alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {alignment!r}")
        self.alignment = alignment
        self.dilations = tuple(int(d) for d in dilations)
        if not self.dilations or min(self.dilations) < 1:
            raise ValueError(f"dilations must be positive integers, got {self.dilations}")
        self.n_channels, self.n_biases = int(n_channels), int(n_biases)
        self.receptive_field = (KERNEL_LENGTH - 1) * max(self.dilations) + 1
        self.n_features = N_KERNELS * len(self.dilations) * self.n_biases
        # the runs of consecutive slots of one dilation, (dilation, slots): computed at once for short
        # chunks (_GROUPED_STEPS), slot by slot for longer ones
        self._runs: list[tuple[int, slice]] = []
        for d, run in itertools.groupby(self.dilations):
            first = sum(g.stop - g.start for _, g in self._runs)
            self._runs.append((d, slice(first, first + len(list(run)))))
        self._slots = [(d, slice(i, i + 1)) for i, d in enumerate(self.dilations)]
        weights = np.full((N_KERNELS, 1, KERNEL_LENGTH), -1.0, dtype=np.float32)
        for k, taps in enumerate(_TAPS):
            weights[k, 0, taps] = 2.0
        rng = np.random.default_rng(seed)
        channels = np.zeros((len(self.dilations), N_KERNELS, self.n_channels), dtype=np.float32)
        for i, k in itertools.product(range(len(self.dilations)), range(N_KERNELS)):
            count = min(self.n_channels, int(2.0 ** rng.uniform(0.0, np.log2(self.n_channels + 1))))
            channels[i, k, rng.choice(self.n_channels, max(count, 1), replace=False)] = 1.0
        self.register_buffer("weights", torch.from_numpy(weights))
        # the kernels cut short after their tap 4 + m (m = 0, ..., 3), right-aligned in 8 taps: a
        # response of truncation m ending at step s reads s - (4 + m) d, ..., s ("centred")
        truncated = np.zeros((_HALF, N_KERNELS, 1, KERNEL_LENGTH - 1), dtype=np.float32)
        for m in range(_HALF):
            truncated[m, :, 0, _HALF - 1 - m :] = weights[:, 0, : _HALF + 1 + m]
        self.register_buffer("truncated", torch.from_numpy(truncated).flatten(0, 1), persistent=False)
        self.register_buffer("channels", torch.from_numpy(channels))
        self.register_buffer("biases", torch.zeros(len(self.dilations), N_KERNELS, self.n_biases))

    def _groups(self, n: int) -> list[tuple[int, slice]]:
        """The groups of slots computed together for a chunk of ``n`` steps, ``(dilation, slots)``:
        each run of slots of one dilation where ``n <= _GROUPED_STEPS`` (a stream's steps: fewer
        and larger operations), else each slot (a chunk's tensors of one slot stay in cache). The
        timings behind this are in :doc:`/design_notes/classifier_kernel_pooling`."""
        return self._runs if n <= _GROUPED_STEPS else self._slots

    def responses(self, window: torch.Tensor, groups: list[tuple[int, slice]]) -> list[torch.Tensor]:
        """Kernel responses at the last ``n`` steps of ``window`` ``(B, receptive_field - 1 + n, C)``:
        one ``(B, S, N_KERNELS, n)`` tensor per group of ``S`` slots of one dilation."""
        x = window.transpose(1, 2)  # (B, C, L)
        batch, c, length = x.shape
        n = length - (self.receptive_field - 1)
        out, conv, previous = [], None, None
        for d, slots in groups:
            if d != previous:  # (a dilation's slots share its convolution)
                part = x[..., length - n - (KERNEL_LENGTH - 1) * d :].reshape(batch * c, 1, -1)
                conv = nn.functional.conv1d(part, self.weights.to(x.dtype), dilation=d)  # (B*C, K, n)
                conv, previous = conv.reshape(batch, c, N_KERNELS, n), d
            out.append(_mix_channels(conv, self.channels[slots].to(x.dtype)))
        return out

    def _cut_responses(
        self, window: torch.Tensor, n: int, groups: list[tuple[int, slice]]
    ) -> list[tuple[torch.Tensor, int]]:
        """The cut kernels' responses (``"centred"``; truncation ``m`` keeps taps ``0, ..., 4 + m``)
        ending at the ``n`` steps ``d`` before the last ``n`` of ``window`` ``(B, receptive_field -
        1 + n, C)`` and at those last ``n``: per group of ``S`` slots of one dilation, ``(cut,
        lag)`` with ``cut`` ``(B, S, 4, N_KERNELS, n + lag)``, the earlier ``cut[..., :n]``, the
        later ``cut[..., lag:]``.

        Where ``n >= d`` (chunks), the two overlap (``lag = d``): one 5-tap convolution gives the
        first truncation, and each next one adds a tap to the previous one ``d`` steps back
        (``P_m(s) = P_{m-1}(s - d) + w_{4+m} x_s``, on the channel sums). Where ``d > n`` (a
        stream's single steps), the ``2 n`` responses are convolved directly (``lag = n``)."""
        x = window.transpose(1, 2)
        batch, c, length = x.shape
        out, shared, previous = [], None, None
        for d, slots in groups:
            channels = self.channels[slots].to(x.dtype)  # (S, K, C)
            if d > n:
                if d != previous:
                    earlier, later = self._truncated(x, length - d, n, d), self._truncated(x, length, n, d)
                    shared, previous = torch.cat([earlier, later], -1), d
                out.append((_mix_channels(shared, channels), n))
                continue
            if d != previous:
                part = x[..., length - n - 2 * _HALF * d :].reshape(batch * c, 1, -1)
                first = self.weights[..., : _HALF + 1].to(x.dtype)  # (taps 0 to 4)
                shared = nn.functional.conv1d(part, first, dilation=d).reshape(batch, c, N_KERNELS, -1)
                previous = d
            level = _mix_channels(shared, channels)  # P_0 at n + 4 d steps, (B, S, K, n + 4 d)
            # each kernel's channel sum, (B, S, K, n + 4 d)
            inputs = channels @ x[:, None, :, length - n - _HALF * d :]
            cuts = [level[..., (_HALF - 1) * d : (_HALF - 1) * d + n + d]]
            for m in range(1, _HALF):
                tap = self.weights[:, 0, _HALF + m].to(x.dtype)[:, None]
                level = level[..., :-d] + tap * inputs[..., m * d :]  # P_m, from step m d of the n + 4 d
                cuts.append(level[..., (_HALF - 1 - m) * d : (_HALF - 1 - m) * d + n + d])
            out.append((torch.stack(cuts, dim=2), d))
        return out

    def _truncated(self, x: torch.Tensor, stop: int, count: int, d: int) -> torch.Tensor:
        """The cut kernels' responses ``(B, C, 4, N_KERNELS, count)`` ending at steps ``stop - count,
        ..., stop - 1`` of ``x`` ``(B, C, L)`` (which holds the ``7 d`` steps before the first)."""
        batch, c, _ = x.shape
        part = x[..., stop - count - (KERNEL_LENGTH - 2) * d : stop].reshape(batch * c, 1, -1)
        conv = nn.functional.conv1d(part, self.truncated.to(x.dtype), dilation=d)
        return conv.reshape(batch, c, _HALF, N_KERNELS, count)

    def _step_terms(self, window: torch.Tensor, steps: torch.Tensor | None) -> Iterator[torch.Tensor]:
        """Per group of ``S`` slots of one dilation (:meth:`_groups`), what each of the last ``n``
        steps of ``window`` adds to the counts, ``(B, S, N_KERNELS, n_biases, n)``: bool for
        ``"causal"`` and ``"skip_start"``, int8 for ``"centred"`` (see ``alignment``)."""
        self._check_steps(steps)
        n = window.shape[1] - (self.receptive_field - 1)
        groups = self._groups(n)
        cuts = self._cut_responses(window, n, groups) if self.alignment == "centred" else None
        for g, response in enumerate(self.responses(window, groups)):
            yield self._group_terms(groups[g], response, None if cuts is None else cuts[g], steps)

    def _check_steps(self, steps: torch.Tensor | None) -> None:
        if self.alignment != "causal" and steps is None:
            raise ValueError(f"alignment={self.alignment!r} needs each step's index in its series (steps)")

    def _group_biases(self, slots: slice, dtype: torch.dtype) -> torch.Tensor:
        """The biases of ``slots``, ``(1, S, N_KERNELS, n_biases, 1)``."""
        return self.biases[slots].to(dtype)[None, ..., None]

    def _group_terms(
        self,
        group: tuple[int, slice],
        response: torch.Tensor,
        cut: tuple[torch.Tensor, int] | None,
        steps: torch.Tensor | None,
    ) -> torch.Tensor:
        """:meth:`_step_terms` of ``group`` (its dilation and slots) from its responses ``(B, S,
        N_KERNELS, n)`` and cut responses (:meth:`_cut_responses`, ``"centred"``)."""
        d, slots = group
        bias = self._group_biases(slots, response.dtype)
        above = response[:, :, :, None, :] > bias
        if self.alignment == "causal":
            return above
        n = response.shape[-1]
        above = above & (steps >= _HALF * d)[:, None, None, None, :]
        if self.alignment == "skip_start":
            return above
        values, lag = cut
        # the cut responses that enter (ending now) and leave (ending d steps back), each truncation
        # m's centre in the series from step m d on; small whole numbers, summed in int8 (a fifth of
        # the time of summing the four truncations' bool indicators)
        terms = above.to(torch.int8)
        # (B, S, 4, K, n_biases, n + lag)
        cut_above = values.new_empty(*values.shape[:4], bias.shape[3], n + lag, dtype=torch.int8)
        torch.gt(values[..., None, :], bias[:, :, None], out=cut_above)
        for m in range(_HALF):
            entering = (steps >= m * d)[:, None, None, None, :]
            leaving = (steps >= (m + 1) * d)[:, None, None, None, :]
            terms += cut_above[:, :, m, ..., lag:] * entering
            terms -= cut_above[:, :, m, ..., :n] * leaving
        return terms

    def _centred_counts(self, window: torch.Tensor, real: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """:meth:`counts` (``"centred"``) where each row's real steps are its first ``real`` ``(B,)``.

        The cut responses' terms telescope: over a row's real steps, truncation ``m`` adds those
        ending at its last ``d`` real steps and takes back those ending at the ``d`` steps before the
        chunk, so only those ``2 d`` are compared with the biases (where ``d <= n``)."""
        n = window.shape[1] - (self.receptive_field - 1)
        groups = self._groups(n)
        cuts = self._cut_responses(window, n, groups)
        mask = torch.arange(n, device=real.device)[None] < real[:, None]
        # the step in its series of the chunk's first (a row without real steps counts 0 either way)
        first = steps[:, :1]
        counts = []
        for group, response, cut in zip(groups, self.responses(window, groups), cuts, strict=True):
            (d, slots), (values, lag) = group, cut  # values (B, S, 4, K, n + lag)
            if lag != d:
                term = self._group_terms(group, response, cut, steps)
                counts.append((term * mask[:, None, None, None, :]).sum(dim=-1).flatten(1, 3).double())
                continue
            bias = self._group_biases(slots, response.dtype)
            total = _count_above(response, bias, (steps >= _HALF * d) & mask)
            ends = real[:, None] + torch.arange(d, device=real.device)[None]  # (B, d) indices into values
            starts = torch.arange(d, device=real.device).expand_as(ends)
            same_length = bool((real == real[0]).all())  # (then a slice, not a gather, takes the ends)
            for sign, index in ((1, ends), (-1, starts)):
                if sign < 0 or same_length:
                    at = int(index[0, 0])
                    gathered = values[..., at : at + d]
                else:
                    gathered = values.gather(-1, index[:, None, None, None, :].expand(*values.shape[:4], d))
                step = first + index - d  # each gathered response's last step in its series
                for m in range(_HALF):
                    total += sign * _count_above(gathered[:, :, m], bias, step >= m * d)
            counts.append(total.flatten(1, 3).double())
        return torch.cat(counts, dim=1)

    def forward(self, window: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """What each of the last ``n`` steps of ``window`` ``(B, receptive_field - 1 + n, C)`` adds
        to the counts of responses above each bias, ``(B, n, n_features)`` in the window's dtype:
        0/1 indicators, or with ``alignment="centred"`` small signed counts whose running sum is the
        count. ``steps`` ``(B, n)``, the 0-based index of each of those steps in its series, is
        needed unless ``alignment="causal"``."""
        feats = [terms.flatten(1, 3) for terms in self._step_terms(window, steps)]  # (B, S * K * n_biases, n)
        return torch.cat(feats, dim=1).transpose(1, 2).to(window.dtype)

    def counts(
        self, window: torch.Tensor, mask: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The sums of :meth:`forward`'s terms over the last ``n`` steps of ``window`` ``(B,
        receptive_field - 1 + n, C)`` where ``mask`` ``(B, n)`` is True: ``(B, n_features)`` float64,
        without its ``(B, n, n_features)`` tensor (``steps`` as there)."""
        real = mask.sum(dim=1)
        n = mask.shape[1]
        if (
            self.alignment == "centred"
            and steps is not None
            and bool((mask == (torch.arange(n, device=mask.device)[None] < real[:, None])).all())
        ):
            return self._centred_counts(window, real, steps).double()
        counts = [
            (term * mask[:, None, None, None, :]).sum(dim=-1).flatten(1, 3)
            for term in self._step_terms(window, steps)
        ]
        return torch.cat(counts, dim=1).double()

    def prefix_counts(self, window: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        """The counts of :meth:`counts` after each of several prefixes at once: ``window`` ``(B,
        receptive_field - 1 + n, C)`` holds series from their first step on (the ``receptive_field -
        1`` steps before it zeros), ``ends`` ``(B, P)`` how many of their steps each prefix holds (1
        to ``n``, none past a series' end); ``(B, P, n_features)`` in the window's dtype, the
        running sums of :meth:`forward`'s terms after those steps.

        With ``alignment="centred"`` the cut responses' terms telescope as in :meth:`counts`: a
        prefix counts the whole responses up to its end and the cut ones ending at its last ``d``
        steps, each a matrix product of the indicators with the prefixes' steps (a fifth of the time
        of summing :meth:`forward`'s terms step by step on UWaveGestureLibrary's training series)."""
        n = window.shape[1] - (self.receptive_field - 1)
        steps = torch.arange(n, device=window.device).expand(len(window), n)
        if self.alignment != "centred" or max(self.dilations) > n:
            # (another alignment, or a chunk shorter than a dilation, where the cut responses that
            # enter and leave do not overlap: the running sums of the terms)
            sums = self(window, steps).cumsum(dim=1)  # (B, n, F)
            return sums.gather(1, (ends - 1)[..., None].expand(*ends.shape, sums.shape[2]))
        groups = self._groups(n)
        cuts = self._cut_responses(window, n, groups)  # (each lag is its dilation: d <= n)
        at = torch.arange(n, device=window.device)[None, :, None]  # (1, n, 1)
        before = at < ends[:, None, :]  # (B, n, P): the steps each prefix holds
        counts = []
        responses = self.responses(window, groups)
        for (d, slots), response, (values, lag) in zip(groups, responses, cuts, strict=True):
            bias = self._group_biases(slots, response.dtype)
            total = _count_above(response, bias, before & (at >= _HALF * d))
            last = before & (at >= ends[:, None, :] - d)  # (its last d steps)
            for m in range(_HALF):
                total += _count_above(values[:, :, m, :, lag:], bias, last & (at >= m * d))
            counts.append(total.flatten(1, 3))  # (B, S * K * n_biases, P)
        return torch.cat(counts, dim=1).transpose(1, 2)

    @torch.no_grad()
    def fit_biases(self, x: torch.Tensor, lengths: torch.Tensor, generator: torch.Generator) -> None:
        """Set the biases from training series ``x`` ``(N, T, C)`` (standardised, ``lengths`` real
        steps each): for every kernel and slot, quantiles of its responses on one random series, at
        the fractional parts of multiples of the golden ratio (spread evenly over ``(0, 1)``; the
        ``j``-th slot of a dilation takes the ``j``-th run of ``n_biases`` multiples)."""
        quantiles = []
        for i, d in enumerate(self.dilations):
            first = self.dilations[:i].count(d) * self.n_biases  # (the slots of d before this one)
            terms = np.arange(first + 1, first + self.n_biases + 1)
            quantiles.append(torch.tensor((terms * _GOLDEN) % 1.0, dtype=torch.float32))
        pad = torch.zeros(1, self.receptive_field - 1, x.shape[2], dtype=x.dtype, device=x.device)
        picks = torch.randint(len(x), (len(self.dilations), N_KERNELS), generator=generator)
        for row in picks.unique().tolist():
            series = torch.cat([pad, x[row : row + 1, : max(int(lengths[row]), 1)]], dim=1)
            groups = self._groups(series.shape[1] - (self.receptive_field - 1))
            for (_, slots), response in zip(groups, self.responses(series, groups), strict=True):
                for j, i in enumerate(range(slots.start, slots.stop)):
                    kernels = (picks[i] == row).nonzero().flatten()
                    if len(kernels):
                        values = response[0, j, kernels].float()  # (k, n)
                        at = quantiles[i].to(values.device)
                        self.biases[i, kernels] = torch.quantile(values, at, dim=1).T
