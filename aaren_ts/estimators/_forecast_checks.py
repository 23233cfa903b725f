"""Checks of the forecaster's input that sktime does not make, or makes only after failing elsewhere.

:class:`ForecastInputChecksMixin` gives :class:`~aaren_ts.AarenForecaster` sktime's
``predict_interval`` and ``predict_quantiles`` with ``coverage`` and ``alpha`` checked before any work
(sktime's own checks fail inside numpy on an empty or non-numeric value), and ``y`` and ``X`` checked
for columns that do not hold numbers before sktime's checks (:func:`check_real_columns`);
:func:`too_short` explains a ``y`` too short to train on, and what to pass instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from aaren_ts.estimators._panel import SeriesPanel

__all__ = ["ForecastInputChecksMixin", "check_probabilities", "check_real_columns", "too_short"]


def check_real_columns(data: Any, name: str, where: str = "", allow_bool: bool = False) -> None:
    """Refuse a pandas or numpy ``data`` (``y`` or ``X``, as ``name``) with a column that does not hold
    real numbers (int or float; with ``allow_bool``, bool too), naming the column, its dtype and the
    call ``where``. A nested panel (cells holding series) is left to sktime's checks.

    Raises
    ------
    TypeError
        Naming the first such column and its dtype, with the conversion to try.
    """
    if isinstance(data, pd.Series):
        data = data.to_frame()
    if isinstance(data, np.ndarray):
        data = pd.DataFrame(data.reshape(len(data), -1)) if data.ndim else None
    if not isinstance(data, pd.DataFrame):
        return
    kinds = "iufb" if allow_bool else "iuf"
    for column, dtype in data.dtypes.items():
        cells = data[column].dropna()
        if len(cells) and isinstance(cells.iloc[0], pd.Series | np.ndarray):
            return  # a nested panel (sktime's nested_univ): sktime converts and checks it
        if getattr(dtype, "kind", "O") not in kinds or isinstance(dtype, pd.CategoricalDtype):
            taken = "int, float or bool" if allow_bool else "int or float"
            raise TypeError(
                f"{where + ': ' if where else ''}{name}'s column {column!r} has dtype {dtype}; the "
                f"forecaster takes real numbers ({taken}): complex numbers, text, objects and categorical "
                "data are refused rather than converted (convert the column first, e.g. "
                f"{name}.astype(float), if its values are numbers)"
            )


class ForecastInputChecksMixin:
    """sktime's interval calls of :class:`~aaren_ts.AarenForecaster`, their arguments checked first,
    and ``y`` and ``X`` checked for columns that do not hold numbers before sktime's checks."""

    def _check_X_y(self, X: Any = None, y: Any = None, **kwargs: Any) -> Any:
        """sktime's checks of ``X`` and ``y`` (at ``fit``, ``update`` and ``predict``), after
        :func:`check_real_columns`'s: sktime would call a column of numbers stored as objects
        "categorical"."""
        check_real_columns(y, "y")
        check_real_columns(X, "X", allow_bool=True)
        return super()._check_X_y(X=X, y=y, **kwargs)

    def predict_interval(
        self, fh: Any = None, X: pd.DataFrame | None = None, coverage: float | Sequence[float] = 0.90
    ) -> pd.DataFrame:
        """Central prediction intervals at the steps of ``fh`` (re-calibrated online by default).

        sktime's ``predict_interval``, with ``coverage`` checked before any work. With
        ``interval_calibration="aci"`` each series' intervals are widened or narrowed from the errors
        its stream has seen (the user guide's "Forecast intervals").

        Parameters
        ----------
        fh : int, list, ForecastingHorizon or None
            The steps to forecast (required if not given to ``fit``).
        X : pandas DataFrame, optional
            The future-known covariates at those steps, if the forecaster has any.
        coverage : float or list of float, default=0.90
            Nominal coverage(s) of the central intervals, each strictly between 0 and 1.

        Returns
        -------
        pandas DataFrame
            Lower and upper bounds, columns ``(variable, coverage, "lower" | "upper")``.

        Raises
        ------
        TypeError, ValueError
            If ``coverage`` is empty or holds anything but real numbers strictly between 0 and 1.
        """
        check_probabilities(coverage, "coverage", "0.9 or [0.8, 0.95]")
        return super().predict_interval(fh=fh, X=X, coverage=coverage)

    def predict_quantiles(
        self, fh: Any = None, X: pd.DataFrame | None = None, alpha: float | Sequence[float] | None = None
    ) -> pd.DataFrame:
        """Quantiles of the forecast distribution at the steps of ``fh`` (calibrated like the intervals).

        sktime's ``predict_quantiles``, with ``alpha`` checked before any work. ``fh`` and ``X`` are
        as for :meth:`predict_interval`; ``alpha`` holds the probabilities of the quantiles, each
        strictly between 0 and 1 (sktime's default: 0.05 and 0.95). Returns the quantiles, columns
        ``(variable, alpha)``; raises ``TypeError`` or ``ValueError`` if ``alpha`` is empty or holds
        anything but real numbers strictly between 0 and 1.
        """
        if alpha is not None:
            check_probabilities(alpha, "alpha", "0.1 or [0.05, 0.5, 0.95]")
        return super().predict_quantiles(fh=fh, X=X, alpha=alpha)


def check_probabilities(value: Any, name: str, example: str) -> None:
    """Refuse an empty ``value`` (``ValueError``) or one holding anything but real numbers
    (``TypeError``), before sktime turns it into an error from inside numpy (sktime checks the range)."""
    values = list(value) if isinstance(value, list | tuple | np.ndarray | pd.Index) else [value]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        values = [value.item()]
    if len(values) == 0:
        raise ValueError(
            f"{name} is empty: give one probability strictly between 0 and 1 or a list, e.g. {example}"
        )
    for v in values:
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.integer | np.floating):
            raise TypeError(
                f"{name} must be a float or a list of floats strictly between 0 and 1 (e.g. {example}), got "
                f"{value!r}, holding a {type(v).__name__}"
            )


def too_short(panel: SeriesPanel, most: int) -> str:
    """Why ``fit`` cannot train on ``panel`` (no series has 2 observed values, at most ``most``), and
    what to pass instead."""
    lengths = sorted({len(v) for v in panel.values})
    message = (
        f"fit: y needs a series with at least 2 observed (non-NaN) values, its series have at most "
        f"{most}; y reached the forecaster as {len(panel.ids)} series of {' or '.join(map(str, lengths))} "
        f"time point(s) and {len(panel.columns)} column(s)"
    )
    if len(panel.columns) > 1:
        message += (
            ". A 3-D numpy array is read as (n_series, n_columns, n_timepoints) (sktime's numpy3D): "
            "pass one series as a 2-D (n_timepoints, n_columns) array or a DataFrame, or a panel as "
            "(n_series, n_columns, n_timepoints), e.g. y.transpose(0, 2, 1) for (n_series, n_timepoints, "
            "n_columns) data"
        )
    return message
