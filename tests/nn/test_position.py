"""The step's position in the classifier network: its waves, streams equal to whole series through
it, and what it tells the encoder (the order of a series' steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts.nn.classify import ClassifierModule, position_periods
from aaren_ts.nn.config import EncoderConfig

CONFIG = EncoderConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0)


def test_periods_halve_from_twice_the_length():
    assert position_periods(50, 4) == (100.0, 50.0, 25.0, 12.5)
    assert position_periods(0.5, 2) == (2.0, 1.0)  # (a length under one step counts as one)
    assert position_periods(50, 0) is None


@pytest.mark.parametrize("bad", [(), (0.0, 4.0), (-1.0,), ((1.0, 2.0),)])
def test_module_rejects_bad_periods(bad):
    with pytest.raises(ValueError, match="position_periods"):
        ClassifierModule(2, 3, CONFIG, position_periods=bad)


def test_embedding_is_the_linear_map_of_the_sines_and_cosines():
    torch.manual_seed(0)
    module = ClassifierModule(2, 3, CONFIG, position_periods=(40.0, 7.0))
    steps = torch.tensor([[0, 1, 39], [1000, 123456, 5]])
    angles = [[[2 * math.pi * int(t) / p for p in (40.0, 7.0)] for t in row] for row in steps]
    waves = torch.tensor([[[*map(math.sin, a), *map(math.cos, a)] for a in row] for row in angles])
    expected = waves.float() @ module.position.weight.T + module.position.bias
    torch.testing.assert_close(module.position_embedding(steps), expected)
    assert ClassifierModule(2, 3, CONFIG).position_embedding(steps) == 0.0


def test_chunks_and_padding_equal_the_whole_series():
    torch.manual_seed(1)
    module = ClassifierModule(2, 3, CONFIG, position_periods=position_periods(30, 6)).eval()
    x = torch.randn(3, 30, 2)
    lengths = torch.tensor([30, 17, 9])
    mask = torch.arange(30)[None] < lengths[:, None]
    with torch.no_grad():
        whole = torch.stack([module(x[i : i + 1, : int(n)], n[None])[0] for i, n in enumerate(lengths)])
        padded = module(x, lengths)  # the batch, padded to 30 steps
        state, parts = None, []
        for a, b in ((0, 1), (1, 7), (7, 8), (8, 30)):
            z, state = module.encode(x[:, a:b], mask[:, a:b], state)
            parts.append(z)
        streamed = module.logits(module.current_features(state))
    torch.testing.assert_close(padded, whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(streamed, whole, rtol=1e-5, atol=1e-6)
    z, _ = module.encode(x, mask)
    torch.testing.assert_close(torch.cat(parts, dim=1)[mask], z[mask], rtol=1e-5, atol=1e-6)


def test_the_position_tells_the_order_of_the_steps():
    # one layer read at the last step, each step embedded alone: without the position, the class
    # scores after a series do not depend on the order of the steps before the last (Aaren's query
    # weighs a prefix's steps by their contents alone)
    torch.manual_seed(2)
    x = torch.randn(1, 20, 2)
    shuffled = torch.cat([x[:, torch.randperm(19)], x[:, 19:]], dim=1)
    lengths = torch.tensor([20])
    for periods, same in ((None, True), (position_periods(20, 4), False)):
        module = ClassifierModule(2, 3, CONFIG, readout="last", kernel_size=1, position_periods=periods)
        with torch.no_grad():
            apart = (module.eval()(x, lengths) - module(shuffled, lengths)).abs().max().item()
        assert (apart < 1e-5) == same, (periods, apart)


def test_classifier_position_parameter():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(2, n)).astype(np.float32) for n in (20, 24, 30, 18, 26, 22)]
    y = np.arange(6) % 2
    small = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 1, "n_estimators": 1}
    # "auto": the position for the network alone, none beside the random kernels
    alone = AarenClassifier(**small, n_random_features=0, random_state=0).fit(X, y)
    assert alone.position_periods_ == position_periods(23.0, 8)  # (from the median length)
    assert alone.module_.position is not None
    beside = AarenClassifier(**small, n_random_features=200, random_state=0).fit(X, y)
    assert beside.position_periods_ is None and beside.module_.position is None
    both = AarenClassifier(**small, n_random_features=200, position_frequencies=3, random_state=0).fit(X, y)
    assert both.position_periods_ == position_periods(23.0, 3) and both.module_.position is not None
    off = AarenClassifier(**small, n_random_features=0, position_frequencies=0, random_state=0).fit(X, y)
    assert off.position_periods_ is None and off.module_.position is None
    for bad in (-1, "on", 2.5):
        with pytest.raises(ValueError, match="position_frequencies"):
            AarenClassifier(**small, position_frequencies=bad).fit(X, y)


def test_classifier_with_the_position_streams_saves_and_loads(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2, 25)).astype(np.float32)
    y = np.arange(12) % 2
    small = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 2, "n_estimators": 2}
    clf = AarenClassifier(**small, n_random_features=300, position_frequencies=4, random_state=0).fit(X, y)
    whole = clf.predict_proba(X)
    clf.partial_update(X[:, :, :3])
    for t in range(3, 25):
        clf.partial_update(X[:, :, t : t + 1])
    np.testing.assert_allclose(clf.predict_proba(), whole, atol=1e-5)
    clf.reset_stream().partial_update(X[:, :, :10])
    loaded = AarenClassifier.load(clf.save(tmp_path / "model"))
    assert loaded.position_periods_ == clf.position_periods_ == position_periods(25.0, 4)
    np.testing.assert_array_equal(loaded.predict_proba(X), whole)
    loaded.partial_update(X[:, :, 10:])  # (the stream goes on where it was saved: steps 10 to 24)
    np.testing.assert_allclose(loaded.predict_proba(), whole, atol=1e-5)
