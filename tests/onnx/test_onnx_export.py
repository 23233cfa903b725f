"""ONNX export of the streaming step and the torch-free OnnxStreamer, against the estimators' own streams."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
pytest.importorskip("onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed')

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.nn.linear_blend import blend_linear, fit_linear_map
from aaren_ts.onnx import OnnxStreamer

TINY = {
    "n_estimators": 1,  # one network (the ensemble's own tests: test_forecaster_ensemble.py)
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 2,
    "d_ff": 32,
    "context_length": 8,
    "max_epochs": 2,
    "batch_size": 8,
    "horizon": 6,
    "device": "cpu",
    "random_state": 0,
    "target_transform": None,  # the streaming machinery on the series' own scale (log scale: its own file)
}
N_STEPS = 1000
TOL = 1e-5  # in each series' standardised units (the forecaster) or in probability (the classifier)
QUANTILES = [0.01, 0.05, 0.1, 0.25, 0.5, 0.7, 0.9, 0.975, 0.995]


def _seasonal(n: int, phase: float, rng: np.random.Generator, level: float = 50.0) -> np.ndarray:
    t = np.arange(n)
    return level + 10 * np.sin(2 * np.pi * (t + phase) / 12) + rng.normal(0, 1.0, n).cumsum() * 0.3


def _panel(n_series: int, seed: int = 0) -> pd.DataFrame:
    """Series of different lengths (some shorter than the window) and levels, two with gaps at the end."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_series):
        n = [5, 40, 120][k % 3]
        values = _seasonal(n, k, rng, level=20.0 + k)
        if k % 7 == 1:
            values[-3:-1] = np.nan  # carried values in the window history at export time
        index = pd.MultiIndex.from_arrays([[f"s{k}"] * n, np.arange(n)], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
    return pd.concat(frames)


def _future(n_streams: int, n_channels: int, seed: int = 1, levels: np.ndarray | float = 50.0) -> np.ndarray:
    """``(n_streams, N_STEPS, n_channels)`` observations continuing series at ``levels`` (per stream)."""
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0, 12, (n_streams, 1, n_channels))
    t = np.arange(N_STEPS)[None, :, None]
    noise = rng.normal(0, 1.0, (n_streams, N_STEPS, n_channels)).cumsum(axis=1) * 0.3
    level = np.broadcast_to(np.asarray(levels, dtype=np.float64), (n_streams,))[:, None, None]
    return level + 10 * np.sin(2 * np.pi * (t + phases) / 12) + noise


def _stream_both(est: AarenForecaster, streamer: OnnxStreamer, future: np.ndarray, single: bool) -> dict:
    """Feed ``future`` ``(streams, steps, channels)`` to both, one step per call; the largest gaps.

    With online calibration, each observation moves a level by the calibration rate depending on
    whether it fell outside an interval: a threshold decision, which two float32 computations of the
    same forecast can take differently when the observation lands within round-off of the interval's
    edge (about once in millions of decisions). Such a stream's intervals then differ by a rate's step
    for a while; the quantiles are compared on the streams whose levels agree, and the disagreeing
    level cells are counted (and bounded by the test).
    """
    scale = est.engine_.scale[:, None, : est.n_channels_]
    calibration = est.engine_.calibration
    worst = {"loc": 0.0, "quantiles": 0.0, "levels_differing": 0.0, "level_gap_in_rates": 0.0}
    for t in range(future.shape[1]):
        step = future[:, t]
        est.partial_update_array(step)
        streamer.partial_update(step if not single else step[:, None, :][0])
        if t % 97 and t != future.shape[1] - 1:
            continue
        mine, theirs = streamer.predict(), est.predict_array()
        mine = mine[None] if single else mine
        worst["loc"] = max(worst["loc"], float(np.abs((mine - theirs) / scale).max()))
        agree = np.ones(len(theirs), dtype=bool)
        if calibration is not None:
            gap = np.abs(streamer.state()["levels"] - calibration.levels.numpy())
            differing = gap > 1e-6
            agree = ~differing.any(axis=(1, 2, 3))
            worst["levels_differing"] = max(worst["levels_differing"], float(differing.mean()))
            worst["level_gap_in_rates"] = max(worst["level_gap_in_rates"], float(gap.max()) / 0.005)
        q_mine = streamer.predict_quantiles(QUANTILES)
        q_mine = q_mine[None] if single else q_mine
        q_theirs = est.predict_quantiles_array(QUANTILES)
        gap = np.abs((q_mine - q_theirs) / scale[..., None])[agree]
        worst["quantiles"] = max(worst["quantiles"], float(gap.max()))
    return worst


def _assert_close(worst: dict) -> None:
    assert worst["loc"] < TOL and worst["quantiles"] < TOL, worst
    # at most one level cell in a thousand took a round-off-different decision, by a step or two
    assert worst["levels_differing"] <= 1e-3 and worst["level_gap_in_rates"] <= 2.01, worst


@pytest.fixture(scope="module")
def single_series() -> pd.Series:
    rng = np.random.default_rng(0)
    return pd.Series(_seasonal(300, 0.0, rng), index=pd.period_range("2000-01", periods=300, freq="M"))


@pytest.mark.parametrize("calibration", ["aci", None])
def test_single_series_streams_as_the_estimator(single_series, calibration, tmp_path):
    est = AarenForecaster(**TINY, interval_calibration=calibration).fit(single_series)
    path = est.to_onnx(tmp_path / "model.onnx")
    streamer = OnnxStreamer(path)
    assert streamer.kind == "forecaster" and streamer.n_streams == 1
    assert streamer.predict().shape == (TINY["horizon"], 1)
    np.testing.assert_allclose(streamer.predict(), est.predict_array()[0], rtol=0, atol=1e-9)
    _assert_close(_stream_both(est, streamer, _future(1, 1), single=True))
    lower, upper = streamer.predict_interval(0.9)
    fh = np.arange(1, TINY["horizon"] + 1)
    interval = est.predict_interval(fh=fh, coverage=0.9).to_numpy()
    np.testing.assert_allclose(lower[:, 0], interval[:, 0], rtol=1e-6)
    np.testing.assert_allclose(upper[:, 0], interval[:, 1], rtol=1e-6)
    np.testing.assert_allclose(
        streamer.predict_var()[:, 0], est.predict_var(fh=fh).to_numpy()[:, 0], rtol=1e-5
    )


@pytest.mark.parametrize("calibration", [pytest.param("aci", marks=pytest.mark.slow), None])
def test_quantile_head_streams_as_the_estimator(single_series, calibration, tmp_path):
    est = AarenForecaster(**TINY, interval_calibration=calibration, distribution="quantile")
    est.fit(single_series)
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "quantile.onnx"))
    assert streamer.spec.distribution == "quantile"
    _assert_close(_stream_both(est, streamer, _future(1, 1), single=True))
    fh = np.arange(1, TINY["horizon"] + 1)
    np.testing.assert_allclose(
        streamer.predict_var()[:, 0], est.predict_var(fh=fh).to_numpy()[:, 0], rtol=1e-5
    )


@pytest.mark.parametrize("calibration", [pytest.param("aci", marks=pytest.mark.slow), None])
def test_256_streams_with_ragged_starts_and_gaps_stream_as_the_estimator(calibration, tmp_path):
    y = _panel(256)
    est = AarenForecaster(**{**TINY, "max_epochs": 1}, interval_calibration=calibration).fit(y)
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "panel.onnx"))
    assert streamer.n_streams == 256 and streamer.series_ids == [f"s{k}" for k in range(256)]
    np.testing.assert_allclose(streamer.predict(), est.predict_array(), rtol=0, atol=1e-9)
    _assert_close(_stream_both(est, streamer, _future(256, 1, levels=20.0 + np.arange(256)), single=False))


def test_multivariate_channel_dependent_tokens(tmp_path):
    rng = np.random.default_rng(3)
    values = np.stack([_seasonal(200, 0, rng), _seasonal(200, 3, rng, level=5.0)], axis=1)
    y = pd.DataFrame(values, columns=["a", "b"])
    est = AarenForecaster(**TINY, channel_independent=False, local_norm="standard").fit(y)
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "mv.onnx"))
    assert streamer.predict().shape == (TINY["horizon"], 2)
    future = _future(1, 2)[:, :300]
    scale = est.engine_.scale[0, :2]
    for t in range(future.shape[1]):
        est.partial_update_array(future[:, t])
        streamer.partial_update(future[0, t : t + 1])
    assert np.abs((streamer.predict() - est.predict_array()[0]) / scale).max() < TOL


def _driven_series(n: int, seed: int = 4) -> tuple[pd.Series, pd.DataFrame]:
    """A series driven by a known input and by a past-only one (with an effect one step later)."""
    rng = np.random.default_rng(seed)
    known = np.sin(2 * np.pi * np.arange(n) / 9) + rng.normal(0, 0.2, n)
    past = rng.normal(0, 1, n).cumsum() * 0.1
    values = 40 + 6 * known + 3 * np.roll(past, 1) + rng.normal(0, 0.5, n).cumsum() * 0.2
    index = pd.RangeIndex(n)
    return pd.Series(values, index=index), pd.DataFrame({"past": past, "known": known}, index=index)


@pytest.mark.parametrize("calibration", [pytest.param("aci", marks=pytest.mark.slow), None])
def test_covariates_stream_as_the_estimator(calibration, tmp_path):
    n_fit, horizon = 400, TINY["horizon"]
    y, X = _driven_series(n_fit + N_STEPS + horizon)
    est = AarenForecaster(**TINY, past_covariates=["past"], interval_calibration=calibration)
    est.fit(y[:n_fit], X=X[:n_fit])
    columns = list(est.exog_columns_)
    assert columns == ["known", "past"]  # future-known first
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "x.onnx"))
    assert streamer.spec.exog_columns == columns and streamer.spec.n_future == 1
    values, exog = y.to_numpy()[:, None], X[columns].to_numpy()
    scale = est.engine_.scale[0, 0]
    worst = 0.0
    for t in range(n_fit, n_fit + N_STEPS):
        est.partial_update_array(values[None, t], X=exog[None, t])
        streamer.partial_update(values[t : t + 1], X=exog[t : t + 1])
        if t % 97 == 0:
            future = exog[t + 1 : t + 1 + horizon, :1]
            mine = streamer.predict_quantiles(QUANTILES, X=future)
            theirs = est.predict_quantiles_array(QUANTILES, X=future[None])[0]
            worst = max(worst, float(np.abs((mine - theirs) / scale).max()))
            gap = np.abs((streamer.predict(X=future) - est.predict_array(X=future[None])[0]) / scale).max()
            worst = max(worst, float(gap))
    assert worst < TOL
    with pytest.raises(ValueError, match="X is required"):
        streamer.predict()
    with pytest.raises(ValueError, match="X is required"):
        streamer.partial_update(values[:1])
    with pytest.raises(ValueError, match=r"X must have shape \(1, 2\)|X must have shape"):
        streamer.partial_update(values[:1], X=exog[:1, :1])


@pytest.mark.parametrize(
    ("readout", "n_random_features", "n_estimators", "position_frequencies"),
    # ("auto": the step's position in the network alone, none beside the kernels)
    [
        pytest.param(*("mean", 10_000, 2, "auto"), marks=pytest.mark.slow),
        pytest.param(*("last", 10_000, 1, 4), marks=pytest.mark.slow),
        pytest.param(*("attention", 10_000, 1, "auto"), marks=pytest.mark.slow),
        ("mean", 0, 1, "auto"),
        ("mean", 840, 1, "auto"),  # (the kernels, fewer of them, in the quick tier)
    ],
)
def test_classifier_streams_as_the_estimator(
    readout, n_random_features, n_estimators, position_frequencies, tmp_path
):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3, 30)).cumsum(axis=2)
    y = np.where(X[:, 0, -1] > 0, "up", "down")
    fitted = AarenClassifier(
        d_model=16, n_heads=2, n_layers=2, d_ff=32, max_epochs=2, readout=readout,
        n_random_features=n_random_features, n_estimators=n_estimators,
        position_frequencies=position_frequencies, random_state=0,
    ).fit(X, y)  # fmt: skip
    path = fitted.to_onnx(tmp_path / "clf.onnx")
    # one stream for the long run; many for two chunks (the batched path, across a chunk's end); each
    # from the fitted model (a copy of the estimator, a new streamer)
    for n_streams, n_steps in ((1, N_STEPS), (64, 250)):
        est, streamer = copy.deepcopy(fitted), OnnxStreamer(path)
        assert streamer.kind == "classifier" and list(streamer.classes_) == list(est.classes_)
        stream = rng.normal(size=(n_streams, 3, n_steps)).cumsum(axis=2) * 0.2
        worst = 0.0
        for start in range(0, n_steps, 125):
            chunk = stream[:, :, start : start + 125]
            est.partial_update(chunk)
            streamer.partial_update(chunk)
            worst = max(worst, float(np.abs(streamer.predict_proba() - est.predict_proba()).max()))
        # The random kernels compare float32 responses with thresholds: where ONNX Runtime's convolution
        # rounds a response to the other side of a threshold than PyTorch's, one indicator of that step
        # differs (a few in a million), which moves the probabilities by up to a few 1e-5.
        assert worst < (TOL if n_random_features == 0 else 1e-4), n_streams
        assert streamer.n_seen == n_steps
        assert est.n_streams_ == n_streams
        np.testing.assert_array_equal(streamer.predict(), est.predict())


@pytest.fixture(scope="module")
def exported_classifier(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """A classifier with the default kernels and ensemble (a tiny network), its file and training series."""
    X = np.random.default_rng(0).normal(size=(20, 2, 10))
    clf = AarenClassifier(d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=1, random_state=0)
    return clf.fit(X, np.arange(20) % 2).to_onnx(tmp_path_factory.mktemp("onnx") / "clf.onnx"), X


def test_the_streamer_imports_neither_torch_nor_the_estimators(exported_forecaster, tmp_path):
    est, path = exported_forecaster
    expected = est.predict_array()[0]
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        from aaren_ts.onnx import OnnxStreamer
        streamer = OnnxStreamer({str(path)!r})
        forecast = streamer.predict()
        streamer.partial_update(np.array([[51.0], [49.5]]))
        streamer.predict_interval(0.8)
        np.save(sys.argv[1], forecast)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sktime", "skorch", "sklearn"))
        assert not heavy, heavy
        """
    )
    out = tmp_path / "forecast.npy"
    result = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)


@pytest.fixture(scope="module")
def exported_forecaster(single_series, tmp_path_factory) -> tuple[AarenForecaster, Path]:
    """A forecaster fitted on ``single_series`` and its file (tests stream new streamers, not it)."""
    est = AarenForecaster(**TINY).fit(single_series)
    return est, est.to_onnx(tmp_path_factory.mktemp("onnx") / "model.onnx")


@pytest.fixture(scope="module")
def exported(exported_forecaster) -> Path:
    return exported_forecaster[1]


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (np.ones((3, 2)), ValueError, r"shape \(n_steps, 1\)"),
        (np.ones((1, 2, 3, 1)), ValueError, "shape"),
        (np.array([["a"]]), TypeError, "real numbers"),
        (np.array([[1.0], [np.nan]]), ValueError, "non-finite"),
        (np.array([[np.inf]]), ValueError, "non-finite"),
    ],
)
def test_bad_input_to_the_forecaster_streamer_leaves_its_state(exported, values, error, match):
    streamer = OnnxStreamer(exported)
    streamer.partial_update(np.array([[50.0]]))
    before = streamer.state()
    with pytest.raises(error, match=match):
        streamer.partial_update(values)
    after = streamer.state()
    assert before.keys() == after.keys() and streamer.n_seen == 1
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def test_bad_input_to_the_classifier_streamer_leaves_its_state(exported_classifier):
    path, X = exported_classifier
    streamer = OnnxStreamer(path)
    with pytest.raises(ValueError, match="no ongoing streams"):
        streamer.predict_proba()
    streamer.partial_update(X[:4, :, :5])
    before = streamer.state()
    bad = X[:4, :, 5:].copy()
    bad[2, 1, 3] = np.nan
    for values, match in [
        (X[:3, :, 5:], "3 streams but 4 are ongoing"),
        (X[:4, :1, 5:], r"shape \(n_streams, 2, n_steps >= 1\)"),
        (X[:4, :, :0], r"n_steps >= 1"),
        (bad, r"non-finite value .* at index \[2, 1, 3\]"),
        (X[:4, :, 5:].astype(complex), "real numbers"),
    ]:
        with pytest.raises((ValueError, TypeError), match=match):
            streamer.partial_update(values)
    after = streamer.state()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    assert streamer.n_seen == 5
    streamer.reset()
    with pytest.raises(ValueError, match="no ongoing streams"):
        streamer.predict_proba()


def test_reset_goes_back_to_the_exported_streams(exported):
    streamer = OnnxStreamer(exported)
    first = streamer.predict()
    streamer.partial_update(np.array([[80.0], [90.0]]))
    assert not np.allclose(streamer.predict(), first)
    np.testing.assert_array_equal(streamer.reset().predict(), first)
    assert streamer.n_seen == 0


def test_what_cannot_be_exported_says_why(single_series, exported_classifier, tmp_path):
    transformer = AarenForecaster(**{**TINY, "backbone": "transformer"}).fit(single_series)
    with pytest.raises(ValueError, match="only the Aaren backbone"):
        transformer.to_onnx(tmp_path / "t.onnx")
    with pytest.raises(AttributeError, match="forecaster's call"):
        OnnxStreamer(exported_classifier[0]).predict_interval()


def test_a_foreign_onnx_file_is_refused(exported, tmp_path):
    import onnx

    model = onnx.load(exported)
    del model.metadata_props[:]
    onnx.save(model, tmp_path / "foreign.onnx")
    with pytest.raises(ValueError, match="not written by aaren_ts"):
        OnnxStreamer(tmp_path / "foreign.onnx")


def test_missing_runtime_names_the_extra(exported, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"aaren_ts\[onnx\]"):
        OnnxStreamer(exported)


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"local_norm": "last"}, id="last"),
        pytest.param({"local_norm": "mean"}, id="mean", marks=pytest.mark.slow),
        pytest.param({"local_norm": None}, id="no-local-norm", marks=pytest.mark.slow),
        pytest.param({"sp": 4}, id="seasonal-skip", marks=pytest.mark.slow),
        pytest.param({"n_estimators": 2}, id="ensemble"),
        pytest.param(
            {"n_estimators": 2, "blend_linear": 0.4, "target_transform": None},
            id="linear-share",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_model_variants_stream_as_the_estimator(params, tmp_path):
    rng = np.random.default_rng(5)
    t = np.arange(300)
    y = pd.DataFrame({"a": 20 + 5 * np.sin(t / 5) + rng.normal(0, 0.5, 300), "b": 3 + np.cos(t / 7)})
    params = dict(params)
    share = params.pop("blend_linear", 0.0)
    est = AarenForecaster(**{**TINY, "max_epochs": 1, **params}).fit(y.iloc[:250])
    if share:  # a linear map folded into the networks, as the linear_share step does
        scaled = [((y.to_numpy()[:250] - est.mean_) / est.scale_).astype(np.float32)]
        blend_linear(est.net_.module_, fit_linear_map(est.net_.module_, scaled, [250]), share)
    streamer = OnnxStreamer(est.to_onnx(tmp_path / "variant.onnx"))
    for k in range(250, 300):
        est.partial_update_array(y.to_numpy()[None, k])
        streamer.partial_update(y.to_numpy()[k : k + 1])
    gap = np.abs((streamer.predict() - est.predict_array()[0]) / est.engine_.scale[0]).max()
    assert gap < TOL


def test_saved_streams_continue_in_another_streamer(exported, tmp_path):
    streamer = OnnxStreamer(exported)
    streamer.partial_update(np.array([[50.0], [52.0], [49.0]]))
    streamer.save_state(tmp_path / "streams.npz")
    restored = OnnxStreamer(exported).load_state(tmp_path / "streams.npz")
    assert restored.n_seen == 3
    np.testing.assert_array_equal(restored.predict(), streamer.predict())
    for s in (streamer, restored):
        s.partial_update(np.array([[55.0]]))
    np.testing.assert_array_equal(restored.predict(), streamer.predict())
    np.testing.assert_array_equal(restored.predict_interval(0.8)[1], streamer.predict_interval(0.8)[1])


def test_a_state_saved_without_the_suffix_loads_by_the_same_path(exported, tmp_path):
    streamer = OnnxStreamer(exported)
    streamer.partial_update(np.array([[50.0], [52.0]]))
    streamer.save_state(tmp_path / "streams")  # written as streams.npz, as numpy.savez does
    assert (tmp_path / "streams.npz").exists()
    restored = OnnxStreamer(exported).load_state(tmp_path / "streams")
    np.testing.assert_array_equal(restored.predict(), streamer.predict())


def test_a_state_of_another_model_is_refused_and_changes_nothing(exported, exported_classifier, tmp_path):
    clf_file, X = exported_classifier
    clf_streamer = OnnxStreamer(clf_file)
    with pytest.raises(ValueError, match="no streams to save"):
        clf_streamer.save_state(tmp_path / "none.npz")
    clf_streamer.partial_update(X[:3])
    clf_streamer.save_state(tmp_path / "clf.npz")
    np.testing.assert_array_equal(
        OnnxStreamer(clf_file).load_state(tmp_path / "clf.npz").predict_proba(),
        clf_streamer.predict_proba(),
    )
    streamer = OnnxStreamer(exported)
    before = streamer.state()
    with pytest.raises(ValueError, match="not a saved state of this model"):
        streamer.load_state(tmp_path / "clf.npz")
    after = streamer.state()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])
