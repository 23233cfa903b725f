"""AarenClassifier at the edges: a stream update with no time point at all, and values so large that
the network's float32 arithmetic would overflow."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.utils.limits import MAX_STANDARDISED

TINY = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 1, "device": "cpu"}


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2, 10)) * 20.0 + 300.0  # channels in the hundreds, scale about 20
    return X, np.arange(20) % 2


@pytest.fixture(scope="module", params=["mean", "attention"])
def fitted(request, data) -> AarenClassifier:
    X, y = data
    return AarenClassifier(**TINY, readout=request.param, random_state=0).fit(X, y)


def _tensors(clf: AarenClassifier) -> list[torch.Tensor]:
    return clf.stream_state_tensors()


def _assert_same(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize(
    "empty",
    [np.zeros((3, 2, 0)), [np.zeros((2, 0))] * 3],
    ids=["numpy3D", "list"],
)
def test_an_update_without_any_time_point_leaves_the_streams_as_they_are(fitted, data, empty):
    X, _ = data
    fitted.reset_stream().partial_update(X[:3, :, :4])
    before, proba = _tensors(fitted), fitted.predict_proba()
    fitted.partial_update(empty)
    _assert_same(_tensors(fitted), before)
    assert fitted.n_streams_ == 3
    np.testing.assert_array_equal(fitted.predict_proba(), proba)
    with pytest.raises(ValueError, match="X_new holds 2 series but 3 streams are ongoing"):
        fitted.partial_update(np.zeros((2, 2, 0)))
    fitted.partial_update(X[:3, :, 4:])  # and the streams go on as if the empty update had not been
    np.testing.assert_allclose(fitted.predict_proba(), fitted.predict_proba(X[:3]), atol=1e-5)


def test_a_first_update_without_any_time_point_starts_empty_streams(fitted, data):
    X, _ = data
    fitted.reset_stream().partial_update(np.zeros((3, 2, 0)))
    assert fitted.n_streams_ == 3
    with pytest.raises(ValueError, match=r"streams \[0, 1, 2\] have not received any time point yet"):
        fitted.predict_proba()
    fitted.partial_update(X[:3])
    np.testing.assert_allclose(fitted.predict_proba(), fitted.predict_proba(X[:3]), atol=1e-5)


@pytest.mark.parametrize("factor", [1e30, -1e20, 1e35])
def test_values_that_would_overflow_are_refused_by_every_prediction(fitted, data, factor):
    X, _ = data
    big = X[:3] * factor
    for predict in (fitted.predict_proba, fitted.predict, lambda x: next(fitted.staged_predict_proba(x))):
        with pytest.raises(
            ValueError, match=r"X: the value -?\d.*e\+\d+ \(series 0, channel 0, time point 0\)"
        ):
            predict(big)


def test_a_stream_update_that_would_overflow_is_refused_and_changes_nothing(fitted, data):
    X, _ = data
    fitted.reset_stream().partial_update(X[:3, :, :4])
    before = _tensors(fitted)
    chunk = X[:3, :, 4:].copy()
    chunk[1, 0, 2] = 1e25
    with pytest.raises(ValueError, match=r"X_new: the value 1e\+25 \(series 1, channel 0, time point 2\)"):
        fitted.partial_update(chunk)
    _assert_same(_tensors(fitted), before)
    assert np.isfinite(fitted.predict_proba()).all()


def test_the_bound_is_the_documented_number_of_standard_deviations(fitted, data):
    X, _ = data
    mean, scale = fitted.channel_mean_.astype(np.float64), fitted.channel_scale_.astype(np.float64)
    within = X[:3].copy()
    within[:, 0, 5] = mean[0] + 0.99 * MAX_STANDARDISED * scale[0]
    proba = fitted.predict_proba(within)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    beyond = within.copy()
    beyond[:, 0, 5] = mean[0] + 1.01 * MAX_STANDARDISED * scale[0]
    with pytest.raises(ValueError, match=r"takes at most 1e\+12"):
        fitted.predict_proba(beyond)
