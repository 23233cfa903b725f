"""The forecasting engine through its own public interface: advancing, refusing, restoring, threads."""

from __future__ import annotations

import io
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster
from aaren_ts.engine import MAX_STANDARDISED, ForecastEngine
from tests._params import TINY_FORECASTER


def _panel(n_series: int = 3, length: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = {
        f"s{k}": pd.DataFrame({"y": 100.0 + 10.0 * rng.normal(size=length).cumsum()}, index=range(length))
        for k in range(n_series)
    }
    return pd.concat(frames, names=["series", "time"])


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    return AarenForecaster(**TINY_FORECASTER).fit(_panel())


def _fresh_like(engine: ForecastEngine) -> ForecastEngine:
    fresh = ForecastEngine(engine.module, engine.device, engine.calibration_rate)
    fresh.add(list(engine.ids), engine.mean, engine.scale)
    return fresh


def test_restore_gives_back_the_same_streams(fitted: AarenForecaster) -> None:
    engine = fitted.engine_
    fresh = _fresh_like(engine)
    fresh.restore(engine.tensors(), engine.n_seen, engine.n_observed)
    for a, b in zip(fresh.tensors(), engine.tensors(), strict=True):
        assert torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0))
    step = np.random.default_rng(1).normal(100.0, 5.0, size=(len(engine), 4, 1))
    other = _fresh_like(engine)
    other.restore(engine.tensors(), engine.n_seen, engine.n_observed)
    fresh.advance(np.arange(len(engine)), step)
    other.advance(np.arange(len(engine)), step)
    np.testing.assert_array_equal(fresh.predict(), other.predict())
    np.testing.assert_array_equal(fresh.predict_quantiles([0.1, 0.9]), other.predict_quantiles([0.1, 0.9]))


def _corruptions(engine: ForecastEngine) -> dict[str, tuple[list[torch.Tensor], np.ndarray, np.ndarray]]:
    tensors = [t.clone() for t in engine.tensors()]
    seen, observed = engine.n_seen.copy(), engine.n_observed.copy()
    levels, issued, n_issued = tensors[-3:]
    n_state = len(tensors) - 7  # the encoder state, then history (2), forecast (2), calibration (3)
    cases = {
        "ring shrunk": [*tensors[:-2], issued[:, :1].clone(), n_issued],
        "negative issued count": [*tensors[:-1], torch.full_like(n_issued, -5)],
        "issued count beyond what was seen": [*tensors[:-1], n_issued + 10**6],
        "levels of another shape": [*tensors[:-3], levels[:, :2].clone(), issued, n_issued],
        "one tensor missing": tensors[:-1],
        "encoder state of another dtype": [tensors[0].to(torch.float16), *tensors[1:]],
        "non-finite forecast": [t if k != len(tensors) - 5 else t * np.inf for k, t in enumerate(tensors)],
        "NaN in the encoder state": [_set_first(tensors[0], np.nan), *tensors[1:]],
        "a value beyond float32 in the encoder state": [_set_first(tensors[0], 1e30), *tensors[1:]],
        "an observed NaN in the history": [
            *tensors[:n_state],
            _set_first(tensors[n_state], np.nan),
            torch.ones_like(tensors[n_state + 1]),
            *tensors[n_state + 2 :],
        ],
        "a negative forecast spread": [*tensors[:-4], -tensors[-4], *tensors[-3:]],
        "a negative spread in the calibration's ring": [
            *tensors[:-2],
            _set_first(issued, -1.0, -1),
            n_issued,
        ],
    }
    out = {name: (t, seen, observed) for name, t in cases.items()}
    out["negative seen count"] = (tensors, seen - 10**6, observed)
    out["more observed than seen"] = (tensors, seen, seen + 1)
    out["a seen count no stream reaches"] = (tensors, seen + 2**60, observed)
    return out


def _set_first(t: torch.Tensor, value: float, parameter: int | None = None) -> torch.Tensor:
    """A copy of ``t`` with its first value (of its last axis' ``parameter``-th entry) set to ``value``."""
    t = t.clone()
    if parameter is None:
        t.view(-1)[0] = value
    else:
        t[(0,) * (t.dim() - 1) + (parameter,)] = value
    return t


@pytest.mark.parametrize(
    "case",
    [
        "ring shrunk",
        "negative issued count",
        "issued count beyond what was seen",
        "levels of another shape",
        "one tensor missing",
        "encoder state of another dtype",
        "non-finite forecast",
        "negative seen count",
        "more observed than seen",
        "NaN in the encoder state",
        "a value beyond float32 in the encoder state",
        "an observed NaN in the history",
        "a negative forecast spread",
        "a negative spread in the calibration's ring",
        "a seen count no stream reaches",
    ],
)
def test_restore_refuses_streams_that_do_not_fit_and_changes_nothing(fitted, case: str) -> None:
    engine = fitted.engine_
    tensors, seen, observed = _corruptions(engine)[case]
    fresh = _fresh_like(engine)
    before = [t.clone() for t in fresh.tensors()]
    with pytest.raises(ValueError, match="saved"):
        fresh.restore(tensors, seen, observed)
    for a, b in zip(fresh.tensors(), before, strict=True):
        assert torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0))
    fresh.advance(np.arange(len(fresh)), np.full((len(fresh), 2, 1), 100.0))  # still usable


def _tampered_archive(source, target, edit) -> None:
    """Copy the saved model at ``source`` to ``target`` with its weights-only payload edited."""
    with zipfile.ZipFile(source) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    payload_name = next(name for name in entries if name != "_metadata")
    payload = torch.load(io.BytesIO(entries[payload_name]), weights_only=True)
    edit(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    entries[payload_name] = buffer.getvalue()
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_crafted_weights_only_archive_is_refused_at_load(fitted, tmp_path, monkeypatch, native) -> None:
    monkeypatch.setenv("AAREN_TS_NATIVE", native)  # the C calibration step, or the PyTorch one
    saved = fitted.save(tmp_path / "model")

    def shrink_ring(payload) -> None:
        streams = payload["attributes"]["streams"]
        streams[-2] = streams[-2][:, :1].clone()

    def negative_count(payload) -> None:
        streams = payload["attributes"]["streams"]
        streams[-1] = torch.full_like(streams[-1], -3)

    for edit in (shrink_ring, negative_count):
        crafted = tmp_path / f"{edit.__name__}.zip"
        _tampered_archive(saved, crafted, edit)
        with pytest.raises(ValueError, match="saved"):
            AarenForecaster.load(crafted)


def _first_weight(payload) -> str:
    return next(iter(payload["state_dict"]))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda p: p["state_dict"].update({_first_weight(p): p["state_dict"][_first_weight(p)].half()}),
            "dtype",
        ),
        (
            lambda p: p["state_dict"].update({_first_weight(p): p["state_dict"][_first_weight(p)][:-1]}),
            "size",
        ),
        (
            lambda p: p["state_dict"].update({_first_weight(p): p["state_dict"][_first_weight(p)] * np.nan}),
            "NaN",
        ),
        (lambda p: p["attributes"].update(n_seen=p["attributes"]["n_seen"].double()), "n_seen must be"),
        (lambda p: p["attributes"].update(scale=-p["attributes"]["scale"]), "positive scale"),
        (lambda p: p["attributes"].pop("mean"), "KeyError: 'mean'"),
        (lambda p: p["attributes"]["series_ids"].append("x"), "does not fit the 4 saved series"),
        (lambda p: p["params"].update(horizon="three"), "horizon"),
        (lambda p: p["params"].update(n_layers=100_000), "n_layers must be an integer in [1, 64]"),
        (
            lambda p: p["attributes"].update(series_cutoffs=p["attributes"]["series_cutoffs"][:-1]),
            "the saved cutoffs (2) do not fit the 3 saved series",
        ),
        (lambda p: p["params"].update(context_length=2**27), "context_length must be None or an integer"),
        (lambda p: p["attributes"].update(naive=p["attributes"]["naive"] + 1.5), "shares in [0, 1]"),
        (lambda p: p["attributes"].update(naive=p["attributes"]["naive"].int()), "naive must be"),
    ],
)
def test_an_archive_whose_parts_do_not_fit_together_is_refused_naming_the_file(fitted, tmp_path, edit, match):
    saved = fitted.save(tmp_path / "model")
    _tampered_archive(saved, tmp_path / "crafted.zip", edit)
    with pytest.raises(ValueError, match=r"crafted\.zip") as raised:
        AarenForecaster.load(tmp_path / "crafted.zip")
    assert match in str(raised.value)


def test_an_archive_from_before_the_naive_share_loads_its_bool_fallback(fitted, tmp_path) -> None:
    """Archives wrote the fallback as one bool per series and channel; they load as shares 0 and 1."""
    saved = fitted.save(tmp_path / "model")

    def as_flags(payload) -> None:
        naive = payload["attributes"]["naive"]
        payload["attributes"]["naive"] = (torch.arange(naive.numel()) % 2 == 0).reshape(naive.shape)

    _tampered_archive(saved, tmp_path / "flags.zip", as_flags)
    loaded = AarenForecaster.load(tmp_path / "flags.zip")
    assert loaded.engine_.naive.dtype == np.float64
    assert loaded.engine_.naive.ravel().tolist() == [
        float(k % 2 == 0) for k in range(len(fitted.engine_.ids))
    ]


def test_the_naive_share_is_refused_outside_zero_to_one_and_nothing_changes(fitted) -> None:
    engine = fitted.engine_
    before = engine.naive.copy()
    for bad in (np.full(before.shape, 1.5), np.full(before.shape, np.nan), np.full(before.shape, -0.1)):
        with pytest.raises(ValueError, match=r"shares in \[0, 1\]"):
            engine.use_naive(bad)
        np.testing.assert_array_equal(engine.naive, before)


def test_values_that_would_overflow_are_refused_naming_the_series(fitted) -> None:
    engine = fitted.engine_
    fresh = _fresh_like(engine)
    fresh.restore(engine.tensors(), engine.n_seen, engine.n_observed)
    before = [t.clone() for t in fresh.tensors()]
    huge = np.full((len(fresh), 1, 1), 100.0)
    huge[1, 0, 0] = engine.mean[1, 0] + 2 * MAX_STANDARDISED * engine.scale[1, 0]
    with pytest.raises(ValueError, match=r"series 's1'.*standard deviations"):
        fresh.advance(np.arange(len(fresh)), huge)
    for a, b in zip(fresh.tensors(), before, strict=True):
        assert torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0))


def test_a_forecaster_refuses_overflowing_values_and_stays_finite(fitted) -> None:
    f = AarenForecaster(**TINY_FORECASTER).fit(_panel())
    before = f.predict(fh=[1, 2])
    nxt = pd.concat({"s0": pd.DataFrame({"y": [1e22]}, index=[60])}, names=["series", "time"])
    with pytest.raises(ValueError, match=r"series 's0'.*overflow"):
        f.partial_update(nxt)
    with pytest.raises(ValueError, match="overflow"):
        f.partial_update_array(np.array([[1e38], [100.0], [100.0]]))
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), before)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([[1 + 2j], [1.0], [1.0]]), "real numbers"),
        (np.array([[True], [False], [True]]), "real numbers"),
        (np.array([["1"], ["2"], ["3"]]), "real numbers"),
    ],
)
def test_the_array_api_refuses_what_is_not_real_numbers(fitted, values, message) -> None:
    before = fitted.stream_state_tensors()
    with pytest.raises(TypeError, match=message):
        fitted.partial_update_array(values)
    for a, b in zip(fitted.stream_state_tensors(), before, strict=True):
        assert torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0))


def test_concurrent_updates_of_one_series_lose_nothing() -> None:
    """Threads sending the next observations of one series: every observation is taken once."""
    f = AarenForecaster(**{**TINY_FORECASTER, "horizon": 2}).fit(_panel(1).xs("s0", level=0))
    sequential = AarenForecaster(**{**TINY_FORECASTER, "horizon": 2}).fit(_panel(1).xs("s0", level=0))
    rng = np.random.default_rng(3)
    chunks = [rng.normal(100.0, 5.0, size=(1, 3, 1)) for _ in range(40)]
    for chunk in chunks:
        sequential.partial_update_array(chunk)
    pending = list(chunks)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:  # the order of the chunks is fixed; the updates themselves race
                if not pending:
                    return
                chunk = pending.pop(0)
                f.engine_.lock.acquire()
            try:
                f.partial_update_array(chunk)
            finally:
                f.engine_.lock.release()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.n_seen_ == sequential.n_seen_ == 60 + 120
    np.testing.assert_allclose(f.predict_array(), sequential.predict_array(), rtol=1e-6)
    assert f.cutoff.equals(sequential.cutoff)


def test_racing_partial_updates_are_serialised_not_lost() -> None:
    """Four threads racing to continue one series with the same timestamps: exactly one is taken."""
    y = _panel(1).xs("s0", level=0)
    f = AarenForecaster(**{**TINY_FORECASTER, "horizon": 2}).fit(y)
    nxt = pd.DataFrame({"y": [101.0, 102.0]}, index=[60, 61])
    errors: list[Exception] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        barrier.wait()
        try:
            f.partial_update(nxt)
        except ValueError as err:
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.n_seen_ == 62 and len(errors) == 3
    assert all("overlaps" in str(e) for e in errors)


def test_predictions_run_while_updates_are_serialised() -> None:
    """Two threads update every series of one forecaster (the same observation each time, so their order
    cannot matter) while a third predicts: the end equals the sequential result, and every prediction
    read is one the sequential run passes through (never a half-applied update)."""
    import copy

    f = AarenForecaster(**TINY_FORECASTER).fit(_panel())
    sequential = copy.deepcopy(f)
    step = f.engine_.mean[:, None, :1] + 1.0
    seen = [sequential.predict_array()]
    for _ in range(30):
        seen.append(sequential.partial_update_array(step).predict_array())
    reads: list[np.ndarray] = []
    done = threading.Event()

    def writer() -> None:
        for _ in range(15):
            f.partial_update_array(step)

    def reader() -> None:
        while not done.is_set():
            reads.append(f.predict_array())

    writers = [threading.Thread(target=writer) for _ in range(2)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    watcher.join()
    np.testing.assert_array_equal(f.predict_array(), seen[-1])
    assert (f.n_seen_ == 60 + 30).all() and len(reads) > 0
    for read in reads:
        assert any(np.array_equal(read, s) for s in seen)


def test_a_standardisation_beyond_float32_s_reach_is_refused(fitted) -> None:
    from aaren_ts.utils.limits import MAX_SCALE

    engine = ForecastEngine(fitted.engine_.module, "cpu")
    for scale in (0.0, np.inf, 10 * MAX_SCALE):
        with pytest.raises(ValueError, match="scale positive and at most"):
            engine.add(["s"], np.zeros((1, 1)), np.full((1, 1), scale))
    assert len(engine) == 0
    engine.add(["s"], np.full((1, 1), 1e30), np.full((1, 1), MAX_SCALE))  # huge units, at the bound
