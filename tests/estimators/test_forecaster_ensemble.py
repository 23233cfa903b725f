"""AarenForecaster(n_estimators=K): a deep ensemble that trains, streams, saves and fine-tunes as one."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenForecaster
from aaren_ts.estimators import _forecast_decisions as forecast_decisions
from aaren_ts.estimators._forecast_decisions import MIXED_LOSSES, POSITIVE_MIXED_LOSSES, clear_gain
from aaren_ts.nn.ensemble import ForecastEnsemble, MemberForecasts
from aaren_ts.nn.forecast import Forecast, ForecastNet
from aaren_ts.nn.forecast_training import ForecastLoss
from aaren_ts.nn.state import flatten_state
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "context_length": 6,
    "max_epochs": 2,
    "batch_size": 4,
    "n_estimators": 2,
}


def _series(n: int, n_columns: int = 2, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    values = np.stack(
        [10 + 3 * np.sin(2 * np.pi * t / (8 + 3 * c)) + rng.normal(0, 0.3, n) for c in range(n_columns)], 1
    )
    return pd.DataFrame(values, index=pd.date_range("2021-01-01", periods=n, freq="h"))


@pytest.fixture(scope="module")
def fitted() -> tuple[AarenForecaster, pd.DataFrame]:
    y = _series(150)
    return AarenForecaster(**TINY, horizon=4).fit(y[:80]), y


def _member_forecast(f: AarenForecaster, k: int, values: np.ndarray) -> np.ndarray:
    """Member ``k``'s own forecast after the whole of ``values`` ``(N, C)``, in the series' units."""
    member = f.net_.module_.members[k]
    mean, scale = f.engine_.mean[0, : f.n_channels_], f.engine_.scale[0, : f.n_channels_]
    x = torch.as_tensor(((values - mean) / scale)[None], dtype=torch.float32)
    with torch.no_grad():
        loc = member(x, last_only=True).loc[0, 0].numpy()
    return loc * scale + mean


def test_members_start_apart_and_the_forecast_is_their_mean(fitted) -> None:
    _, y = fitted
    # (without the linear model's share: at a share of 1 every member's forecast is the linear model's)
    f = AarenForecaster(**TINY, horizon=4, skip_steps=["linear_share"]).fit(y[:80])
    module = f.net_.module_
    assert isinstance(module, ForecastEnsemble) and len(module.members) == 2
    # trained one after the other, each with its own epochs and early stop, logged in turn
    assert [row["member"] for row in f.net_.history] == sorted(row["member"] for row in f.net_.history)
    assert {row["member"] for row in f.net_.history} == {0, 1}
    first, second = (dict(m.named_parameters()) for m in module.members)
    assert not torch.equal(first["embed.weight"], second["embed.weight"])
    values = y.to_numpy()[:80]
    members = [_member_forecast(f, k, values) for k in range(2)]
    assert np.abs(members[0] - members[1]).max() > 1e-3  # two different networks
    ensemble = f.predict_windows(values[None])[0]
    np.testing.assert_allclose(ensemble, (members[0] + members[1]) / 2, rtol=1e-5)


def test_streaming_in_chunks_equals_the_whole_series(fitted) -> None:
    f, y = fitted
    f = pickle.loads(pickle.dumps(f))
    for start, stop in [(80, 81), (81, 117), (117, 150)]:
        f.partial_update(y[start:stop])
    streamed = f.predict(fh=[1, 2, 3, 4]).to_numpy()
    whole = f.predict_windows(y.to_numpy()[None])[0]
    np.testing.assert_allclose(streamed, whole, rtol=1e-5, atol=1e-5 * np.abs(whole).max())
    # one state per member, each the size of one network's: the stream's memory is K networks'
    state = f.engine_.state
    assert len(state) == 2
    sizes = [sum(t.numel() for t in flatten_state(member_state)) for member_state in state]
    assert sizes[0] == sizes[1] > 0


def test_save_load_and_pickle_keep_every_member_and_stream(fitted, tmp_path) -> None:
    f, y = fitted
    f = pickle.loads(pickle.dumps(f))
    f.partial_update(y[80:90])
    loaded = AarenForecaster.load(f.save(tmp_path / "ensemble"))
    assert isinstance(loaded.net_.module_, ForecastEnsemble)
    pd.testing.assert_frame_equal(f.predict(fh=[1, 4]), loaded.predict(fh=[1, 4]))
    f.partial_update(y[90:120])
    loaded.partial_update(y[90:120])
    pd.testing.assert_frame_equal(f.predict(fh=[1, 2]), loaded.predict(fh=[1, 2]))


def test_fine_tuning_moves_every_member(fitted) -> None:
    f, y = fitted
    f = pickle.loads(pickle.dumps(f))
    before = {k: v.clone() for k, v in f.net_.module_.state_dict().items()}
    f.update(y[80:110], update_params=True)
    after = f.net_.module_.state_dict()
    for k in range(2):
        key = f"members.{k}.embed.weight"
        assert not torch.equal(before[key], after[key]), key


def test_one_estimator_is_the_plain_network_and_fits_as_before() -> None:
    y = _series(80)
    params = {**TINY, "n_estimators": 1}
    single = AarenForecaster(**params, horizon=3).fit(y)
    assert isinstance(single.net_.module_, ForecastNet)


def test_the_loss_of_members_in_training_is_the_mean_of_their_own() -> None:
    rng = torch.Generator().manual_seed(0)
    loc = torch.randn(3, 2, 5, 4, 1, generator=rng)
    params = torch.rand(3, 2, 5, 4, 1, 1, generator=rng) + 0.5
    target = torch.randn(2, 5, 4, 1, generator=rng)
    loss = ForecastLoss(full_window=2)
    own = [loss(Forecast(loc[k], params[k]), target) for k in range(3)]
    torch.testing.assert_close(loss(MemberForecasts(loc, params), target), torch.stack(own).mean())


def test_members_take_their_losses_in_turn_and_the_mean_forecast_the_first() -> None:
    rng = torch.Generator().manual_seed(1)
    loc = torch.randn(3, 2, 5, 4, 1, generator=rng)
    params = torch.rand(3, 2, 5, 4, 1, 1, generator=rng) + 0.5
    target = 3.0 * torch.randn(2, 5, 4, 1, generator=rng)
    mixed = ForecastLoss(full_window=2, point_loss=("mse", "mae"))
    by_name = {name: ForecastLoss(full_window=2, point_loss=name) for name in ("mse", "mae")}
    own = [by_name[name](Forecast(loc[k], params[k]), target) for k, name in enumerate(["mse", "mae", "mse"])]
    torch.testing.assert_close(mixed(MemberForecasts(loc, params), target), torch.stack(own).mean())
    combined = Forecast(loc[1], params[1])
    torch.testing.assert_close(mixed(combined, target), by_name["mse"](combined, target))
    assert not torch.isclose(by_name["mse"](combined, target), by_name["mae"](combined, target))


def test_each_network_trains_on_its_entry_of_loss() -> None:
    """Member ``k`` trains on ``loss[k % len(loss)]``: the first member of ``loss=("mae", "mse")`` is
    the lone network trained on the absolute error, weight for weight."""
    assert AarenForecaster(n_estimators=5, loss=("mse", "mse", "mae"))._member_losses() == (
        "mse", "mse", "mae", "mse", "mse",
    )  # fmt: skip
    assert AarenForecaster(n_estimators=2, loss="mae")._member_losses() == ("mae", "mae")
    y = _series(80)
    ensemble = AarenForecaster(**{**TINY, "loss": ("mae", "mse")}, horizon=3).fit(y)
    first = ensemble.net_.module_.members[0].state_dict()
    for loss, same in [("mae", True), ("mse", False)]:
        lone = AarenForecaster(**{**TINY, "n_estimators": 1, "loss": loss}, horizon=3).fit(y)
        weights = lone.net_.module_.state_dict()
        assert all(torch.equal(first[k], weights[k]) for k in weights) is same, loss


def test_a_clear_gain_is_large_and_significant_across_the_series() -> None:
    rng = np.random.default_rng(0)
    baseline = rng.uniform(0.5, 2.0, 200)
    noise = np.exp(rng.normal(0.0, 0.01, 200))
    assert clear_gain(0.9 * baseline * noise, baseline)[0]  # 10 % lower everywhere
    assert not clear_gain(0.99 * baseline * noise, baseline)[0]  # significant, but 1 % only
    assert not clear_gain(baseline * np.exp(rng.normal(-0.05, 1.0, 200)), baseline)[0]  # noise
    assert not clear_gain(baseline * noise, baseline)[0]
    assert not clear_gain(np.array([0.5]), np.array([1.0]))[0]  # a single series
    assert not clear_gain(0.6 * baseline * noise, baseline, min_gain=np.log(2))[0]  # not half
    assert clear_gain(0.4 * baseline * noise, baseline, min_gain=np.log(2))[0]
    helps, mean, t = clear_gain(np.array([0.5, 0.25, 0.0]), np.array([1.0, 0.5, 1.0]))
    assert helps and mean == pytest.approx(np.log(0.5)) and t == -np.inf  # (a zero error left out)


@pytest.mark.parametrize("positive", [True, False])
@pytest.mark.parametrize("helps", [True, False])
def test_auto_keeps_the_absolute_error_network_only_where_the_tails_favour_it(
    monkeypatch, tmp_path, helps, positive
) -> None:
    """``loss="auto"`` trains the networks on ``MIXED_LOSSES`` in turn (``POSITIVE_MIXED_LOSSES``,
    the second and third on the sMAPE, where every target value is positive); where the tails do not
    favour the networks on other losses than the first they train again on the squared error and the
    first stays as it was. Saving keeps the losses the networks trained on."""
    verdicts = []

    def verdict(error, baseline):
        verdicts.append((error.shape, baseline.shape))
        return helps, -0.1, -5.0

    monkeypatch.setattr(forecast_decisions, "clear_gain", verdict)
    y = _series(80) - (0.0 if positive else 10.0)  # (around 0: values of both signs)
    planned = POSITIVE_MIXED_LOSSES if positive else MIXED_LOSSES
    # (no verdict on the start, nor on a linear share)
    params = {**TINY, "n_estimators": 3, "skip_steps": ["initial_forecast", "linear_share"]}
    auto = AarenForecaster(**params, loss="auto", horizon=3).fit(y)
    mixed = AarenForecaster(**params, loss=list(planned), horizon=3).fit(y)
    assert len(verdicts) == 1 and verdicts[0][0] == verdicts[0][1] == (2,)  # two series' channels, once
    assert planned == (("mse", "smape", "smape") if positive else ("mse", "mse", "mae"))
    assert auto.member_losses_ == (planned if helps else ("mse", "mse", "mse"))
    for k in range(3):
        own, other = auto.net_.module_.members[k].state_dict(), mixed.net_.module_.members[k].state_dict()
        same = helps or planned[k] == "mse"
        assert all(torch.equal(own[name], other[name]) for name in own) is same, k
    restored = AarenForecaster.load(auto.save(tmp_path / "auto"))
    assert restored.member_losses_ == auto.member_losses_
    pd.testing.assert_frame_equal(restored.predict(fh=[1, 2, 3]), auto.predict(fh=[1, 2, 3]))


@pytest.mark.parametrize(("n_columns", "validation_fraction"), [(1, 0.2), (2, None)])
@pytest.mark.parametrize("positive", [True, False])
def test_auto_trains_every_network_on_the_first_loss_where_no_two_tails_could_judge_the_others(
    monkeypatch, n_columns, validation_fraction, positive
) -> None:
    """``loss="auto"`` on a single univariate series, or without validation tails, where the tail test
    cannot keep the networks on other losses (it needs two tails): every network trains once, on the
    first loss, and the test is not run. Two channels of one series are two tails: the test runs."""
    trained, verdicts, original = [], [], AarenForecaster._train_member

    def train_member(self, train_split, train_ds, losses, k, start):
        trained.append((k, losses[k]))
        return original(self, train_split, train_ds, losses, k, start)

    def verdict(error, baseline, min_gain=forecast_decisions.MIXED_LOSS_GAIN):
        verdicts.append(error.shape)
        return False, 0.0, 0.0

    monkeypatch.setattr(AarenForecaster, "_train_member", train_member)
    monkeypatch.setattr(forecast_decisions, "clear_gain", verdict)
    y = _series(80, n_columns=n_columns) - (0.0 if positive else 10.0)
    params = {**TINY, "n_estimators": 3, "skip_steps": ["initial_forecast", "linear_share"]}
    model = AarenForecaster(**params, validation_fraction=validation_fraction, horizon=3).fit(y)
    assert model.member_losses_ == ("mse",) * 3
    assert trained == [(0, "mse"), (1, "mse"), (2, "mse")] and verdicts == []
    if validation_fraction is not None:  # the same series with a second channel: two tails, judged
        trained.clear()
        AarenForecaster(**params, horizon=3).fit(_series(80, n_columns=2) - (0.0 if positive else 10.0))
        planned = POSITIVE_MIXED_LOSSES if positive else MIXED_LOSSES
        assert verdicts == [(2,)] and trained[:3] == list(enumerate(planned))


@pytest.mark.parametrize(
    ("winner", "n_estimators", "trainings", "starts"),
    [
        ("level", 3, [(0, "naive"), (1, "level"), (0, "level"), (2, "level")], ("level",) * 3),
        ("naive", 3, [(0, "naive"), (1, "level"), (1, "naive"), (2, "naive")], ("naive",) * 3),
        (None, 3, [(0, "naive"), (1, "level"), (2, "naive")], ("naive", "level", "naive")),
        ("level", 1, [(0, "naive"), (0, "level")], ("level",)),
        (None, 1, [(0, "naive"), (0, "level")], ("naive",)),
        ("untrained naive", 3, [(0, "naive"), (1, "naive"), (2, "naive")], ("naive",) * 3),
    ],
)
def test_auto_start_trains_every_network_from_the_start_the_tails_favour(
    monkeypatch, tmp_path, winner, n_estimators, trainings, starts
) -> None:
    """The ``initial_forecast`` step: where the untrained naive forecast is clearly better on the tails,
    every network trains from it as with the step skipped, weight for weight. Otherwise the first network
    trains from the naive forecast and the next on the same loss (an extra one for a lone network) from
    the level; a clear winner on the tails gives every network its start (the loser's network trains
    again), no clear winner keeps both. Saving keeps the starts."""
    # the verdicts asked in turn: the untrained naive forecast's, the trained level's, the trained naive's
    answers = [winner == "untrained naive", winner == "level", winner == "naive"]
    verdicts = []

    def verdict(error, baseline, min_gain=forecast_decisions.MIXED_LOSS_GAIN):
        wins = answers[len(verdicts)]
        verdicts.append((error.shape, baseline.shape, min_gain))
        return wins, -0.1 if wins else 0.0, -5.0 if wins else 0.0

    trained, original = [], AarenForecaster._train_member

    def train_member(self, train_split, train_ds, losses, k, start):
        net = original(self, train_split, train_ds, losses, k, start)
        trained.append(((k, start), net))
        return net

    monkeypatch.setattr(forecast_decisions, "clear_gain", verdict)
    monkeypatch.setattr(AarenForecaster, "_train_member", train_member)
    params = {
        **TINY,
        "n_estimators": n_estimators,
        "loss": "mse",
        "horizon": 3,
        "skip_steps": ["linear_share"],
    }
    auto = AarenForecaster(**params).fit(_series(80))
    assert [call for call, _ in trained] == trainings
    assert all(error == baseline == (2,) for error, baseline, _ in verdicts)  # two series' channels
    # before training, the naive forecast must halve the level's error; after, 2 % lower is clear
    gains = [min_gain for *_, min_gain in verdicts]
    assert gains == [forecast_decisions.UNTRAINED_NAIVE_GAIN] + [forecast_decisions.MIXED_LOSS_GAIN] * 2 * (
        winner != "untrained naive"
    )
    assert len(verdicts) == (1 if winner == "untrained naive" else 3)
    assert auto.member_initial_forecasts_ == starts
    if winner == "untrained naive":  # the untrained networks were drawn aside from the random stream
        naive = AarenForecaster(**{**params, "skip_steps": ["linear_share", "initial_forecast"]}).fit(
            _series(80)
        )
        own, other = auto.net_.module_.state_dict(), naive.net_.module_.state_dict()
        assert all(torch.equal(own[name], other[name]) for name in own)
    if n_estimators == 1:  # a lone network is the one the tails chose
        kept = trained[-1 if winner == "level" else 0][1].module_.state_dict()
        assert all(torch.equal(v, auto.net_.module_.state_dict()[k]) for k, v in kept.items())
    restored = AarenForecaster.load(auto.save(tmp_path / "auto"))
    assert restored.member_initial_forecasts_ == starts
    pd.testing.assert_frame_equal(restored.predict(fh=[1, 2, 3]), auto.predict(fh=[1, 2, 3]))


def test_auto_start_with_one_tail_trains_every_network_from_the_naive_forecast(monkeypatch) -> None:
    """A single univariate series has one validation tail, too few for a verdict between the starts:
    the ``initial_forecast`` step trains no trial and every network is the one trained with the step
    skipped, weight for weight (each trained once)."""
    starts = []
    original = AarenForecaster._train_member

    def train_member(self, train_split, train_ds, losses, k, start):
        starts.append(start)
        return original(self, train_split, train_ds, losses, k, start)

    monkeypatch.setattr(AarenForecaster, "_train_member", train_member)
    params = {**TINY, "n_estimators": 2, "loss": "mse", "horizon": 3, "skip_steps": ["linear_share"]}
    y = _series(80, n_columns=1)
    auto = AarenForecaster(**params).fit(y)
    assert starts == ["naive", "naive"]  # (no trial: each member trained once, from the naive forecast)
    assert auto.member_initial_forecasts_ == ("naive", "naive")
    naive = AarenForecaster(**{**params, "skip_steps": ["linear_share", "initial_forecast"]}).fit(y)
    own, other = auto.net_.module_.state_dict(), naive.net_.module_.state_dict()
    assert all(torch.equal(own[name], other[name]) for name in own)


def test_skipping_the_start_step_trains_every_network_from_the_naive_forecast() -> None:
    model = AarenForecaster(**TINY, skip_steps=["initial_forecast"], horizon=3).fit(_series(40))
    assert model.member_initial_forecasts_ == ("naive", "naive")
    assert model.fit_report_.set_index("step").loc["initial_forecast", "decision"] == "skipped: naive"


@pytest.mark.parametrize("loss", [(), ("mse", "huber"), "huber", ["mae", None], ["auto"]])
def test_a_bad_loss_is_refused_before_training(loss) -> None:
    message = "loss must be one of 'mse', 'mae', 'smape', 'auto' or a non-empty list or tuple"
    with pytest.raises(ValueError, match=message):
        AarenForecaster(**TINY, horizon=3, loss=loss).fit(_series(40))


def test_an_ensemble_needs_two_members() -> None:
    with pytest.raises(ValueError, match="at least 2 members"):
        ForecastEnsemble(1, n_channels=1, context_length=4, horizon=2, encoder=None, channel_independent=True,
                         local_norm="standard")  # fmt: skip
    with pytest.raises(ValueError, match="n_estimators"):
        AarenForecaster(n_estimators=0, horizon=2).fit(_series(40))


def test_a_transformer_ensemble_streams_its_growing_caches_exactly() -> None:
    y = _series(110)
    f = AarenForecaster(**{**TINY, "backbone": "transformer"}, horizon=3).fit(y[:60])
    for start, stop in [(60, 61), (61, 90), (90, 110)]:
        f.partial_update(y[start:stop])
    streamed = f.predict(fh=[1, 2, 3]).to_numpy()
    whole = f.predict_windows(y.to_numpy()[None])[0]
    np.testing.assert_allclose(streamed, whole, rtol=1e-5, atol=1e-5 * np.abs(whole).max())
