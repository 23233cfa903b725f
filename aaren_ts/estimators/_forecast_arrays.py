"""The forecaster's array interface: serving many streams and scoring long periods without pandas.

:class:`ForecastArraysMixin` holds the public calls of :class:`~aaren_ts.AarenForecaster` that take
and give arrays: the fast paths of ``partial_update``, ``predict`` and ``predict_quantiles`` for many
streams, and the evaluation helpers that score a single series' streamed or windowed forecasts. Each
checks its input and delegates to the forecaster's engine (:class:`~aaren_ts.engine.ForecastEngine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from aaren_ts.engine._undo import all_or_nothing
from aaren_ts.engine.forecast import series_label
from aaren_ts.estimators._forecast_frames import as_frame
from aaren_ts.estimators._inputs import real_array
from aaren_ts.utils.log_target import first_non_positive, from_log, to_log
from aaren_ts.utils.normal import check_quantile_levels

__all__ = ["ForecastArraysMixin"]


class ForecastArraysMixin:
    """Array calls of :class:`~aaren_ts.AarenForecaster` (see there for the attributes they use)."""

    def partial_update_array(
        self, y: np.ndarray, series_ids: Sequence[Any] | None = None, X: np.ndarray | None = None
    ) -> ForecastArraysMixin:
        """Advance streams by new observations given as an array: the fast path of :meth:`partial_update`.

        The same computation without pandas: every series given moves on by ``n_steps`` steps of its
        own frequency from its own cutoff (the time index is implied, so it is not checked). Use it
        to serve many streams at once; mix it freely with :meth:`partial_update`, :meth:`predict`
        and :meth:`predict_array`.

        Parameters
        ----------
        y : array-like of shape (n_series, n_steps, n_channels) or (n_series, n_channels)
            New observations of each series (the second form: one step each); NaN marks a missing one.
        series_ids : sequence, optional
            Ids of the series, in the order of ``y``'s rows (known ones: a new series needs its time
            index, so it starts through :meth:`partial_update`); ``None``: every series, in the order
            of :attr:`series_ids_`.
        X : array-like of shape (n_series, n_steps, n_exog) or (n_series, n_exog), optional
            The covariates at the same steps, columns in the order of ``exog_columns_`` (required
            if ``fit`` had ``X``).

        Returns
        -------
        AarenForecaster
            The forecaster itself, its streams advanced; on bad input (a wrong shape or type, infinite
            or overflowing values, missing or non-finite covariates, an unknown or repeated series id)
            a ``TypeError`` or ``ValueError`` leaves it exactly as it was.
        """
        self.check_is_fitted()
        engine = self.engine_
        rows = engine.rows_of(series_ids, "partial_update_array")
        arr = real_array(y, "partial_update_array", "y")
        if arr.ndim == 2:
            arr = arr[:, None, :]
        if arr.ndim != 3 or arr.shape[0] != len(rows) or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"partial_update_array: y must have shape ({len(rows)}, n_steps >= 1, {self.n_channels_}) "
                f"or ({len(rows)}, {self.n_channels_}), got {np.shape(y)}"
            )
        if self.n_exog_:
            exog = self._covariate_array(
                X, (len(rows), arr.shape[1], self.n_exog_), rows, "partial_update_array"
            )
            arr = np.concatenate([arr, exog], axis=2)
        log_target = engine.log_target[rows][:, None, :]
        arr = self._log_scale_values(
            arr,
            log_target,
            "partial_update_array",
            lambda i: (engine.ids[rows[i[0]]], self.columns_[i[2]], f"step {i[1]}"),
        )
        with engine.lock, self._torch_context(), all_or_nothing() as undo:
            undo.keep(self._cutoffs, "pending")
            self._cutoffs.defer(rows, arr.shape[1])
            engine.advance(rows, arr, where="partial_update_array", undo=undo)
        return self

    def predict_array(
        self, series_ids: Sequence[Any] | None = None, X: np.ndarray | None = None
    ) -> np.ndarray:
        """The current forecasts of the streams as an array: the fast path of :meth:`predict`.

        Parameters
        ----------
        series_ids : sequence, optional
            Ids of the series, in the order wanted; ``None``: every series, in the order of
            :attr:`series_ids_`.
        X : array-like of shape (n_series, horizon_, n_future), optional
            The future-known covariates at the ``horizon_`` steps after each series' cutoff (the first
            ``n_future_`` columns of ``exog_columns_``); required if there are any.

        Returns
        -------
        ndarray of shape (n_series, horizon_, n_channels)
            Each series' forecast of the ``horizon_`` steps after its cutoff, in original units.
        """
        self.check_is_fitted()
        rows = self.engine_.rows_of(series_ids, "predict_array")
        self.engine_.require_observed(rows, "predict_array")
        loc = self.engine_.predict(rows) + self._known_future_array(X, rows, "predict_array")
        return self._from_model_scale(loc, rows)

    def predict_quantiles_array(
        self, alpha: Sequence[float], series_ids: Sequence[Any] | None = None, X: np.ndarray | None = None
    ) -> np.ndarray:
        """Quantiles of the streams' current forecasts as an array: the fast path of ``predict_quantiles``.

        Parameters
        ----------
        alpha : sequence of float
            Probabilities of the quantiles, each strictly between 0 and 1 (``0.5``: the point forecast).
        series_ids : sequence, optional
            Ids of the series, in the order wanted; ``None``: every series, in the order of
            :attr:`series_ids_`.
        X : array-like of shape (n_series, horizon_, n_future), optional
            The future-known covariates at the forecast steps, as for :meth:`predict_array`.

        Returns
        -------
        ndarray of shape (n_series, horizon_, n_channels, len(alpha))
            Each series' quantiles of the ``horizon_`` steps after its cutoff, in original units
            (calibrated online with ``interval_calibration="aci"``).
        """
        self.check_is_fitted()
        probabilities = real_array(alpha, "predict_quantiles_array", "alpha").ravel()
        check_quantile_levels(probabilities, where="predict_quantiles_array")
        rows = self.engine_.rows_of(series_ids, "predict_quantiles_array")
        self.engine_.require_observed(rows, "predict_quantiles_array")
        known = self._known_future_array(X, rows, "predict_quantiles_array")
        quantiles = (
            self.engine_.predict_quantiles(probabilities.tolist(), rows) + np.asarray(known)[..., None]
        )
        return np.moveaxis(self._from_model_scale(np.moveaxis(quantiles, -1, 1), rows), 1, -1)

    def _covariate_array(self, X: Any, shape: tuple[int, ...], rows: np.ndarray, where: str) -> np.ndarray:
        """``X`` as a float array of ``shape`` (or one step less), checked finite; in original units."""
        if X is None:
            raise ValueError(f"{where}: X is required: the forecaster was fitted with covariates")
        arr = real_array(X, where, "X")
        if arr.ndim == len(shape) - 1 and shape[1] == 1:
            arr = arr[:, None]
        if arr.shape != shape:
            raise ValueError(f"{where}: X must have shape {shape}, got {np.shape(X)}")
        if not np.isfinite(arr).all():
            bad = self.engine_.ids[rows[int(np.argwhere(~np.isfinite(arr))[0, 0])]]
            raise ValueError(f"{where}: X holds a non-finite value for {series_label(bad)}")
        return arr

    def _known_future_array(self, X: Any, rows: np.ndarray, where: str) -> np.ndarray | float:
        """Effect ``(n_rows, horizon, C)`` of the future-known covariates ``X``, original units."""
        if not getattr(self, "n_future_", 0):
            return 0.0
        future = self._covariate_array(X, (len(rows), self.horizon_, self.n_future_), rows, where)
        return self.engine_.future_effect(rows, future, np.arange(self.horizon_))

    def stream_forecasts(self, y: pd.Series | pd.DataFrame, X: pd.DataFrame | None = None) -> np.ndarray:
        """The forecasts the stream would make after each observation of ``y``, without advancing it.

        Continues from the current state exactly as :meth:`partial_update` would (same checks, same
        computation, in blocks), but returns the forecast after every observation and leaves the
        forecaster unchanged. Used to score streaming forecasts over a long period in one pass. For a
        forecaster fitted on a single series.

        Parameters
        ----------
        y : pandas Series or DataFrame
            The observations right after the cutoff (no gap, no overlap).
        X : pandas DataFrame, optional
            For a forecaster fitted with covariates (required then): their rows at ``y``'s times
            followed by the ``horizon_`` rows after them (``len(y) + horizon_`` rows in time order), so
            that every forecast has the future-known covariates of its steps.

        Returns
        -------
        ndarray of shape (len(y), horizon_, n_channels)
            Row ``i`` is the forecast of the ``horizon_`` steps after ``y``'s ``i``-th observation, in
            original units.
        """
        self.check_is_fitted()
        if self.level_names_ is not None:
            raise ValueError("stream_forecasts works on a forecaster fitted on a single series, not a panel")
        frame = as_frame(y, self.columns_, "stream_forecasts")
        future = None
        if self.n_exog_:
            if X is None:
                raise ValueError("stream_forecasts: X is required: the forecaster was fitted with covariates")
            if not isinstance(X, pd.DataFrame) or len(X) != len(frame) + self.horizon_:
                raise ValueError(
                    f"stream_forecasts: X must be a DataFrame of len(y) + horizon_ = "
                    f"{len(frame) + self.horizon_} rows (y's times, then the horizon after them), got "
                    f"{len(X) if isinstance(X, pd.DataFrame) else type(X).__name__}"
                )
            if not X.index[: len(frame)].equals(frame.index):
                raise ValueError("stream_forecasts: X's first len(y) rows must be at y's times")
            known = X[list(self.exog_columns_[: self.n_future_])].to_numpy(dtype=np.float64)
            if not np.isfinite(known).all():
                raise ValueError("stream_forecasts: X holds NaN or infinite future-known values")
            future = np.lib.stride_tricks.sliding_window_view(known[1:], self.horizon_, axis=0)
            future = np.moveaxis(future, -1, 1)[: len(frame)]  # (len(y), horizon_, n_future)
            X = X.iloc[: len(frame)]
        with self.engine_.lock, self._torch_context():
            plan = self._plan(frame, X if self.n_exog_ else None, strict=True, where="stream_forecasts")
            return self._from_model_scale(self.engine_.stream_forecasts(0, plan.values[0], future), 0)

    def predict_windows(
        self,
        windows: np.ndarray,
        batch_size: int = 256,
        return_std: bool = False,
        X: np.ndarray | None = None,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Forecast after each of many separate histories, encoding each from scratch, in batches.

        This is the vectorised path for evaluating many windows (e.g. all stride-1 test windows of a
        benchmark); it does not touch the stream state. For a forecaster fitted on a single series
        (the windows are scaled with its statistics).

        Parameters
        ----------
        windows : ndarray of shape (n_windows, length, n_channels) or (n_windows, length)
            Histories in the original units (all of one length).
        batch_size : int, default=256
            Windows per forward pass.
        return_std : bool, default=False
            Also return the standard deviation of each forecast (the network's, without the online
            calibration, which belongs to a stream).
        X : ndarray of shape (n_windows, length + horizon_, n_covariates), optional
            For a forecaster fitted with covariates (required then): their values at each window's
            steps and at the ``horizon_`` steps after it, in the order of ``exog_columns_`` (the
            future-known ones first). The future-known ones are read at the forecast steps too; the
            past-only ones (``past_covariates``) only over the window, so their values after it are
            ignored (NaN will do).

        Returns
        -------
        mean : ndarray of shape (n_windows, horizon_, n_channels)
            The forecast of the next ``horizon_`` steps after each window, in original units.
        std : ndarray of shape (n_windows, horizon_, n_channels)
            Its standard deviation, in original units; only with ``return_std=True``.
        """
        self.check_is_fitted()
        if self.level_names_ is not None:
            raise ValueError("predict_windows works on a forecaster fitted on a single series, not a panel")
        arr = real_array(windows, "predict_windows", "windows")
        if arr.ndim == 2 and self.n_channels_ == 1:
            arr = arr[..., None]
        if arr.ndim != 3 or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"windows must have shape (n_windows, length >= 1, {self.n_channels_}), got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise ValueError("windows contain NaN or infinite values")
        log_target = self.engine_.log_target[0]
        if first_non_positive(arr, log_target) is not None:
            raise ValueError(
                "windows hold a value at or below zero in a channel forecast on the log scale "
                f"(log_target_ {log_target.tolist()}; fit with target_transform=None to forecast on the "
                "series' own scale)"
            )
        arr, future = self._windows_with_covariates(to_log(arr, log_target), X)
        with self._torch_context():
            loc, std = self.engine_.forecast_windows(arr, batch_size=batch_size, future=future)
        if log_target.any():  # the mapped interval of one standard deviation: its half-width
            std = 0.5 * (from_log(loc + std, log_target) - from_log(loc - std, log_target))
            loc = from_log(loc, log_target)
        return (loc, std) if return_std else loc

    def _windows_with_covariates(self, windows: np.ndarray, X: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """The windows with their covariates appended, and the future-known ones at the forecast steps."""
        if not self.n_exog_:
            if X is not None:
                raise ValueError("predict_windows: X was given; the forecaster was fitted without covariates")
            return windows, None
        if X is None:
            raise ValueError("predict_windows: X is required: the forecaster was fitted with covariates")
        n, length = windows.shape[:2]
        shape = (n, length + self.horizon_, self.n_exog_)
        covariates = real_array(X, "predict_windows", "X")
        if covariates.shape != shape:
            raise ValueError(f"predict_windows: X must have shape {shape}, got {covariates.shape}")
        past, future = covariates[:, :length], covariates[:, length:, : self.n_future_]
        if not (np.isfinite(past).all() and np.isfinite(future).all()):
            raise ValueError(
                "predict_windows: X holds NaN or infinite values (over the windows, or at the forecast "
                "steps of a future-known covariate)"
            )
        return np.concatenate([windows, past], axis=2), future

    def stream_state_tensors(self) -> list[torch.Tensor]:
        """Copies of every tensor of the streams (encoder states, recent values, current forecasts)."""
        self.check_is_fitted()
        return [t.detach().clone() for t in self.engine_.tensors()]
