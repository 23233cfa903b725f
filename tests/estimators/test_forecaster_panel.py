"""AarenForecaster on many series: one global network, batched streams, gaps, pretraining."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from sktime.datatypes import check_is_mtype
from sktime.utils._testing.hierarchical import _make_hierarchical

from aaren_ts import AarenForecaster
from aaren_ts.nn.state import flatten_state
from aaren_ts.utils.log_target import from_log, to_log
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,  # one network (the ensemble's own tests: test_forecaster_ensemble.py)
    "n_layers": 2,
    "context_length": 6,
    "max_epochs": 2,
    "batch_size": 4,
    "horizon": 4,
}
ATOL = 1e-5


def _panel(lengths: dict[str, int], starts: dict[str, int] | None = None, seed: int = 0) -> pd.DataFrame:
    """A pd-multiindex panel of seasonal series with their own lengths and start times."""
    rng = np.random.default_rng(seed)
    frames = []
    for k, (name, n) in enumerate(lengths.items()):
        start = (starts or {}).get(name, 0)
        t = np.arange(start, start + n)
        values = 10 * (k + 1) + (k + 1) * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.3, n)
        index = pd.MultiIndex.from_arrays([[name] * n, t], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
    return pd.concat(frames)


def _series(y: pd.DataFrame, name: str) -> pd.DataFrame:
    return y.xs(name, level=0)


def _direct_forecast(f: AarenForecaster, name, values: np.ndarray) -> np.ndarray:
    """The forecast after encoding ``values`` (a whole series, original units) in one forward pass."""
    streams = f.engine_
    row = streams.row_of[name]
    log = streams.log_target[row]  # (its channels on the log scale, target_transform="auto")
    x = (to_log(values.reshape(len(values), -1), log) - streams.mean[row]) / streams.scale[row]
    naive = torch.as_tensor(streams.naive[row : row + 1])  # the series' fallback to the naive forecast
    with torch.no_grad():
        out = f.net_.module_(torch.as_tensor(x, dtype=torch.float32)[None], last_only=True, naive=naive).loc
    return from_log(out[0, 0].numpy() * streams.scale[row] + streams.mean[row], log)


def _snapshot(f: AarenForecaster) -> tuple:
    s = f.engine_
    return (
        [t.clone() for t in f.stream_state_tensors()],
        f.series_cutoffs_.tolist(),
        s.n_seen.copy(),
        list(s.ids),
        f.cutoff.copy(),
    )


def _assert_same_snapshot(a: tuple, b: tuple) -> None:
    for x, y in zip(a[0], b[0], strict=True):
        assert torch.equal(x.nan_to_num(-7.0), y.nan_to_num(-7.0))
    assert a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    assert a[3] == b[3] and a[4].equals(b[4])


def test_panel_fit_trains_one_network_and_predicts_every_series():
    y = _panel({"a": 80, "b": 60, "c": 100}, starts={"b": 30})
    f = AarenForecaster(**TINY).fit(y)
    assert f.series_ids_ == ["a", "b", "c"]
    assert not hasattr(f, "forecasters_")  # one network, not sktime's one clone per series
    pred = f.predict(fh=[1, 2, 3])
    assert check_is_mtype(pred, "pd-multiindex")
    for name in ["a", "b", "c"]:
        last = _series(y, name).index[-1]
        assert list(_series(pred, name).index) == [last + 1, last + 2, last + 3]
        expected = _direct_forecast(f, name, _series(y, name).to_numpy())[:3]
        np.testing.assert_allclose(_series(pred, name).to_numpy(), expected, atol=ATOL)
    assert f.mean_.shape == (3, 1) and list(f.n_seen_) == [80, 60, 100]


def test_hierarchical_panel_round_trips_its_mtype():
    y = _make_hierarchical(hierarchy_levels=(2, 2), min_timepoints=30, max_timepoints=30, random_state=0)
    f = AarenForecaster(**TINY).fit(y)
    pred = f.predict(fh=[1, 2])
    assert check_is_mtype(pred, "pd_multiindex_hier")
    assert pred.index.names == y.index.names and len(pred) == 4 * 2


@pytest.mark.parametrize("backbone", ["aaren", "transformer"])
def test_ragged_subset_updates_equal_encoding_whole_series(backbone):
    full = _panel({"a": 90, "b": 70, "c": 110}, starts={"b": 5})
    names = ["a", "b", "c"]
    n_fit = {"a": 50, "b": 40, "c": 60}
    fit_part = pd.concat({k: _series(full, k).iloc[: n_fit[k]] for k in names}, names=["series"])
    f = AarenForecaster(**{**TINY, "backbone": backbone}).fit(fit_part)
    rng = np.random.default_rng(1)
    pos = dict(n_fit)
    while any(pos[k] < len(_series(full, k)) for k in names):
        present = [k for k in names if pos[k] < len(_series(full, k)) and rng.random() < 0.7]
        chunks = []
        for k in present:
            step = int(rng.integers(1, 9))
            part = _series(full, k).iloc[pos[k] : pos[k] + step]
            pos[k] += len(part)
            chunks.append(pd.concat({k: part}, names=["series"]))
        if chunks:
            f.partial_update(pd.concat(chunks))
    pred = f.predict(fh=[1, 2, 3, 4])
    for k in names:
        expected = _direct_forecast(f, k, _series(full, k).to_numpy())
        np.testing.assert_allclose(_series(pred, k).to_numpy(), expected, atol=ATOL)
        assert _series(pred, k).index[0] == _series(full, k).index[-1] + 1  # each series' own cutoff


def test_new_series_starts_a_stream_without_retraining():
    y = _panel({"a": 60, "b": 60})
    f = AarenForecaster(**TINY).fit(y)
    weights = copy.deepcopy(f.net_.module_.state_dict())
    new = _panel({"z": 30}, starts={"z": 100}, seed=3)
    f.partial_update(new)
    assert f.series_ids_ == ["a", "b", "z"]
    for k, v in f.net_.module_.state_dict().items():
        assert torch.equal(v, weights[k])
    values = _series(new, "z").to_numpy()
    log = f.engine_.log_target[f.engine_.row_of["z"]]  # (the scale its own first values chose)
    np.testing.assert_allclose(f.mean_.loc["z"].to_numpy(), to_log(values, log).mean(0))
    pred = f.predict(fh=[1, 2])
    np.testing.assert_allclose(_series(pred, "z").to_numpy(), _direct_forecast(f, "z", values)[:2], atol=ATOL)
    assert _series(pred, "z").index[0] == 130


def test_gaps_stream_equals_batch_with_the_same_gaps():
    full = _panel({"a": 120, "b": 100})
    gappy = full.copy()
    rng = np.random.default_rng(0)
    gappy.iloc[rng.choice(len(gappy), 30, replace=False), 0] = np.nan
    gappy.iloc[40:48, 0] = np.nan  # a stretch of 8 missing steps in series a
    f = AarenForecaster(**TINY).fit(gappy.groupby(level=0).head(50))
    assert np.isfinite(f.predict(fh=[1, 2]).to_numpy()).all()
    for start in range(50, 120, 7):
        f.partial_update(pd.concat({k: _series(gappy, k).iloc[start : start + 7] for k in ["a", "b"]}))
    pred = f.predict(fh=[1, 2, 3, 4])
    assert np.isfinite(pred.to_numpy()).all()
    for k in ["a", "b"]:
        expected = _direct_forecast(f, k, _series(gappy, k).to_numpy())
        np.testing.assert_allclose(_series(pred, k).to_numpy(), expected, atol=ATOL)


def test_missing_observations_leave_the_state_unchanged():
    y = _panel({"a": 60})
    f = AarenForecaster(**TINY).fit(y)
    encoder_state = [t.clone() for t in flatten_state(f.engine_.state)]
    missing = pd.DataFrame({"y": [np.nan] * 3}, index=pd.MultiIndex.from_product([["a"], [60, 61, 62]]))
    f.partial_update(missing)
    for before, after in zip(encoder_state, flatten_state(f.engine_.state), strict=True):
        assert torch.equal(before, after)
    assert f.n_seen_["a"] == 63 and np.isfinite(f.predict(fh=[1]).to_numpy()).all()


def test_series_with_nothing_observed_is_named_on_predict():
    y = _panel({"a": 40, "b": 40})
    y.loc["b", "y"] = np.nan
    f = AarenForecaster(**TINY).fit(y)
    with pytest.raises(ValueError, match="series 'b' has no observed value"):
        f.predict(fh=[1])


@pytest.mark.parametrize(
    ("case", "pattern"),
    [
        ("gap", "series 'b' leaves a gap"),
        ("overlap", "series 'b' overlaps"),
        ("columns", "column"),
        ("levels", "levels"),
        ("single", "MultiIndex"),
        ("inf", "series 'a' holds an infinite value"),
    ],
)
def test_bad_panel_input_names_the_series_and_changes_nothing(case, pattern):
    y = _panel({"a": 60, "b": 60, "c": 60})
    f = AarenForecaster(**TINY).fit(y)
    before = _snapshot(f)
    pred = f.predict(fh=[1, 2])
    good_a = pd.concat({"a": pd.DataFrame({"y": [1.0, 2.0]}, index=[60, 61])}, names=["series", "time"])
    bad_b = {
        "gap": pd.DataFrame({"y": [1.0]}, index=[62]),
        "overlap": pd.DataFrame({"y": [1.0, 2.0]}, index=[59, 60]),
    }
    if case in bad_b:
        bad = pd.concat([good_a, pd.concat({"b": bad_b[case]}, names=["series", "time"])])
    elif case == "columns":
        bad = good_a.rename(columns={"y": "other"}).assign(extra=1.0)
    elif case == "levels":
        bad = pd.concat({"top": good_a}, names=["top"])
    elif case == "single":
        bad = pd.DataFrame({"y": [1.0]}, index=[60])
    else:
        bad = good_a.copy()
        bad.iloc[1, 0] = np.inf
    with pytest.raises(ValueError, match=pattern):
        f.partial_update(bad)
    _assert_same_snapshot(before, _snapshot(f))
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), pred)


def test_pretrain_then_fit_conditions_on_the_new_series():
    panel = _panel({"a": 80, "b": 80, "c": 80})
    f = AarenForecaster(**TINY, update_epochs=0)
    f.pretrain(panel)
    assert f.state == "pretrained"
    weights = copy.deepcopy(f.net_.module_.state_dict())
    target = _series(_panel({"new": 50}, seed=5), "new")
    f.fit(target)
    for k, v in f.net_.module_.state_dict().items():
        assert torch.equal(v, weights[k]), k  # update_epochs=0: the pretrained weights
    pred = f.predict(fh=[1, 2, 3])
    assert list(pred.index) == [50, 51, 52]
    expected = _direct_forecast(f, None, target.to_numpy())[:3, 0]
    np.testing.assert_allclose(pred.to_numpy()[:, 0], expected, atol=ATOL)

    tuned = AarenForecaster(**TINY)  # update_epochs=1: fit fine-tunes the pretrained network
    tuned.pretrain(panel)
    tuned.fit(target)
    changed = [k for k, v in tuned.net_.module_.state_dict().items() if not torch.equal(v, weights[k])]
    assert changed


def test_save_load_keeps_every_stream(tmp_path):
    y = _panel({"a": 60, "b": 50}, starts={"b": 7})
    f = AarenForecaster(**TINY).fit(y)
    f.partial_update(_panel({"a": 5}, starts={"a": 60}, seed=2))
    f.partial_update(_panel({"new": 9}, starts={"new": 3}, seed=4))
    path = f.save(tmp_path / "panel")
    loaded = AarenForecaster.load_from_path(path)
    pd.testing.assert_frame_equal(loaded.predict(fh=[1, 2]), f.predict(fh=[1, 2]))
    more = pd.concat([_panel({"b": 4}, starts={"b": 57}, seed=6), _panel({"new": 2}, starts={"new": 12})])
    pd.testing.assert_frame_equal(
        loaded.partial_update(more).predict(fh=[1, 2]), f.partial_update(more).predict(fh=[1, 2])
    )


@pytest.mark.parametrize("backbone", ["aaren", "transformer"])
def test_array_fast_path_equals_partial_update(backbone):
    full = _panel({"a": 70, "b": 70, "c": 70})
    fit_part = full.groupby(level=0).head(50)
    f = AarenForecaster(**{**TINY, "backbone": backbone}).fit(fit_part)
    g = copy.deepcopy(f)
    new = full.groupby(level=0).tail(20)
    f.partial_update(new.groupby(level=0).head(5))
    f.partial_update(new.groupby(level=0).tail(15).loc[["c", "a"]])
    values = new.to_numpy().reshape(3, 20, 1)
    g.partial_update_array(values[:, :5])
    g.partial_update_array(values[[2, 0], 5:], series_ids=["c", "a"])
    np.testing.assert_allclose(g.predict_array(["a", "c"]), f.predict_array(["a", "c"]), atol=ATOL)
    pd.testing.assert_frame_equal(g.predict(fh=[1, 2]), f.predict(fh=[1, 2]), atol=ATOL)
    assert g.cutoff.equals(f.cutoff) and g.n_seen_.equals(f.n_seen_)


def test_array_fast_path_rejects_bad_input_and_changes_nothing():
    f = AarenForecaster(**TINY).fit(_panel({"a": 50, "b": 50}))
    before = _snapshot(f)
    cases = [
        (np.zeros((3, 1)), None, "shape"),
        (np.zeros((1, 1)), ["zz"], "unknown series 'zz'"),
        (np.zeros((2, 1)), ["a", "a"], "repeats"),
        (np.array([[1.0], [np.inf]]), None, "series 'b' holds an infinite value"),
    ]
    for values, ids, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            f.partial_update_array(values, series_ids=ids)
    _assert_same_snapshot(before, _snapshot(f))


def test_sktime_update_on_a_panel_equals_partial_update():
    full = _panel({"a": 70, "b": 60})
    f = AarenForecaster(**TINY).fit(full.groupby(level=0).head(40))
    g = copy.deepcopy(f)
    new = pd.concat({k: _series(full, k).iloc[40:] for k in ["a", "b"]}, names=["series"])
    f.update(new, update_params=False)
    g.partial_update(new)
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), g.predict(fh=[1, 2]))
    assert f.cutoff.equals(g.cutoff)
    tuned = copy.deepcopy(g)
    weights = copy.deepcopy(tuned.net_.module_.state_dict())
    tuned.update(_panel({"a": 5}, starts={"a": 70}, seed=9), update_params=True)
    assert any(not torch.equal(v, weights[k]) for k, v in tuned.net_.module_.state_dict().items())
