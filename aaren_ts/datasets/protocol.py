"""The long-horizon forecasting protocol (Time-Series-Library), defined once for every benchmark and example.

- Borders, with ``L`` the input length: ETTh1/ETTh2 train ``[0, 8640)``, validation ``[8640-L, 11520)``,
  test ``[11520-L, 14400)``; ETTm1/ETTm2 the same times 4; Weather, ECL, ILI: train the first
  ``int(0.7 n)`` rows, test the last ``int(0.2 n)``, validation the rest, each later part starting ``L``
  rows early so that its first window has a full input.
- A ``StandardScaler`` fitted on the training rows only; metrics are computed on the scaled data.
- Stride-1 windows: input ``L`` steps, target the next ``T``; a split of ``m`` rows gives ``m - L - T + 1``
  windows, none dropped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Literal, TypeVar

import numpy as np
import pandas as pd
from sklearn.preprocessing import StandardScaler

from ._registry import DEFAULT_HORIZONS, _forecasting_info

__all__ = [
    "DEFAULT_HORIZONS",
    "DEFAULT_INPUT_LENGTH",
    "SPLITS",
    "fit_scaler",
    "get_split",
    "iter_windows",
    "load_series",
    "load_split",
    "load_windows",
    "n_windows",
    "sliding_windows",
    "split_borders",
]

#: The protocol's input length.
DEFAULT_INPUT_LENGTH = 96
#: The split names, in time order.
SPLITS = ("train", "val", "test")

Split = Literal["train", "val", "test"]
Data = TypeVar("Data", pd.DataFrame, np.ndarray)

_ETT_HOURLY = (8640, 11520, 14400)  # 12, 4 and 4 months of hourly rows


def _check_int(value: object, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}")
    return int(value)


def _check_split(split: object) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return str(split)


def split_borders(
    name: str, input_length: int = DEFAULT_INPUT_LENGTH, n_rows: int | None = None
) -> dict[str, tuple[int, int]]:
    """Row borders ``[start, stop)`` of the train, validation and test parts of a forecasting dataset.

    Parameters
    ----------
    name : str
        A forecasting dataset (``"ETTh1"``, ..., ``"Weather"``, ``"ECL"``, ``"ILI"``).
    input_length : int, default=96
        The input length ``L``; the validation and test parts start ``L`` rows before their first
        target.
    n_rows : int, optional
        Number of rows of the series (default: the dataset's, from its card). Used by the 70/10/20
        rule; the ETT borders are fixed and need at least ``14400`` (hourly) or ``57600`` (15-min) rows.

    Returns
    -------
    dict
        ``{"train": (0, a), "val": (a - L, b), "test": (b - L, c)}``.

    Raises
    ------
    ValueError
        If the name is unknown, ``input_length`` is negative or leaves no room, or ``n_rows`` is too short.

    Examples
    --------
    >>> from aaren_ts.datasets import split_borders
    >>> split_borders("ETTh1", 96)
    {'train': (0, 8640), 'val': (8544, 11520), 'test': (11424, 14400)}
    >>> split_borders("Weather", 96)
    {'train': (0, 36887), 'val': (36791, 42157), 'test': (42061, 52696)}
    """
    info = _forecasting_info(name)
    input_length = _check_int(input_length, "input_length", 0)
    n = info.n_rows if n_rows is None else _check_int(n_rows, "n_rows", 1)
    if info.protocol == "ratio":
        num_train, num_test = int(n * 0.7), int(n * 0.2)
        ends = (num_train, n - num_test, n)
    else:
        scale = 1 if info.protocol == "ett_hourly" else 4
        ends = tuple(end * scale for end in _ETT_HOURLY)
        if n < ends[-1]:
            raise ValueError(f"{info.name}: the protocol needs at least {ends[-1]} rows, got {n_rows}")
    if input_length > ends[0]:
        raise ValueError(f"input_length={input_length} is longer than the training part ({ends[0]} rows)")
    return {
        "train": (0, ends[0]),
        "val": (ends[0] - input_length, ends[1]),
        "test": (ends[1] - input_length, ends[2]),
    }


def get_split(data: Data, name: str, split: Split, input_length: int = DEFAULT_INPUT_LENGTH) -> Data:
    """Rows of one part (train, val or test) of a forecasting dataset, by position.

    Parameters
    ----------
    data : pandas.DataFrame or numpy.ndarray
        The whole series, rows = time steps (as :func:`load_forecasting` returns it).
    name : str
        The dataset's name (selects the border rule).
    split : {"train", "val", "test"}
        Which part.
    input_length : int, default=96
        The input length ``L``.

    Returns
    -------
    pandas.DataFrame or numpy.ndarray
        The rows ``[start, stop)`` of the part (a view for arrays).
    """
    start, stop = split_borders(name, input_length, n_rows=len(data))[_check_split(split)]
    return data.iloc[start:stop] if isinstance(data, pd.DataFrame) else data[start:stop]


def fit_scaler(data: pd.DataFrame | np.ndarray, name: str) -> StandardScaler:
    """A ``StandardScaler`` fitted on the training part only (rows ``split_borders(name)["train"]``).

    Parameters
    ----------
    data : pandas.DataFrame or numpy.ndarray
        The whole series, rows = time steps.
    name : str
        The dataset's name.

    Returns
    -------
    sklearn.preprocessing.StandardScaler
        Fitted (per-column mean and population standard deviation of the training rows).
    """
    train = get_split(data, name, "train", input_length=0)
    return StandardScaler().fit(np.asarray(train, dtype=np.float64))


def n_windows(n_steps: int, input_length: int, horizon: int) -> int:
    """Number of stride-1 windows in ``n_steps`` rows: ``max(n_steps - input_length - horizon + 1, 0)``.

    Parameters
    ----------
    n_steps : int
        Rows of the part.
    input_length : int
        Input length ``L``.
    horizon : int
        Horizon ``T``.

    Returns
    -------
    int
        The number of (input, target) windows.
    """
    n_steps = _check_int(n_steps, "n_steps", 0)
    total = _check_int(input_length, "input_length", 1) + _check_int(horizon, "horizon", 1)
    return max(n_steps - total + 1, 0)


def sliding_windows(
    values: np.ndarray | pd.DataFrame, input_length: int, horizon: int, *, copy: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """All stride-1 (input, target) windows of a series as two arrays, vectorised.

    Parameters
    ----------
    values : numpy.ndarray or pandas.DataFrame of shape (n_steps, n_channels)
        One part of a series (from :func:`get_split` / :func:`load_split`).
    input_length : int
        Input length ``L``.
    horizon : int
        Horizon ``T``.
    copy : bool, default=False
        Return contiguous copies instead of read-only strided views (views cost no memory).

    Returns
    -------
    X : numpy.ndarray of shape (n_windows, input_length, n_channels)
        ``X[i] = values[i : i + L]``.
    Y : numpy.ndarray of shape (n_windows, horizon, n_channels)
        ``Y[i] = values[i + L : i + L + T]``.

    Raises
    ------
    ValueError
        If ``values`` is not 2-D or is shorter than ``L + T``.

    Examples
    --------
    >>> import numpy as np
    >>> from aaren_ts.datasets import sliding_windows
    >>> X, Y = sliding_windows(np.arange(10.0).reshape(5, 2), input_length=2, horizon=1)
    >>> X.shape, Y.shape
    ((3, 2, 2), (3, 1, 2))
    """
    array = np.asarray(values)
    if array.ndim != 2:
        raise ValueError(f"values must be 2-D (n_steps, n_channels), got shape {array.shape}")
    count = n_windows(len(array), input_length, horizon)
    if count == 0:
        raise ValueError(
            f"a series of {len(array)} steps has no window of input_length={input_length} and "
            f"horizon={horizon} (needs at least {input_length + horizon} steps)"
        )
    windows = np.lib.stride_tricks.sliding_window_view(array, input_length + horizon, axis=0)
    windows = windows.transpose(0, 2, 1)  # (n_windows, L + T, n_channels)
    X, Y = windows[:, :input_length], windows[:, input_length:]
    if copy:
        return np.ascontiguousarray(X), np.ascontiguousarray(Y)
    return X, Y


def iter_windows(
    values: np.ndarray | pd.DataFrame, input_length: int, horizon: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Iterate over the stride-1 (input, target) windows of a series, in time order.

    The same windows as :func:`sliding_windows` (prefer that for whole splits: it is vectorised).

    Parameters
    ----------
    values : numpy.ndarray or pandas.DataFrame of shape (n_steps, n_channels)
        One part of a series.
    input_length : int
        Input length ``L``.
    horizon : int
        Horizon ``T``.

    Yields
    ------
    x : numpy.ndarray of shape (input_length, n_channels)
    y : numpy.ndarray of shape (horizon, n_channels)
    """
    X, Y = sliding_windows(values, input_length, horizon)
    yield from zip(X, Y, strict=True)


def load_series(
    name: str,
    *,
    input_length: int = DEFAULT_INPUT_LENGTH,
    scale: bool = True,
    data_home: str | os.PathLike[str] | None = None,
    **load_kwargs: object,
) -> tuple[pd.DataFrame, dict[str, tuple[int, int]]]:
    """Load a whole forecasting dataset as the protocol uses it, with the borders of its parts.

    Parameters
    ----------
    name : str
        A forecasting dataset.
    input_length : int, default=96
        The input length ``L`` (the validation and test parts start ``L`` rows early).
    scale : bool, default=True
        Standardise every column with the mean and standard deviation of the training rows.
    data_home : str or path-like, optional
        The data folder (see :func:`get_data_home`).
    **load_kwargs
        Passed to :func:`load_forecasting` (``download_if_missing``, ``index``, ``verify``).

    Returns
    -------
    data : pandas.DataFrame
        Every row of the series, with the original index and columns.
    borders : dict
        :func:`split_borders` of the series: ``{"train": (0, a), "val": (a - L, b), "test": (b - L, c)}``.

    Examples
    --------
    >>> from aaren_ts.datasets import load_series, sliding_windows
    >>> data, borders = load_series("ETTh1")  # doctest: +SKIP
    >>> start, stop = borders["test"]  # doctest: +SKIP
    >>> X, Y = sliding_windows(data.iloc[start:stop], 96, 96)  # every test window  # doctest: +SKIP
    """
    from .forecasting import load_forecasting

    data = load_forecasting(name, data_home=data_home, **load_kwargs)  # type: ignore[arg-type]
    borders = split_borders(name, input_length, n_rows=len(data))
    if scale:
        scaler = fit_scaler(data, name)
        data = pd.DataFrame(scaler.transform(data.to_numpy()), index=data.index, columns=data.columns)
    return data, borders


def load_split(
    name: str,
    split: Split,
    *,
    input_length: int = DEFAULT_INPUT_LENGTH,
    scale: bool = True,
    data_home: str | os.PathLike[str] | None = None,
    **load_kwargs: object,
) -> pd.DataFrame:
    """Load one part of a forecasting dataset, scaled with statistics of the training part only.

    Parameters
    ----------
    name : str
        A forecasting dataset.
    split : {"train", "val", "test"}
        Which part (validation and test start ``input_length`` rows early).
    input_length, scale, data_home, **load_kwargs
        As in :func:`load_series` (default: input length 96, scaled with training statistics).

    Returns
    -------
    pandas.DataFrame
        The part's rows, with the original index and columns.
    """
    split = _check_split(split)  # type: ignore[assignment]
    data, borders = load_series(
        name, input_length=input_length, scale=scale, data_home=data_home, **load_kwargs
    )
    start, stop = borders[split]
    return data.iloc[start:stop]


def load_windows(
    name: str,
    split: Split,
    *,
    input_length: int = DEFAULT_INPUT_LENGTH,
    horizon: int = 96,
    scale: bool = True,
    dtype: np.dtype | type = np.float32,
    data_home: str | os.PathLike[str] | None = None,
    **load_kwargs: object,
) -> tuple[np.ndarray, np.ndarray]:
    """All protocol windows of one part of a forecasting dataset, as arrays.

    Parameters
    ----------
    name : str
        A forecasting dataset.
    split : {"train", "val", "test"}
        Which part.
    input_length : int, default=96
        Input length ``L``.
    horizon : int, default=96
        Horizon ``T``.
    scale : bool, default=True
        Standardise with training statistics (the protocol).
    dtype : numpy dtype, default=numpy.float32
        dtype of the returned arrays.
    data_home : str or path-like, optional
        The data folder.
    **load_kwargs
        Passed to :func:`load_forecasting`.

    Returns
    -------
    X : numpy.ndarray of shape (n_windows, input_length, n_channels)
    Y : numpy.ndarray of shape (n_windows, horizon, n_channels)
        Read-only strided views of one array; ``n_windows = len(part) - L - T + 1``.

    Examples
    --------
    >>> from aaren_ts.datasets import load_windows
    >>> X, Y = load_windows("ETTh1", "test", horizon=96)  # doctest: +SKIP
    >>> X.shape, Y.shape  # doctest: +SKIP
    ((2785, 96, 7), (2785, 96, 7))
    """
    part = load_split(name, split, input_length=input_length, scale=scale, data_home=data_home, **load_kwargs)
    return sliding_windows(part.to_numpy(dtype=dtype), input_length, horizon)
