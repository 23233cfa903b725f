"""Panel (collection of time series) inputs to padded arrays with lengths, with clear errors.

The estimators accept the panel containers practitioners use and turn each into a :class:`Panel`:
a zero-padded float64 array ``(n_instances, max_length, n_channels)`` (time before channels, the
layout the networks consume) plus the true length of every series. Padding sits at the end of each
series; the networks mask it, so nothing depends on how long the longest series was.

Accepted containers (``C`` channels, ``T`` time points):

* numpy ``(n, C, T)`` (sktime ``numpy3D``) and ``(n, T)`` (univariate, sktime ``numpyflat``);
* a list of numpy arrays, one per series, each ``(C, T_i)`` (the per-instance slices of ``numpy3D``,
  lengths may differ) or 1D ``(T_i,)`` for univariate series;
* a list of pandas DataFrames ``(T_i, C)`` (sktime ``df-list``);
* a pandas DataFrame with a 2-level MultiIndex (instance, time) and one column per channel
  (sktime ``pd-multiindex``);
* a nested pandas DataFrame whose cells are pandas Series (sktime ``nested_univ``);
* a plain pandas DataFrame ``(n, T)`` (univariate, sktime ``pd-wide``).

Every error is a ``TypeError`` (unsupported container or dtype) or ``ValueError`` (empty input,
wrong rank, NaN/inf, inconsistent channels) whose message names the argument and the problem.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SKLEARN_EXPECTED_FAILED_CHECKS", "Panel", "coerce_labels", "real_array", "to_panel"]


#: sklearn estimator checks that cannot apply to a time-series classifier, with the reason. Pass it to
#: ``sklearn.utils.estimator_checks.parametrize_with_checks(..., expected_failed_checks=...)``
#: through :meth:`AarenClassifier.sklearn_expected_failed_checks`.
SKLEARN_EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_n_features_in": (
        "n_features_in_ is not set: a 2D X is a panel of univariate series whose column count is a series "
        "length, which may change between fit and predict; the channel count is n_channels_"
    ),
    "check_n_features_in_after_fitting": (
        "a 2D X is a panel of univariate series whose columns are time points, not features: series of "
        "any length are accepted at predict time (the network masks, it does not depend on the length), "
        "so a different column count is valid input, not an error"
    ),
    "check_classifiers_train": (
        "the check requires predicting on X.T (columns as rows) to raise; for a time-series classifier "
        "that is a valid panel of shorter/longer univariate series. The accuracy part of the check is "
        "exercised by this package's own tests"
    ),
}


@dataclass(frozen=True)
class Panel:
    """Zero-padded series and their lengths.

    Attributes
    ----------
    values : ndarray
        float64 ``(n_instances, max_length, n_channels)``; entries past a series' length are 0. (The
        estimators standardise in float64 and hand the networks float32.)
    lengths : ndarray
        int64 ``(n_instances,)``, the number of real time points of each series (may be 0 only where
        the caller allowed empty series).
    """

    values: np.ndarray
    lengths: np.ndarray

    @property
    def n_instances(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_channels(self) -> int:
        return int(self.values.shape[2])

    @property
    def max_length(self) -> int:
        return int(self.values.shape[1])

    def mask(self) -> np.ndarray:
        """Bool ``(n_instances, max_length)``, True at real time points."""
        return np.arange(self.max_length)[None, :] < self.lengths[:, None]


def _as_float(a: object, name: str) -> np.ndarray:
    """``a`` as a float64 array, with a TypeError naming ``name`` for non-numeric data."""
    arr = np.asarray(a)
    if arr.dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported; pass real-valued series")
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float64, copy=False)
    if arr.dtype.kind in "bUS" or (
        arr.dtype.kind == "O" and any(isinstance(v, str | bytes | bool | np.bool_) for v in arr.flat)
    ):
        raise TypeError(
            f"{name} must hold real numbers (int or float), got {arr.dtype.name} values: booleans and "
            "text are refused rather than converted (convert them first, e.g. X.astype(float), if they "
            "are numbers)"
        )
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must hold numbers (int/float); got dtype {arr.dtype} whose values cannot be "
            f"converted to float: {err}"
        ) from err


def real_array(a: object, where: str, name: str) -> np.ndarray:
    """``a`` as a float64 array of real numbers: ``TypeError`` naming ``name`` for anything else.

    Integers and floats pass; booleans, complex numbers, strings and objects are refused rather than
    coerced (a complex value would lose its imaginary part, a string its meaning).
    """
    arr = np.asarray(a)
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{where}: {name} must hold real numbers (int or float), got an array of dtype {arr.dtype}"
        )
    return arr.astype(np.float64, copy=False)


def _check_finite(values: np.ndarray, name: str) -> None:
    if np.isnan(values).any():
        raise ValueError(f"{name} contains NaN (missing values), which is not supported; impute them first")
    if np.isinf(values).any():
        raise ValueError(f"{name} contains inf or -inf, which is not supported")


def _from_series_list(series: Sequence[np.ndarray], name: str, allow_empty_series: bool) -> Panel:
    """``series`` are float arrays ``(T_i, C)``."""
    if len(series) == 0:
        raise ValueError(f"{name} is empty: it holds 0 series; pass at least one")
    channels = {s.shape[1] for s in series}
    if len(channels) > 1:
        raise ValueError(
            f"{name}: every series must have the same number of channels; found {sorted(channels)}"
        )
    n_channels = channels.pop()
    if n_channels == 0:
        raise ValueError(f"{name} has 0 channels; each series needs at least one")
    lengths = np.array([s.shape[0] for s in series], dtype=np.int64)
    if not allow_empty_series and (lengths == 0).any():
        raise ValueError(
            f"{name}: series {int(np.flatnonzero(lengths == 0)[0])} has 0 time points; every series "
            "needs at least one"
        )
    values = np.zeros((len(series), int(lengths.max(initial=0)), n_channels), dtype=np.float64)
    for i, s in enumerate(series):
        _check_finite(s, f"{name} (series {i})")
        values[i, : s.shape[0]] = s
    return Panel(values, lengths)


def _from_numpy(X: np.ndarray, name: str, allow_empty_series: bool) -> Panel:
    if X.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be a 3D array (n_instances, n_channels, n_timepoints) or a 2D array "
            f"(n_instances, n_timepoints) of univariate series; got an array with {X.ndim} "
            f"dimension(s) of shape {X.shape}. Reshape your data, e.g. X.reshape(1, -1) for a "
            "single univariate series"
        )
    values = _as_float(X, name)
    if values.shape[0] == 0:
        raise ValueError(
            f"{name} is empty: found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is "
            "required; pass at least one series"
        )
    if values.ndim == 2:
        values = values[:, None, :]
    n, n_channels, length = values.shape
    if n_channels == 0:
        raise ValueError(f"{name} has 0 channels (shape {X.shape}); each series needs at least one")
    if length == 0 and not allow_empty_series:
        raise ValueError(
            f"{name} has 0 time points: found array with 0 feature(s) (shape={X.shape}) while a minimum "
            "of 1 is required; each series needs at least one time point"
        )
    _check_finite(values, name)
    out = np.ascontiguousarray(values.transpose(0, 2, 1), dtype=np.float64)
    return Panel(out, np.full(n, length, dtype=np.int64))


def _from_multiindex(X: pd.DataFrame, name: str, allow_empty_series: bool) -> Panel:
    if X.index.nlevels != 2:
        raise ValueError(
            f"{name}: a MultiIndex DataFrame must have 2 levels (instance, time); got {X.index.nlevels}"
        )
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: the DataFrame has no rows")
    values = _as_float(X.to_numpy(), name)
    duplicated = X.index.duplicated()
    if duplicated.any():
        instance, time = X.index[int(np.argmax(duplicated))]
        raise ValueError(
            f"{name}: instance {instance!r} has more than one row at time point {time!r}; each "
            "(instance, time) pair must be unique"
        )
    codes, uniques = pd.factorize(X.index.get_level_values(0))
    try:  # every instance's rows in time order, as its time level says
        time_rank, _ = pd.factorize(X.index.get_level_values(1), sort=True)
    except TypeError as err:
        raise ValueError(f"{name}: the time level's values cannot be ordered: {err}") from None
    order = np.lexsort((time_rank, codes))
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    series = [values[order[bounds[i] : bounds[i + 1]]] for i in range(len(uniques))]
    return _from_series_list(series, name, allow_empty_series)


def _from_nested(X: pd.DataFrame, name: str, allow_empty_series: bool) -> Panel:
    series = []
    for i in range(X.shape[0]):
        cells = [np.asarray(c) for c in X.iloc[i]]
        lengths = {len(c) for c in cells}
        if len(lengths) > 1:
            raise ValueError(f"{name}: instance {i} has channels of different lengths {sorted(lengths)}")
        series.append(_as_float(np.stack(cells, axis=1), name) if cells else np.zeros((0, 0)))
    return _from_series_list(series, name, allow_empty_series)


def _list_item(item: object, i: int, name: str) -> np.ndarray:
    label = f"{name}[{i}]"
    if isinstance(item, pd.DataFrame):
        return _as_float(item.to_numpy(), label)
    if isinstance(item, pd.Series):
        return _as_float(item.to_numpy(), label)[:, None]
    if isinstance(item, np.ndarray | list | tuple):
        arr = _as_float(item, label)
        if arr.ndim == 1:
            return arr[:, None]
        if arr.ndim == 2:
            return arr.T  # (C, T_i) -> (T_i, C)
        raise ValueError(
            f"{label} must be a 2D array (n_channels, n_timepoints) or a 1D univariate series; got "
            f"{arr.ndim} dimension(s) of shape {arr.shape}"
        )
    raise TypeError(
        f"{label} has type {type(item).__name__}; a list must hold numpy arrays (n_channels, "
        "n_timepoints) or pandas DataFrames (n_timepoints, n_channels)"
    )


def to_panel(X: object, *, name: str = "X", allow_empty_series: bool = False) -> Panel:
    """Convert any supported panel container to a :class:`Panel`.

    Parameters
    ----------
    X : array-like, list or DataFrame
        See the module docstring for the accepted containers.
    name : str, default="X"
        Name used in error messages.
    allow_empty_series : bool, default=False
        Accept series with 0 time points (streaming chunks); the panel must still hold at least one
        series.

    Returns
    -------
    Panel

    Raises
    ------
    TypeError
        Unsupported container or non-numeric data.
    ValueError
        Empty input, wrong number of dimensions, NaN/inf, complex values, or series with different
        channel counts.
    """
    if hasattr(X, "tocsr") or hasattr(X, "todense") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a sparse matrix/array: sparse input is not supported; pass dense series "
            "(e.g. X.toarray())"
        )
    if isinstance(X, np.ndarray):
        return _from_numpy(X, name, allow_empty_series)
    if isinstance(X, pd.DataFrame):
        if isinstance(X.index, pd.MultiIndex):
            return _from_multiindex(X, name, allow_empty_series)
        if X.shape[0] and X.shape[1] and all(isinstance(c, pd.Series | np.ndarray) for c in X.iloc[0]):
            return _from_nested(X, name, allow_empty_series)
        if X.shape[0] == 0:
            raise ValueError(f"{name} is empty: the DataFrame has no rows")
        return _from_numpy(_as_float(X.to_numpy(), name), name, allow_empty_series)
    if isinstance(X, list | tuple):
        if len(X) == 0:
            raise ValueError(f"{name} is empty: it holds 0 series; pass at least one")
        if all(np.isscalar(v) for v in X):
            raise ValueError(
                f"{name} is a flat list of numbers; pass a list of series (arrays) or a 2D/3D array"
            )
        series = [_list_item(item, i, name) for i, item in enumerate(X)]
        return _from_series_list(series, name, allow_empty_series)
    if isinstance(X, pd.Series):
        raise TypeError(
            f"{name} is a pandas Series; pass a panel (several series), e.g. a 3D numpy array or a "
            "list of arrays"
        )
    if hasattr(X, "__array__"):
        return _from_numpy(np.asarray(X), name, allow_empty_series)
    raise TypeError(
        f"{name} has unsupported type {type(X).__name__}; pass a numpy array (n_instances, n_channels, "
        "n_timepoints), a list of per-series arrays, or an sktime panel DataFrame"
    )


def check_label_column(arr: np.ndarray, what: str) -> None:
    from sklearn.utils.multiclass import check_classification_targets

    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        raise ValueError(f"{what} contains NaN or inf labels")
    if arr.dtype.kind == "O" and pd.isna(arr).any():
        raise ValueError(f"{what} contains missing (None/NaN) labels")
    check_classification_targets(arr)  # "Unknown label type: continuous" for regression targets


def coerce_labels(y: Any, allow_multioutput: bool = False) -> np.ndarray | pd.DataFrame:
    """Labels as a 1D numpy array (warning like sklearn for a column vector).

    With ``allow_multioutput``, a 2D ``y`` with several columns is checked column by column and
    returned as a DataFrame (sktime then fits one classifier per column).
    """
    from sklearn.exceptions import DataConversionWarning

    if y is None:
        raise ValueError(
            "AarenClassifier requires y to be passed, but the target y is None; pass one label per series"
        )
    if not isinstance(y, pd.DataFrame | pd.Series | np.ndarray) and hasattr(y, "__array__"):
        y = np.asarray(y)
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        y = y.iloc[:, 0]
    if isinstance(y, pd.DataFrame) or (np.ndim(y) == 2 and np.shape(y)[1] > 1):
        if not allow_multioutput:
            raise ValueError(f"y must be 1D (one label per series); got shape {np.shape(y)}")
        frame = pd.DataFrame(y)
        for col in frame.columns:
            check_label_column(frame[col].to_numpy(), f"y column {col!r}")
        return frame
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; y is ravelled",
            DataConversionWarning,
            stacklevel=3,
        )
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"y must be 1D (one label per series); got shape {arr.shape}")
    check_label_column(arr, "y")
    return arr
