"""The tourism loader: small files written in exactly the competition's layout, and the real quarterly
files (``$AAREN_TS_DATA/tourism``; skipped, saying why, when absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import (
    DatasetIntegrityError,
    DatasetNotFoundError,
    PanelData,
    get_dataset_info,
    load_tourism,
)
from aaren_ts.datasets.reference import TOURISM_QUARTERLY
from aaren_ts.metrics import mape, mase


def _columns_text(series: list[tuple[str, int, int, list[float]]]) -> bytes:
    """A competition file: CRLF, a header of names, rows length/year/quarter, values, empty cells below."""
    depth = max(len(values) for *_, values in series)
    lines = [
        ",".join(name for name, *_ in series),
        ",".join(str(len(values)) for *_, values in series),
        ",".join(str(year) for _, year, _, _ in series),
        ",".join(str(quarter) for _, _, quarter, _ in series),
    ]
    for i in range(depth):
        lines.append(",".join(f"{values[i]:g}" if i < len(values) else "" for *_, values in series))
    return ("\r\n".join(lines) + "\r\n").encode()


def _next_quarter(year: int, quarter: int, n: int) -> tuple[int, int]:
    index = year * 4 + quarter - 1 + n
    return index // 4, index % 4 + 1


def _write(home: Path, train: list[tuple[str, int, int, list[float]]], test: list | None = None) -> None:
    if test is None:
        test = [
            (name, *_next_quarter(year, quarter, len(values)), [1000.0 * k + j for k in range(1, 9)])
            for j, (name, year, quarter, values) in enumerate(train)
        ]
    folder = home / "tourism"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "quarterly_in.csv").write_bytes(_columns_text(train))
    (folder / "quarterly_oos.csv").write_bytes(_columns_text(test))


def _train(n_series: int = 11) -> list[tuple[str, int, int, list[float]]]:
    """Series q1..q<n> of lengths 5, 6, 7, 5, ..., starting in different quarters."""
    return [
        (f"q{j}", 1990 + j, 1 + j % 4, [10.0 * j + t + 0.5 for t in range(5 + j % 3)])
        for j in range(1, n_series + 1)
    ]


def test_panels_keep_the_files_order_and_continue_in_time(tmp_path: Path) -> None:
    train = _train()
    _write(tmp_path, train)
    data = load_tourism(data_home=tmp_path, verify=False)
    assert isinstance(data, PanelData)
    assert (data.horizon, data.sp, data.n_series, data.frequency) == (8, 4, 11, "Quarterly")
    assert data.series_ids.tolist() == [f"q{j}" for j in range(1, 12)]  # q1, q2, ..., q10, q11
    assert data.y_train.index.names == ["series", "time"] and list(data.y_train.columns) == ["y"]
    assert data.y_train.dtypes.iloc[0] == np.float64
    for j, (name, _, _, values) in enumerate(train):
        part = data.y_train.loc[name, "y"]
        assert part.index.tolist() == list(range(len(values)))
        assert part.tolist() == values
        future = data.y_test.loc[name, "y"]
        assert future.index.tolist() == list(range(len(values), len(values) + 8))
        assert future.tolist() == [1000.0 * k + j for k in range(1, 9)]
    assert repr(data) == "PanelData(name='Tourism-Quarterly', n_series=11, horizon=8, sp=4)"
    assert data.fh.tolist() == list(range(1, 9))


def test_loader_takes_the_data_folder_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path, _train(2))
    monkeypatch.setenv("AAREN_TS_DATA", str(tmp_path))
    assert load_tourism("quarterly", verify=False).n_series == 2


def test_a_missing_file_says_where_to_put_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"tourism/quarterly_in\.csv.*place it there") as info:
        load_tourism(data_home=tmp_path)
    assert str(tmp_path) in str(info.value) and "27-3-Athanasopoulos1.zip" in str(info.value)


def test_verify_checks_the_recorded_checksum(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _write(tmp_path, _train(3))
    with pytest.raises(DatasetIntegrityError):
        load_tourism(data_home=tmp_path)


def test_only_quarterly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Quarterly"):
        load_tourism("Monthly", data_home=tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda train, test: train[0][3].append(99.0), r"series q1 states 6 values"),  # length row stale
        (
            lambda train, test: test.__setitem__(1, (*test[1][:3], test[1][3][:7])),
            r"series q2 has 7 test values",
        ),
        (lambda train, test: test.__setitem__(0, ("q1", 1900, 1, test[0][3])), r"q1 starts in 1900 Q1"),
        (lambda train, test: test.__setitem__(2, ("q9", *test[2][1:])), r"do not name the same series"),
    ],
)
def test_malformed_files_are_named(tmp_path: Path, change, message: str) -> None:
    train = _train(3)
    test = [
        (name, *_next_quarter(year, quarter, len(values)), [1.0] * 8) for name, year, quarter, values in train
    ]
    lengths = [len(values) for *_, values in train]
    change(train, test)
    text = _columns_text(train)
    if len(train[0][3]) != lengths[0]:  # keep the stated length the old one
        rows = text.decode().split("\r\n")
        rows[1] = ",".join(str(n) for n in lengths)
        text = "\r\n".join(rows).encode()
    (tmp_path / "tourism").mkdir()
    (tmp_path / "tourism" / "quarterly_in.csv").write_bytes(text)
    (tmp_path / "tourism" / "quarterly_oos.csv").write_bytes(_columns_text(test))
    with pytest.raises(DatasetIntegrityError, match=message):
        load_tourism(data_home=tmp_path, verify=False)


def test_an_empty_cell_inside_a_series_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, _train(2))
    path = tmp_path / "tourism" / "quarterly_in.csv"
    rows = path.read_bytes().decode().split("\r\n")
    first = rows[5].split(",")
    first[0] = ""  # q1's second value gone, its last one still there
    rows[5] = ",".join(first)
    path.write_bytes("\r\n".join(rows).encode())
    with pytest.raises(
        DatasetIntegrityError, match=r"q1 states 6 values .* has 5, with an empty cell before its last value"
    ):
        load_tourism(data_home=tmp_path, verify=False)


def test_registry_record() -> None:
    info = get_dataset_info("tourism-quarterly")
    assert (info.n_series, info.horizon, info.sp, info.train_length) == (427, 8, 4, (22, 122))
    assert info.train.path == "tourism/quarterly_in.csv" and info.train.url is None
    assert info.reference is TOURISM_QUARTERLY


@pytest.fixture
def tourism(shared_data_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PanelData:
    if not (shared_data_home / "tourism" / "quarterly_in.csv").is_file():
        pytest.skip(f"the tourism files are not in {shared_data_home / 'tourism'}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return load_tourism(data_home=shared_data_home)


@pytest.mark.data
def test_real_files_and_the_published_seasonal_naive(tourism: PanelData) -> None:
    data = tourism
    lengths = data.y_train.groupby(level="series", sort=False).size()
    assert data.n_series == 427 and (lengths.min(), lengths.max()) == (22, 122)
    assert data.series_ids[0] == "q1" and data.series_ids[-1] == "q427"
    assert (data.y_test.groupby(level="series", sort=False).size() == 8).all()
    parts = []
    for series_id, x in data.y_train.groupby(level="series", sort=False):
        values = x["y"].to_numpy()
        times = np.arange(len(values), len(values) + 8)
        index = pd.MultiIndex.from_arrays([[series_id] * 8, times], names=["series", "time"])
        parts.append(pd.DataFrame({"y": np.resize(values[-4:], 8)}, index=index))
    pred = pd.concat(parts)
    assert round(mape(data.y_test, pred), 2) == TOURISM_QUARTERLY["seasonal naive"]["mape"] == 16.46
    assert round(mase(data.y_test, pred, y_train=data.y_train, sp=4), 2) == 1.70  # see the reference note
