"""Many univariate series as two sktime ``pd-multiindex`` panels (training part, test horizon).

The record the panel loaders return (:func:`aaren_ts.datasets.load_m4`,
:func:`aaren_ts.datasets.load_tourism`), and the construction of its panels from concatenated values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._errors import DatasetIntegrityError

__all__ = ["COLUMN", "INDEX_NAMES", "PanelData", "check_horizon", "check_train_lengths", "make_panel"]

#: Names of the two index levels of the panels: the series id, then the position in the series.
INDEX_NAMES = ("series", "time")
#: Name of the panels' one column.
COLUMN = "y"


@dataclass(frozen=True)
class PanelData:
    """Many univariate series of a forecasting competition: training and test panels, horizon, period.

    Both panels are sktime ``pd-multiindex`` DataFrames: a two-level MultiIndex (``series``, ``time``)
    and one float64 column ``y``. ``series`` is the competition's id; the rows are in the competition's
    order, which ``groupby(level="series", sort=False)`` keeps (sorting the index would order the ids
    as strings: ``q1, q10, q100, ...``). ``time`` is the integer position in the series, from 0 in
    ``y_train``, and in ``y_test`` continuing where the series' training part ends
    (``n_i, ..., n_i + horizon - 1`` for a training part of length ``n_i``).

    Parameters
    ----------
    y_train : pandas.DataFrame
        The training part of every series (lengths differ between series).
    y_test : pandas.DataFrame
        The ``horizon`` values after the end of each training part.
    horizon : int
        Number of values to forecast per series.
    sp : int
        Seasonal period ``m`` of the competition's MASE and MSIS.
    frequency : str
        The competition's name of the frequency (``"Hourly"``, ``"Quarterly"``).
    name : str, default=""
        The registry name of the data set (``"Tourism-Quarterly"``).

    Examples
    --------
    >>> from aaren_ts.datasets import load_tourism
    >>> data = load_tourism()  # doctest: +SKIP
    >>> data  # doctest: +SKIP
    PanelData(name='Tourism-Quarterly', n_series=427, horizon=8, sp=4)
    """

    y_train: pd.DataFrame = field(repr=False)
    y_test: pd.DataFrame = field(repr=False)
    horizon: int
    sp: int
    frequency: str
    name: str = ""

    @property
    def series_ids(self) -> pd.Index:
        """The series ids, in the competition's order."""
        return self.y_train.index.get_level_values(0).unique()

    @property
    def n_series(self) -> int:
        """Number of series."""
        return len(self.series_ids)

    @property
    def fh(self) -> np.ndarray:
        """The relative forecasting horizon ``1, ..., horizon`` (sktime's ``fh``)."""
        return np.arange(1, self.horizon + 1)

    @classmethod
    def from_parts(cls, info: Any, train: tuple[np.ndarray, ...], test: tuple[np.ndarray, ...]) -> Any:
        """The record of the dataset ``info`` (its registry entry) from the ``(ids, lengths, values)``
        of its training and test files: training parts from time 0, test parts where they end."""
        ids, lengths, values = train
        test_ids, test_lengths, test_values = test
        return cls(
            y_train=make_panel(ids, lengths, values, np.zeros(len(ids), dtype=np.int64)),
            y_test=make_panel(test_ids, test_lengths, test_values, lengths),
            horizon=info.horizon,
            sp=info.sp,
            frequency=info.frequency,
            name=info.name,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, n_series={self.n_series}, horizon={self.horizon}, "
            f"sp={self.sp})"
        )


def make_panel(ids: np.ndarray, lengths: np.ndarray, values: np.ndarray, start: np.ndarray) -> pd.DataFrame:
    """A pd-multiindex frame: series i (the next ``lengths[i]`` of ``values``) at times from ``start[i]``.

    Parameters
    ----------
    ids : numpy.ndarray
        The series ids, in order.
    lengths : numpy.ndarray
        Number of values of each series.
    values : numpy.ndarray
        The values of all series, concatenated in order (float64).
    start : numpy.ndarray
        The time (integer position) of each series' first value.

    Returns
    -------
    pandas.DataFrame
        Index levels ``series`` and ``time``, one column ``y``.
    """
    codes = np.repeat(np.arange(len(ids)), lengths)
    offsets = np.arange(codes.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    times = np.repeat(start, lengths) + offsets
    time_values, time_codes = np.unique(times, return_inverse=True)
    index = pd.MultiIndex(
        levels=[pd.Index(ids, dtype=object), pd.Index(time_values.astype(np.int64))],
        codes=[codes, time_codes.ravel()],
        names=list(INDEX_NAMES),
        verify_integrity=False,
    )
    return pd.DataFrame({COLUMN: values}, index=index)


def check_horizon(info: Any, path: Path, ids: np.ndarray, test_lengths: np.ndarray) -> None:
    """Refuse a test part (of the file ``path``) that is not ``info.horizon`` long; ``info`` is the
    dataset's registry entry."""
    short = np.flatnonzero(test_lengths != info.horizon)
    if short.size:
        j = int(short[0])
        raise DatasetIntegrityError(
            f"{info.name} file '{path}': series {ids[j]} has {test_lengths[j]} test values, the "
            f"competition's horizon is {info.horizon}"
        )


def check_train_lengths(info: Any, path: Path, train_lengths: np.ndarray) -> None:
    """Refuse training parts (of the file ``path``) whose shortest and longest lengths are not the
    upstream file's, ``info.train_length`` (no check where it is ``None``)."""
    if info.train_length is not None:
        low, high = info.train_length
        if train_lengths.min() != low or train_lengths.max() != high:
            raise DatasetIntegrityError(
                f"{info.name} file '{path}' has training series of {train_lengths.min()} to "
                f"{train_lengths.max()} values, the upstream file {low} to {high}"
            )
