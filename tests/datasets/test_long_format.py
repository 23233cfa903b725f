"""from_long_format: the long ``unique_id, ds, y`` layout (neuralforecast, statsforecast) as a panel."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sktime.datatypes import check_is_mtype

from aaren_ts.datasets import from_long_format


def _long() -> pd.DataFrame:
    """Two series, rows shuffled, series "b" first, with a column that is not a target."""
    days = pd.date_range("2024-01-01", periods=4, freq="D")
    frame = pd.DataFrame(
        {
            "unique_id": ["b"] * 4 + ["a"] * 3,
            "ds": list(days) + list(days[1:]),
            "y": [1.0, 2.0, 3.0, 4.0, 10.0, np.nan, 30.0],
            "temperature": np.arange(7.0),
        }
    )
    return frame.iloc[[3, 5, 0, 6, 2, 4, 1]].reset_index(drop=True)


def test_rows_become_a_panel_in_order_of_first_appearance_and_time():
    long = _long()
    original = long.copy()
    y = from_long_format(long)
    assert check_is_mtype(y, "pd-multiindex", return_metadata=False)
    assert list(y.index.names) == ["unique_id", "ds"]
    assert list(y.columns) == ["y"]
    assert y["y"].dtype == np.float64
    assert list(y.index.get_level_values(0).unique()) == ["b", "a"]
    np.testing.assert_array_equal(y.loc["b", "y"].to_numpy(), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(y.loc["a", "y"].to_numpy(), [10.0, np.nan, 30.0])
    assert list(y.loc["a"].index) == list(pd.date_range("2024-01-02", periods=3, freq="D"))
    pd.testing.assert_frame_equal(long, original)  # the input is not changed


def test_other_names_several_targets_and_string_timestamps():
    long = _long().rename(columns={"unique_id": "store", "ds": "date"})
    long["date"] = long["date"].dt.strftime("%Y-%m-%d")
    y = from_long_format(long, id_col="store", time_col="date", target_col=["y", "temperature"])
    assert list(y.columns) == ["y", "temperature"]
    assert isinstance(y.index.levels[1], pd.DatetimeIndex)
    assert y.loc[("b", pd.Timestamp("2024-01-03")), "temperature"] == 2.0


def test_integer_steps_and_integer_ids():
    long = pd.DataFrame({"unique_id": [7, 7, 3, 3], "ds": [1, 0, 5, 6], "y": [1.0, 0.0, 5.0, 6.0]})
    y = from_long_format(long)
    assert y.index.tolist() == [(7, 0), (7, 1), (3, 5), (3, 6)]
    assert y["y"].tolist() == [0.0, 1.0, 5.0, 6.0]


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        (lambda d: d.drop(columns="ds"), ValueError, r"no column\(s\) \['ds'\]"),
        (lambda d: pd.concat([d, d.iloc[[0]]]), ValueError, "series 'b' has more than one row at"),
        (
            lambda d: d.assign(unique_id=d["unique_id"].where(d.index != 2)),
            ValueError,
            "'unique_id' is missing",
        ),
        (lambda d: d.assign(y="x"), TypeError, "must hold numbers"),
        (lambda d: d.assign(ds="not a date"), ValueError, "cannot be read as timestamps"),
        (lambda d: d["y"], TypeError, "must be a pandas DataFrame"),
    ],
)
def test_bad_frames_are_refused_clearly(change, error, pattern):
    with pytest.raises(error, match=pattern):
        from_long_format(change(_long()))
