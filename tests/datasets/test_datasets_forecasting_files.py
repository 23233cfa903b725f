"""Forecasting loaders on small files written in exactly the upstream formats (no real data needed)."""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import (
    DataFile,
    DatasetIntegrityError,
    DatasetNotFoundError,
    download_file,
    load_ecl,
    load_ett,
    load_forecasting,
    load_split,
    load_weather,
    load_windows,
)
from aaren_ts.datasets._fetch import fetch_file
from aaren_ts.datasets._integrity import sha256_of
from aaren_ts.datasets._registry import FORECASTING_DATASETS

ETT_HEADER = "date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT"


def _ett_text(n_rows: int, freq: str = "15min", newline: str = "\n") -> str:
    stamps = pd.date_range("2016-07-01", periods=n_rows, freq=freq).strftime("%Y-%m-%d %H:%M:%S")
    values = np.round(np.random.default_rng(0).normal(size=(n_rows, 7)) * 10, 3)
    body = [f"{s}," + ",".join(repr(float(v)) for v in row) for s, row in zip(stamps, values, strict=True)]
    return newline.join([ETT_HEADER, *body]) + newline


def _write(home: Path, relative: str, text: str | bytes) -> Path:
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


@pytest.fixture(scope="module")
def ettm2_full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ETTm2.csv with the upstream shape (69680 rows) and format; its sha256 is not recorded."""
    home = tmp_path_factory.mktemp("home")
    _write(home, "ETT-small/ETTm2.csv", _ett_text(69680))
    return home


def test_ettm2_full_shape_loads_with_shape_checks_only(ettm2_full: Path) -> None:
    y = load_ett("ETTm2", data_home=ettm2_full, download_if_missing=False)
    assert y.shape == (69680, 7)
    assert list(y.columns) == ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
    assert (y.dtypes == np.float64).all()
    assert isinstance(y.index, pd.DatetimeIndex) and y.index.freqstr == "15min" and y.index.name == "date"
    assert str(y.index[-1]) == FORECASTING_DATASETS["ETTm2"].end
    X, _Y = load_windows("ETTm2", "test", horizon=192, data_home=ettm2_full, download_if_missing=False)
    assert X.shape == (57600 - (46080 - 96) - 96 - 192 + 1, 96, 7) and X.dtype == np.float32


def test_ett_via_environment_variable(ettm2_full: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAREN_TS_DATA", str(ettm2_full))
    assert load_forecasting("ettm2", download_if_missing=False, index="range").index.equals(
        pd.RangeIndex(69680)
    )


def test_truncated_and_shortened_files_are_reported(tmp_path: Path) -> None:
    text = _ett_text(69680)
    cut = text[: len(text) // 2]
    cut = cut[: cut.rindex(",") + 1]  # cut in the middle of a line, after a comma
    n_rows = cut.count("\n")  # the header's newline and the full rows' newlines, plus the partial row
    _write(tmp_path, "ETT-small/ETTm2.csv", cut)
    with pytest.raises(DatasetIntegrityError, match=rf"ETTm2 .*truncated: it has {n_rows} data rows.* 69680"):
        load_ett("ETTm2", data_home=tmp_path, download_if_missing=False)
    with pytest.raises(
        DatasetIntegrityError, match=rf"missing values in data row {n_rows - 1} \(its last row"
    ):
        load_ett("ETTm2", data_home=tmp_path, download_if_missing=False, verify=False)


def test_malformed_files(tmp_path: Path) -> None:
    path = _write(tmp_path, "ETT-small/ETTm2.csv", _ett_text(50))
    with pytest.raises(DatasetIntegrityError, match="malformed timestamp"):
        path.write_text(_ett_text(50).replace("2016-07-01 03:00:00", "2016-07-01 3h"))
        load_ett("ETTm2", data_home=tmp_path, verify=False)
    with pytest.raises(DatasetIntegrityError, match="non-numeric value"):
        lines = _ett_text(50).splitlines()
        lines[5] = lines[5].rsplit(",", 1)[0] + ",oops"
        path.write_text("\n".join(lines) + "\n")
        load_ett("ETTm2", data_home=tmp_path, verify=False)
    with pytest.raises(DatasetIntegrityError, match="does not start with a 'date' column"):
        path.write_text(_ett_text(50).replace("date,", "time,", 1))
        load_ett("ETTm2", data_home=tmp_path, verify=False)
    with pytest.raises(DatasetIntegrityError, match="not a readable CSV"):
        path.write_text("")
        load_ett("ETTm2", data_home=tmp_path, verify=False)
    path.write_text(_ett_text(50).replace("2016-07-01 03:00:00", "2016-07-01 03:05:00"))
    with pytest.warns(UserWarning, match="not a regular '15min' grid .*row 12"):
        y = load_ett("ETTm2", data_home=tmp_path, verify=False)
    assert y.index.freqstr == "15min"
    assert load_ett("ETTm2", data_home=tmp_path, verify=False, index="upstream").index.freq is None


def test_ecl_format(tmp_path: Path) -> None:
    n = 60
    header = "date," + ",".join(str(i) for i in range(320)) + ",OT"
    stamps = pd.date_range("2016-07-01 02:00:00", periods=n, freq="h").strftime("%Y-%m-%d %H:%M:%S")
    rows = [f"{s}," + ",".join(str(float(i + j)) for j in range(321)) for i, s in enumerate(stamps)]
    _write(tmp_path, "electricity/electricity.csv", "\n".join([header, *rows]) + "\n")
    y = load_ecl(data_home=tmp_path, verify=False)
    assert y.shape == (n, 321) and y.columns[-1] == "OT" and y.columns[0] == "0"
    assert y.index.freqstr == "h" and str(y.index[0]) == "2016-07-01 02:00:00"
    assert y.iloc[3, 5] == 8.0
    with pytest.raises(DatasetIntegrityError, match=r"ECL .*truncated: it has 60 data rows, .* 26304"):
        load_ecl(data_home=tmp_path)


@pytest.mark.parametrize("header_encoding", ["utf-8", "latin-1"])
def test_weather_format_crlf_and_header_bytes(tmp_path: Path, header_encoding: str) -> None:
    names = ["p (mbar)", "SWDR (W/m²)", "PAR (µmol/m²/s)", "OT"]
    header = ("date," + ",".join(names)).encode(header_encoding)
    stamps = pd.date_range("2020-01-01 00:10", periods=30, freq="10min").strftime("%Y-%m-%d %H:%M:%S")
    body = "".join(f"{s},1008.{i},0.0,0.0,428.{i}\r\n" for i, s in enumerate(stamps)).encode()
    _write(tmp_path, "weather/weather.csv", header + b"\r\n" + body)
    y = load_weather(data_home=tmp_path, verify=False)
    assert list(y.columns) == names  # both encodings decode to the same names
    assert y.shape == (30, 4) and y.index.freqstr == "10min"
    assert y["OT"].iloc[-1] == pytest.approx(428.29)


def test_missing_file_message(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_weather(data_home=tmp_path)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert "'weather/weather.csv'" in message and str(tmp_path / "weather" / "weather.csv") in message
    assert "data_home argument" in message and "thuml/Autoformer" in message
    assert "cannot be downloaded automatically" in message
    with pytest.raises(DatasetNotFoundError, match=r"ETTh2.*zhouhaoyi/ETDataset.*download_if_missing=True"):
        load_ett("ETTh2", data_home=tmp_path, download_if_missing=False)
    assert not (tmp_path / "ETT-small").exists()


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown forecasting dataset 'ETTh9'; known: ETTh1"):
        load_forecasting("ETTh9", data_home=tmp_path)
    with pytest.raises(ValueError, match="unknown ETT dataset 'Weather'"):
        load_ett("Weather", data_home=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="index must be one of"):
        load_forecasting("ETTh1", data_home=tmp_path, index="period")  # type: ignore[arg-type]


def test_download_file_from_file_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path, "upstream/x.csv", _ett_text(20))
    target = tmp_path / "home" / "sub" / "x.csv"
    download_file(source.as_uri(), target, sha256=sha256_of(source), chunk_size=100)
    assert target.read_bytes() == source.read_bytes()
    assert "downloading" in capsys.readouterr().err  # announced, never silent
    with pytest.raises(DatasetIntegrityError, match="was not kept"):
        download_file(source.as_uri(), tmp_path / "y.csv", sha256="0" * 64)
    assert not (tmp_path / "y.csv").exists() and not list(tmp_path.glob("y.csv*.part"))
    with pytest.raises(OSError):
        download_file((tmp_path / "nowhere.csv").as_uri(), tmp_path / "z.csv")
    assert not (tmp_path / "z.csv").exists() and not list(tmp_path.glob("z.csv*.part"))


def test_concurrent_downloads_of_one_file_do_not_collide(tmp_path: Path) -> None:
    """Workers starting together may download the same file: each writes its own partial file."""
    import threading

    payload = _ett_text(200).encode()
    both_started = threading.Barrier(2)

    class SlowResponse:
        headers = None

        def __init__(self) -> None:
            self.chunks = [payload[i : i + 512] for i in range(0, len(payload), 512)]

        def read(self, size: int) -> bytes:
            if len(self.chunks) == len(payload[::512]):
                both_started.wait(timeout=10)  # both downloads are writing before either finishes
            return self.chunks.pop(0) if self.chunks else b""

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

    target = tmp_path / "home" / "x.csv"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            download_file("https://example.invalid/x.csv", target, sha256=hashlib.sha256(payload).hexdigest(),
                          opener=lambda url, timeout: SlowResponse(), progress=False)  # fmt: skip
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert target.read_bytes() == payload
    assert not list(target.parent.glob("*.part"))


def test_loader_downloads_when_missing(
    tmp_path: Path, ettm2_full: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = ettm2_full / "ETT-small" / "ETTm2.csv"
    requested = []
    real_urlopen = urllib.request.urlopen

    def fake_urlopen(url: str, timeout: float) -> object:
        requested.append(url)
        return real_urlopen(served.as_uri(), timeout=timeout)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    home = tmp_path / "empty_home"
    y = load_ett("ETTm2", data_home=home)
    assert requested == [FORECASTING_DATASETS["ETTm2"].file.url]
    assert (home / "ETT-small" / "ETTm2.csv").read_bytes() == served.read_bytes()
    assert y.shape == (69680, 7)


def test_failed_download_is_a_not_found_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(url: str, timeout: float) -> object:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DatasetNotFoundError, match=r"ETTh1.*Downloading it from https://\S+ETTh1.csv failed"):
        load_ett("ETTh1", data_home=tmp_path)
    assert not (tmp_path / "ETT-small" / "ETTh1.csv").exists()


def test_fetch_file_verifies_a_download(tmp_path: Path) -> None:
    source = _write(tmp_path, "upstream/a.csv", "date,OT\n")
    record = DataFile("sub/a.csv", sha256_of(source), source.stat().st_size, source.as_uri())
    path = fetch_file("A", record, "somewhere", data_home=tmp_path / "home")
    assert path == tmp_path / "home" / "sub" / "a.csv" and path.is_file()


def test_load_split_scales_with_training_statistics(ettm2_full: Path) -> None:
    raw = load_ett("ETTm2", data_home=ettm2_full)
    train = load_split("ETTm2", "train", data_home=ettm2_full)
    val = load_split("ETTm2", "val", data_home=ettm2_full)
    np.testing.assert_allclose(train.mean().to_numpy(), 0.0, atol=1e-10)
    np.testing.assert_allclose(train.std(ddof=0).to_numpy(), 1.0, atol=1e-10)
    mean, std = raw.iloc[:34560].mean(), raw.iloc[:34560].std(ddof=0)
    np.testing.assert_allclose(val.to_numpy(), ((raw.iloc[34464:46080] - mean) / std).to_numpy())
    assert val.index.equals(raw.index[34464:46080])
    unscaled = load_split("ETTm2", "test", scale=False, data_home=ettm2_full)
    assert unscaled.equals(raw.iloc[45984:57600])
