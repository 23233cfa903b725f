"""Constructor parameters folded into others or removed: a FutureWarning and the same setting, or a
TypeError naming what replaced them; ``get_params`` and ``clone`` know only the current ones."""

from __future__ import annotations

import inspect
import warnings

import pytest
from sklearn.base import clone

from aaren_ts import AarenClassifier, AarenForecaster


@pytest.mark.parametrize(
    ("cls", "removed", "current"),
    [
        (AarenForecaster, {"early_stopping": False}, {"patience": None}),
        (AarenForecaster, {"early_stopping": True}, {"patience": 5}),
        (AarenForecaster, {"early_stopping": True, "patience": None}, {"patience": 5}),
        (AarenForecaster, {"calibration_rate": 0.02}, {"interval_calibration": 0.02}),
        (
            AarenForecaster,
            {"calibration_rate": 0.02, "interval_calibration": None},
            {"interval_calibration": None},
        ),
        (AarenForecaster, {"fine_tune_epochs": 3}, {"update_epochs": 3}),
        (AarenForecaster, {"initial_forecast": "naive"}, {"skip_steps": ["initial_forecast"]}),
        (AarenForecaster, {"initial_forecast": "auto"}, {"skip_steps": None}),
        (
            AarenForecaster,
            {"linear_share": None, "skip_steps": ["naive_fallback"]},
            {"skip_steps": ["naive_fallback", "linear_share"]},
        ),
        (AarenForecaster, {"channel_embedding": True, "average_best_epochs": 3}, {}),
        (AarenForecaster, {"normalization": "standard", "segment_length": None}, {}),
        (AarenForecaster, {"segment_length": 48, "context_length": 24}, {"context_length": 24}),
        (AarenClassifier, {"early_stopping": True}, {"patience": 30}),
        (AarenClassifier, {"early_stopping": False, "patience": 4}, {"patience": None}),
    ],
)
def test_a_removed_parameter_sets_the_current_one_with_a_warning(cls, removed, current):
    with pytest.warns(FutureWarning, match="is deprecated"):
        est = cls(**removed)
    params = est.get_params(deep=False)
    assert {name: params[name] for name in current} == current
    gone = set(removed) - set(inspect.signature(cls.__init__).parameters)
    assert gone and gone.isdisjoint(params)
    assert clone(est).get_params(deep=False) == params


class _Accelerator:
    """What the estimators take for a Hugging Face Accelerator: ``prepare`` and ``backward``."""

    device = "cpu"

    def prepare(self, *objects):
        return objects

    def backward(self, loss):
        loss.backward()


@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_an_accelerator_becomes_the_device(cls):
    accelerator = _Accelerator()
    with pytest.warns(FutureWarning, match="device takes the Accelerator"):
        est = cls(accelerator=accelerator)
    assert est.device is accelerator and est._resolved_device() == "cpu"


@pytest.mark.parametrize(
    ("removed", "replacement"),
    [
        ({"channel_embedding": False}, "every channel has its learned embedding"),
        ({"average_best_epochs": 1}, "three best epochs"),
        ({"normalization": None}, "standardised"),
        ({"segment_length": 100}, "two context_length"),
        ({"initial_forecast": "level"}, r'skip_steps=\["initial_forecast"\]'),
        ({"linear_share": 0.4}, r'skip_steps=\["linear_share"\]'),
    ],
)
def test_a_setting_no_longer_expressible_is_refused_naming_the_replacement(removed, replacement):
    ((name, value),) = removed.items()
    with pytest.raises(TypeError, match=rf"{name}={value!r} is no longer supported: .*{replacement}"):
        AarenForecaster(**removed)


@pytest.mark.parametrize("cls", [AarenClassifier, AarenForecaster])
def test_an_unknown_keyword_is_refused_as_python_refuses_it(cls):
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'n_epochs'"):
        cls(n_epochs=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls()  # the defaults warn of nothing


def test_the_forecaster_has_at_most_35_constructor_parameters():
    parameters = inspect.signature(AarenForecaster.__init__).parameters.values()
    named = [p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"]
    assert len(named) <= 35
