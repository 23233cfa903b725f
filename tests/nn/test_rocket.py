"""The causal random kernels: what each step's features read, and their fitted thresholds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts.nn.rocket import N_KERNELS, RandomKernelFeatures, default_dilations


def _features(n_channels: int = 3) -> RandomKernelFeatures:
    return RandomKernelFeatures(n_channels, dilations=(1, 2, 5), n_biases=2, seed=0)


def test_dilations_fill_minirockets_slots_up_to_an_eighth_of_the_length() -> None:
    slots = default_dilations(315)
    assert len(slots) == 32 and slots == tuple(sorted(slots))
    assert slots[0] == 1 and slots[-1] == 39  # (315 - 1) / 8 = 39.25
    assert slots.count(1) == 6 and slots.count(2) == 4 and slots.count(39) == 1  # short ones repeat
    assert default_dilations(5) == (1,) * 32
    assert default_dilations(315, n_dilations=4) == (1, 3, 11, 39)  # 2 ** (k * log2(39.25) / 3)


def test_each_step_reads_only_its_receptive_field() -> None:
    features = _features()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 60, 3, generator=gen)
    features.fit_biases(x, torch.tensor([60, 40]), gen)
    window = torch.cat([torch.zeros(2, features.receptive_field - 1, 3), x], dim=1)
    whole = features(window)  # (2, 60, F)
    assert whole.shape == (2, 60, N_KERNELS * 3 * 2)
    r = features.receptive_field
    for t in (0, 17, 59):  # one step from exactly its window
        np.testing.assert_array_equal(features(window[:, t : t + r]).numpy()[:, 0], whole[:, t].numpy())
    changed = window.clone()
    changed[:, 30 + r - 1] += 100.0  # step 30 changes: no earlier step's features may
    after = features(changed)
    np.testing.assert_array_equal(after[:, :30].numpy(), whole[:, :30].numpy())
    assert not torch.equal(after[:, 30], whole[:, 30])


def test_thresholds_split_training_responses_at_spread_quantiles() -> None:
    features = RandomKernelFeatures(1, dilations=(1,), n_biases=4, seed=0)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, 200, 1, generator=gen)
    features.fit_biases(x, torch.full((5,), 200), gen)
    window = torch.cat([torch.zeros(5, features.receptive_field - 1, 1), x], dim=1)
    share = features(window).mean(dim=(0, 1)).reshape(N_KERNELS, 4)  # above each threshold
    golden = (np.arange(1, 5) * (np.sqrt(5) + 1) / 2) % 1
    # a threshold at quantile q of one series' responses leaves about 1 - q of all responses above it
    np.testing.assert_allclose(share.mean(dim=0).numpy(), 1 - golden, atol=0.08)


def _reference_indicators(features: RandomKernelFeatures, x: np.ndarray) -> np.ndarray:
    """Each step's indicators, written out in float64 from the kernels' definition: ``(N, T,
    n_features)`` for series ``x`` ``(N, T, C)`` with zeros before their start."""
    n, t_max, c = x.shape
    weights = features.weights.double().numpy()[:, 0]  # (K, 9)
    out = np.zeros((n, t_max, N_KERNELS * len(features.dilations) * features.n_biases))
    column = 0
    for i, d in enumerate(features.dilations):
        channels = features.channels[i].double().numpy()  # (K, C)
        biases = features.biases[i].double().numpy()  # (K, n_biases)
        padded = np.concatenate([np.zeros((n, 8 * d, c)), x], axis=1)
        for k in range(N_KERNELS):
            for t in range(t_max):
                taps = padded[:, t : t + 8 * d + 1 : d]  # (N, 9, C): steps t - 8d, ..., t
                response = np.einsum("nlc,l,c->n", taps, weights[k], channels[k])
                out[:, t, column : column + features.n_biases] = response[:, None] > biases[k][None]
            column += features.n_biases
    return out


def test_indicators_and_counts_match_the_kernels_written_out() -> None:
    # (a repeated dilation: its slots are computed together, each with its own channels and biases)
    features = RandomKernelFeatures(2, dilations=(1, 1, 3), n_biases=2, seed=3)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 40, 2, generator=gen)
    features.fit_biases(x, torch.tensor([40, 40, 40]), gen)
    window = torch.cat([torch.zeros(3, features.receptive_field - 1, 2), x], dim=1)
    expected = _reference_indicators(features, x.double().numpy())
    mismatch = features(window).double().numpy() != expected
    assert mismatch.mean() < 1e-3  # a float32 response within rounding of a bias may fall either side
    mask = torch.arange(40)[None] < torch.tensor([40, 25, 1])[:, None]  # masked steps do not count
    counted = features.counts(window, mask).numpy()
    np.testing.assert_array_equal(counted, (features(window) * mask[..., None]).double().sum(dim=1).numpy())
    assert counted[2].max() <= 1 and counted[1].max() <= 25


def test_skip_start_counts_a_slot_from_step_4d_of_each_series() -> None:
    causal = RandomKernelFeatures(2, dilations=(1, 3), n_biases=2, seed=3)
    skipping = RandomKernelFeatures(2, dilations=(1, 3), n_biases=2, seed=3, alignment="skip_start")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 20, 2, generator=gen)
    causal.fit_biases(x, torch.tensor([20, 20]), gen)
    skipping.load_state_dict(causal.state_dict())
    window = torch.cat([torch.zeros(2, causal.receptive_field - 1, 2), x], dim=1)
    # the second series' window starts at its step 6: its dilation-3 slot counts from the next step on
    steps = torch.stack([torch.arange(20), torch.arange(20) + 6])
    expected = causal(window).clone()
    per_slot = N_KERNELS * causal.n_biases
    expected[0, :4, :per_slot] = 0.0
    expected[0, :12, per_slot:] = 0.0
    expected[1, :6, per_slot:] = 0.0
    assert expected.sum() > 0
    np.testing.assert_array_equal(skipping(window, steps).numpy(), expected.numpy())
    mask = torch.ones(2, 20, dtype=torch.bool)
    np.testing.assert_array_equal(
        skipping.counts(window, mask, steps).numpy(), expected.double().sum(dim=1).numpy()
    )
    with pytest.raises(ValueError, match="steps"):
        skipping(window)


def _reference_centred_counts(features: RandomKernelFeatures, x: np.ndarray) -> np.ndarray:
    """After each step ``t``, how many responses centred on steps ``0, ..., t`` (zeros before the
    start and after ``t``) lie above each bias, written out in float64: ``(N, T, n_features)``."""
    n, t_max, c = x.shape
    weights = features.weights.double().numpy()[:, 0]
    out = np.zeros((n, t_max, features.n_features))
    column = 0
    for i, d in enumerate(features.dilations):
        channels = features.channels[i].double().numpy()
        biases = features.biases[i].double().numpy()
        for t in range(t_max):
            prefix = np.concatenate([np.zeros((n, 4 * d, c)), x[:, : t + 1], np.zeros((n, 4 * d, c))], axis=1)
            taps = np.stack([prefix[:, centre : centre + 8 * d + 1 : d] for centre in range(t + 1)], axis=1)
            responses = np.einsum("nslc,kl,kc->nks", taps, weights, channels)  # (N, K, t + 1)
            above = (responses[:, :, None, :] > biases[None, :, :, None]).sum(axis=-1)  # (N, K, n_biases)
            out[:, t, column : column + N_KERNELS * features.n_biases] = above.reshape(n, -1)
        column += N_KERNELS * features.n_biases
    return out


def test_centred_counts_are_minirockets_pooling_of_every_prefix() -> None:
    # series of 10 steps: dilation 3's kernels span 25, so its last 4 d = 12 centres are always cut
    features = RandomKernelFeatures(2, dilations=(1, 3, 3), n_biases=3, seed=5, alignment="centred")
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 10, 2, generator=gen, dtype=torch.float64)
    features.fit_biases(x.float(), torch.tensor([10, 10, 10]), gen)
    window = torch.cat([x.new_zeros(3, features.receptive_field - 1, 2), x], dim=1)
    terms = features(window, torch.arange(10).expand(3, 10))
    assert terms.min() < 0  # (cut responses that leave are taken back)
    expected = _reference_centred_counts(features, x.numpy())
    np.testing.assert_array_equal(terms.cumsum(dim=1).numpy(), expected)
    mask = torch.arange(10)[None] < torch.tensor([10, 7, 2])[:, None]
    counted = features.counts(window, mask, torch.arange(10).expand(3, 10)).numpy()
    np.testing.assert_array_equal(counted, expected[[0, 1, 2], [9, 6, 1]])
    gaps = mask.clone()
    gaps[0, 3] = False  # not a run from the first step: every step's terms are summed instead
    summed = (terms * gaps[..., None]).sum(dim=1).numpy()
    steps = torch.arange(10).expand(3, 10)
    np.testing.assert_array_equal(features.counts(window, gaps, steps).numpy(), summed)
    # a window that starts inside the series: the steps say where
    later = window[:, -(features.receptive_field - 1 + 6) :]  # (its steps 4 to 9)
    np.testing.assert_array_equal(features(later, steps[:, 4:]).numpy(), terms[:, 4:].numpy())
    # one step at a time (a stream's windows, where d > n): the same terms
    for t in range(10):
        one = window[:, t : t + features.receptive_field]
        one_step = features(one, torch.full((3, 1), t)).numpy()
        np.testing.assert_array_equal(one_step, terms[:, t : t + 1].numpy())
    # short chunks (a dilation's slots computed together; d <= n and d > n): the same terms and counts
    for size in (2, 3, 4):
        for t in range(0, 10 - size + 1, size):
            chunk = window[:, t : t + features.receptive_field - 1 + size]
            at = steps[:, t : t + size]
            np.testing.assert_array_equal(features(chunk, at).numpy(), terms[:, t : t + size].numpy())
            full = torch.ones(3, size, dtype=torch.bool)
            expected_counts = terms[:, t : t + size].double().sum(dim=1).numpy()
            np.testing.assert_array_equal(features.counts(chunk, full, at).numpy(), expected_counts)


def test_prefix_counts_are_the_counts_after_each_prefix_at_once() -> None:
    features = RandomKernelFeatures(2, dilations=(1, 3, 3), n_biases=3, seed=5, alignment="centred")
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(3, 12, 2, generator=gen, dtype=torch.float64)
    features.fit_biases(x.float(), torch.tensor([12, 12, 12]), gen)
    expected = _reference_centred_counts(features, x.numpy())  # (3, 12, F)
    # prefixes of each series, unsorted, repeated and ending at its first and last steps
    ends = torch.tensor([[12, 1, 5, 5, 9], [3, 4, 2, 1, 12], [7, 11, 6, 8, 10]])
    window = torch.cat([x.new_zeros(3, features.receptive_field - 1, 2), x], dim=1)
    counted = features.prefix_counts(window, ends)
    assert counted.dtype == torch.float64 and counted.shape == (3, 5, features.n_features)
    np.testing.assert_array_equal(counted.numpy(), expected[np.arange(3)[:, None], ends.numpy() - 1])
    # windows shorter than a dilation (the terms summed step by step) and the causal kernels
    short = window[:, : features.receptive_field - 1 + 2]
    np.testing.assert_array_equal(
        features.prefix_counts(short, torch.tensor([[2, 1]] * 3)).numpy(), expected[:, [1, 0]]
    )
    causal = RandomKernelFeatures(2, dilations=(1, 3, 3), n_biases=3, seed=5)
    causal.load_state_dict(features.state_dict())
    running = causal(window).cumsum(dim=1)
    np.testing.assert_array_equal(
        causal.prefix_counts(window, ends).numpy(), running[torch.arange(3)[:, None], ends - 1].numpy()
    )


def test_a_repeated_dilation_takes_the_next_quantiles_in_each_slot() -> None:
    features = RandomKernelFeatures(1, dilations=(1, 1), n_biases=2, seed=0)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, 200, 1, generator=gen)
    features.fit_biases(x, torch.full((5,), 200), gen)
    window = torch.cat([torch.zeros(5, features.receptive_field - 1, 1), x], dim=1)
    share = features(window).mean(dim=(0, 1)).reshape(2, N_KERNELS, 2)  # (slot, kernel, threshold)
    golden = (np.arange(1, 5) * (np.sqrt(5) + 1) / 2) % 1
    np.testing.assert_allclose(share.mean(dim=1).numpy().ravel(), 1 - golden, atol=0.08)
    # the slots share the convolution, not the thresholds: every feature of each slot as computed alone
    single = RandomKernelFeatures(1, dilations=(1,), n_biases=2, seed=0)
    single.biases.copy_(features.biases[1:])
    single.channels.copy_(features.channels[1:])
    np.testing.assert_array_equal(features(window)[..., N_KERNELS * 2 :].numpy(), single(window).numpy())


def test_bad_dilations_are_refused() -> None:
    with pytest.raises(ValueError, match="positive integers"):
        RandomKernelFeatures(1, dilations=(2, 0), n_biases=1)
