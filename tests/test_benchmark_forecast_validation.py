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
