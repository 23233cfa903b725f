"""The M4 loader: small files written in exactly the competition's format, and the real Hourly files
(``$AAREN_TS_DATA/M4``; skipped, saying why, when absent)."""

from __future__ import annotations

import csv
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import (
    M4_FREQUENCIES,
    DatasetIntegrityError,
    DatasetNotFoundError,
    M4Data,
    PanelDataset,
    get_dataset_info,
    list_datasets,
    load_m4,
)
from aaren_ts.datasets._integrity import sha256_of
from aaren_ts.datasets._registry import PANEL_DATASETS
from aaren_ts.datasets.reference import M4_HOURLY


def _m4_text(rows: list[tuple[str, list[float]]], width: int) -> str:
    """An M4 CSV: quoted header V1..V<width+1>, quoted id and values, rows right-padded with empty fields."""
    lines = [",".join(f'"V{i}"' for i in range(1, width + 2))]
    for series_id, values in rows:
        fields = [f'"{series_id}"', *(f'"{v:g}"' for v in values)]
        lines.append(",".join(fields + [""] * (width - len(values))))
    return "\n".join(lines) + "\n"


def _write(home: Path, frequency: str, train: list[tuple[str, list[float]]], test: list, width: int) -> None:
    folder = home / "M4"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{frequency}-train.csv").write_text(_m4_text(train, width), encoding="utf-8")
    horizon = max(len(values) for _, values in test)
    (folder / f"{frequency}-test.csv").write_text(_m4_text(test, horizon), encoding="utf-8")


def _series(prefix: str, n: int, horizon: int, rng: np.random.Generator) -> tuple[list, list, int]:
    lengths = rng.integers(3, 12, size=n)
    train = [(f"{prefix}{i + 1}", list(np.round(rng.uniform(1, 100, k), 1))) for i, k in enumerate(lengths)]
    test = [(f"{prefix}{i + 1}", list(np.round(rng.uniform(1, 100, horizon), 1))) for i in range(n)]
    return train, test, int(lengths.max())


@pytest.fixture
def weekly_home(tmp_path: Path) -> Path:
    """A data folder with Weekly files of the competition's shape (359 series W1..W359, horizon 13)."""
    train, test, width = _series("W", 359, 13, np.random.default_rng(0))
    _write(tmp_path, "Weekly", train, test, width + 2)
    return tmp_path


def test_registry_has_the_competition_protocol() -> None:
    expected = {  # frequency: (series, horizon, seasonal period)
        "Yearly": (23000, 6, 1),
        "Quarterly": (24000, 8, 4),
        "Monthly": (48000, 18, 12),
        "Weekly": (359, 13, 1),
        "Daily": (4227, 14, 1),
        "Hourly": (414, 48, 24),
    }
    assert M4_FREQUENCIES == tuple(expected)
    assert list_datasets("panel") == [f"M4-{f}" for f in expected]
    for frequency, (n_series, horizon, sp) in expected.items():
        info = get_dataset_info(f"m4-{frequency.lower()}")
        assert isinstance(info, PanelDataset) and info.kind == "panel"
        assert (info.n_series, info.horizon, info.sp, info.frequency) == (n_series, horizon, sp, frequency)
        assert info.train.path == f"M4/{frequency}-train.csv" and info.test.path == f"M4/{frequency}-test.csv"
        assert info.train.url.endswith(f"Mcompetitions/M4-methods/master/Dataset/Train/{frequency}-train.csv")
        assert info.test.url.endswith(f"Mcompetitions/M4-methods/master/Dataset/Test/{frequency}-test.csv")
    assert sum(n for n, _, _ in expected.values()) == 100_000
    assert PANEL_DATASETS["M4-Hourly"].reference is M4_HOURLY
    assert "M4-Hourly" not in list_datasets()  # None keeps listing the paper's benchmarks only


def test_panels_keep_the_competition_order_and_continue_in_time(tmp_path: Path) -> None:
    train = [(f"H{i}", [10.0 * i + t for t in range(2 + i % 3)]) for i in range(1, 13)]
    test = [(f"H{i}", [1000.0 * k + i for k in range(1, 49)]) for i in range(1, 13)]
    _write(tmp_path, "Hourly", train, test, 6)
    data = load_m4("hourly", data_home=tmp_path, download_if_missing=False, verify=False)
    assert isinstance(data, M4Data) and data.frequency == "Hourly"
    assert (data.horizon, data.sp, data.n_series) == (48, 24, 12)
    ids = [f"H{i}" for i in range(1, 13)]
    assert data.series_ids.tolist() == ids  # H1, H2, ..., H10: not H1, H10, H11, H2
    assert data.y_train.index.names == ["series", "time"] and list(data.y_train.columns) == ["y"]
    assert data.y_train.dtypes.iloc[0] == np.float64
    assert list(data.y_train.groupby(level="series", sort=False).size().index) == ids
    for series_id, values in train:
        part = data.y_train.loc[series_id, "y"]
        assert part.index.tolist() == list(range(len(values)))
        assert part.tolist() == values
        future = data.y_test.loc[series_id, "y"]
        assert future.index.tolist() == list(range(len(values), len(values) + 48))  # continues after train
    assert data.y_test.loc["H11", "y"].tolist()[:2] == [1011.0, 2011.0]
    assert repr(data) == "M4Data(frequency='Hourly', n_series=12, horizon=48, sp=24)"
    assert data.fh.tolist() == list(range(1, 49))


def test_test_file_must_hold_the_horizon(tmp_path: Path) -> None:
    train = [("H1", [1.0, 2.0]), ("H2", [3.0, 4.0])]
    _write(tmp_path, "Hourly", train, [("H1", [5.0] * 48), ("H2", [6.0] * 47)], 3)
    with pytest.raises(DatasetIntegrityError, match=r"series H2 has 47 test values.*horizon is 48"):
        load_m4("Hourly", data_home=tmp_path, verify=False)


def test_sktime_mtype_and_verified_shape(weekly_home: Path) -> None:
    from sktime.datatypes import check_is_mtype

    data = load_m4("Weekly", data_home=weekly_home, download_if_missing=False)  # verify=True: no sha recorded
    assert (data.n_series, data.horizon, data.sp) == (359, 13, 1)
    assert data.series_ids[:12].tolist() == [f"W{i}" for i in range(1, 13)]
    assert check_is_mtype(data.y_train, "pd-multiindex")
    assert check_is_mtype(data.y_test, "pd-multiindex")
    assert (data.y_test.groupby(level=0, sort=False).size() == 13).all()


def test_malformed_files(tmp_path: Path, weekly_home: Path) -> None:
    folder = weekly_home / "M4"
    text = (folder / "Weekly-train.csv").read_text(encoding="utf-8")
    lines = text.splitlines()
    cut = "\n".join(lines[:-9]) + "\n"  # 350 of the 359 series
    (folder / "Weekly-train.csv").write_text(cut, encoding="utf-8")
    with pytest.raises(DatasetIntegrityError, match=r"do not list the same series"):
        load_m4("Weekly", data_home=weekly_home)
    test = (folder / "Weekly-test.csv").read_text(encoding="utf-8").splitlines()
    (folder / "Weekly-test.csv").write_text("\n".join(test[:-9]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetIntegrityError, match=r"truncated: it has 350 series, the competition 359"):
        load_m4("Weekly", data_home=weekly_home)
    assert load_m4("Weekly", data_home=weekly_home, verify=False).n_series == 350

    gap = [("H1", [1.0, 2.0, 3.0]), ("H2", [4.0, 5.0, 6.0])]
    _write(tmp_path, "Hourly", gap, [("H1", [1.0] * 48), ("H2", [1.0] * 48)], 4)
    path = tmp_path / "M4" / "Hourly-train.csv"
    path.write_text(path.read_text().replace('"H2","4","5"', '"H2","4",""'), encoding="utf-8")
    with pytest.raises(DatasetIntegrityError, match=r"series H2 \(data row 1\) has an empty field before"):
        load_m4("Hourly", data_home=tmp_path, verify=False)
    path.write_text('"id","V2"\n"H1","1"\n', encoding="utf-8")
    with pytest.raises(DatasetIntegrityError, match=r"M4 layout.*V1"):
        load_m4("Hourly", data_home=tmp_path, verify=False)
    path.write_text('"V1","V2"\n"H1","x"\n"H2","1"\n', encoding="utf-8")
    with pytest.raises(DatasetIntegrityError, match="non-numeric"):
        load_m4("Hourly", data_home=tmp_path, verify=False)


def test_altered_file_is_reported(tmp_path: Path) -> None:
    _write(tmp_path, "Hourly", [("H1", [1.0, 2.0])], [("H1", [1.0] * 48)], 2)
    with pytest.raises(DatasetIntegrityError, match=r"M4-Hourly file .*Hourly-train.csv.* is truncated"):
        load_m4("Hourly", data_home=tmp_path)


def test_missing_file_names_the_file_and_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_m4("Hourly", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert "'M4/Hourly-train.csv'" in message and str(tmp_path / "M4" / "Hourly-train.csv") in message
    assert "data_home argument" in message and "Mcompetitions/M4-methods" in message
    assert "download_if_missing=True" in message

    def offline(url: str, timeout: float) -> object:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    url = PANEL_DATASETS["M4-Hourly"].train.url
    with pytest.raises(DatasetNotFoundError, match=rf"M4-Hourly.*Downloading it from {url} failed"):
        load_m4(data_home=tmp_path)
    assert not (tmp_path / "M4" / "Hourly-train.csv").exists()
    with pytest.raises(ValueError, match=r"unknown M4 frequency 'Minutely'; known: Yearly, .*Hourly"):
        load_m4("Minutely", data_home=tmp_path)


def test_downloads_both_files_when_missing(
    tmp_path: Path, weekly_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requested = []
    real_urlopen = urllib.request.urlopen

    def serve(url: str, timeout: float) -> object:
        requested.append(url)
        return real_urlopen((weekly_home / "M4" / url.rsplit("/", 1)[1]).as_uri(), timeout=timeout)

    monkeypatch.setattr(urllib.request, "urlopen", serve)
    home = tmp_path / "empty_home"
    data = load_m4("Weekly", data_home=home)
    info = PANEL_DATASETS["M4-Weekly"]
    assert requested == [info.train.url, info.test.url]
    served = weekly_home / "M4" / "Weekly-test.csv"
    assert (home / "M4" / "Weekly-test.csv").read_bytes() == served.read_bytes()
    assert data.n_series == 359


@pytest.fixture
def m4_home(shared_data_home: Path) -> Path:
    """The real data folder, when it holds the M4 Hourly files."""
    info = PANEL_DATASETS["M4-Hourly"]
    if not all((shared_data_home / record.path).is_file() for record in (info.train, info.test)):
        pytest.skip(f"the M4 Hourly files are not in {shared_data_home / 'M4'}")
    return shared_data_home


def _read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))[1:]


@pytest.mark.data
def test_real_hourly_checksums_match_the_card(m4_home: Path) -> None:
    info = PANEL_DATASETS["M4-Hourly"]
    for record in (info.train, info.test):
        path = m4_home / record.path
        assert path.stat().st_size == record.size
        assert sha256_of(path) == record.sha256


@pytest.mark.data
def test_real_hourly(m4_home: Path) -> None:
    from sktime.datatypes import check_is_mtype

    data = load_m4("Hourly", data_home=m4_home, download_if_missing=False)
    train_rows = _read_rows(m4_home / "M4" / "Hourly-train.csv")
    test_rows = _read_rows(m4_home / "M4" / "Hourly-test.csv")
    lengths = {row[0]: sum(1 for field in row[1:] if field != "") for row in train_rows}
    # The facts, read from the file with the csv module (independently of the loader).
    assert len(train_rows) == len(test_rows) == 414
    assert [row[0] for row in train_rows] == [f"H{i}" for i in range(1, 415)]
    assert {len(row) - 1 for row in test_rows} == {48}
    low, high = min(lengths.values()), max(lengths.values())
    assert (low, high) == PANEL_DATASETS["M4-Hourly"].train_length == (700, 960)
    # The loader agrees with them.
    assert (data.n_series, data.horizon, data.sp) == (414, 48, 24)
    assert data.series_ids.tolist() == [row[0] for row in train_rows]
    sizes = data.y_train.groupby(level="series", sort=False).size()
    assert sizes.to_dict() == lengths and (sizes.min(), sizes.max()) == (low, high)
    assert (data.y_test.groupby(level="series", sort=False).size() == 48).all()
    assert check_is_mtype(data.y_train, "pd-multiindex")
    assert check_is_mtype(data.y_test, "pd-multiindex")
    assert not data.y_train["y"].isna().any() and not data.y_test["y"].isna().any()
    for row, test_row in zip(train_rows[:3] + train_rows[-2:], test_rows[:3] + test_rows[-2:], strict=True):
        n = lengths[row[0]]
        assert data.y_train.loc[row[0], "y"].tolist() == [float(v) for v in row[1 : n + 1]]
        future = data.y_test.loc[row[0], "y"]
        assert future.tolist() == [float(v) for v in test_row[1:]]
        assert future.index.tolist() == list(range(n, n + 48))
    assert isinstance(data.y_train.index, pd.MultiIndex)
