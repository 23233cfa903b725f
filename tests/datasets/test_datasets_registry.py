"""The registry, the generated cards, the data folder resolution and the checksum verification."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aaren_ts.datasets import (
    DATA_HOME_ENV,
    DataFile,
    DatasetIntegrityError,
    _integrity,
    get_data_home,
    get_dataset_info,
    list_datasets,
)
from aaren_ts.datasets._cards import render_all
from aaren_ts.datasets._registry import CLASSIFICATION_DATASETS, FORECASTING_DATASETS

CARDS = Path(__file__).resolve().parents[2] / "datasets"


def test_committed_cards_match_the_registry() -> None:
    expected = render_all()
    assert set(expected) >= {"README.md", "ETTh1.md", "ECL.md", "JapaneseVowels.md"}
    for name, text in expected.items():
        path = CARDS / name
        assert path.is_file(), f"datasets/{name} is missing: run python datasets/make_cards.py"
        assert path.read_text(encoding="utf-8") == text, (
            f"datasets/{name} differs from the registry: run python datasets/make_cards.py"
        )
    stray = {p.name for p in CARDS.glob("*.md")} - set(expected)
    assert not stray, f"cards without a registry entry: {sorted(stray)}"


def test_cards_state_missing_checksums() -> None:
    for name in ("ETTm2", "ECL"):
        assert FORECASTING_DATASETS[name].file.sha256 is None
        assert "not yet recorded" in (CARDS / f"{name}.md").read_text(encoding="utf-8")
    assert FORECASTING_DATASETS["ECL"].n_rows == 26304
    assert FORECASTING_DATASETS["ECL"].n_columns == 321


def test_paper_figures_come_from_the_reference_module() -> None:
    from aaren_ts.datasets.reference import PAPER_ACCURACY, PAPER_MSE, paper_accuracy, paper_mse

    assert PAPER_ACCURACY["JapaneseVowels"] == 96.65 and paper_accuracy("BasicMotions") is None
    assert paper_mse("ETTh1", 96) == 0.53 and paper_mse("ETTh1", 720) is None
    for name, info in CLASSIFICATION_DATASETS.items():
        assert info.paper_accuracy == PAPER_ACCURACY.get(name)
    assert set(PAPER_ACCURACY) <= set(CLASSIFICATION_DATASETS)
    for name, info in FORECASTING_DATASETS.items():
        assert info.paper_mse == tuple(paper_mse(name, T) for T in (96, 192, 336, 720))
    assert set(PAPER_MSE) <= set(FORECASTING_DATASETS)


def test_list_and_lookup() -> None:
    assert list_datasets("forecasting") == ["ETTh1", "ETTh2", "ETTm1", "ETTm2", "Weather", "ECL", "ILI"]
    assert "JapaneseVowels" in list_datasets("classification")
    assert list_datasets() == list(FORECASTING_DATASETS) + list(CLASSIFICATION_DATASETS)
    assert get_dataset_info("etth1").name == "ETTh1"
    assert get_dataset_info("PEMS-SF").n_channels == 963
    with pytest.raises(ValueError, match=r"unknown .*'ETTh3'.*known: .*ETTh1.*JapaneseVowels"):
        get_dataset_info("ETTh3")
    with pytest.raises(ValueError, match="kind"):
        list_datasets("regression")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        get_dataset_info(3)  # type: ignore[arg-type]


def test_data_home_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_HOME_ENV, str(tmp_path / "from_env"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert get_data_home() == tmp_path / "from_env"
    monkeypatch.delenv(DATA_HOME_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == tmp_path / "aaren_ts_data"
    assert not (tmp_path / "aaren_ts_data").exists()  # resolving does not create it


def _record_for(path: Path) -> DataFile:
    return DataFile(path.name, _integrity.sha256_of(path), path.stat().st_size)


def test_verification_is_cached_per_file_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.csv"
    path.write_bytes(b"date,OT\n2016-07-01 00:00:00,1.0\n")
    record = _record_for(path)
    calls = []
    real = _integrity.sha256_of
    monkeypatch.setattr(_integrity, "sha256_of", lambda p: calls.append(p) or real(p))
    assert _integrity.verify_file(path, record, "X")
    assert _integrity.verify_file(path, record, "X")
    assert len(calls) == 1
    # A new process (empty memory) reads the record from the cache file instead of hashing.
    monkeypatch.setattr(_integrity, "_memory", {})
    assert _integrity.verify_file(path, record, "X")
    assert len(calls) == 1
    # The same size but a new mtime: hashed again.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _integrity.verify_file(path, record, "X")
    assert len(calls) == 2


def test_verification_reports_truncated_and_altered_files(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    content = b"date,OT\n2016-07-01 00:00:00,1.0\n"
    path.write_bytes(content)
    record = _record_for(path)
    path.write_bytes(content[:-5])
    with pytest.raises(DatasetIntegrityError, match=r"truncated: it has 27 bytes, the upstream file 32"):
        _integrity.verify_file(path, record, "X")
    path.write_bytes(content + b"2016")
    with pytest.raises(DatasetIntegrityError, match="altered"):
        _integrity.verify_file(path, record, "X")
    path.write_bytes(content.replace(b"1.0", b"2.0"))
    with pytest.raises(DatasetIntegrityError, match=r"altered: its sha256 is [0-9a-f]{64}"):
        _integrity.verify_file(path, record, "X")
    assert not _integrity.verify_file(path, DataFile("f.csv"), "X")  # nothing recorded: not checked


def test_unwritable_cache_still_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = tmp_path / "f.csv"
    path.write_bytes(b"abc")
    assert _integrity.verify_file(path, _record_for(path), "X")
