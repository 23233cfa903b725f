"""Loaders of the long-horizon forecasting benchmarks (ETT, Weather, ECL, ILI) as pandas DataFrames.

Each loader reads the upstream CSV file as downloaded (``ETT-small/ETTh1.csv``, ``weather/weather.csv``,
``electricity/electricity.csv``, ``illness/national_illness.csv``) from the data folder, and returns a
DataFrame with one float64 column per variable, in the file's order (the target ``OT`` last), indexed by
a ``DatetimeIndex`` named ``date`` with its frequency set: ready for sktime forecasters.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from ._errors import DatasetIntegrityError
from ._fetch import fetch_file
from ._registry import ForecastingDataset, _forecasting_info

__all__ = ["load_ecl", "load_ett", "load_forecasting", "load_ili", "load_weather"]

IndexKind = Literal["regular", "upstream", "range"]
_INDEX_KINDS = ("regular", "upstream", "range")
_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def _header_encoding(path: Path) -> str:
    with open(path, "rb") as handle:
        header = handle.readline()
    try:
        header.decode("utf-8")
    except UnicodeDecodeError:
        return "latin-1"
    return "utf-8"


def _read_csv(path: Path, info: ForecastingDataset, verify: bool) -> tuple[pd.DataFrame, pd.DatetimeIndex]:
    where = f"{info.name} file '{path}'"
    try:
        frame = pd.read_csv(path, encoding=_header_encoding(path))
    except UnicodeDecodeError:
        frame = pd.read_csv(path, encoding="latin-1")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise DatasetIntegrityError(f"{where} is not a readable CSV file: {error}") from error
    if frame.shape[1] == 0 or frame.columns[0] != "date":
        raise DatasetIntegrityError(
            f"{where} does not start with a 'date' column (header: {list(frame.columns)[:4]}...)"
        )
    if verify:
        _check_shape(frame, info, where)
    try:
        stamps = pd.DatetimeIndex(pd.to_datetime(frame.pop("date"), format=_DATE_FORMAT), name="date")
    except (ValueError, TypeError) as error:
        raise DatasetIntegrityError(f"{where} has a malformed timestamp: {error}") from error
    try:
        values = frame.astype(np.float64)
    except (ValueError, TypeError) as error:
        raise DatasetIntegrityError(f"{where} has a non-numeric value: {error}") from error
    if values.isna().to_numpy().any():
        row = int(np.flatnonzero(values.isna().to_numpy().any(axis=1))[0])
        last = row == len(values) - 1
        raise DatasetIntegrityError(
            f"{where} has missing values in data row {row}"
            + (" (its last row: the file looks truncated)" if last else "")
        )
    if verify and str(stamps[0]) != info.start:
        raise DatasetIntegrityError(f"{where} starts at {stamps[0]}, the upstream file at {info.start}")
    return values, stamps


def _check_shape(frame: pd.DataFrame, info: ForecastingDataset, where: str) -> None:
    n_rows, n_columns = frame.shape[0], frame.shape[1] - 1
    if n_rows != info.n_rows:
        state = "truncated" if n_rows < info.n_rows else "altered"
        raise DatasetIntegrityError(
            f"{where} is {state}: it has {n_rows} data rows, the upstream file {info.n_rows}. "
            "Download it again, or pass verify=False to read it anyway."
        )
    columns = tuple(frame.columns[1:])
    if n_columns != info.n_columns:
        raise DatasetIntegrityError(
            f"{where} has {n_columns} value columns, the upstream file {info.n_columns}"
        )
    if info.columns is not None and columns != info.columns:
        raise DatasetIntegrityError(f"{where} has columns {list(columns)}, expected {list(info.columns)}")
    if columns[-1] != info.target:
        raise DatasetIntegrityError(f"{where}: the last column is {columns[-1]!r}, expected {info.target!r}")


def _make_index(stamps: pd.DatetimeIndex, info: ForecastingDataset, index: str, verify: bool) -> pd.Index:
    if index == "range":
        return pd.RangeIndex(len(stamps))
    regular = pd.date_range(stamps[0], periods=len(stamps), freq=info.freq, name="date")
    is_regular = bool((regular == stamps).all())
    if index == "upstream":
        return regular if is_regular else stamps
    if not is_regular and not info.timestamp_quirks:
        first = int(np.flatnonzero(regular != stamps)[0])
        message = (
            f"{info.name}: the file's timestamps are not a regular {info.freq!r} grid (first difference at "
            f"row {first}: {stamps[first]}); the frame gets a regular index from {stamps[0]}"
        )
        if verify:
            raise DatasetIntegrityError(message + "; pass verify=False to accept it")
        warnings.warn(message, UserWarning, stacklevel=4)
    return regular


def load_forecasting(
    name: str,
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    index: IndexKind = "regular",
    verify: bool = True,
) -> pd.DataFrame:
    """Load a forecasting benchmark by name as a DataFrame.

    Parameters
    ----------
    name : str
        One of ``"ETTh1"``, ``"ETTh2"``, ``"ETTm1"``, ``"ETTm2"``, ``"Weather"``, ``"ECL"``, ``"ILI"``
        (case-insensitive).
    data_home : str or path-like, optional
        The data folder; default ``$AAREN_TS_DATA``, else ``~/aaren_ts_data``
        (see :func:`get_data_home`). The file is read from ``<data_home>/<upstream path>``.
    download_if_missing : bool, default=True
        Download the file when it is missing and upstream offers a direct address (ETT); announced on
        stderr, with a progress bar.
    index : {"regular", "upstream", "range"}, default="regular"
        ``"regular"``: a ``DatetimeIndex`` with its frequency set, starting at the first timestamp of the
        file (equal to the file's timestamps except for Weather, see its card). ``"upstream"``: the file's
        own timestamps (frequency set when they are regular). ``"range"``: a ``RangeIndex``.
    verify : bool, default=True
        Check the file against the dataset card: size and sha256 (verified once per file version, then
        cached), number of rows and columns, column names, first timestamp.

    Returns
    -------
    pandas.DataFrame
        One float64 column per variable in the file's order, the target ``OT`` last; ``n_rows`` rows.

    Raises
    ------
    ValueError
        If ``name`` or ``index`` is unknown (the message lists the known values).
    DatasetNotFoundError
        A :class:`FileNotFoundError`: the file is missing and could not be downloaded; the message says
        which file, where it looked, and where upstream publishes it.
    DatasetIntegrityError
        A :class:`ValueError`: the file is truncated, altered or malformed.

    Examples
    --------
    >>> from aaren_ts.datasets import load_forecasting
    >>> y = load_forecasting("ETTh1")  # doctest: +SKIP
    >>> y.shape, y.index.freqstr  # doctest: +SKIP
    ((17420, 7), 'h')
    """
    info = _forecasting_info(name)
    if index not in _INDEX_KINDS:
        raise ValueError(f"index must be one of {_INDEX_KINDS}, got {index!r}")
    path = fetch_file(
        info.name,
        info.file,
        info.published_at,
        data_home=data_home,
        download_if_missing=download_if_missing,
        verify=verify,
    )
    values, stamps = _read_csv(path, info, verify)
    values.index = _make_index(stamps, info, index, verify)
    values.columns = pd.Index([str(column) for column in values.columns])
    return values


def _loader_doc(summary: str, details: str = "", name_parameter: str = "") -> str:
    """A loader's docstring: its own summary, then what every loader shares with load_forecasting."""
    return f"""{summary}

    {details}Parameters, return value and errors as :func:`load_forecasting`.

    Parameters
    ----------
    {name_parameter}data_home, download_if_missing, index, verify
        See :func:`load_forecasting`.

    Returns
    -------
    pandas.DataFrame
        The series, target ``OT`` last.
    """


def load_ett(
    name: Literal["ETTh1", "ETTh2", "ETTm1", "ETTm2"] = "ETTh1",
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    index: IndexKind = "regular",
    verify: bool = True,
) -> pd.DataFrame:
    if not isinstance(name, str) or not name.casefold().startswith("ett"):
        raise ValueError(f"unknown ETT dataset {name!r}; known: ETTh1, ETTh2, ETTm1, ETTm2")
    return load_forecasting(
        name, data_home=data_home, download_if_missing=download_if_missing, index=index, verify=verify
    )


load_ett.__doc__ = _loader_doc(
    "Load an Electricity Transformer Temperature data set (``ETT-small/<name>.csv``).",
    "ETTh1/ETTh2 are hourly (17420 rows), ETTm1/ETTm2 every 15 minutes (69680 rows); 7 columns\n    "
    "``HUFL, HULL, MUFL, MULL, LUFL, LULL, OT``. ",
    'name : {"ETTh1", "ETTh2", "ETTm1", "ETTm2"}, default="ETTh1"\n        Which file.\n    ',
)


def _named_loader(name: str, function_name: str, doc: str) -> Callable[..., pd.DataFrame]:
    """``load_<name>()``: :func:`load_forecasting` with the dataset's name filled in."""

    def loader(
        *,
        data_home: str | os.PathLike[str] | None = None,
        download_if_missing: bool = True,
        index: IndexKind = "regular",
        verify: bool = True,
    ) -> pd.DataFrame:
        return load_forecasting(
            name, data_home=data_home, download_if_missing=download_if_missing, index=index, verify=verify
        )

    loader.__name__ = loader.__qualname__ = function_name
    loader.__doc__ = doc
    return loader


_BY_HAND = "The file is not downloadable by address: place it in the data folder by hand. "

load_weather = _named_loader(
    "Weather",
    "load_weather",
    _loader_doc(
        "Load the Weather benchmark (``weather/weather.csv``): 52696 rows x 21 columns, every 10 minutes.",
        _BY_HAND,
    ),
)
load_ecl = _named_loader(
    "ECL",
    "load_ecl",
    _loader_doc(
        "Load the ECL (electricity) benchmark (``electricity/electricity.csv``): 26304 rows x 321 columns.",
        "Hourly from 1 July 2016, 02:00. " + _BY_HAND,
    ),
)
load_ili = _named_loader(
    "ILI",
    "load_ili",
    _loader_doc(
        "Load the influenza-like-illness set (``illness/national_illness.csv``): 966 weeks x 7 columns."
    ),
)
