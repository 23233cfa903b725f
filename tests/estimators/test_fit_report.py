"""The forecaster's fit report: every decision step of ``fit`` in order, with what it decided and on
which statistic; the report agrees with what the engine applies; a step named in ``skip_steps`` keeps
its neutral choice; the report survives save and load, and a refused fit leaves it as it was."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from aaren_ts.estimators._fit_report import (
    FIT_STEPS,
    REPORT_COLUMNS,
    SKIPPABLE_STEPS,
    FitReport,
    format_fit_report,
    report_from_plain,
    report_to_plain,
    summarize_fit_report,
)

SETTINGS = {
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 32,
    "horizon": 6,
    "max_epochs": 4,
    "n_estimators": 2,
    "device": "cpu",
    "random_state": 0,
    "num_threads": 1,
}
PER_SERIES = ("target_scale", "naive_fallback", "interval_spread", "theta_combination")


def _panel(n: int = 160) -> pd.DataFrame:
    """Four positive series: two seasonal (period 12), a random walk and a trend with noise."""
    rng = np.random.default_rng(0)
    t = np.arange(n)
    series = {
        "season_a": 20 + 5 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.3, n),
        "season_b": 40 + 8 * np.cos(2 * np.pi * t / 12) + rng.normal(0, 0.3, n),
        "walk": 60 + np.cumsum(rng.normal(0, 1.0, n)),
        "trend": 10 + 0.2 * t + rng.normal(0, 1.0, n),
    }
    frames = {k: pd.DataFrame({"y": v}, index=pd.RangeIndex(n)) for k, v in series.items()}
    return pd.concat(frames, names=["series", "time"])


@pytest.fixture(scope="module")
def fitted() -> AarenForecaster:
    return AarenForecaster(**SETTINGS).fit(_panel())


def test_every_step_is_reported_once_in_the_declared_order(fitted):
    report = fitted.fit_report_
    assert tuple(report.columns) == REPORT_COLUMNS
    order = [step.name for step in FIT_STEPS]
    assert list(dict.fromkeys(report["step"])) == order
    ids = ["season_a", "season_b", "walk", "trend"]
    for step in order:
        rows = report[report["step"] == step]
        if step in PER_SERIES:
            assert list(rows["series"]) == ids and list(rows["channel"]) == ["y"] * 4, step
        else:
            assert len(rows) == 1 and rows["series"].iloc[0] is None, step
    assert report["decision"].map(lambda d: isinstance(d, str) and len(d) > 0).all()


def test_the_report_says_what_the_engine_applies(fitted):
    report = fitted.fit_report_.set_index("step")
    assert report.loc["context_length", "value"] == fitted.context_length_
    assert report.loc["seasonal_period", "value"] == fitted.sp_
    assert report.loc["linear_share", "value"] == fitted.linear_share_
    engine = fitted.engine_
    fallback = report.loc["naive_fallback"]
    np.testing.assert_array_equal(fallback["value"].to_numpy(), engine.naive[:, 0])
    share = engine.naive[:, 0]
    expected = np.where(share >= 1, "naive", np.where(share > 0, "blend", "network"))
    assert list(fallback["decision"].str.split(" ").str[0]) == list(expected)
    # each series' Diebold-Mariano statistic against the naive forecast, and the bar it is held to
    assert np.isfinite(fallback["statistic"]).all() and (fallback["threshold"] > 0).all()
    spread = report.loc["interval_spread"]
    np.testing.assert_array_equal(spread["value"].to_numpy(), engine.spread[:, 0])
    naive_intervals = spread["decision"].eq("naive method's").to_numpy()
    np.testing.assert_array_equal(naive_intervals, engine.naive_std[:, 0] > 0)
    theta = report.loc["theta_combination"]
    arrays = engine.theta_arrays()
    weight = np.ones(4) if arrays is None else arrays["weight"][:, 0]
    np.testing.assert_array_equal(theta["value"].to_numpy(), weight)
    assert report.loc["interval_calibration", "decision"] == "started on the validation tails"
    assert report.loc["interval_calibration", "value"] == 4


def test_the_summary_has_one_row_per_step_and_counts_per_series_decisions(fitted):
    summary = summarize_fit_report(fitted.fit_report_)
    assert list(summary.index) == [step.name for step in FIT_STEPS]
    counts = summary.loc["naive_fallback", "decision"]
    total = sum(int(part.rsplit(" ", 1)[1]) for part in counts.split(", "))
    assert total == 4
    text = format_fit_report(fitted.fit_report_)
    lines = text.splitlines()
    assert len(lines) == 1 + len(FIT_STEPS) and lines[0].split()[:2] == ["step", "decision"]
    assert all(line.startswith(step.name) for line, step in zip(lines[1:], FIT_STEPS, strict=True))


def test_skipped_steps_keep_their_neutral_choice():
    skip = ["naive_fallback", "interval_spread", "theta_combination", "initial_forecast", "mixed_losses"]
    forecaster = AarenForecaster(**SETTINGS, skip_steps=skip).fit(_panel())
    engine = forecaster.engine_
    assert (engine.naive == 0).all() and (engine.spread == 1).all()
    assert (engine.naive_std == 0).all() and (engine.max_std == 0).all()
    assert engine.theta_arrays() is None
    assert set(forecaster.member_initial_forecasts_) == {"naive"}
    assert len(set(forecaster.member_losses_)) == 1
    report = forecaster.fit_report_.set_index("step")
    for step in skip:
        neutral = next(s.neutral for s in FIT_STEPS if s.name == step)
        assert report.loc[step, "decision"] == f"skipped: {neutral}", step


def test_skipping_the_log_scale_keeps_every_series_on_its_own_scale():
    settings = {**SETTINGS, "max_epochs": 1, "n_estimators": 1}
    grows = pd.concat(
        {"s": pd.DataFrame({"y": np.exp(0.02 * np.arange(160)) * (3 + np.sin(np.arange(160)))})},
        names=["series", "time"],
    )
    assert AarenForecaster(**settings).fit(grows).engine_.log_target.any()
    skipped = AarenForecaster(**settings, skip_steps=["target_scale"]).fit(grows)
    assert not skipped.engine_.log_target.any() and skipped.target_transform_ is None


def test_an_unknown_step_is_refused_naming_the_parameter_and_the_steps():
    with pytest.raises(ValueError, match="skip_steps"):
        AarenForecaster(**SETTINGS, skip_steps=["context_length"]).fit(_panel())
    with pytest.raises(ValueError, match="naive_fallback"):
        FitReport(["no_such_step"])
    assert "context_length" not in SKIPPABLE_STEPS and "naive_fallback" in SKIPPABLE_STEPS


def test_the_report_survives_save_and_load(fitted, tmp_path):
    path = tmp_path / "forecaster.zip"
    fitted.save(path)
    loaded = AarenForecaster.load(path)
    pd.testing.assert_frame_equal(loaded.fit_report_, fitted.fit_report_)


def test_a_damaged_saved_report_is_refused(fitted):
    ids, columns = fitted.series_ids_, list(fitted.columns_)
    plain = report_to_plain(fitted.fit_report_, ids, columns)
    pd.testing.assert_frame_equal(report_from_plain(plain, ids, columns), fitted.fit_report_)
    n = len(plain["step"])
    for key, value in (("step", ["no_such_step"] * n), ("series", [99] * n)):
        with pytest.raises(ValueError, match="fit report is damaged"):
            report_from_plain({**plain, key: value}, ids, columns)
    with pytest.raises(ValueError, match="must be a mapping"):
        report_from_plain({"step": []}, ids, columns)


def test_a_refused_fit_leaves_the_report_as_it_was(fitted):
    before = fitted.fit_report_.copy()
    bad = _panel()
    bad.iloc[3, 0] = np.inf
    with pytest.raises(ValueError):
        fitted.fit(bad)
    pd.testing.assert_frame_equal(fitted.fit_report_, before)


def test_tuple_series_ids_stay_one_label_each():
    report = FitReport()
    ids = [("a", 1), ("a", 2), ("b", 1)]
    report.panel("seasonal_period", "detected", value=12)
    decisions = np.array([["network"] * 2] * 3)
    report.per_channel("naive_fallback", ids, ["x", "y"], decisions, value=np.zeros((3, 2)))
    frame = report.frame()
    assert frame.shape == (7, len(REPORT_COLUMNS))
    assert list(frame["series"]) == [None, *[i for i in ids for _ in range(2)]]
    restored = report_from_plain(report_to_plain(frame, ids, ["x", "y"]), ids, ["x", "y"])
    pd.testing.assert_frame_equal(restored, frame)


def test_notable_decisions_name_fallback_retry_and_combination():
    from aaren_ts.estimators._fit_report import notable_decisions

    ids, columns = ["a", "b", "c"], ["y"]
    report = FitReport()
    report.per_channel("naive_fallback", ids, columns, np.array([["network"], ["blend"], ["naive"]]))
    report.panel("own_scale_retry", "not needed")
    report.per_channel("theta_combination", ids, columns, np.array([["network alone"]] * 3))
    assert notable_decisions(report.frame()) == [
        "1 of 3 series' channels forecast with the seasonal naive method and 1 blend it with the network, "
        "where the network did not clearly beat it on their validation tails"
    ]
    report.per_channel("naive_fallback", ids, columns, np.array([["naive"]] * 3))
    report.panel("own_scale_retry", "trained again on the own scale")
    combined = np.array([["combined with Theta"], ["network alone"], ["equal mean with Theta: no tail"]])
    report.per_channel("theta_combination", ids, columns, combined)
    notes = notable_decisions(report.frame())
    assert len(notes) == 4 and "every series takes the seasonal naive forecast in its place" in notes[0]
    assert "own scale" in notes[1]
    assert notes[2].startswith("1 of 3 series' channels combine the network with Theta")
    assert notes[3].startswith(
        "1 of 3 series' channels forecast with the equal mean of their forecast and Theta's"
    )
    quiet = FitReport()
    quiet.per_channel("naive_fallback", ids, columns, np.array([["network"]] * 3))
    assert notable_decisions(quiet.frame()) == []


def test_a_fit_that_falls_back_says_so_in_one_logged_line(caplog):
    import logging

    # a random walk: nothing to learn, so the series forecasts with the naive method
    walk = pd.Series(100 + np.cumsum(np.random.default_rng(1).normal(0, 1, 160)))
    settings = {**SETTINGS, "max_epochs": 1, "n_estimators": 1}
    with caplog.at_level(logging.INFO, logger="aaren_ts"):
        forecaster = AarenForecaster(**settings).fit(walk)
    lines = [r for r in caplog.records if r.name == "aaren_ts"]
    assert forecaster.fit_report_.set_index("step").loc["naive_fallback", "decision"] == "naive"
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "seasonal naive forecast in its place" in lines[0].getMessage()
    assert "fit_report_" in lines[0].getMessage()


def test_a_fit_that_keeps_the_network_everywhere_logs_nothing(fitted, caplog):
    import logging

    from aaren_ts.estimators._forecast_fit import announce_notable

    report = fitted.fit_report_.copy()
    fallback = report["step"] == "naive_fallback"
    report.loc[fallback, "decision"] = "network"
    report.loc[report["step"] == "theta_combination", "decision"] = "network alone"
    report.loc[report["step"] == "own_scale_retry", "decision"] = "not needed"
    with caplog.at_level(logging.INFO, logger="aaren_ts"):
        announce_notable(report)
    assert [r for r in caplog.records if r.name == "aaren_ts"] == []
