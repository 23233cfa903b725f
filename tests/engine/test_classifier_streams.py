"""The classifier's streams with the random kernels: restored as they were, refused when corrupted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts.engine import ClassifierStreams
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.rocket import ALIGNMENTS


def _streams(alignment: str = "causal") -> ClassifierStreams:
    torch.manual_seed(0)
    kernels = {
        "dilations": (1, 2),
        "n_biases": 1,
        "seed": 0,
        "alignment": alignment,
        "prefix_lengths": (3, 6),
    }
    module = ClassifierModule(2, 3, EncoderConfig("aaren", 8, 2, 1, 16), random_kernels=kernels)
    with torch.no_grad():
        module.set_kernel_head(torch.randn(2, 3, module.kernels.n_features), torch.randn(2, 3), 2.0)
    return ClassifierStreams(module, "cpu")


def test_restored_streams_continue_as_the_originals() -> None:
    streams = _streams()
    values = np.random.default_rng(0).normal(size=(4, 9, 2)).astype(np.float32)
    streams.advance(values[:, :5], np.full(4, 5))
    copy = _streams()
    copy.restore(streams.tensors(), 4)
    streams.advance(values[:, 5:], np.full(4, 4))
    copy.advance(values[:, 5:], np.full(4, 4))
    np.testing.assert_array_equal(copy.predict_proba(), streams.predict_proba())


def test_non_finite_kernel_scores_are_refused_and_change_nothing() -> None:
    streams = _streams()
    streams.advance(np.ones((2, 4, 2), dtype=np.float32), np.full(2, 4))
    tensors = [t.clone() for t in streams.tensors()]
    tensors[-1][0, 0] = float("nan")  # the kernel scores are the state's last tensor
    other = _streams()
    with pytest.raises(ValueError, match="kernel scores"):
        other.restore(tensors, 2)
    assert len(other) == 0


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_the_heads_factor_and_weight_of_each_prefix_length_apply_in_streams_and_batch_alike(
    alignment: str,
) -> None:
    streams = _streams(alignment)
    module = streams.module.eval()
    # prefix lengths 3 and 6: the first map serves until step 6
    module.set_head_gains([0.3, 1.0], [0.2, 0.9])
    values = np.random.default_rng(1).normal(size=(4, 9, 2)).astype(np.float32)
    x = torch.as_tensor(values)
    with torch.no_grad():
        z, _ = module.encode(x, torch.ones(4, 9, dtype=torch.bool))
        linear = module.head[1]
        own = z[..., : module.d_model].double() @ linear.weight.double().T + linear.bias.double()
        kernels = z[..., module.d_model : module.d_model + 3].double()  # (their factor applied)
    for step in range(9):
        factor, weight = (0.3, 0.2) if step + 1 < 6 else (1.0, 0.9)
        assert z[0, step, -2] == pytest.approx(factor) and z[0, step, -1] == pytest.approx(weight)
        network = torch.softmax(factor * own[:, step], -1)
        expected = weight * network + (1 - weight) * torch.softmax(kernels[:, step], -1)
        streams.advance(values[:, step : step + 1], np.ones(4, dtype=np.int64))
        np.testing.assert_allclose(streams.predict_proba(), expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_chunks_of_unequal_lengths_give_the_answer_of_the_whole_series(alignment: str) -> None:
    # each stream's steps arrive in chunks of its own lengths: the kernels must count every step at
    # its index in its own series (the alignments other than causal depend on it)
    values = np.random.default_rng(2).normal(size=(3, 12, 2)).astype(np.float32)
    whole = _streams(alignment)
    whole.advance(values, np.full(3, 12))
    chunked = _streams(alignment)
    done = np.zeros(3, dtype=np.int64)
    for lengths in ([1, 5, 0], [4, 2, 7], [7, 5, 5]):
        n = max(lengths)
        chunk = np.zeros((3, n, 2), dtype=np.float32)
        for i, k in enumerate(lengths):
            chunk[i, :k] = values[i, done[i] : done[i] + k]
        chunked.advance(chunk, np.array(lengths))
        done += lengths
    np.testing.assert_allclose(chunked.predict_proba(), whole.predict_proba(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("block_values", [1, 100, 2_000])
def test_the_kernels_blocks_of_series_and_steps_change_no_answer(
    alignment: str, block_values: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # blocks of a few steps of one series, of whole series a few at a time, and one block
    module = _streams(alignment).module.eval()
    values = torch.as_tensor(np.random.default_rng(3).normal(size=(5, 11, 2)).astype(np.float32))
    mask = torch.arange(11)[None] < torch.tensor([11, 4, 9, 1, 11])[:, None]
    with torch.no_grad():
        every_step, after = module.encode(values, mask)
        _, counted = module.encode(values, mask, every_step=False)
        monkeypatch.setattr("aaren_ts.nn.classify._KERNEL_BLOCK_VALUES", block_values)
        blocked_every_step, blocked_after = module.encode(values, mask)
        _, blocked_counted = module.encode(values, mask, every_step=False)
    np.testing.assert_allclose(blocked_every_step.numpy(), every_step.numpy(), rtol=1e-12, atol=1e-12)
    for state in (blocked_after, blocked_counted):
        np.testing.assert_allclose(state.kernel_scores.numpy(), after.kernel_scores.numpy(), rtol=1e-12)
    np.testing.assert_allclose(counted.kernel_scores.numpy(), after.kernel_scores.numpy(), rtol=1e-12)
