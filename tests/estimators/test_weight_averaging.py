"""The mean of the best epochs' weights (BestEpochsAverage), with which the forecaster's networks end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from skorch import NeuralNetRegressor
from skorch.callbacks import Callback
from skorch.dataset import ValidSplit

from aaren_ts import AarenForecaster
from aaren_ts.estimators._weight_averaging import AVERAGED_BEST_EPOCHS, BestEpochsAverage
from tests._params import TINY_NETWORK


class RecordEpochs(Callback):
    """Keeps every epoch's validation loss (if any) and a copy of the weights after it."""

    def initialize(self):
        self.epochs = []
        return self

    def on_epoch_end(self, net, **kwargs):
        loss = net.history[-1].get("valid_loss")
        weights = {name: t.detach().clone() for name, t in net.module_.state_dict().items()}
        self.epochs.append((loss, weights))


def _mean_of_best(epochs, k):
    best = sorted(range(len(epochs)), key=lambda i: (epochs[i][0], i))[:k]
    return {
        name: torch.stack([epochs[i][1][name].double() for i in best]).mean(0).to(t.dtype)
        for name, t in epochs[0][1].items()
    }


def _regression(n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype("float32")
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.normal(0, 0.5, n)).astype("float32")[:, None]
    return X, y


def _net(train_split, k, recorder):
    torch.manual_seed(0)
    return NeuralNetRegressor(
        torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)),
        max_epochs=8,
        lr=0.05,
        batch_size=16,
        train_split=train_split,
        callbacks=[("average", BestEpochsAverage(k)), ("record", recorder)],
        verbose=0,
    )


@pytest.mark.parametrize("k", [2, 3, 20])
def test_weights_are_the_mean_of_the_best_epochs(k):
    X, y = _regression()
    net = _net(ValidSplit(4), k, RecordEpochs()).fit(X, y)
    epochs = dict(net.callbacks_)["record"].epochs
    expected = _mean_of_best(epochs, k)  # k beyond the epochs run: all of them
    for name, value in net.module_.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=0, atol=1e-7)
    last = epochs[-1][1]
    assert any(not torch.equal(net.module_.state_dict()[n], last[n]) for n in last)
    assert dict(net.callbacks_)["average"].best_ == []  # no weights left behind in the net


@pytest.mark.parametrize(("train_split", "k"), [(None, 3), (ValidSplit(4), 1)])
def test_without_validation_or_with_one_epoch_the_last_weights_stay(train_split, k):
    X, y = _regression()
    net = _net(train_split, k, RecordEpochs()).fit(X, y)
    last = dict(net.callbacks_)["record"].epochs[-1][1]
    for name, value in net.module_.state_dict().items():
        assert torch.equal(value, last[name])


def _series(n: int = 160) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = np.arange(n)
    values = 10 + 3 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.3, n)
    return pd.DataFrame({"y": values}, index=pd.date_range("2021-01-01", periods=n, freq="h"))


TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,  # one network (the ensemble's own tests: test_forecaster_ensemble.py)
    "context_length": 12,
    "max_epochs": 6,
    "patience": 6,
    "horizon": 3,
    "target_transform": None,
    "sp": 1,  # (the last value, which the network beats on a sine, so it keeps its weights)
}


def test_forecaster_ends_with_the_mean_of_its_best_epochs():
    f = AarenForecaster(**TINY, callbacks=[("record", RecordEpochs())]).fit(_series())
    epochs = dict(f.net_.callbacks_)["record"].epochs
    assert len(epochs) == TINY["max_epochs"] and all(loss is not None for loss, _ in epochs)
    expected = _mean_of_best(epochs, AVERAGED_BEST_EPOCHS)
    for name, value in f.net_.module_.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=0, atol=1e-6)
    best_alone = _mean_of_best(epochs, 1)
    assert any(
        not torch.equal(value, best_alone[name]) for name, value in f.net_.module_.state_dict().items()
    )
