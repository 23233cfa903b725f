"""Series ids and column names come back from ``load`` as the data named them, types included."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from tests._params import TINY_FORECASTER


def _panel(ids, columns=("y",), length: int = 40, start: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frames = {
        i: pd.DataFrame(
            10 + k + rng.normal(0, 0.3, (length, len(columns))),
            index=pd.RangeIndex(start, start + length),
            columns=pd.MultiIndex.from_tuples(columns) if isinstance(columns[0], tuple) else list(columns),
        )
        for k, i in enumerate(ids)
    }
    return pd.concat(frames, names=["series", "time"])


@pytest.mark.parametrize(
    "ids",
    [
        [pd.Timestamp("2024-01-01"), pd.Timestamp("2024-02-01")],
        [pd.Timestamp("2024-01-01", tz="Europe/Berlin"), pd.Timestamp("2024-03-31 02:30", tz="UTC")],
        [pd.Period("2024-01", freq="M"), pd.Period("2024-02", freq="M")],
        [np.int64(3), 7],
        [1.5, 2.5],
        ["a", "b"],
    ],
    ids=["timestamps", "aware-timestamps", "periods", "ints", "floats", "strings"],
)
def test_series_ids_keep_their_type_and_streams_continue(tmp_path, ids) -> None:
    f = AarenForecaster(**TINY_FORECASTER).fit(_panel(ids))
    loaded = AarenForecaster.load(f.save(tmp_path / "model"))
    assert loaded.series_ids_ == f.series_ids_
    assert [type(i) for i in loaded.series_ids_] == [type(i) for i in f.series_ids_]
    loaded.partial_update(_panel(ids, length=2, start=40))  # the same series, not new ones
    assert len(loaded.engine_) == len(ids)


def test_multiindex_column_names_come_back_as_a_multiindex(tmp_path) -> None:
    columns = (("sales", "eu"), ("sales", "us"))
    f = AarenForecaster(**TINY_FORECASTER).fit(_panel(["a", "b"], columns))
    loaded = AarenForecaster.load(f.save(tmp_path / "model"))
    assert isinstance(loaded.columns_, pd.MultiIndex) and loaded.columns_.equals(f.columns_)
    pd.testing.assert_frame_equal(loaded.predict(fh=[1, 2]), f.predict(fh=[1, 2]))


def test_an_id_of_a_type_that_cannot_be_saved_is_refused_naming_pickle(tmp_path) -> None:
    f = AarenForecaster(**TINY_FORECASTER).fit(_panel([datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]))
    with pytest.raises(ValueError, match="serialization_format='pickle'"):
        f.save(tmp_path / "model")


def test_a_missing_series_id_is_refused_not_dropped() -> None:
    y = _panel(["a", "b"])
    y.index = y.index.set_levels(["a", np.nan], level=0, verify_integrity=False)
    with pytest.raises(ValueError, match=r"missing \(NaN\) series id"):
        AarenForecaster(**TINY_FORECASTER).fit(y)


@pytest.mark.parametrize(
    "index",
    [
        pd.period_range("2000-01", periods=40, freq="M", name="month"),
        pd.date_range("2000-01-01", periods=40, freq="D", name="day"),
        pd.RangeIndex(40, name="step"),
    ],
    ids=["period", "datetime", "integer"],
)
def test_the_cutoff_keeps_its_index_name_through_save_and_load(index, tmp_path) -> None:
    y = pd.DataFrame({"y": 10.0 + np.random.default_rng(0).normal(size=40).cumsum()}, index=index)
    f = AarenForecaster(**TINY_FORECASTER).fit(y, fh=[1, 2])
    loaded = AarenForecaster.load(f.save(tmp_path / "model"))
    assert f.cutoff.name == index.name
    pd.testing.assert_index_equal(loaded.cutoff, f.cutoff)
    pd.testing.assert_index_equal(loaded.predict().index, f.predict().index)
