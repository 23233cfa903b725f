"""The dilated causal stem: shapes, causality, and streams equal to the whole series through it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.config import EncoderConfig
from aaren_ts.nn.stem import DilatedStem


def test_shape_and_receptive_field():
    stem = DilatedStem(3, 16, kernel_size=5, dilations=(1, 4, 8))
    assert stem.receptive_field == 4 * 8 + 1
    out = stem(torch.randn(2, 3, 50))
    assert out.shape == (2, 16, 50 - stem.receptive_field + 1)


def test_outputs_depend_on_the_receptive_field_only():
    torch.manual_seed(0)
    stem = DilatedStem(2, 8, kernel_size=3, dilations=(1, 2, 4))
    x = torch.randn(1, 2, 40)
    y = stem(x)
    x2 = x.clone()
    x2[..., 30:] += 5.0  # the future of output 30 - receptive_field + 1
    first_changed = 30 - stem.receptive_field + 1
    assert torch.equal(stem(x2)[..., :first_changed], y[..., :first_changed])
    x3 = x.clone()
    x3[..., 0] += 5.0  # only the first window sees input 0
    assert torch.equal(stem(x3)[..., 1:], y[..., 1:])


def test_bad_dilations():
    for bad in ((), (0, 1), (2, 2)):
        with pytest.raises(ValueError, match="dilations"):
            DilatedStem(1, 4, 3, bad)


def test_module_chunks_equal_the_whole_sequence():
    torch.manual_seed(1)
    module = ClassifierModule(
        2, 3, EncoderConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16), kernel_size=3, dilations=(1, 2, 8)
    ).eval()
    x = torch.randn(2, 30, 2)
    mask = torch.ones(2, 30, dtype=torch.bool)
    with torch.no_grad():
        z, _ = module.encode(x, mask)
        state = None
        parts = []
        for a, b in ((0, 1), (1, 7), (7, 8), (8, 30)):
            zz, state = module.encode(x[:, a:b], mask[:, a:b], state)
            parts.append(zz)
    torch.testing.assert_close(torch.cat(parts, dim=1), z, rtol=1e-5, atol=1e-6)
    assert state.context.shape == (2, module.receptive_field - 1, 2)


def test_classifier_with_dilations_streams_exactly():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2, 25)).astype(np.float32)
    y = np.arange(12) % 2
    clf = AarenClassifier(
        d_model=8,
        n_heads=2,
        n_layers=1,
        d_ff=16,
        kernel_size=3,
        dilations=(1, 2, 4),
        max_epochs=2,
        random_state=0,
    ).fit(X, y)
    whole = clf.predict_proba(X)
    clf.partial_update(X[:, :, :4])
    for t in range(4, 25):
        clf.partial_update(X[:, :, t : t + 1])
    np.testing.assert_allclose(clf.predict_proba(), whole, atol=1e-5)


def test_classifier_rejects_bad_dilations():
    X = np.zeros((4, 1, 10), dtype=np.float32)
    for bad in ((), (0,), (2, 2), "1,2", (1.5,)):
        with pytest.raises(ValueError, match="dilations"):
            AarenClassifier(dilations=bad, max_epochs=1).fit(X, [0, 1, 0, 1])
