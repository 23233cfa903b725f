"""Loader of the tourism forecasting competition's quarterly series: 427 short series, horizon 8.

The competition publishes one CSV file per frequency and part, read from the data folder as
``tourism/quarterly_in.csv`` (the training parts) and ``tourism/quarterly_oos.csv`` (the 8 quarters
after each). Each file has one column per series: a header of names (``q1``, ..., ``q427``), then
three rows with the series' length, start year and start quarter, then the values in time order, the
cells below the end of a shorter series left empty. :func:`load_tourism` returns both parts as sktime
``pd-multiindex`` panels (a :class:`~aaren_ts.datasets.PanelData`), like
:func:`~aaren_ts.datasets.load_m4`.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._errors import DatasetIntegrityError
from ._fetch import fetch_file
from ._panel import PanelData, check_horizon, check_train_lengths
from ._registry import TOURISM_DATASETS, PanelDataset

__all__ = ["load_tourism"]

_META_ROWS = ("length", "start year", "start quarter")


@dataclass(frozen=True)
class _Columns:
    """The series of one file: names, lengths, start (year, quarter) and the values concatenated."""

    ids: np.ndarray
    lengths: np.ndarray
    years: np.ndarray
    quarters: np.ndarray
    values: np.ndarray


def _number(cell: str, where: str) -> float:
    try:
        return float(cell)
    except ValueError as error:
        raise DatasetIntegrityError(f"{where} is not a number: {cell!r}") from error


def _read(path: Path, dataset: str) -> _Columns:
    """Parse one file of the competition's column layout, checking each column against its length row."""
    where = f"{dataset} file '{path}'"
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if row]
    except (csv.Error, UnicodeDecodeError) as error:
        raise DatasetIntegrityError(f"{where} is not a readable CSV file: {error}") from error
    if len(rows) < len(_META_ROWS) + 2:
        raise DatasetIntegrityError(
            f"{where} does not have the competition's layout: expected a header of series names, three "
            f"rows (length, start year, start quarter) and the values, got {len(rows)} row(s)"
        )
    header, meta, body = rows[0], rows[1:4], rows[4:]
    width = len(header)
    if not all(header) or len(set(header)) != width:
        raise DatasetIntegrityError(f"{where}: the header (series names) has an empty or repeated name")
    for k, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise DatasetIntegrityError(f"{where}: line {k} has {len(row)} fields, the header {width}")
    numbers = [
        [_number(cell, f"{where}: the {name} of series {header[j]}") for j, cell in enumerate(row)]
        for name, row in zip(_META_ROWS, meta, strict=True)
    ]
    lengths = np.array(numbers[0])
    if (lengths < 1).any() or (lengths != np.round(lengths)).any():
        j = int(np.flatnonzero((lengths < 1) | (lengths != np.round(lengths)))[0])
        raise DatasetIntegrityError(f"{where}: series {header[j]} has length {lengths[j]:g}")
    chunks = []
    for j, name in enumerate(header):
        cells = [row[j] for row in body]
        n = int(lengths[j])
        label = f"{where}: series {name}"
        filled = [i for i, cell in enumerate(cells) if cell.strip()]
        gap = bool(filled) and filled[-1] != len(filled) - 1
        if len(filled) != n or gap:
            raise DatasetIntegrityError(
                f"{label} states {n} values (its first row) but has {len(filled)}"
                + (", with an empty cell before its last value" if gap else "")
            )
        values = np.array([_number(cell, f"{label}, value {i + 1},") for i, cell in enumerate(cells[:n])])
        if not np.isfinite(values).all():
            raise DatasetIntegrityError(f"{label} has an infinite or NaN value")
        chunks.append(values)
    return _Columns(
        ids=np.array(header, dtype=object),
        lengths=lengths.astype(np.int64),
        years=np.array(numbers[1], dtype=np.int64),
        quarters=np.array(numbers[2], dtype=np.int64),
        values=np.concatenate(chunks),
    )


def _check(
    info: PanelDataset, paths: tuple[Path, Path], train: _Columns, test: _Columns, verify: bool
) -> None:
    """The two files describe the same series, the test part starting right after the training part."""
    if len(train.ids) != len(test.ids) or (train.ids != test.ids).any():
        raise DatasetIntegrityError(
            f"{info.name}: the files '{paths[0]}' ({len(train.ids)} series) and '{paths[1]}' "
            f"({len(test.ids)} series) do not name the same series in the same order"
        )
    check_horizon(info, paths[1], test.ids, test.lengths)
    end = train.years * 4 + (train.quarters - 1) + train.lengths  # the quarter after the last value
    late = np.flatnonzero(test.years * 4 + (test.quarters - 1) != end)
    if late.size:
        j = int(late[0])
        raise DatasetIntegrityError(
            f"{info.name}: the test part of series {test.ids[j]} starts in {test.years[j]} "
            f"Q{test.quarters[j]}, not in the quarter after its training part "
            f"({end[j] // 4} Q{end[j] % 4 + 1})"
        )
    if not verify:
        return
    if len(train.ids) != info.n_series:
        raise DatasetIntegrityError(
            f"{info.name} file '{paths[0]}' has {len(train.ids)} series, the competition {info.n_series}. "
            "Place the upstream file there again, or pass verify=False to read it anyway."
        )
    check_train_lengths(info, paths[0], train.lengths)


def load_tourism(
    frequency: str = "Quarterly",
    *,
    data_home: str | os.PathLike[str] | None = None,
    verify: bool = True,
) -> PanelData:
    """Load the tourism competition's quarterly series as training and test panels (``pd-multiindex``).

    Reads ``<data_home>/tourism/quarterly_in.csv`` and ``<data_home>/tourism/quarterly_oos.csv``, the
    competition's files as published with its paper (Athanasopoulos, Hyndman, Song, Wu, "The tourism
    forecasting competition", International Journal of Forecasting 27(3), 2011). They come in a zip
    archive, so they are not downloaded here: a missing file raises an error saying where to put it.

    Parameters
    ----------
    frequency : {"Quarterly"}, default="Quarterly"
        Which series (case-insensitive); only the quarterly ones are supported.
    data_home : str or path-like, optional
        The data folder; default ``$AAREN_TS_DATA``, else ``~/aaren_ts_data``
        (see :func:`get_data_home`).
    verify : bool, default=True
        Check the files against the dataset record: size and sha256, the number of series (427) and
        the shortest and longest training series (22 and 122 values). Whatever ``verify``, every
        column must hold exactly the number of values its first row states, the two files must name
        the same series in the same order, each with 8 test values starting the quarter after its
        training part.

    Returns
    -------
    PanelData
        ``y_train`` and ``y_test`` (pd-multiindex DataFrames: index levels ``series`` (``"q1"``, ...,
        in the files' order) and ``time`` (the position in the series, the test continuing where the
        training part ends), one float64 column ``y``), ``horizon=8``, ``sp=4`` (the seasonal period
        ``m`` of MASE and MSIS), ``frequency="Quarterly"`` and ``name="Tourism-Quarterly"``.

    Raises
    ------
    ValueError
        If ``frequency`` is not ``"Quarterly"``.
    DatasetNotFoundError
        A :class:`FileNotFoundError`: a file is missing; the message names the file, the data folder
        it looked in, and where upstream publishes it.
    DatasetIntegrityError
        A :class:`ValueError`: a file is truncated, altered or malformed.

    See Also
    --------
    aaren_ts.metrics : MAPE, MASE and MSIS.
    load_m4 : The M4 competition's series, in the same form.

    Examples
    --------
    >>> from aaren_ts.datasets import load_tourism
    >>> data = load_tourism()  # doctest: +SKIP
    >>> data.n_series, data.horizon, data.sp  # doctest: +SKIP
    (427, 8, 4)
    """
    if not isinstance(frequency, str) or frequency.casefold() != "quarterly":
        raise ValueError(f"frequency must be 'Quarterly' (the only one supported), got {frequency!r}")
    info = TOURISM_DATASETS["Tourism-Quarterly"]
    paths = tuple(
        fetch_file(info.name, record, info.published_at, data_home=data_home, verify=verify)
        for record in (info.train, info.test)
    )
    train = _read(paths[0], info.name)
    test = _read(paths[1], info.name)
    _check(info, paths, train, test, verify)  # type: ignore[arg-type]
    return PanelData.from_parts(
        info, (train.ids, train.lengths, train.values), (test.ids, test.lengths, test.values)
    )
