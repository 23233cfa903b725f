"""A refit that fails, for any reason, leaves a fitted estimator and its streams as they were."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.estimators import forecaster as forecaster_module
from tests._params import TINY_FORECASTER, TINY_NETWORK


def _panel(n: int = 12, length: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 2, length)) + y[:, None, None]
    return X, y


def test_a_classifier_refit_on_values_that_overflow_keeps_the_fitted_model() -> None:
    X, y = _panel()
    clf = AarenClassifier(**TINY_NETWORK, max_epochs=1, n_random_features=840).fit(X, y)
    proba = clf.predict_proba(X)
    with pytest.raises(ValueError, match=r"X: channel 0 has a standard deviation of .*rescale the data"):
        clf.fit(X * 1e38, y)  # finite in float64, and a scale no saved model could load back
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_a_forecaster_refit_that_fails_while_training_keeps_the_fitted_model(monkeypatch, failure) -> None:
    y = pd.DataFrame({"y": 10 + np.sin(np.arange(80) / 3)})
    f = AarenForecaster(**TINY_FORECASTER).fit(y[:60])
    f.partial_update(y[60:70])
    forecast, net = f.predict(fh=[1, 2]), f.net_

    def fail_half_way(forecaster, *args):
        forecaster.net_ = None  # what a fit had replaced when it stopped
        raise failure("stopped")

    monkeypatch.setattr(forecaster_module, "fit_and_condition", fail_half_way)
    with pytest.raises(failure, match="stopped"):
        f.fit(y)
    assert f.net_ is net and f.is_fitted
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), forecast)
    f.partial_update(y[70:])  # the streams go on from where they were


@pytest.mark.parametrize("alpha", [[1e-17], [0.5, 5e-17]])
def test_quantile_levels_whose_quantiles_are_infinite_are_refused(alpha) -> None:
    y = pd.DataFrame({"y": 10 + np.sin(np.arange(60) / 3)})
    f = AarenForecaster(**TINY_FORECASTER).fit(y)
    with pytest.raises(ValueError, match=r"at least 1e-16 from either"):
        f.predict_quantiles(fh=[1], alpha=alpha)
    with pytest.raises(ValueError, match=r"at least 1e-16 from either"):
        f.predict_quantiles_array(alpha)
    assert np.isfinite(f.predict_quantiles(fh=[1], alpha=[1e-15]).to_numpy()).all()


def test_skorch_does_not_swallow_an_interrupt_during_training() -> None:
    """skorch ends training at a KeyboardInterrupt and returns normally; the estimators' nets raise it
    again once training has ended, so the estimator's call is interrupted (and undone) whole."""
    import torch

    from aaren_ts.estimators._nets import ClassifierNeuralNet, ForecastNeuralNet

    class Interrupting(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)

        def forward(self, X):
            raise KeyboardInterrupt

    X, y = np.zeros((8, 2), dtype=np.float32), np.arange(8) % 2
    for net_class in (ForecastNeuralNet, ClassifierNeuralNet):
        net = net_class(Interrupting, criterion=torch.nn.MSELoss, max_epochs=2, train_split=None, verbose=0)
        with pytest.raises(KeyboardInterrupt):
            net.fit(X, y.astype(np.float32).reshape(-1, 1) if net_class is ForecastNeuralNet else y)
        assert not hasattr(net, "_interrupt")


def test_a_refused_update_leaves_the_cutoff_and_the_streams() -> None:
    """sktime's update moves the cutoff and stores y before the streams advance: a refused update
    (a new series that cannot be standardised) puts them back too."""
    index = pd.MultiIndex.from_product([["a", "b"], range(40)], names=["series", "time"])
    y = pd.DataFrame({"y": 10 + np.sin(np.arange(80) / 3)}, index=index)
    f = AarenForecaster(**TINY_FORECASTER).fit(y, fh=[1, 2])
    cutoff, forecast = f.cutoff, f.predict()
    bad = pd.DataFrame({"y": [1e300, -1e300]}, index=pd.MultiIndex.from_product([["c"], [40, 41]]))
    with pytest.raises(ValueError, match="new series 'c'"):
        f.update(bad, update_params=False)
    pd.testing.assert_index_equal(f.cutoff, cutoff)
    pd.testing.assert_frame_equal(f.predict(), forecast)


def test_early_stopping_still_ends_training_without_an_interrupt() -> None:
    """skorch's EarlyStopping raises KeyboardInterrupt to stop: that one is not the user's Ctrl-C."""
    import torch
    from skorch.callbacks import EarlyStopping

    from aaren_ts.estimators._nets import ForecastNeuralNet

    X = np.zeros((8, 2), dtype=np.float32)
    net = ForecastNeuralNet(
        torch.nn.Linear, module__in_features=2, module__out_features=1, criterion=torch.nn.MSELoss,
        lr=0.0, max_epochs=20, callbacks=[EarlyStopping(patience=2, monitor="train_loss")], train_split=None,
        verbose=0,
    )  # fmt: skip
    net.fit(X, np.zeros((8, 1), dtype=np.float32))
    assert len(net.history) == 3
