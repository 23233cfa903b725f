"""AarenForecaster on every time index sktime accepts: DatetimeIndex with or without ``freq``,
PeriodIndex and integers, for a single series and for panels, with no other sktime forecaster run before.

Every frame is built fresh in its test (sktime's own forecasters set ``freq`` on the frames they see in
place, which would hide a forecaster that needs it set).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sktime.utils._testing.hierarchical import _make_hierarchical

from aaren_ts import AarenForecaster
from aaren_ts.datasets import from_long_format

TINY = {**AarenForecaster.get_test_params()[0], "horizon": 3, "n_estimators": 1}  # one network
FH = [1, 2, 3]
KINDS = ["datetime", "datetime-nofreq", "period", "int"]


def _time_index(kind: str, start: int, n: int) -> pd.Index:
    """``n`` steps of a daily (or monthly period, or integer) time index from step ``start``."""
    if kind == "period":
        return pd.period_range("2001-01", periods=start + n, freq="M")[start:]
    if kind == "int":
        return pd.Index(np.arange(start, start + n), dtype=np.int64)
    index = pd.date_range("2020-01-01", periods=start + n, freq="D")[start:]
    return index if kind == "datetime" else pd.DatetimeIndex(index.to_numpy())  # freq None


def _values(n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + k)
    t = np.arange(n)
    return 10 * (k + 1) + np.sin(2 * np.pi * t / 7) + rng.normal(0, 0.2, n)


def _long_panel(kind: str) -> pd.DataFrame:
    """A long ``unique_id, ds, y`` frame of three series of their own lengths and ends."""
    rows = []
    for k, (name, start, n) in enumerate([("b", 0, 40), ("a", 3, 34), ("c", 5, 38)]):
        times = _time_index(kind, start, n)
        rows.append(pd.DataFrame({"unique_id": name, "ds": times, "y": _values(n, k, seed=1)}))
    return pd.concat(rows, ignore_index=True)


def _panel(kind: str) -> pd.DataFrame:
    """The long panel as a (series, time) MultiIndex frame, the way users set it up by hand."""
    return _long_panel(kind).set_index(["unique_id", "ds"])


def _single(kind: str, n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"y": _values(n, 0, seed=2)}, index=_time_index(kind, 0, n))


def _series_of(y: pd.DataFrame) -> dict:
    """Each series of ``y`` (a single series under the id ``None``) as a plain frame."""
    if not isinstance(y.index, pd.MultiIndex):
        return {None: y}
    levels = list(range(y.index.nlevels - 1))
    return {
        key if len(levels) > 1 else key[0]: part.droplevel(levels)
        for key, part in y.groupby(level=levels, sort=False)
    }


def _head_and_tail(y: pd.DataFrame, n_tail: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``y`` without each series' last ``n_tail`` rows, and those rows."""
    if not isinstance(y.index, pd.MultiIndex):
        return y.iloc[:-n_tail], y.iloc[-n_tail:]
    position = y.groupby(level=list(range(y.index.nlevels - 1)), sort=False).cumcount(ascending=False)
    return y[position.to_numpy() >= n_tail], y[position.to_numpy() < n_tail]


def _next_times(time: pd.Index, steps: int) -> pd.Index:
    """The ``steps`` times after the last of ``time`` at its frequency."""
    if isinstance(time, pd.DatetimeIndex):
        freq = time.freq or pd.infer_freq(time)
        return pd.date_range(time[-1], periods=steps + 1, freq=freq)[1:]
    if isinstance(time, pd.PeriodIndex):
        return pd.period_range(time[-1], periods=steps + 1, freq=time.freq)[1:]
    return pd.Index(np.arange(time[-1] + 1, time[-1] + 1 + steps))


def _times(y: pd.DataFrame) -> dict:
    """Each series' time index."""
    return {series_id: part.index for series_id, part in _series_of(y).items()}


def _check_forecast_index(pred: pd.DataFrame, seen: dict, skip: int = 0) -> None:
    """Every series of ``pred`` holds the ``FH`` steps that follow its ``seen`` times (after ``skip``)."""
    pred_series = _series_of(pred)
    assert list(pred_series) == list(seen)
    for series_id, part in pred_series.items():
        expected = _next_times(seen[series_id], skip + len(FH))[skip:]
        assert list(part.index) == list(expected), series_id
        if series_id is None and hasattr(expected, "freq"):  # a single series: its own index, with freq
            assert part.index.freq == expected.freq


def _exercise(y: pd.DataFrame) -> None:
    """fit, predict, predict_interval, partial_update and the array API on ``y`` (tail held back)."""
    head, tail = _head_and_tail(y, 2)
    first, second = _head_and_tail(tail, 1)
    f = AarenForecaster(**TINY).fit(head, fh=FH)
    pred = f.predict()
    seen = _times(head)
    _check_forecast_index(pred, seen)
    assert np.isfinite(pred.to_numpy()).all()

    intervals = f.predict_interval(coverage=0.9)
    assert intervals.index.equals(pred.index)
    lower, upper = intervals.iloc[:, 0].to_numpy(), intervals.iloc[:, 1].to_numpy()
    assert (lower < upper).all()

    # streaming: one row per series (too short to show a frequency of its own), then another
    for rows in (first, second):
        f.partial_update(rows)
        seen = {series_id: seen[series_id].append(time) for series_id, time in _times(rows).items()}
        _check_forecast_index(f.predict(), seen)

    # the array API: one more step for every series moves each cutoff by one step of its frequency
    n_series = len(seen)
    np.testing.assert_allclose(
        f.predict_array()[:, : len(FH), 0], f.predict().to_numpy().reshape(n_series, -1), rtol=1e-6
    )
    f.partial_update_array(np.full((n_series, 1, 1), 11.0))
    after = f.predict()
    _check_forecast_index(after, seen, skip=1)
    np.testing.assert_allclose(
        f.predict_array()[:, : len(FH), 0], after.to_numpy().reshape(n_series, -1), rtol=1e-6
    )


@pytest.mark.parametrize("kind", KINDS)
def test_single_series_with_any_time_index(kind):
    y = _single(kind)
    _exercise(y)
    if kind == "datetime-nofreq":
        assert y.index.freq is None  # the user's frame is left as it was


@pytest.mark.parametrize("kind", KINDS)
def test_panel_with_any_time_index(kind):
    y = _panel(kind)
    time_level = y.index.get_level_values(-1)
    _exercise(y)
    assert y.index.get_level_values(-1).equals(time_level)
    if kind == "datetime-nofreq":
        assert y.index.levels[-1].freq is None  # not set in place


@pytest.mark.parametrize("kind", KINDS)
def test_panel_from_long_format(kind):
    _exercise(from_long_format(_long_panel(kind)))


@pytest.mark.parametrize("same_cutoff", [True, False])
def test_hierarchical_datetime_panel(same_cutoff):
    y = _make_hierarchical(
        hierarchy_levels=(2, 2), min_timepoints=24, max_timepoints=30, same_cutoff=same_cutoff, random_state=0
    )
    _exercise(y)


def test_hourly_timestamps_with_a_time_zone_across_a_clock_change():
    index = pd.DatetimeIndex(list(pd.date_range("2024-03-30", periods=60, freq="h", tz="Europe/Paris")))
    y = pd.DataFrame({"y": _values(60, 0, seed=3)}, index=index)
    assert y.index.freq is None
    _exercise(y)


def test_irregular_timestamps_are_refused_naming_the_series():
    y = _long_panel("datetime-nofreq")
    y = y.drop(index=y.index[(y["unique_id"] == "a").to_numpy()][10]).set_index(["unique_id", "ds"])
    with pytest.raises(ValueError, match=r"series 'a' has irregular timestamps.*2020-01-14.*NaN"):
        AarenForecaster(**TINY).fit(y)


def test_irregular_single_series_is_refused():
    y = _single("datetime-nofreq")
    y = y.drop(index=y.index[[5, 6, 20]])
    with pytest.raises(ValueError, match="y has irregular timestamps"):
        AarenForecaster(**TINY).fit(y)


def test_update_off_the_frequency_is_refused_and_leaves_the_forecaster():
    y = _panel("datetime-nofreq")
    head, tail = _head_and_tail(y, 2)
    f = AarenForecaster(**TINY).fit(head, fh=FH)
    before = f.predict()
    rows = tail.reset_index()
    late = rows.index[rows["unique_id"] == "b"][-1]
    rows.loc[late, "ds"] += pd.Timedelta(hours=12)  # half a day late
    shifted = rows.set_index(["unique_id", "ds"])
    with pytest.raises(ValueError, match=r"series 'b''s timestamps .* do not follow the frequency D"):
        f.partial_update(shifted)
    pd.testing.assert_frame_equal(before, f.predict())


def test_a_new_short_series_takes_the_panel_frequency():
    y = _panel("datetime-nofreq")
    f = AarenForecaster(**TINY).fit(y, fh=FH)
    new = pd.DataFrame(
        {"y": [3.0, 4.0]},
        index=pd.MultiIndex.from_arrays(
            [["new", "new"], pd.DatetimeIndex(["2020-03-01", "2020-03-02"])], names=y.index.names
        ),
    )
    f.partial_update(new)
    assert list(f.predict().loc["new"].index) == list(pd.date_range("2020-03-03", periods=3, freq="D"))
