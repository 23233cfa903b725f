"""Panels from the long layout of neuralforecast and statsforecast: one row per (series, time) pair.

Those libraries keep many series in one frame of columns ``unique_id`` (the series), ``ds`` (the
timestamp or integer step) and ``y`` (the value). sktime, and :class:`~aaren_ts.AarenForecaster`, take
the same data as a ``pd-multiindex`` panel: a frame indexed by a (series, time) MultiIndex.
:func:`from_long_format` turns the one into the other.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

__all__ = ["from_long_format"]


def from_long_format(
    df: pd.DataFrame,
    id_col: Hashable = "unique_id",
    time_col: Hashable = "ds",
    target_col: Hashable | Sequence[Hashable] = "y",
) -> pd.DataFrame:
    """Turn a long frame of ``unique_id, ds, y`` rows into sktime's ``pd-multiindex`` panel.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per observation: the series id, the time and the value(s) in columns. Other columns
        are left out (take covariates in the same layout by naming them as ``target_col``).
    id_col : hashable, default="unique_id"
        The column of series ids.
    time_col : hashable, default="ds"
        The column of times: timestamps, periods or integer steps; strings are parsed as timestamps
        (``pandas.to_datetime``).
    target_col : hashable or sequence of hashable, default="y"
        The column(s) of values, which become the panel's column(s), as float64.

    Returns
    -------
    pandas.DataFrame
        Indexed by the MultiIndex ``(id_col, time_col)``: the series in the order of their first
        row in ``df``, each series' rows in time order. ``df`` is not changed. A missing observation
        stays NaN; a missing row stays missing (give every series a row at every step of its
        frequency, or the forecaster refuses the series as irregular).

    Raises
    ------
    TypeError
        If ``df`` is not a data frame or a value column holds non-numbers.
    ValueError
        If a column is missing, an id or time is missing, or a series has two rows at the same time.

    Examples
    --------
    >>> import pandas as pd
    >>> from aaren_ts.datasets import from_long_format
    >>> long = pd.DataFrame({
    ...     "unique_id": ["b", "b", "a", "a"],
    ...     "ds": pd.PeriodIndex(["2024-02", "2024-01", "2024-01", "2024-02"], freq="M"),
    ...     "y": [2.0, 1.0, 10.0, 20.0],
    ... })
    >>> from_long_format(long)  # doctest: +NORMALIZE_WHITESPACE
                          y
    unique_id ds
    b         2024-01   1.0
              2024-02   2.0
    a         2024-01  10.0
              2024-02  20.0
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"from_long_format: df must be a pandas DataFrame, got {type(df).__name__}")
    single = isinstance(target_col, str) or not isinstance(target_col, Sequence)
    targets = [target_col] if single else list(target_col)
    missing = [c for c in [id_col, time_col, *targets] if c not in df.columns]
    if missing:
        raise ValueError(
            f"from_long_format: df has no column(s) {missing}; its columns are {list(df.columns)}"
        )
    if len({id_col, time_col, *targets}) != 2 + len(targets):
        raise ValueError("from_long_format: id_col, time_col and target_col must name different columns")
    ids = df[id_col]
    times = df[time_col]
    for name, column in ((id_col, ids), (time_col, times)):
        if column.isna().any():
            row = df.index[int(np.flatnonzero(column.isna().to_numpy())[0])]
            raise ValueError(f"from_long_format: column {name!r} is missing at row {row!r}")
    if pd.api.types.is_object_dtype(times.dtype) or pd.api.types.is_string_dtype(times.dtype):
        try:
            with warnings.catch_warnings():
                # (pandas says so when it reads each timestamp on its own; a column it cannot read
                # at all is refused below, naming it)
                warnings.filterwarnings("ignore", message="Could not infer format", category=UserWarning)
                times = pd.to_datetime(times)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"from_long_format: column {time_col!r} cannot be read as timestamps ({err})"
            ) from err
    try:
        values = df[targets].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"from_long_format: column(s) {targets} must hold numbers ({err})") from err
    codes, _ = pd.factorize(ids)
    time_values = pd.Index(times)
    time_codes, _ = pd.factorize(time_values, sort=True)
    order = np.lexsort((time_codes, codes))
    index = pd.MultiIndex.from_arrays(
        [pd.Index(ids.to_numpy()[order], name=id_col), time_values[order].rename(time_col)]
    )
    duplicated = index.duplicated()
    if duplicated.any():
        series_id, time = index[int(np.argmax(duplicated))]
        raise ValueError(f"from_long_format: series {series_id!r} has more than one row at {time!r}")
    return pd.DataFrame(values[order], index=index, columns=pd.Index(targets))
