"""The loaders on the real benchmark files (``$AAREN_TS_DATA``); skipped, saying why, when absent."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import (
    DatasetIntegrityError,
    load_ett,
    load_forecasting,
    load_ili,
    load_split,
    load_uea,
    load_weather,
    load_windows,
    split_borders,
)
from aaren_ts.datasets._integrity import sha256_of
from aaren_ts.datasets._registry import CLASSIFICATION_DATASETS, FORECASTING_DATASETS

pytestmark = pytest.mark.data

PRESENT_FORECASTING = ["ETTh1", "ETTh2", "ETTm1", "Weather", "ILI"]
PRESENT_UEA = ["JapaneseVowels", "BasicMotions", "UWaveGestureLibrary"]


@pytest.mark.parametrize("name", PRESENT_FORECASTING)
def test_checksums_match_the_cards(shared_data_home: Path, name: str) -> None:
    record = FORECASTING_DATASETS[name].file
    path = shared_data_home / record.path
    assert path.stat().st_size == record.size
    assert sha256_of(path) == record.sha256


@pytest.mark.parametrize("name", PRESENT_UEA)
def test_uea_checksums_match_the_cards(shared_data_home: Path, name: str) -> None:
    info = CLASSIFICATION_DATASETS[name]
    for record in (info.train, info.test):
        assert sha256_of(shared_data_home / record.path) == record.sha256


@pytest.mark.parametrize(
    ("name", "shape", "freq", "first", "last"),
    [
        ("ETTh1", (17420, 7), "h", "2016-07-01 00:00:00", "2018-06-26 19:00:00"),
        ("ETTh2", (17420, 7), "h", "2016-07-01 00:00:00", "2018-06-26 19:00:00"),
        ("ETTm1", (69680, 7), "15min", "2016-07-01 00:00:00", "2018-06-26 19:45:00"),
        ("ILI", (966, 7), "W-TUE", "2002-01-01 00:00:00", "2020-06-30 00:00:00"),
    ],
)
def test_forecasting_frames(
    shared_data_home: Path, name: str, shape: tuple[int, int], freq: str, first: str, last: str
) -> None:
    y = load_forecasting(name, data_home=shared_data_home, download_if_missing=False)
    assert y.shape == shape and (y.dtypes == np.float64).all() and y.columns[-1] == "OT"
    assert y.index.freqstr == freq and str(y.index[0]) == first and str(y.index[-1]) == last
    assert not y.isna().to_numpy().any()
    upstream = load_forecasting(name, data_home=shared_data_home, index="upstream")
    assert upstream.index.equals(y.index) and upstream.index.freqstr == freq  # regular: the same timestamps
    raw = pd.read_csv(shared_data_home / FORECASTING_DATASETS[name].file.path)
    np.testing.assert_array_equal(y.to_numpy(), raw.iloc[:, 1:].to_numpy(dtype=np.float64))


def test_ett_values(shared_data_home: Path) -> None:
    y = load_ett("ETTh1", data_home=shared_data_home)
    assert list(y.columns) == ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
    assert y["HUFL"].iloc[0] == pytest.approx(5.827000141143799)
    assert load_ili(data_home=shared_data_home)["OT"].iloc[0] == 176569.0


def test_weather(shared_data_home: Path) -> None:
    y = load_weather(data_home=shared_data_home)
    assert y.shape == (52696, 21) and y.index.freqstr == "10min" and y.columns[0] == "p (mbar)"
    assert y.columns[-1] == "OT" and "SWDR (W/m\ufffd)" in y.columns
    assert str(y.index[0]) == "2020-01-01 00:10:00"
    upstream = load_weather(data_home=shared_data_home, index="upstream").index
    assert upstream.freq is None and str(upstream[-1]) == "2021-01-01 00:00:00"
    assert upstream.duplicated().sum() == 1  # the file's known quirk (see the card)
    assert str(y.index[-1]) == "2020-12-31 22:40:00"  # the regular index: 80 minutes off at the end


@pytest.mark.parametrize(
    ("name", "train_rows", "val_rows", "test_rows"),
    [
        ("ETTh1", (0, 8640), (8544, 11520), (11424, 14400)),
        ("ETTm1", (0, 34560), (34464, 46080), (45984, 57600)),
        ("Weather", (0, 36887), (36791, 42157), (42061, 52696)),
    ],
)
def test_protocol_borders_and_windows(
    shared_data_home: Path,
    name: str,
    train_rows: tuple[int, int],
    val_rows: tuple[int, int],
    test_rows: tuple[int, int],
) -> None:
    assert split_borders(name, 96) == {"train": train_rows, "val": val_rows, "test": test_rows}
    X, Y = load_windows(name, "test", horizon=96, data_home=shared_data_home)
    m = test_rows[1] - test_rows[0]
    assert X.shape[0] == Y.shape[0] == m - 96 - 96 + 1
    raw = load_forecasting(name, data_home=shared_data_home)
    train = raw.iloc[: train_rows[1]]
    scaled = (raw - train.mean()) / train.std(ddof=0)
    np.testing.assert_allclose(X[0], scaled.iloc[test_rows[0] : test_rows[0] + 96], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Y[-1], scaled.iloc[test_rows[1] - 96 : test_rows[1]], rtol=1e-5, atol=1e-5)


def test_load_series_is_the_splits_put_together(shared_data_home: Path) -> None:
    from aaren_ts.datasets import load_series

    data, borders = load_series("ETTh1", data_home=shared_data_home)
    assert borders == split_borders("ETTh1", 96) and len(data) == 17420
    for split, (start, stop) in borders.items():
        part = load_split("ETTh1", split, data_home=shared_data_home)
        pd.testing.assert_frame_equal(data.iloc[start:stop], part)
    raw, _ = load_series("ETTh1", data_home=shared_data_home, scale=False, index="range")
    assert (
        isinstance(raw.index, pd.RangeIndex)
        and raw.iloc[0, -1] == load_forecasting("ETTh1", data_home=shared_data_home).iloc[0, -1]
    )


def test_etth1_split_frames(shared_data_home: Path) -> None:
    train = load_split("ETTh1", "train", data_home=shared_data_home)
    assert len(train) == 8640 and str(train.index[-1]) == "2017-06-25 23:00:00"
    test = load_split("ETTh1", "test", data_home=shared_data_home, scale=False)
    assert len(test) == 2976 and test.index.freqstr == "h"


@pytest.mark.parametrize(
    ("name", "n_train", "n_test", "shape_or_channels", "train_counts"),
    [
        ("BasicMotions", 40, 40, (6, 100), [10] * 4),
        ("UWaveGestureLibrary", 120, 320, (3, 315), [15] * 8),
        ("JapaneseVowels", 270, 370, 12, [30] * 9),
    ],
)
def test_uea_from_the_data_folder(
    shared_data_home: Path,
    name: str,
    n_train: int,
    n_test: int,
    shape_or_channels: object,
    train_counts: list[int],
) -> None:
    X_tr, y_tr = load_uea(name, "train", data_home=shared_data_home, download_if_missing=False)
    X_te, y_te = load_uea(name, "test", data_home=shared_data_home, download_if_missing=False)
    assert len(y_tr) == n_train and len(y_te) == n_test
    assert sorted(pd.Series(y_tr).value_counts().tolist()) == train_counts
    assert set(y_te) == set(y_tr)
    if isinstance(shape_or_channels, tuple):
        assert X_tr.shape == (n_train, *shape_or_channels) and X_te.dtype == np.float64
        assert not np.isnan(X_te).any()
    else:
        assert X_tr.shape == (n_train, shape_or_channels)


def test_uwave_test_class_counts(shared_data_home: Path) -> None:
    _, y = load_uea("UWaveGestureLibrary", "test", data_home=shared_data_home)
    assert sorted(pd.Series(y).value_counts().tolist()) == [40] * 8


def test_truncated_and_altered_copies_are_reported(shared_data_home: Path, tmp_path: Path) -> None:
    source = shared_data_home / "ETT-small" / "ETTh1.csv"
    target = tmp_path / "ETT-small" / "ETTh1.csv"
    target.parent.mkdir()
    data = source.read_bytes()
    target.write_bytes(data[: len(data) - 1000])
    with pytest.raises(
        DatasetIntegrityError, match=r"truncated: it has 2588657 bytes, the upstream file 2589657"
    ):
        load_ett("ETTh1", data_home=tmp_path)
    target.write_bytes(data.replace(b"5.827000141143799", b"5.827000141143798", 1))
    with pytest.raises(DatasetIntegrityError, match="altered: its sha256 is"):
        load_ett("ETTh1", data_home=tmp_path)
    assert load_ett("ETTh1", data_home=tmp_path, verify=False)["HUFL"].iloc[0] == 5.827000141143798
    shutil.copy(source, target)
    assert load_ett("ETTh1", data_home=tmp_path).shape == (17420, 7)
