"""AarenForecaster: streaming exactness, bad input, index types, persistence, reproducibility, quality."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from skorch.callbacks import Callback
from sktime.forecasting.base import ForecastingHorizon
from sktime.forecasting.naive import NaiveForecaster

from aaren_ts import AarenForecaster
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "n_estimators": 1,  # one network (the ensemble's own tests: test_forecaster_ensemble.py)
    "context_length": 6,
    "max_epochs": 2,
    "batch_size": 4,
}


def _series(n: int = 80, n_columns: int = 2, index: str = "datetime", seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    values = np.stack(
        [10 + 3 * np.sin(2 * np.pi * t / (8 + 3 * c)) + rng.normal(0, 0.3, n) for c in range(n_columns)], 1
    )
    if index == "datetime":
        idx = pd.date_range("2021-01-01", periods=n, freq="h")
    elif index == "period":
        idx = pd.period_range("2000-01", periods=n, freq="M")
    else:
        idx = pd.RangeIndex(n)
    return pd.DataFrame(values, index=idx, columns=[f"c{i}" for i in range(n_columns)])


def _stream_snapshot(f: AarenForecaster) -> tuple[list[torch.Tensor], pd.Index, int]:
    return f.stream_state_tensors(), f.cutoff.copy(), f.n_seen_


def _assert_same_snapshot(a, b) -> None:
    tensors_a, cutoff_a, seen_a = a
    tensors_b, cutoff_b, seen_b = b
    assert len(tensors_a) == len(tensors_b)
    for x, y in zip(tensors_a, tensors_b, strict=True):
        assert torch.equal(x, y)
    assert cutoff_a.equals(cutoff_b)
    assert seen_a == seen_b


@pytest.mark.parametrize(
    ("backbone", "channel_independent", "local_norm"),
    [
        ("aaren", True, "last"),
        ("aaren", False, "mean"),
        ("aaren", False, "standard"),
        ("aaren", True, "standard"),
        ("transformer", True, None),
    ],
)
def test_partial_update_equals_encoding_whole_series(backbone, channel_independent, local_norm):
    y = _series(150, n_columns=3)
    f = AarenForecaster(
        **TINY,
        horizon=5,
        backbone=backbone,
        channel_independent=channel_independent,
        local_norm=local_norm,
    ).fit(y[:60])
    if channel_independent:  # each channel's embedding: trained away from its zero start, and its own
        emb = f.net_.module_.channel_embedding.detach()
        assert emb.abs().max() > 0 and not torch.equal(emb[0], emb[1])
    for start, stop in [(60, 61), (61, 100), (100, 150)]:
        f.partial_update(y[start:stop])
    streamed = f.predict(fh=[1, 2, 3, 4, 5]).to_numpy()
    whole = f.predict_windows(y.to_numpy()[None])[0]
    np.testing.assert_allclose(streamed, whole, rtol=1e-5, atol=1e-5 * np.abs(whole).max())
    assert f.n_seen_ == 150
    assert f.cutoff[0] == y.index[-1]


def test_update_skips_already_seen_rows_and_matches_partial_update():
    y = _series(100)
    a = AarenForecaster(**TINY, horizon=3).fit(y[:50])
    b = pickle.loads(pickle.dumps(a))
    a.partial_update(y[50:70])
    b.update(y[:70], update_params=False)  # sktime's expanding-window style: overlaps what was seen
    pd.testing.assert_frame_equal(a.predict(fh=[1, 2, 3]), b.predict(fh=[1, 2, 3]))
    snapshot = _stream_snapshot(b)
    b.update(y[10:40], update_params=False)  # nothing new: no change, cutoff stays
    _assert_same_snapshot(snapshot, _stream_snapshot(b))


def test_aaren_stream_memory_is_constant_transformer_grows():
    y = _series(400)
    sizes = {}
    for backbone in ("aaren", "transformer"):
        f = AarenForecaster(**TINY, horizon=2, backbone=backbone).fit(y[:40])
        f.partial_update(y[40:50])
        small = sum(t.numel() for t in f.stream_state_tensors())
        f.partial_update(y[50:400])
        sizes[backbone] = (small, sum(t.numel() for t in f.stream_state_tensors()))
    assert sizes["aaren"][0] == sizes["aaren"][1]
    assert sizes["transformer"][1] > sizes["transformer"][0]


def test_no_history_is_stored():
    y = _series(2050)
    f = AarenForecaster(**TINY, horizon=2).fit(y[:50])
    before = len(pickle.dumps(f))
    f.partial_update(y[50:1050])
    f.update(y[1050:], update_params=False)
    # 2000 observations of 2 channels are 32 kB: neither the streams nor sktime kept them
    assert abs(len(pickle.dumps(f)) - before) < 512
    assert f.engine_.history.values.shape[1] == TINY["context_length"] - 1


def _bad_inputs(y: pd.DataFrame) -> dict[str, tuple[pd.DataFrame | object, str]]:
    inf = y[60:65].copy()
    inf.iloc[1, 1] = np.inf
    wrong_cols = y[60:65].rename(columns={"c1": "other"})
    extra_col = y[60:65].assign(c2=1.0)
    return {
        "inf": (inf, "infinite"),
        "wrong column names": (wrong_cols, "columns"),
        "wrong column count": (extra_col, "column"),
        "gap": (y[62:66], "gap"),
        "overlap": (y[58:64], "overlap"),
        "not pandas": (y[60:65].to_numpy(), "pandas"),
    }


@pytest.mark.parametrize(
    "case", ["inf", "wrong column names", "wrong column count", "gap", "overlap", "not pandas"]
)
def test_partial_update_bad_input_leaves_forecaster_untouched(case):
    y = _series(100)
    f = AarenForecaster(**TINY, horizon=3).fit(y[:60])
    before = _stream_snapshot(f)
    pred_before = f.predict(fh=[1, 2, 3])
    bad, pattern = _bad_inputs(y)[case]
    with pytest.raises((ValueError, TypeError), match=pattern):
        f.partial_update(bad)
    _assert_same_snapshot(before, _stream_snapshot(f))
    pd.testing.assert_frame_equal(pred_before, f.predict(fh=[1, 2, 3]))


@pytest.mark.parametrize("case", ["inf", "wrong column names", "wrong column count", "gap"])
def test_update_bad_input_leaves_forecaster_untouched(case):
    y = _series(100)
    f = AarenForecaster(**TINY, horizon=3).fit(y[:60])
    before = _stream_snapshot(f)
    bad, pattern = _bad_inputs(y)[case]
    with pytest.raises((ValueError, TypeError), match=pattern):
        f.update(bad, update_params=False)
    _assert_same_snapshot(before, _stream_snapshot(f))


@pytest.mark.parametrize("case", ["inf", "one value", "unordered"])
def test_bad_input_to_fit_leaves_fitted_forecaster(case):
    y = _series(100)
    f = AarenForecaster(**TINY, horizon=3).fit(y[:60])
    f.partial_update(y[60:62])
    before, cutoff = _stream_snapshot(f), f.cutoff
    pred_before = f.predict(fh=[1, 2, 3])
    bad, pattern = {
        "inf": _bad_inputs(y)["inf"],
        "one value": (y[:1], "at least 2"),
        "unordered": (y.iloc[[1, 0, *range(2, 40)]], r"monoton|increasing"),
    }[case]
    with pytest.raises((ValueError, TypeError), match=pattern):
        f.fit(bad)
    _assert_same_snapshot(before, _stream_snapshot(f))
    pd.testing.assert_frame_equal(pred_before, f.predict(fh=[1, 2, 3]))
    assert f.cutoff.equals(cutoff) and f.is_fitted


def test_fit_rejects_bad_series():
    y = _series(40)
    with pytest.raises(ValueError, match="at least 2"):
        AarenForecaster(**TINY, horizon=2).fit(y[:1])
    bad = y.copy()
    bad.iloc[3, 0] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        AarenForecaster(**TINY, horizon=2).fit(bad)
    shuffled = y.iloc[[1, 0, *range(2, 40)]]
    with pytest.raises((ValueError, TypeError), match=r"monoton|increasing"):
        AarenForecaster(**TINY, horizon=2).fit(shuffled)
    with pytest.raises(ValueError, match="backbone"):
        AarenForecaster(**{**TINY, "horizon": 2, "backbone": "lstm"}).fit(y)


def test_channel_embedding_only_with_channel_independence():
    y = _series(40)
    mixed = AarenForecaster(**TINY, horizon=2, channel_independent=False).fit(y)
    assert mixed.net_.module_.channel_embedding is None  # one token holds every channel: nothing to add
    independent = AarenForecaster(**TINY, horizon=2).fit(y)
    assert independent.net_.module_.channel_embedding.shape == (2, TINY["d_model"])


def test_horizon_rules_and_fh_tag():
    y = _series(60)
    assert AarenForecaster().get_tag("requires-fh-in-fit") is True
    assert AarenForecaster(horizon=4).get_tag("requires-fh-in-fit") is False
    with pytest.raises(ValueError):
        AarenForecaster(**TINY).fit(y)  # neither fh nor horizon
    f = AarenForecaster(**TINY).fit(y, fh=[1, 2, 3])
    assert f.horizon_ == 3
    g = AarenForecaster(**TINY, horizon=4).fit(y)
    with pytest.raises(ValueError, match="horizon of 4"):
        g.predict(fh=[5])
    with pytest.raises((ValueError, NotImplementedError), match=r"in-sample|in sample"):
        g.predict(fh=[0, 1])
    with pytest.raises(ValueError, match="beyond horizon"):
        AarenForecaster(**TINY, horizon=2).fit(y, fh=[1, 2, 3])


@pytest.mark.parametrize("index", ["datetime", "period", "int"])
def test_index_types_and_absolute_fh(index):
    y = _series(50, index=index)
    f = AarenForecaster(**TINY, horizon=4).fit(y)
    relative = f.predict(fh=[1, 3])
    absolute_index = ForecastingHorizon([1, 3], is_relative=True).to_absolute_index(f.cutoff)
    absolute = f.predict(fh=ForecastingHorizon(absolute_index, is_relative=False))
    pd.testing.assert_frame_equal(relative, absolute, check_freq=False)
    assert list(relative.columns) == list(y.columns)
    assert relative.index.equals(absolute_index)
    f.partial_update(_series(55, index=index)[50:])
    assert f.cutoff[0] == _series(55, index=index).index[-1]


def test_univariate_series_round_trip_type():
    y = _series(60, n_columns=1)["c0"]
    f = AarenForecaster(**TINY, horizon=3).fit(y)
    pred = f.predict(fh=[1, 2, 3])
    assert isinstance(pred, pd.Series)
    assert pred.name == "c0"
    f.partial_update(_series(64, n_columns=1)["c0"][60:])
    assert len(f.predict(fh=[1])) == 1


def test_short_series_shorter_than_context():
    y = _series(5, n_columns=1)
    f = AarenForecaster(**{**TINY, "context_length": 24}, horizon=3).fit(y)
    assert np.isfinite(f.predict(fh=[1, 2, 3]).to_numpy()).all()


@pytest.mark.parametrize(
    ("length", "horizon", "expected"),
    [
        (60, 8, 16),  # 48 training values before the tail: two horizons, a third of them
        (60, 2, 8),  # two horizons are 4: at least 8
        (90, 5, 10),  # 72 before the tail: two horizons, under a third of them
        (60, 12, 20),  # no tail (it would be shorter than 14): a third of 60, under two horizons
        (400, 3, 96),  # 320 before the tail: 96
        (1000, 3, 168),  # a quarter of 800 is more than a week of hours: 168
    ],
)
def test_default_context_length_follows_the_series_and_the_horizon(length, horizon, expected):
    params = {**TINY, "context_length": None, "max_epochs": 1}
    f = AarenForecaster(**params, horizon=horizon).fit(_series(length, n_columns=1))
    assert f.context_length_ == expected


def test_random_state_makes_fit_reproducible():
    y = _series(80)
    a = AarenForecaster(**TINY, horizon=3).fit(y).predict(fh=[1, 2, 3])
    b = AarenForecaster(**TINY, horizon=3).fit(y).predict(fh=[1, 2, 3])
    pd.testing.assert_frame_equal(a, b)
    # (the networks alone: on these tails the defaults give the linear map, which draws nothing, the
    # whole forecast)
    a, c = (
        AarenForecaster(**{**TINY, "random_state": seed, "skip_steps": ["linear_share"]}, horizon=3)
        .fit(y)
        .predict(fh=[1, 2, 3])
        for seed in (0, 1)
    )
    assert not np.allclose(a.to_numpy(), c.to_numpy())


@pytest.mark.parametrize("backbone", ["aaren", "transformer"])
def test_pickle_and_safe_save_load_keep_model_and_stream(tmp_path, backbone):
    y = _series(120)
    f = AarenForecaster(**TINY, horizon=4, backbone=backbone).fit(y[:80])
    f.partial_update(y[80:90])
    clone = pickle.loads(pickle.dumps(f))
    loaded = AarenForecaster.load(f.save(tmp_path / "model"))
    from sktime.base import load

    loaded_sktime = load(tmp_path / "model.zip")
    for other in (clone, loaded, loaded_sktime):
        pd.testing.assert_frame_equal(f.predict(fh=[1, 4]), other.predict(fh=[1, 4]))
        other.partial_update(y[90:120])
    f.partial_update(y[90:120])
    for other in (clone, loaded, loaded_sktime):
        pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), other.predict(fh=[1, 2]))
    assert loaded.get_params()["backbone"] == backbone


def test_save_refuses_other_files(tmp_path):
    path = tmp_path / "junk.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a file written"):
        AarenForecaster.load(path)


def test_update_params_fine_tunes_on_new_data():
    y = _series(120)
    f = AarenForecaster(**TINY, horizon=3).fit(y[:80])
    weights = {k: v.clone() for k, v in f.net_.module_.state_dict().items()}
    f.update(y[80:100], update_params=True)
    changed = [k for k, v in f.net_.module_.state_dict().items() if not torch.equal(v, weights[k])]
    assert changed
    assert f.cutoff[0] == y.index[99]
    assert f.n_seen_ == 100
    assert np.isfinite(f.predict(fh=[1, 2, 3]).to_numpy()).all()


@pytest.mark.parametrize(
    ("lr_schedule", "lr_decay", "factor"),
    [("exponential", 0.5, 0.5**2), (None, 0.5, 1.0), ("exponential", 1.0, 1.0)],
)
def test_lr_decay_multiplies_the_learning_rate_every_epoch(lr_schedule, lr_decay, factor):
    y = _series(60)
    schedule = {"lr_schedule": lr_schedule, "lr_decay": lr_decay}
    f = AarenForecaster(**{**TINY, "lr": 0.01, **schedule, "validation_fraction": None}, horizon=2)
    f.fit(y)
    assert f.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(0.01 * factor)
    # the epochs' learning rates are what skorch's LRScheduler recorded
    decays = lr_schedule == "exponential" and lr_decay < 1
    if decays:
        assert f.net_.history[:, "event_lr"] == pytest.approx([0.01, 0.005])
    # fine-tuning in update(update_params=True) goes on from the decayed rate
    f.update(_series(80)[60:], update_params=True)
    after_update = 0.01 * factor * (lr_decay if decays else 1.0)
    assert f.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(after_update)


def test_cosine_schedule_is_shared_with_the_classifier():
    params = {"lr": 0.01, "lr_schedule": "cosine", "max_epochs": 2, "validation_fraction": None}
    f = AarenForecaster(**{**TINY, **params})
    f.fit(_series(60), fh=[1, 2])
    assert f.net_.history[:, "event_lr"] == pytest.approx([0.01, 0.005])  # cos(pi/2) halfway


@pytest.mark.parametrize("lr_decay", [0.0, 1.5, -0.2])
def test_lr_decay_out_of_range_is_rejected(lr_decay):
    with pytest.raises(ValueError, match="lr_decay"):
        AarenForecaster(**TINY, horizon=2, lr_decay=lr_decay).fit(_series(40))


def test_callbacks_and_verbose(capsys):
    class CountEpochs(Callback):
        def initialize(self):
            self.epochs = 0
            return self

        def on_epoch_end(self, net, **kwargs):
            self.epochs += 1

    counter = CountEpochs()
    y = _series(60)
    f = AarenForecaster(**TINY, horizon=2, callbacks=[("count", counter)], verbose=1).fit(y)
    # the estimator's parameter is cloned, never mutated; the net's copy counted the epochs
    assert dict(f.net_.callbacks_)["count"].epochs == TINY["max_epochs"]
    captured = capsys.readouterr()
    # verbose=1 where standard error is not a terminal: a line a stage there, no epoch table
    epochs = TINY["max_epochs"]
    line = f"AarenForecaster.fit: network 1 of 1 (mse loss, from the naive forecast): {epochs} epochs"
    assert line in captured.err
    assert "AarenForecaster.fit: done in" in captured.err and captured.out == ""
    AarenForecaster(**TINY, horizon=2, verbose=2).fit(y)
    captured = capsys.readouterr()  # verbose=2: the lines and skorch's epoch table, on standard output
    assert "train_loss" in captured.out and "AarenForecaster.fit: network 1 of 1" in captured.out
    assert "\x1b[" not in captured.out + captured.err  # captured output is not a terminal: no colour codes
    AarenForecaster(**TINY, horizon=2).fit(y)
    assert capsys.readouterr().out == ""


@pytest.mark.slow
@pytest.mark.parametrize("skip_steps", [None, ["initial_forecast"]])
def test_learns_better_than_repeating_the_last_value(skip_steps):
    y = _series(600, n_columns=2, seed=3)
    train, test = y[:500], y[500:]
    f = AarenForecaster(
        context_length=24,
        horizon=8,
        max_epochs=15,
        skip_steps=skip_steps,
        random_state=0,
        device="cpu",
    ).fit(train)
    naive = NaiveForecaster(strategy="last")
    err_model, err_naive = [], []
    naive.fit(train)
    for start in range(0, 80, 8):
        truth = test.iloc[start : start + 8].to_numpy()
        err_model.append(((f.predict(fh=list(range(1, 9))).to_numpy() - truth) ** 2).mean())
        err_naive.append(((naive.predict(fh=list(range(1, 9))).to_numpy() - truth) ** 2).mean())
        f.partial_update(test.iloc[start : start + 8])
        naive.update(test.iloc[start : start + 8], update_params=False)
    assert np.mean(err_model) < 0.5 * np.mean(err_naive)


def test_stream_forecasts_match_partial_update_and_leave_state():
    y = _series(120)
    f = AarenForecaster(**TINY, horizon=3).fit(y[:70])
    before = _stream_snapshot(f)
    forecasts = f.stream_forecasts(y[70:120])
    _assert_same_snapshot(before, _stream_snapshot(f))
    assert forecasts.shape == (50, 3, 2)
    f.partial_update(y[70:95])
    np.testing.assert_allclose(forecasts[24], f.predict(fh=[1, 2, 3]).to_numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="gap"):
        f.stream_forecasts(y[100:110])


def test_forecast_job_on_bundled_data(tmp_path, capsys):
    from aaren_ts.cli import main

    assert main(["forecast", "--max-epochs", "1", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "MSE" in out and "AarenForecaster" in out
    assert (tmp_path / "forecast_airline_aaren.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.data
def test_protocol_on_etth1_beats_naive_and_streams_well(shared_data_home):
    from aaren_ts.jobs.forecast import evaluate_protocol

    result, _ = evaluate_protocol(
        "ETTh1",
        24,
        data_home=str(shared_data_home),
        max_epochs=2,
        d_model=16,
        n_layers=1,
        d_ff=32,
        random_state=0,
    )
    assert result.mse < 0.7 * result.naive_mse
    assert result.stream_mse < 1.05 * result.mse


@pytest.mark.data
def test_protocol_window_stride_scores_every_kth_window(shared_data_home):
    from aaren_ts.jobs.forecast import _protocol_data, evaluate_protocol, protocol_test_windows

    params = {"max_epochs": 1, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "random_state": 0}
    home = str(shared_data_home)
    result, forecaster = evaluate_protocol("ETTh1", 24, data_home=home, window_stride=3, **params)
    scaled, borders, _, _ = _protocol_data("ETTh1", str(shared_data_home))
    histories, targets = protocol_test_windows(scaled, borders, 24)
    histories, targets = histories[::3], targets[::3]
    start, stop = borders["test"]
    assert result.n_windows == len(targets) == -(-(stop - start - 96 - 24 + 1) // 3)
    assert result.mse == pytest.approx(((forecaster.predict_windows(histories) - targets) ** 2).mean())
    assert result.naive_mse == pytest.approx(((histories[:, -1:] - targets) ** 2).mean())
    assert result.stream_mse is None  # streaming is scored on the protocol's stride only
    with pytest.raises(ValueError, match="window_stride"):
        evaluate_protocol("ETTh1", 24, data_home=str(shared_data_home), window_stride=0, **params)


def test_standard_local_norm_makes_forecasts_affine_equivariant():
    from aaren_ts.nn import EncoderConfig
    from aaren_ts.nn.forecast import ForecastNet

    torch.manual_seed(0)
    net = ForecastNet(2, 12, 4, EncoderConfig("aaren", 16, 2, 1, 32, 0.0), True, "standard").eval()
    torch.nn.init.normal_(net.head.weight, std=0.1)  # the head starts at zero; make it count
    x = torch.randn(3, 40, 2)
    with torch.no_grad():
        base = net(x).loc
        moved = net(5.0 * x - 7.0).loc
    # each token's window is standardised, so the forecast follows any affine change of the series
    # (not at the first step, whose window is constant: there the variance floor decides the scale)
    torch.testing.assert_close(moved[:, 1:], 5.0 * base[:, 1:] - 7.0, rtol=1e-3, atol=1e-3)


def test_steps_with_gaps_one_at_a_time_equal_the_whole_series():
    """A stream's one-step path with something missing (the history holds carried values) gives the
    forecasts, state and history of the whole series at once: after a late first observation, over
    gaps, and where the whole batch observes."""
    from aaren_ts.nn import EncoderConfig
    from aaren_ts.nn.forecast import ForecastNet
    from aaren_ts.nn.state import flatten_state

    torch.manual_seed(0)
    net = ForecastNet(2, 6, 3, EncoderConfig("aaren", 16, 2, 1, 32, 0.0), True, "standard").eval()
    torch.nn.init.normal_(net.head.weight, std=0.1)
    x = torch.randn(4, 30, 2)
    x[0, :7] = float("nan")  # nothing observed for 7 steps
    x[1, 10:14, 0] = float("nan")  # a gap in one channel
    x[2, ::3] = float("nan")  # every third step
    x[3, 20:] = float("nan")  # a series that stops
    with torch.no_grad():
        whole, state, history = net(x, return_state=True)
        state_k, history_k, steps = None, None, []
        for t in range(x.shape[1]):
            step, state_k, history_k = net(x[:, t : t + 1], state_k, history_k, return_state=True)
            steps.append(step.loc)
    # (before a series' first observation the whole series' windows read it ahead; a stream cannot)
    seen = torch.isfinite(x).cummax(dim=1).values[:, :, None, :].expand_as(whole.loc)
    assert seen.float().mean() > 0.8
    torch.testing.assert_close(torch.cat(steps, dim=1)[seen], whole.loc[seen], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(history_k.values, history.values, equal_nan=True)
    assert torch.equal(history_k.observed, history.observed)
    for a, b in zip(flatten_state(state_k), flatten_state(state), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.data
def test_protocol_validation_part_with_calendar_covariates(shared_data_home):
    # part="val": fitted on the training part alone, the validation part's windows scored; the
    # calendar's features of each row's time go in as future-known covariates, with every window
    from aaren_ts.covariates import calendar_covariates
    from aaren_ts.jobs.forecast import (
        _protocol_data,
        evaluate_protocol,
        protocol_test_windows,
        protocol_window_covariates,
    )

    params = {"max_epochs": 1, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "random_state": 0}
    home = str(shared_data_home)
    result, forecaster = evaluate_protocol(
        "ETTh1",
        24,
        data_home=home,
        window_stride=5,
        part="val",
        calendar=["hour_of_day"],
        calendar_harmonics=2,
        **params,
    )
    scaled, borders, _, times = _protocol_data("ETTh1", home)
    assert forecaster.n_seen_ == borders["train"][1] and forecaster.n_future_ == 4
    histories, targets = protocol_test_windows(scaled, borders, 24, part="val")
    covariates = calendar_covariates(times, ["hour_of_day"], harmonics=2).to_numpy()
    window_covariates = protocol_window_covariates(covariates, borders, 24, part="val")
    first = borders["val"][0]
    np.testing.assert_array_equal(window_covariates[0], covariates[first : first + 120])
    pred = forecaster.predict_windows(histories[::5], X=window_covariates[::5])
    assert result.n_windows == len(pred)
    assert result.mse == pytest.approx(((pred - targets[::5]) ** 2).mean())
    assert result.mse < result.naive_mse
    with pytest.raises(ValueError, match="part"):
        evaluate_protocol("ETTh1", 24, data_home=home, part="train", **params)
