"""All or nothing: a streaming update that fails, or is interrupted, leaves every stream bit for bit as
it was; one that ends has advanced every stream it names."""

from __future__ import annotations

import copy
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster
from aaren_ts.engine import forecast as engine_module
from tests._params import TINY_FORECASTER

N_SERIES = 60


def _panel(n_series: int = N_SERIES, length: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = {
        f"s{k}": pd.DataFrame({"y": 10 + k + np.sin(np.arange(length) / 3) + rng.normal(0, 0.2, length)})
        for k in range(n_series)
    }
    return pd.concat(frames, names=["series", "time"])


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    # calibration on, a Theta partner (sp=3): every kind of per-stream state is there
    return AarenForecaster(**{**TINY_FORECASTER, "sp": 3, "combination": "theta"}).fit(_panel())


def _snapshot(f: AarenForecaster) -> dict[str, object]:
    engine = f.engine_
    theta = engine.theta_arrays() or {}
    return {
        "tensors": [t.clone() for t in engine.tensors()],
        "numpy": [a.copy() for a in (engine.n_seen, engine.n_observed, engine.mean, engine.scale)],
        "theta": {k: v.copy() for k, v in theta.items()},
        "ids": list(engine.ids),
        "rows": dict(engine.row_of),
        "cutoffs": [None if c is None else c.copy() for c in f._cutoffs.cutoffs],
        "pending": f._cutoffs.pending.copy(),
    }


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    if a["ids"] != b["ids"] or a["rows"] != b["rows"] or not np.array_equal(a["pending"], b["pending"]):
        return False
    if len(a["tensors"]) != len(b["tensors"]) or a["theta"].keys() != b["theta"].keys():
        return False
    cutoffs = all(
        (x is None and y is None) or (x is not None and y is not None and x.equals(y))
        for x, y in zip(a["cutoffs"], b["cutoffs"], strict=True)
    ) and len(a["cutoffs"]) == len(b["cutoffs"])
    return (
        cutoffs
        and all(
            x.shape == y.shape and torch.equal(x, y) for x, y in zip(a["tensors"], b["tensors"], strict=True)
        )
        and all(np.array_equal(x, y) for x, y in zip(a["numpy"], b["numpy"], strict=True))
        and all(np.array_equal(a["theta"][k], b["theta"][k]) for k in a["theta"])
    )


def _small_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Advance a few streams per group, so that one call has many groups to fail between."""
    monkeypatch.setattr(engine_module, "_ENCODE_TOKENS", 8)


@pytest.mark.parametrize("path", ["array", "pandas"])
def test_a_failure_in_a_later_group_puts_every_stream_back(fitted, monkeypatch, path) -> None:
    f = copy.deepcopy(fitted)
    _small_groups(monkeypatch)
    before = _snapshot(f)
    calls, original = [], engine_module.ForecastEngine._advance_group

    def fail_in_the_third(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("out of memory")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(engine_module.ForecastEngine, "_advance_group", fail_in_the_third)
    with pytest.raises(RuntimeError, match="out of memory"):
        if path == "array":
            f.partial_update_array(np.full((N_SERIES, 2, 1), 11.0))
        else:
            f.partial_update(_panel(length=42, seed=1).groupby(level=0).tail(2))
    assert len(calls) == 3 and _same(before, _snapshot(f))
    monkeypatch.setattr(engine_module.ForecastEngine, "_advance_group", original)
    retried = copy.deepcopy(fitted).partial_update_array(np.full((N_SERIES, 2, 1), 11.0))
    f.partial_update_array(np.full((N_SERIES, 2, 1), 11.0))  # the retry after the failure: as if first
    assert _same(_snapshot(retried), _snapshot(f))


def test_a_new_series_whose_update_fails_is_not_added(fitted, monkeypatch) -> None:
    f = copy.deepcopy(fitted)
    before = _snapshot(f)
    update = _panel(n_series=N_SERIES + 1, length=42, seed=2).groupby(level=0).tail(2)
    original = engine_module.ForecastEngine.advance

    def fail(self, *args, **kwargs):  # the new series was added just before
        assert f"s{N_SERIES}" in self.row_of
        raise RuntimeError("out of memory")

    monkeypatch.setattr(engine_module.ForecastEngine, "advance", fail)
    with pytest.raises(RuntimeError, match="out of memory"):
        f.partial_update(update)
    assert _same(before, _snapshot(f))
    f.predict(fh=[1, 2])  # every series still forecasts
    monkeypatch.setattr(engine_module.ForecastEngine, "advance", original)
    f.partial_update(update)  # the retry works
    assert f"s{N_SERIES}" in f.engine_.row_of and f.predict(fh=[1]).notna().all().all()


def test_a_new_series_that_cannot_be_scaled_is_refused_by_name_and_adds_nothing(fitted) -> None:
    f = copy.deepcopy(fitted)
    before = _snapshot(f)
    update = _panel(n_series=N_SERIES + 1, length=42, seed=2).groupby(level=0).tail(2)
    update.loc[(f"s{N_SERIES}", 41), "y"] = 1e300  # its spread overflows
    with pytest.raises(ValueError, match=f"new series 's{N_SERIES}' would be standardised"):
        f.partial_update(update)
    assert _same(before, _snapshot(f))


def _interrupt_after(delay: float) -> threading.Timer:
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")
def test_an_interrupt_at_any_point_leaves_the_streams_before_or_fully_advanced(fitted, monkeypatch) -> None:
    _small_groups(monkeypatch)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        values = np.random.default_rng(3).normal(12.0, 1.0, (N_SERIES, 12, 1))
        start = copy.deepcopy(fitted)
        before = _snapshot(start)
        advanced = copy.deepcopy(start)
        tic = time.perf_counter()
        advanced.partial_update_array(values)
        duration = time.perf_counter() - tic
        after = _snapshot(advanced)
        rng = np.random.default_rng(0)
        outcomes = []
        for _ in range(20):
            f = copy.deepcopy(start)
            timer = _interrupt_after(float(rng.uniform(0.0, 1.2 * duration)))
            try:
                try:
                    f.partial_update_array(values)
                finally:
                    timer.join()  # the interrupt is sent by now; a late one lands in the sleep
                time.sleep(0.05)
            except KeyboardInterrupt:
                pass
            snapshot = _snapshot(f)
            if _same(snapshot, before):
                outcomes.append("before")
            elif _same(snapshot, after):
                outcomes.append("advanced")
            else:
                outcomes.append("torn")
        assert "torn" not in outcomes, outcomes
        assert "before" in outcomes, outcomes  # the interrupts did land inside the calls
    finally:
        signal.signal(signal.SIGINT, previous)


def test_readers_see_the_time_label_and_values_of_one_state() -> None:
    # every series forecasts its last value, which is its time: a label must equal its value + 1
    y = pd.DataFrame({"y": np.arange(60.0)})
    settings = {**TINY_FORECASTER, "sp": 1, "target_transform": None, "interval_calibration": None}
    f = AarenForecaster(**settings, skip_steps=["theta_combination"]).fit(y)
    f.engine_.use_naive(np.ones((1, 1)))
    f.partial_update_array(np.array([[[60.0]]]))  # (the naive forecast from here on)
    torn, seen, done = [], [], threading.Event()

    def read() -> None:
        while not done.is_set():
            forecast = f.predict(fh=[1])
            label, value = forecast.index[0], float(forecast.iloc[0, 0])
            seen.append(label)
            if abs(label - (value + 1)) > 1e-3:  # (float32 values)
                torn.append((label, value))

    readers = [threading.Thread(target=read) for _ in range(7)]
    for reader in readers:
        reader.start()
    for t in range(61, 400):
        f.partial_update_array(np.array([[[float(t)]]]))
    done.set()
    for reader in readers:
        reader.join()
    assert len(set(seen)) > 10 and torn == [], torn[:5]
