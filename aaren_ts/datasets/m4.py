"""Loader of the M4 competition's data: many univariate series, one train/test panel per frequency.

The competition publishes two CSV files per frequency, read from the data folder in the layout
``M4/<Frequency>-train.csv`` and ``M4/<Frequency>-test.csv``: one row per series, the series id
(``"H1"``) first, then its values in time order, the training rows right-padded with empty fields.
:func:`load_m4` returns both parts as sktime ``pd-multiindex`` panels, with the competition's horizon
and the seasonal period its MASE and MSIS use (see :mod:`aaren_ts.metrics`).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._errors import DatasetIntegrityError
from ._fetch import fetch_file
from ._panel import COLUMN, INDEX_NAMES, PanelData, check_horizon, check_train_lengths
from ._registry import M4_FREQUENCIES, PanelDataset, _m4_info

__all__ = ["COLUMN", "INDEX_NAMES", "M4_FREQUENCIES", "M4Data", "load_m4"]


@dataclass(frozen=True)
class M4Data(PanelData):
    """One frequency of the M4 competition: the training and test panels, horizon and seasonal period.

    A :class:`PanelData` whose ``series`` are the competition's ids (``"H1"``, ``"H2"``, ...), in the
    competition's order (H1, H2, ..., H10, ...). The files carry no dates: ``time`` is the position in
    the series.

    Its fields are :class:`PanelData`'s: here ``horizon`` is the competition's (Hourly 48, Daily 14,
    Weekly 13, Monthly 18, Quarterly 8, Yearly 6), ``sp`` the seasonal period of its MASE and MSIS
    (Hourly 24, Monthly 12, Quarterly 4, otherwise 1), ``frequency`` its name of the frequency
    (``"Hourly"``) and ``name`` the registry's (``"M4-Hourly"``).

    Examples
    --------
    >>> from aaren_ts.datasets import load_m4
    >>> data = load_m4("Hourly")  # doctest: +SKIP
    >>> data  # doctest: +SKIP
    M4Data(frequency='Hourly', n_series=414, horizon=48, sp=24)
    >>> data.y_test.loc["H1"].index[:2].tolist()  # doctest: +SKIP
    [700, 701]
    """

    def __repr__(self) -> str:
        return (
            f"M4Data(frequency={self.frequency!r}, n_series={self.n_series}, horizon={self.horizon}, "
            f"sp={self.sp})"
        )


def _read(path: Path, dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ids, the lengths and the concatenated values (float64) of the rows of one M4 file.

    Rows are parsed one by one (a dense table of the Monthly file, 48000 rows right-padded to 2794
    values, would take about 1 GB); each row's values end at its first empty field.
    """
    where = f"{dataset} file '{path}'"
    ids: list[str] = []
    lengths: list[int] = []
    chunks: list[np.ndarray] = []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if not header or len(header) < 2 or header[0] != "V1":
                raise DatasetIntegrityError(
                    f"{where} does not have the M4 layout: expected the columns V1 (the series id), V2, "
                    f"..., got {(header or [])[:4]}"
                )
            for row_number, row in enumerate(reader):
                if not row:
                    continue
                series_id, fields = row[0], row[1:]
                label = f"{where}: series {series_id} (data row {row_number})"
                n = fields.index("") if "" in fields else len(fields)
                what = None
                if not series_id:
                    what = "no series id"
                elif n == 0:
                    what = "no values"
                elif any(fields[n:]):
                    what = "an empty field before its last value"
                if what is not None:
                    raise DatasetIntegrityError(f"{label} has {what}")
                try:
                    values = np.array(fields[:n], dtype=np.float64)
                except ValueError as error:
                    raise DatasetIntegrityError(f"{label} has a non-numeric value: {error}") from error
                if not np.isfinite(values).all():
                    raise DatasetIntegrityError(f"{label} has an infinite or NaN value")
                ids.append(series_id)
                lengths.append(n)
                chunks.append(values)
    except (csv.Error, UnicodeDecodeError) as error:
        raise DatasetIntegrityError(f"{where} is not a readable CSV file: {error}") from error
    if not ids:
        raise DatasetIntegrityError(f"{where} has no series")
    if len(set(ids)) != len(ids):
        raise DatasetIntegrityError(f"{where}: a series id (first column) is repeated")
    return np.array(ids, dtype=object), np.array(lengths, dtype=np.int64), np.concatenate(chunks)


def _check(
    info: PanelDataset,
    paths: tuple[Path, Path],
    ids: tuple[np.ndarray, np.ndarray],
    lengths: np.ndarray,
    test_lengths: np.ndarray,
    verify: bool,
) -> None:
    """The two files describe the same series; with ``verify``, the facts of the dataset card."""
    train_path, test_path = paths
    train_ids, test_ids = ids
    if len(train_ids) != len(test_ids) or (train_ids != test_ids).any():
        first = next(
            (i for i, (a, b) in enumerate(zip(train_ids, test_ids, strict=False)) if a != b),
            min(len(train_ids), len(test_ids)),
        )
        raise DatasetIntegrityError(
            f"{info.name}: the files '{train_path}' ({len(train_ids)} series) and '{test_path}' "
            f"({len(test_ids)} series) do not list the same series in the same order (first difference at "
            f"data row {first})"
        )
    check_horizon(info, test_path, test_ids, test_lengths)
    if not verify:
        return
    if len(train_ids) != info.n_series:
        state = "truncated" if len(train_ids) < info.n_series else "altered"
        raise DatasetIntegrityError(
            f"{info.name} file '{train_path}' is {state}: it has {len(train_ids)} series, the competition "
            f"{info.n_series}. Download it again, or pass verify=False to read it anyway."
        )
    expected = np.array([f"{info.id_prefix}{i}" for i in range(1, info.n_series + 1)], dtype=object)
    if (train_ids != expected).any():
        row = int(np.flatnonzero(train_ids != expected)[0])
        raise DatasetIntegrityError(
            f"{info.name} file '{train_path}': data row {row} is series {train_ids[row]!r}, expected "
            f"{expected[row]!r} (the competition numbers its series {info.id_prefix}1 to "
            f"{info.id_prefix}{info.n_series})"
        )
    check_train_lengths(info, train_path, lengths)


def load_m4(
    frequency: str = "Hourly",
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    verify: bool = True,
) -> M4Data:
    """Load one frequency of the M4 competition as training and test panels (sktime ``pd-multiindex``).

    Reads ``<data_home>/M4/<Frequency>-train.csv`` and ``<data_home>/M4/<Frequency>-test.csv``, the
    competition's files as published in the GitHub repository ``Mcompetitions/M4-methods``
    (``Dataset/Train/`` and ``Dataset/Test/``), downloading them there when missing and allowed.

    Parameters
    ----------
    frequency : {"Hourly", "Daily", "Weekly", "Monthly", "Quarterly", "Yearly"}, default="Hourly"
        Which series (case-insensitive).
    data_home : str or path-like, optional
        The data folder; default ``$AAREN_TS_DATA``, else ``~/aaren_ts_data``
        (see :func:`get_data_home`).
    download_if_missing : bool, default=True
        Download a missing file from the competition's GitHub repository (announced on stderr, with a
        progress bar).
    verify : bool, default=True
        Check the files against the dataset card: size and sha256 where recorded (verified once per
        file version, then cached), the number of series, their ids (``H1`` to ``H414`` in order) and,
        where recorded, the shortest and longest training series. Whatever ``verify``, the two files
        must list the same series in the same order, each with exactly ``horizon`` test values and a
        right-padded training row.

    Returns
    -------
    M4Data
        A frozen record with ``y_train`` and ``y_test`` (pd-multiindex DataFrames: index levels
        ``series`` and ``time``, one float64 column ``y``; series in the competition's order, ``time``
        the position in the series, the test continuing where the training part ends), ``horizon``,
        ``sp`` (the seasonal period ``m`` of MASE and MSIS) and ``frequency``; see :class:`M4Data`.

    Raises
    ------
    ValueError
        If ``frequency`` is unknown (the message lists the known ones).
    DatasetNotFoundError
        A :class:`FileNotFoundError`: a file is missing and could not be downloaded; the message names
        the file, the data folder it looked in, and where upstream publishes it.
    DatasetIntegrityError
        A :class:`ValueError`: a file is truncated, altered or malformed.

    See Also
    --------
    aaren_ts.metrics : sMAPE, MASE, OWA and MSIS as the competition scores them.

    Examples
    --------
    >>> from aaren_ts.datasets import load_m4
    >>> data = load_m4("Hourly")  # doctest: +SKIP
    >>> data.y_train.shape, data.y_test.shape, data.horizon, data.sp  # doctest: +SKIP
    ((353500, 1), (19872, 1), 48, 24)
    """
    info = _m4_info(frequency)
    paths = tuple(
        fetch_file(
            info.name,
            record,
            info.published_at,
            data_home=data_home,
            download_if_missing=download_if_missing,
            verify=verify,
        )
        for record in (info.train, info.test)
    )
    train_ids, lengths, train_values = _read(paths[0], info.name)
    test_ids, test_lengths, test_values = _read(paths[1], info.name)
    _check(info, paths, (train_ids, test_ids), lengths, test_lengths, verify)  # type: ignore[arg-type]
    return M4Data.from_parts(info, (train_ids, lengths, train_values), (test_ids, test_lengths, test_values))
