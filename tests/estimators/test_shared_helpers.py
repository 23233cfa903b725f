"""The helpers both estimators share: optimizer resolution, parameters for non-pickle saving, progress."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
import torch

from aaren_ts.estimators._persistence import load_archive, save_archive
from aaren_ts.estimators._skorch import (
    optimizer_params,
    print_epoch_line,
    progress_bar,
    progress_params,
    resolve_optimizer,
    savable_params,
)


class _CustomOptimizer(torch.optim.SGD):
    pass


def test_resolve_optimizer_by_name_or_class() -> None:
    assert resolve_optimizer("AdamW") is torch.optim.AdamW
    assert resolve_optimizer("sgd") is torch.optim.SGD
    assert resolve_optimizer(_CustomOptimizer) is _CustomOptimizer
    with pytest.raises(ValueError, match="optimizer must be one of"):
        resolve_optimizer("lbfgs-ish")
    with pytest.raises(TypeError, match=r"torch\.optim\.Optimizer subclass"):
        resolve_optimizer(3)


class _PlainOptimizer(torch.optim.Optimizer):
    """An optimizer whose constructor has no ``foreach``."""

    def __init__(self, params, lr: float = 0.1, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    def step(self, closure=None):
        return None


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd", "rmsprop"])
def test_torchs_optimizers_run_all_parameters_at_once(name: str) -> None:
    assert optimizer_params(resolve_optimizer(name)) == {"optimizer__foreach": True}
    assert optimizer_params(_CustomOptimizer) == {"optimizer__foreach": True}
    assert optimizer_params(_PlainOptimizer) == {}


@pytest.mark.parametrize("estimator", ["classifier", "forecaster"])
def test_the_multi_tensor_update_trains_the_same_weights(monkeypatch, estimator: str) -> None:
    """foreach=True only changes how the update is run: one parameter at a time gives the same
    answers to the last bit."""
    import aaren_ts.estimators._base as base
    from aaren_ts import AarenClassifier, AarenForecaster

    rng = np.random.default_rng(0)
    if estimator == "classifier":
        X = rng.normal(size=(24, 2, 30))
        y = np.repeat([0, 1, 2], 8)
        X[y == 1, 0] += 1.0

        def answers() -> tuple[np.ndarray, bool | None]:
            model = AarenClassifier(d_model=16, n_heads=2, d_ff=32, max_epochs=4, random_state=0)
            proba = model.fit(X, y).predict_proba(X)
            return proba, model.net_.optimizer_.defaults["foreach"]
    else:
        series = np.sin(np.arange(120) / 5.0) + 0.1 * rng.normal(size=120)

        def answers() -> tuple[np.ndarray, bool | None]:
            model = AarenForecaster(d_model=16, n_heads=2, d_ff=32, max_epochs=4, random_state=0)
            forecast = np.asarray(model.fit(series, fh=[1, 2, 3]).predict())
            return forecast, model.net_.optimizer_.defaults["foreach"]

    at_once, foreach = answers()
    monkeypatch.setattr(base, "optimizer_params", lambda optimizer: {})
    one_at_a_time, default = answers()
    assert foreach is True and default is None  # (the two runs did update differently)
    np.testing.assert_array_equal(at_once, one_at_a_time)


def test_savable_params() -> None:
    seed = np.random.RandomState(0)
    params = {"optimizer": torch.optim.AdamW, "callbacks": [object()], "random_state": seed}
    plain = savable_params(params)
    assert plain == {"optimizer": "adamw", "callbacks": None, "random_state": None}
    assert params["callbacks"] is not None  # the input is not modified
    assert resolve_optimizer(plain["optimizer"]) is torch.optim.AdamW
    with pytest.raises(ValueError, match=r"serialization_format='pickle'"):
        savable_params({"optimizer": _CustomOptimizer})


def test_archive_round_trip_and_refusals(tmp_path) -> None:
    state = {"w": torch.arange(3.0)}
    path = save_archive(tmp_path / "model", _CustomOptimizer, {"a": 1}, state, {"x": np.ones(2)})
    assert path.name == "model.zip"
    payload = load_archive(tmp_path / "model", _CustomOptimizer)
    assert payload["params"] == {"a": 1}
    assert torch.equal(payload["state_dict"]["w"], state["w"])
    assert torch.equal(payload["attributes"]["x"], torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="does not hold a saved SGD"):
        load_archive(path, torch.optim.SGD)
    (tmp_path / "other.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a file written by"):
        load_archive(tmp_path / "other.zip", _CustomOptimizer)
    with pytest.raises(FileNotFoundError, match="no saved"):
        load_archive(tmp_path / "missing", _CustomOptimizer)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_epoch_lines_are_plain_off_a_terminal_and_coloured_on_one(monkeypatch):
    line = "      1        \x1b[36m0.2034\x1b[0m        \x1b[32m0.9272\x1b[0m  0.0030"
    for stream, expected in [
        (io.StringIO(), "      1        0.2034        0.9272  0.0030\n"),
        (_Terminal(), line + "\n"),
    ]:
        monkeypatch.setattr(sys, "stdout", stream)
        print_epoch_line(line)
        assert stream.getvalue() == expected


def test_progress_bar_only_where_it_can_be_drawn(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_bar() is None  # a file or a pipe
    monkeypatch.setattr(sys, "stderr", _Terminal())
    bar = progress_bar()
    assert bar is not None and bar.detect_notebook is False
    assert progress_params(0) == {}
    assert progress_params(1) == {"callbacks__print_log__sink": print_epoch_line}
