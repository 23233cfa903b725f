"""The classifier standardises in float64: a large offset shared by the data and the training mean
cancels before the networks (float32) see the values."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from aaren_ts import AarenClassifier
from tests._params import TINY_NETWORK

OFFSET = 1e8  # float32 resolves 8 at this magnitude: (X + 1e8) in float32 loses the data's detail


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.arange(16) % 2
    X = rng.normal(size=(16, 2, 20)) + np.linspace(0, 2, 20) * y[:, None, None]
    return X, y


@pytest.fixture(scope="module")
def fitted(data) -> AarenClassifier:
    X, y = data
    return AarenClassifier(**TINY_NETWORK, max_epochs=2, n_random_features=840).fit(X, y)


def test_statistics_are_float64(fitted) -> None:
    assert fitted.channel_mean_.dtype == np.float64
    assert fitted.channel_scale_.dtype == np.float64


def test_an_offset_in_data_and_mean_leaves_the_probabilities(fitted, data) -> None:
    X, _ = data
    shifted = copy.deepcopy(fitted)
    shifted.channel_mean_ = fitted.channel_mean_ + OFFSET  # the same network, its mean moved
    expected = fitted.predict_proba(X)
    moved = shifted.predict_proba(X + OFFSET)
    np.testing.assert_allclose(moved, expected, atol=1e-6)
    # ... and the offset really is beyond float32's resolution of the data
    in_float32 = (X + OFFSET).astype(np.float32).astype(np.float64) - OFFSET
    assert np.abs(in_float32 - X).max() > 0.5


def test_an_offset_in_streamed_data_leaves_the_probabilities(fitted, data) -> None:
    X, _ = data
    shifted = copy.deepcopy(fitted)
    shifted.channel_mean_ = fitted.channel_mean_ + OFFSET
    reference = copy.deepcopy(fitted)
    expected = reference.partial_update(X[:, :, :7]).predict_proba()
    moved = shifted.partial_update(X[:, :, :7] + OFFSET).predict_proba()
    np.testing.assert_allclose(moved, expected, atol=1e-6)
