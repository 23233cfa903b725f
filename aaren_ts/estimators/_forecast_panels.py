"""How the forecaster moves between pandas and its engine's arrays.

:class:`ForecastPanelsMixin` takes ``y`` (one series or a panel) and ``X`` apart into per-series
arrays checked against what ``fit`` saw, plans an update (which observations continue which series,
which series are new) before anything changes, hands the arrays to the engine
(:class:`~aaren_ts.engine.ForecastEngine`) with each series' cutoff kept in step, and puts the
engine's forecasts back into frames indexed by each series' own times.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts.engine._undo import UndoLog, all_or_nothing
from aaren_ts.engine.forecast import series_label
from aaren_ts.estimators._base import standardization
from aaren_ts.estimators._covariates import covariate_columns, covariates_at
from aaren_ts.estimators._cutoffs import absolute_times, continuation, in_zone_of, relative_steps
from aaren_ts.estimators._forecast_checks import check_real_columns
from aaren_ts.estimators._panel import SeriesPanel, index_freq, panel_frame, split_series
from aaren_ts.utils.log_target import (
    NonPositiveValueWarning,
    choose_log_channels,
    first_non_positive,
    from_log,
    missing_where_non_positive,
    to_log,
)

__all__ = ["ForecastPanelsMixin"]


class _StreamPlan(NamedTuple):
    """What a batch of new observations does to the streams (built before anything changes)."""

    ids: list[Any]
    times: list[pd.Index]
    values: list[np.ndarray]
    new: list[Any]
    new_log_target: np.ndarray
    log_target: np.ndarray  # (len(ids), n_channels): which channels of each series are on the log scale


def _describe_levels(level_names: list[Any] | None) -> str:
    if level_names is None:
        return "a single series (no MultiIndex)"
    return f"a MultiIndex of {len(level_names)} levels {list(level_names)}"


class ForecastPanelsMixin:
    """pandas in and out of :class:`~aaren_ts.AarenForecaster`'s engine."""

    def _split(self, y: pd.DataFrame, where: str) -> SeriesPanel:
        """``y`` taken apart into series, checked against what ``fit`` (or ``pretrain``) saw."""
        check_real_columns(y, "y", where)
        cutoffs = getattr(self, "_cutoffs", None)
        known_freq = index_freq(cutoffs.cutoffs) if cutoffs is not None and where != "fit" else None
        panel = split_series(y, where, freq=known_freq)
        if len(y) == 0:
            raise ValueError(f"{where}: y is empty")
        if hasattr(self, "columns_"):
            if len(panel.columns) != self.n_channels_:
                raise ValueError(
                    f"{where}: y has {len(panel.columns)} column(s), the forecaster was fitted on "
                    f"{self.n_channels_}"
                )
            # fit after pretrain: the same number of channels, names may differ
            if self.n_channels_ > 1 and where != "fit" and not panel.columns.equals(self.columns_):
                raise ValueError(
                    f"{where}: y's columns {list(panel.columns)} differ from those seen in fit "
                    f"{list(self.columns_)}"
                )
        if where != "fit" and hasattr(self, "engine_"):
            fitted_levels = self.level_names_
            if (panel.level_names is None) != (fitted_levels is None) or (
                panel.level_names is not None and len(panel.level_names) != len(fitted_levels)
            ):
                raise ValueError(
                    f"{where}: y has {_describe_levels(panel.level_names)}, the forecaster was fitted on "
                    f"{_describe_levels(fitted_levels)}"
                )
        return panel

    def _split_with_covariates(self, y: pd.DataFrame, X: pd.DataFrame | None, where: str) -> SeriesPanel:
        """:meth:`_split`, then each series' values followed by its covariates at the same steps."""
        panel = self._split(y, where)
        values = self._with_covariates(panel.values, panel.ids, panel.times, X, where, panel.is_panel)
        return SeriesPanel(panel.ids, panel.times, values, panel.columns, panel.level_names)

    def _with_covariates(
        self,
        values: list[np.ndarray],
        ids: list[Any],
        times: list[pd.Index],
        X: pd.DataFrame | None,
        where: str,
        is_panel: bool,
    ) -> list[np.ndarray]:
        """Each series' ``values`` followed by its covariates at the same steps (channels ``C + n_exog``:
        the series', then the covariates, future-known first); as is without covariates."""
        columns = getattr(self, "exog_columns_", None)
        if columns is None:
            return values
        exog = covariates_at(X, columns, ids, times, where, is_panel)
        return [np.concatenate([v, e], axis=1) for v, e in zip(values, exog, strict=True)]

    def _set_covariates(self, X: pd.DataFrame | None, where: str) -> None:
        """Record which covariates the network takes (``X``'s columns, future-known ones first)."""
        if X is None:
            self.exog_columns_, self.n_future_ = None, 0
            return
        past = list(self.past_covariates or [])
        past += [c for c in self.static_covariates or [] if c not in past]
        self.exog_columns_ = covariate_columns(X, past, where)
        self.n_future_ = len(self.exog_columns_) - len(past)

    def _static_positions(self, n_channels: int | None = None) -> np.ndarray:
        """Where the static covariates are among the columns of a series' values (``n_channels``
        channels, by default ``n_channels_``, then ``exog_columns_``)."""
        columns = getattr(self, "exog_columns_", None)
        if columns is None or not self.static_covariates:
            return np.zeros(0, dtype=np.int64)
        static = set(self.static_covariates)
        c = self.n_channels_ if n_channels is None else n_channels
        return np.array([c + k for k, name in enumerate(columns) if name in static], dtype=np.int64)

    def _set_static_standardization(self, panel: SeriesPanel, where: str) -> None:
        """Check that the static covariates are constant within each series of ``panel`` and fix their
        standardisation over all its series (``static_mean_``, ``static_scale_``)."""
        n_channels = len(panel.columns)
        positions = self._static_positions(n_channels)
        self.static_mean_, self.static_scale_ = np.zeros(0), np.ones(0)
        if not len(positions):
            return
        per_series = []
        for series_id, values in zip(panel.ids, panel.values, strict=True):
            static = values[:, positions]
            with np.errstate(invalid="ignore"):
                varies = np.nanmax(static, axis=0) != np.nanmin(static, axis=0)
            if varies.any():
                names = [self.exog_columns_[p - n_channels] for p in positions[varies]]
                raise ValueError(
                    f"{where}: static_covariates {names} vary in {series_label(series_id)}; a static "
                    "covariate must be constant within each series (give a varying one as a past covariate)"
                )
            per_series.append(static[:1])
        self.static_mean_, self.static_scale_ = standardization(np.concatenate(per_series))

    @property
    def n_exog_(self) -> int:
        """Number of exogenous variables the network takes (0 without ``X`` in ``fit``)."""
        columns = getattr(self, "exog_columns_", None)
        return 0 if columns is None else len(columns)

    @property
    def target_transform_(self) -> str | None:
        """``target_transform`` as fitted (forecasters saved before it existed: ``None``)."""
        return getattr(self, "_fitted_target_transform", None)

    def _on_model_scale(
        self, panel: SeriesPanel, where: str, own_scale: bool = False
    ) -> tuple[SeriesPanel, np.ndarray]:
        """``panel`` on the network's scale (the log of the channels ``target_transform`` chooses,
        :mod:`aaren_ts.utils.log_target`; ``own_scale``: of none) and which channels those are,
        ``(n_series, n_channels)`` bool."""
        c = len(panel.columns)
        report = self._fit_report()
        mode = None if own_scale else self.target_transform
        fitted = self.target_transform
        if mode == "auto" and report.skips("target_scale"):
            mode = fitted = None  # (series joining later stay on their own scale too)
        log_target = choose_log_channels(panel.values, c, mode, lag=int(self.sp_))
        if self.target_transform != "auto":
            report.panel("target_scale", f"set by parameter: {self.target_transform or 'own scale'}")
        elif mode is not None or own_scale:
            decision = np.where(log_target, "log", "own scale")
            report.per_channel("target_scale", panel.ids, list(panel.columns), decision)
        self._fitted_target_transform = fitted
        values = self._to_model_scale(
            panel.ids, panel.times, panel.values, list(log_target), panel.columns, where
        )
        return SeriesPanel(panel.ids, panel.times, values, panel.columns, panel.level_names), log_target

    def _to_model_scale(
        self,
        ids: Sequence[Any],
        times: Sequence[pd.Index],
        parts: Sequence[np.ndarray],
        log_target: Sequence[np.ndarray],
        columns: pd.Index,
        where: str,
    ) -> list[np.ndarray]:
        """Each series' values (target channels first) with its log-scale channels' logarithms (a value
        at or below zero there: see :meth:`_log_scale_values`)."""
        return [
            self._log_scale_values(
                part, log, where, lambda i, s=series_id, t=time: (s, columns[i[-1]], t[i[0]])
            )
            for series_id, time, part, log in zip(ids, times, parts, log_target, strict=True)
        ]

    def _log_scale_values(
        self,
        values: np.ndarray,
        log: np.ndarray,
        where: str,
        describe: Callable[[tuple[int, ...]], tuple[Any, Any, Any]],
    ) -> np.ndarray:
        """``values`` ``(..., width)`` with the log-scale channels (``log``, broadcastable to
        ``values[..., :n_channels]``) replaced by their logarithms.

        A value at or below zero there is refused (``target_transform="log"``: the user asked for the
        log scale) or, under ``"auto"`` (the log scale chosen on positive values in ``fit``), taken as
        missing with a :class:`~aaren_ts.NonPositiveValueWarning`: the stream carries on as
        over a gap. ``describe(index)`` names the value at ``index``: ``(series_id, column, when)``.
        """
        bad = first_non_positive(values, log)
        if bad is None:
            return to_log(values, log)
        series_id, column, when = describe(bad)
        if self.target_transform_ != "auto":
            raise self._non_positive_error(where, series_id, column, np.asarray(values)[bad], when)
        # (one message per series and channel: Python's filters then show it once, not at every call)
        warnings.warn(
            f"{where}: {series_label(series_id)}, channel {column!r}, holds a value at or below zero: its "
            "values in fit were positive and its seasonal changes grew with its level, so "
            "target_transform='auto' forecasts it on the log scale, where such a value has no place; "
            "it is taken as missing (fit with target_transform=None to forecast a series that may "
            "reach zero on its own scale)",
            NonPositiveValueWarning,
            stacklevel=3,
        )
        return to_log(missing_where_non_positive(values, log), log)

    def _non_positive_error(
        self, where: str, series_id: Any, column: Any, value: float, when: Any
    ) -> ValueError:
        """The error refusing ``value`` (at or below zero) at ``when`` in a log-scale channel."""
        why = (
            "target_transform='log' forecasts every channel on the log scale"
            if self.target_transform_ == "log"
            else "its values in fit were positive and its seasonal changes grew with its level, so "
            "target_transform='auto' forecasts it on the log scale"
        )
        return ValueError(
            f"{where}: {series_label(series_id)}, channel {column!r}, holds {value:g} at {when}: {why}, "
            "where a value at or below zero has no place (fit with target_transform=None to forecast on "
            "the series' own scale)"
        )

    def _from_model_scale(self, values: np.ndarray, rows: np.ndarray | int) -> np.ndarray:
        """Forecasts ``(..., n_channels)`` of the streams at ``rows`` (leading axis; an int: one
        stream) back from the network's scale to the series' units."""
        log = self.engine_.log_target[rows]
        if np.ndim(rows) == 1:
            log = log.reshape(len(log), *([1] * (np.ndim(values) - 2)), -1)
        return from_log(values, log)

    def _add_series(
        self,
        ids: list[Any],
        mean: np.ndarray,
        scale: np.ndarray,
        log_target: np.ndarray | None = None,
        undo: UndoLog | None = None,
    ) -> np.ndarray:
        """Start streams for the new series ``ids``; ``undo``: an enclosing call's log."""
        with all_or_nothing(undo) as log:
            log.keep(self._cutoffs, "cutoffs", "pending")
            rows = self.engine_.add(ids, mean, scale, log_target, undo=log)
            self._cutoffs.extend(len(ids))
        return rows

    def _consume(
        self,
        rows: np.ndarray,
        parts: Sequence[np.ndarray],
        times: Sequence[pd.Index],
        calibrate: bool = True,
        where: str = "update",
        undo: UndoLog | None = None,
    ) -> None:
        """Advance the streams at ``rows`` through their new values ``parts`` (original units) and
        move their cutoffs to the ends of ``times``, all or nothing (``undo``: an enclosing call's log)."""
        lengths = np.array([len(v) for v in parts], dtype=np.int64)
        raw = np.full((len(rows), int(lengths.max()), self.n_channels_ + self.n_exog_), np.nan)
        for i, part in enumerate(parts):
            raw[i, : lengths[i]] = part
        with self.engine_.lock, self._torch_context(), all_or_nothing(undo) as log:
            log.keep(self._cutoffs, "cutoffs", "pending")
            self.engine_.advance(rows, raw, lengths, calibrate=calibrate, where=where, undo=log)
            self._cutoffs.set(rows, times)

    def _frame(self, times: list[pd.Index], values: list[np.ndarray]) -> pd.DataFrame:
        return panel_frame(self.engine_.ids, times, values, self.columns_, self.level_names_)

    def _known_future(
        self, X: pd.DataFrame | None, steps: list[np.ndarray], times: list[pd.Index], where: str
    ) -> list[np.ndarray | float]:
        """What the future-known covariates add to each series' forecast at its ``steps`` (original units);
        ``0.0`` per series without future-known covariates."""
        if not getattr(self, "n_future_", 0):
            return [0.0] * len(steps)
        engine = self.engine_
        future_columns = self.exog_columns_[: self.n_future_]
        values = covariates_at(X, future_columns, engine.ids, times, where, self.level_names_ is not None)
        rows = np.arange(len(engine))  # (every series forecasts the same number of steps of fh)
        return list(engine.future_effect(rows, np.stack(values), np.stack(steps) - 1))

    def _forecast_steps(self, fh: ForecastingHorizon, where: str) -> tuple[list[np.ndarray], list[pd.Index]]:
        """For every series: the steps of ``fh`` after its own cutoff and their time index."""
        self._sync_cutoffs()
        engine = self.engine_
        engine.require_observed(np.arange(len(engine)), where)
        steps, times = [], []
        for row, cutoff in enumerate(self._cutoffs.cutoffs):
            row_steps = relative_steps(fh, cutoff)
            if row_steps.max() > self.horizon_:
                raise ValueError(
                    f"fh reaches {int(row_steps.max())} steps ahead of the cutoff of "
                    f"{series_label(engine.ids[row])}, "
                    f"but the forecaster was trained for a horizon of {self.horizon_}; refit with "
                    f"horizon >= {int(row_steps.max())}"
                )
            steps.append(row_steps)
            times.append(absolute_times(fh, row_steps, cutoff))
        return steps, times

    def _sync_cutoffs(self) -> None:
        """Bring every series' cutoff, and sktime's ``cutoff``, up to date after array updates."""
        with self.engine_.lock:
            if self._cutoffs.sync():
                self._set_cutoff(self._cutoffs.latest())

    def _plan(self, y: pd.DataFrame, X: pd.DataFrame | None, strict: bool, where: str) -> _StreamPlan:
        """Check ``y`` (and ``X``) against every stream and return what to consume; changes nothing.

        Each series' rows after its cutoff must continue it without a gap (``strict``: also no row at or
        before it); a series id not seen before starts a new stream, scaled by its own observations.
        The covariates of the rows to consume are appended to their values.
        """
        panel = self._split(y, where)
        engine = self.engine_
        self._sync_cutoffs()
        ids, times, values, new = [], [], [], []
        for series_id, time, part in zip(panel.ids, panel.times, panel.values, strict=True):
            row = engine.row_of.get(series_id)
            if row is None:
                if not panel.is_panel:
                    raise ValueError(f"{where}: y is not a continuation of the series seen in fit")
                if not np.isfinite(part).any():
                    raise ValueError(
                        f"{where}: {series_label(series_id)} is new and has no observed value to start "
                        "a stream from"
                    )
                new.append(series_id)
            else:
                cutoff = self._cutoffs.cutoffs[row]
                time = in_zone_of(time, cutoff, where, f"{series_label(series_id)}'s times")
                keep = continuation(time, cutoff, strict, where, series_id)
                if keep is None:
                    continue
                time, part = time[keep], part[keep]
            ids.append(series_id)
            times.append(time)
            values.append(part)
        values = self._with_covariates(values, ids, times, X, where, panel.is_panel) if ids else values
        c = self.n_channels_
        new_parts = [v for i, v in zip(ids, values, strict=True) if i not in engine.row_of]
        new_log_target = choose_log_channels(new_parts, c, self.target_transform_, lag=int(self.sp_))
        log_target = iter(new_log_target)
        logs = [engine.log_target[engine.row_of[i]] if i in engine.row_of else next(log_target) for i in ids]
        values = self._to_model_scale(ids, times, values, logs, self.columns_, where)
        known = [k for k, i in enumerate(ids) if i in engine.row_of]  # (new series: their own scale)
        if known:  # every value of the known series at once, before anything changes
            rows = np.array([engine.row_of[ids[k]] for k in known], dtype=np.int64)
            lengths = [len(values[k]) for k in known]
            stacked = np.concatenate([values[k] for k in known])[:, None, :]
            engine.check_values(np.repeat(rows, lengths), stacked, where)
        log_target = np.array(logs, dtype=bool).reshape(len(ids), c)
        return _StreamPlan(ids, times, values, new, new_log_target, log_target)

    def _apply(self, plan: _StreamPlan, where: str, undo: UndoLog | None = None) -> None:
        """Start the plan's new series and advance every stream it names, all or nothing (``undo``: an
        enclosing call's log)."""
        if not plan.ids:
            return
        engine = self.engine_
        with engine.lock, all_or_nothing(undo) as undo:  # new series and updates: all or none of them
            if plan.new:
                new_ids = set(plan.new)
                parts = [v for i, v in zip(plan.ids, plan.values, strict=True) if i in new_ids]
                mean, scale = self._standardize(parts)
                self._add_series(plan.new, mean, scale, plan.new_log_target, undo)
            rows = np.array([engine.row_of[i] for i in plan.ids], dtype=np.int64)
            self._consume(rows, plan.values, plan.times, where=where, undo=undo)
