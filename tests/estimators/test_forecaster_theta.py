"""AarenForecaster(combination="theta" / "theta_ets"): the partner's streams beside the network's, on every
path."""

from __future__ import annotations

import copy
import functools
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster
from aaren_ts.engine.forecast import ForecastEngine
from aaren_ts.statistical.ets import ETSStreams
from aaren_ts.statistical.partner import PartnerStreams
from aaren_ts.statistical.theta import ThetaStreams
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "max_epochs": 2,
    "horizon": 4,
    "sp": 4,
}


def _panel(n_series: int = 16, length: int = 48, seed: int = 0) -> pd.DataFrame:
    """Short positive series with a trend, a season of 4 and noise: what the Theta method forecasts well
    and a network trained for two epochs does not."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    frames = {}
    for k in range(n_series):
        pattern = rng.normal(scale=0.15, size=4)
        log_values = 5.0 + rng.uniform(0.005, 0.02) * t + (pattern - pattern.mean())[t % 4]
        frames[f"s{k}"] = pd.DataFrame({"y": np.exp(log_values + 0.03 * rng.normal(size=length))}, index=t)
    return pd.concat(frames, names=["series", "time"])


#: The exponential smoothing streams each combination's fit started (at the series' first steps).
_STARTS: dict[str, ETSStreams | None] = {}


@functools.cache
def _fit(combination: str) -> AarenForecaster:
    """A forecaster fitted with ``combination`` on the first 40 steps of the panel, the exponential
    smoothing streams it handed its engine kept in :data:`_STARTS`."""
    use_theta = ForecastEngine.use_theta

    def spy(engine, alpha, season, weight, ets=None):
        _STARTS[combination] = copy.deepcopy(ets)
        use_theta(engine, alpha, season, weight, ets=ets)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ForecastEngine, "use_theta", spy)
        return AarenForecaster(**TINY, combination=combination).fit(_panel().groupby(level=0).head(40))


@pytest.fixture(scope="module", params=["theta", "theta_ets"])
def fitted(request) -> AarenForecaster:
    return _fit(request.param)


def _model_values(forecaster: AarenForecaster, y: pd.DataFrame) -> list[np.ndarray]:
    """Each series' values on the network's scale (logarithms where the forecaster chose them)."""
    log = forecaster.engine_.log_target[:, 0]
    return [
        np.log(part.to_numpy()[:, 0]) if log[k] else part.to_numpy()[:, 0]
        for k, (_, part) in enumerate(y.groupby(level=0, sort=False))
    ]


def _reference_theta(forecaster: AarenForecaster, y: pd.DataFrame) -> PartnerStreams:
    """Fresh streams with the forecaster's partner's parameters (and exponential smoothing's starting
    state) fed every value of ``y`` at once."""
    theta = forecaster.engine_.theta.theta
    ets = _STARTS[forecaster.combination]
    assert (ets is None) == (forecaster.combination == "theta")
    streams = PartnerStreams(ThetaStreams.empty(theta.alpha, theta.season), copy.deepcopy(ets))
    values = _model_values(forecaster, y)
    for t in range(max(map(len, values))):
        rows = np.array([k for k, v in enumerate(values) if t < len(v)])
        streams.update(np.array([values[k][t] for k in rows]), rows)
    return streams


def test_the_theta_method_earns_a_weight_and_the_forecast_is_the_weighted_mean(fitted):
    engine = fitted.engine_
    assert (engine.theta_weight < 1.0).any()  # trend and season: the Theta method helps the tiny network
    rows = np.arange(len(engine))
    network = engine._original_units(engine.forecast, rows)
    theta = _reference_theta(fitted, _panel().groupby(level=0).head(40)).forecast(4)
    w = engine.theta_weight
    expected = w[:, None, :] * network + (1.0 - w[:, None, :]) * theta[:, :, None]
    np.testing.assert_allclose(engine.predict(), expected, rtol=1e-12, atol=1e-12)
    log = engine.log_target[:, 0]
    predicted = fitted.predict(fh=[1, 2, 3, 4]).to_numpy().reshape(len(rows), 4)
    mapped = np.where(log[:, None], np.exp(expected[..., 0]), expected[..., 0])
    np.testing.assert_allclose(predicted, mapped, rtol=1e-9)
    # the interval moves with the point forecast: its centre (on the network's scale) shifts alike
    bounds = engine.one_sigma_bounds()
    shift = expected - network
    plain = copy.deepcopy(engine)
    plain.theta_weight[:] = 1.0
    np.testing.assert_allclose(bounds, plain.one_sigma_bounds() + shift[:, None], rtol=1e-9, atol=1e-9)


def test_updates_advance_the_theta_streams_exactly(fitted):
    whole = _panel()
    chunked, stepped = copy.deepcopy(fitted), copy.deepcopy(fitted)
    chunked.update(whole.groupby(level=0).tail(8), update_params=False)
    for step in range(40, 48):
        new = whole[whole.index.get_level_values(1) == step]
        stepped.update(new, update_params=False)
    reference = _reference_theta(fitted, whole)
    for forecaster in (chunked, stepped):
        advanced = forecaster.engine_.theta.arrays()
        assert sorted(advanced) == sorted(reference.arrays())
        for name, value in reference.arrays().items():
            np.testing.assert_allclose(advanced[name], value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        chunked.predict(fh=[1, 2]).to_numpy(), stepped.predict(fh=[1, 2]).to_numpy(), rtol=1e-6
    )


def test_a_saved_forecaster_keeps_its_theta_streams_and_a_corrupted_one_is_refused(fitted, tmp_path):
    saved = fitted.save(tmp_path / "model")
    loaded = AarenForecaster.load(saved)
    np.testing.assert_array_equal(loaded.predict(fh=[1, 2, 3]), fitted.predict(fh=[1, 2, 3]))
    np.testing.assert_array_equal(loaded.engine_.theta_weight, fitted.engine_.theta_weight)

    def rewrite(edit, name):
        with zipfile.ZipFile(saved) as archive:
            entries = {entry: archive.read(entry) for entry in archive.namelist()}
        payload_name = next(entry for entry in entries if entry != "_metadata")
        payload = torch.load(io.BytesIO(entries[payload_name]), weights_only=True)
        edit(payload["attributes"]["theta"])
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        entries[payload_name] = buffer.getvalue()
        target = tmp_path / f"{name}.zip"
        with zipfile.ZipFile(target, "w") as archive:
            for entry, data in entries.items():
                archive.writestr(entry, data)
        return target

    def alpha_out_of_range(theta):
        theta["alpha"] = torch.full_like(theta["alpha"], 1.5)

    def weight_above_one(theta):
        theta["weight"] = torch.full_like(theta["weight"], 2.0)

    def level_lost(theta):
        theta["level"] = torch.full_like(theta["level"], float("nan"))

    def clock_moved(theta):
        theta["clock"] = theta["clock"] + 1

    edits = [alpha_out_of_range, weight_above_one, level_lost, clock_moved]
    if fitted.combination == "theta_ets":

        def damping_above_one(theta):
            theta["ets_phi"] = torch.full_like(theta["ets_phi"], 1.5)

        def smoothing_clock_moved(theta):
            theta["ets_clock"] = theta["ets_clock"] + 1

        edits += [damping_above_one, smoothing_clock_moved]
    for edit in edits:
        with pytest.raises(ValueError, match=r"Theta|exponential smoothing"):
            AarenForecaster.load(rewrite(edit, edit.__name__))


def test_what_the_combination_does_not_cover_is_refused_clearly():
    single = AarenForecaster(**TINY, combination="theta").fit(_panel(n_series=1).droplevel(0))
    assert single.engine_.theta is None  # one series: no spread across series to judge a weight by
    single.engine_.theta = PartnerStreams(
        ThetaStreams.empty(np.array([0.5]), np.zeros((1, 4)))
    )  # as if combined
    single.engine_.theta_weight[:] = 0.5
    with pytest.raises(ValueError, match="Theta"):
        single.predict_windows(np.ones((2, 12)))
    y = _panel(n_series=2)
    X = pd.DataFrame({"x": np.arange(len(y), dtype=float)}, index=y.index)
    for combination in ("theta", "theta_ets"):
        with pytest.raises(ValueError, match=f"combination='{combination}' takes series without covariates"):
            AarenForecaster(**TINY, combination=combination).fit(y, X=X, fh=[1, 2, 3, 4])


def test_without_the_combination_there_are_no_theta_streams():
    forecaster = AarenForecaster(**TINY, combination=None).fit(_panel(n_series=3))
    assert forecaster.engine_.theta is None
    assert (forecaster.engine_.theta_weight == 1.0).all()
    y = _panel(n_series=3)
    X = pd.DataFrame({"x": np.arange(len(y), dtype=float)}, index=y.index)
    with_covariates = AarenForecaster(**TINY, past_covariates=["x"]).fit(y, X=X)  # "auto": the network alone
    assert with_covariates.engine_.theta is None


def test_auto_combines_series_without_covariates_with_the_theta_method():
    auto = AarenForecaster(**TINY).fit(_panel().groupby(level=0).head(40))
    theta = _fit("theta")
    assert auto.engine_.theta.ets is None
    np.testing.assert_array_equal(auto.engine_.theta_weight, theta.engine_.theta_weight)
    np.testing.assert_array_equal(auto.predict(fh=[1, 2]), theta.predict(fh=[1, 2]))


@pytest.mark.slow
def test_the_onnx_streamer_combines_as_the_estimator_and_checks_the_theta_state(fitted, tmp_path):
    pytest.importorskip("onnxruntime", reason='the "onnx" extra (onnxruntime) is not installed')
    pytest.importorskip(
        "onnxscript", reason='the "onnx" extra (onnxscript, for the exporter) is not installed'
    )
    from aaren_ts.onnx import OnnxStreamer

    estimator = copy.deepcopy(fitted)
    streamer = OnnxStreamer(estimator.to_onnx(tmp_path / "theta.onnx"))
    np.testing.assert_allclose(streamer.predict(), estimator.predict_array(), rtol=1e-9)
    future = _panel(length=60).groupby(level=0).tail(20).to_numpy().reshape(16, 20, 1)
    for t in range(20):
        estimator.partial_update_array(future[:, t])
        streamer.partial_update(future[:, t])
    np.testing.assert_allclose(streamer.predict(), estimator.predict_array(), rtol=1e-5)
    quantiles = [0.05, 0.5, 0.95]
    np.testing.assert_allclose(
        streamer.predict_quantiles(quantiles), estimator.predict_quantiles_array(quantiles), rtol=1e-5
    )
    streamer.save_state(tmp_path / "state")
    restored = OnnxStreamer(tmp_path / "theta.onnx").load_state(tmp_path / "state.npz")
    np.testing.assert_array_equal(restored.predict(), streamer.predict())
    state = streamer.state()
    edits = [
        ("theta.level", lambda a: np.full_like(a, np.nan)),
        ("theta.alpha", lambda a: a * 0.5),
        ("theta.clock", lambda a: a + 1),
    ]
    if fitted.combination == "theta_ets":
        edits += [
            ("theta.ets_level", lambda a: np.full_like(a, np.inf)),
            ("theta.ets_phi", lambda a: a * 0.5),
            ("theta.ets_clock", lambda a: a + 1),
        ]
    for name, edit in edits:
        np.savez(tmp_path / "bad.npz", **{**state, name: edit(state[name])}, __n_seen__=np.asarray(20))
        with pytest.raises(ValueError, match="theta"):
            OnnxStreamer(tmp_path / "theta.onnx").load_state(tmp_path / "bad.npz")


def test_stream_forecasts_combine_as_the_advanced_stream_does(fitted):
    engine = copy.deepcopy(fitted.engine_)
    row = int(np.flatnonzero(engine.theta_weight[:, 0] < 1.0)[0])  # a combined series
    values = _model_values(fitted, _panel().groupby(level=0).tail(8))[row][:, None]  # model units
    ahead = engine.stream_forecasts(row, values)  # (8, horizon, 1), the stream left as it was
    engine.advance(np.array([row]), values[None])
    np.testing.assert_allclose(ahead[-1], engine.predict(np.array([row]))[0], rtol=1e-6)


def test_a_series_joining_after_fit_forecasts_without_the_combination(fitted):
    estimator = copy.deepcopy(fitted)
    before = estimator.engine_.predict()
    newcomer = _panel(n_series=1, seed=5).rename(index={"s0": "late"}, level=0)
    estimator.partial_update(newcomer)
    engine = estimator.engine_
    row = engine.row_of["late"]
    assert engine.theta_weight[row].tolist() == [1.0]
    np.testing.assert_array_equal(engine.predict()[row], engine.predict(combined=False)[row])
    np.testing.assert_array_equal(engine.predict()[: len(before)], before)  # the others as they were
    assert engine.theta.clock[row] == len(newcomer)  # (its Theta stream still keeps time)
