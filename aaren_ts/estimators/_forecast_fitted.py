"""The forecaster's fitted attributes and the hooks that save and restore them.

:class:`FittedForecasterMixin` gives :class:`~aaren_ts.AarenForecaster` its per-series fitted
attributes (read from the engine) and the two persistence hooks of
:class:`~aaren_ts.estimators._base.AarenEstimatorMixin`: what a saved forecaster holds besides its
weights and parameters, as plain data, and how a loaded one is rebuilt from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from aaren_ts.estimators._cutoffs import SeriesCutoffs, index_from_plain, index_to_plain
from aaren_ts.estimators._fit_report import report_from_plain, report_to_plain
from aaren_ts.estimators._identity import key_from_plain, key_to_plain, names_from_plain
from aaren_ts.estimators._sktime_state import (
    plain_metadata,
    restore_sktime_state,
    sktime_state,
)
from aaren_ts.utils.limits import MAX_SCALE

__all__ = ["FittedForecasterMixin"]


class FittedForecasterMixin:
    """Fitted attributes and persistence of :class:`~aaren_ts.AarenForecaster`."""

    @property
    def series_ids_(self) -> list[Any]:
        """Ids of the series the forecaster streams, in order (``[None]`` for a single series)."""
        return list(self.engine_.ids)

    @property
    def series_cutoffs_(self) -> pd.Series:
        """Each series' cutoff (the time of its last observation), indexed by series id (``None`` for a
        single series)."""
        self._sync_cutoffs()
        index = pd.Index([None]) if self.level_names_ is None else self._series_index()
        return pd.Series([c[0] for c in self._cutoffs.cutoffs], index=index, name="cutoff", dtype=object)

    @property
    def mean_(self) -> np.ndarray | pd.DataFrame:
        """Standardisation means: ``(n_channels,)`` for a single series, one row per series of a panel."""
        return self._per_series(self.engine_.mean[:, : self.n_channels_])

    @property
    def scale_(self) -> np.ndarray | pd.DataFrame:
        """Standardisation scales: ``(n_channels,)`` for a single series, one row per series of a panel."""
        return self._per_series(self.engine_.scale[:, : self.n_channels_])

    @property
    def log_target_(self) -> np.ndarray | pd.DataFrame:
        """Channels forecast on the log scale: ``(n_channels,)`` bool for a single series, one row per
        series of a panel."""
        return self._per_series(self.engine_.log_target)

    @property
    def n_seen_(self) -> int | pd.Series:
        """Time steps consumed (``fit`` plus updates): an int, or one per series of a panel."""
        if self.level_names_ is None:
            return int(self.engine_.n_seen[0])
        return pd.Series(self.engine_.n_seen, index=self._series_index(), name="n_seen")

    def _series_index(self) -> pd.Index:
        ids = self.engine_.ids
        names = self.level_names_[:-1]
        if len(names) == 1:
            return pd.Index(ids, name=names[0])
        return pd.MultiIndex.from_tuples(ids, names=names)

    def _per_series(self, stats: np.ndarray) -> np.ndarray | pd.DataFrame:
        if self.level_names_ is None:
            return stats[0].copy()
        return pd.DataFrame(stats, index=self._series_index(), columns=self.columns_)

    # ------------------------------------------------------------------ persistence hooks
    def _fitted_attributes(self) -> dict[str, Any]:
        engine = self.engine_
        with engine.lock:
            cutoff = self.cutoff
            return {
                "horizon": self.horizon_,
                "context_length": int(self.context_length_),
                "sp": int(self.sp_),
                "n_channels": self.n_channels_,
                "columns": [key_to_plain(c) for c in self.columns_],
                "exog_columns": None
                if self.exog_columns_ is None
                else [key_to_plain(c) for c in self.exog_columns_],
                "n_future": int(self.n_future_),
                "member_losses": list(self._member_losses()),
                "member_initial_forecasts": list(self._member_starts()),
                "linear_share": float(getattr(self, "linear_share_", 0.0)),
                "level_names": plain_metadata(self.level_names_),
                "series_ids": [key_to_plain(i) for i in engine.ids],
                "series_cutoffs": self._cutoffs.to_plain(),
                "mean": engine.mean,
                "scale": engine.scale,
                "target_transform": self.target_transform_,
                "log_target": engine.log_target,
                "naive": engine.naive,
                "spread": engine.spread,
                "naive_std": engine.naive_std,
                "max_std": engine.max_std,
                "theta": engine.theta_arrays(),
                "static_mean": np.asarray(getattr(self, "static_mean_", np.zeros(0)), dtype=np.float64),
                "static_scale": np.asarray(getattr(self, "static_scale_", np.ones(0)), dtype=np.float64),
                "n_seen": engine.n_seen,
                "n_observed": engine.n_observed,
                "streams": [t.cpu() for t in engine.tensors()],
                **self._plain_fit_report(list(engine.ids)),
                "cutoff": index_to_plain(cutoff),
                **sktime_state(self, cutoff),
            }

    def _plain_fit_report(self, ids: list[Any]) -> dict[str, Any]:
        """``{"fit_report": ...}`` as :func:`report_to_plain` writes it (empty without a report)."""
        report = getattr(self, "fit_report_", None)
        if report is None:
            return {}
        return {"fit_report": report_to_plain(report, ids, list(self.columns_))}

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        self.horizon_ = int(attributes["horizon"])
        self.context_length_ = int(attributes["context_length"])
        # (archives written before sp="auto" hold the parameter, an int then)
        self.sp_ = int(attributes.get("sp", self.sp))
        self.n_channels_ = int(attributes["n_channels"])
        self.columns_ = names_from_plain(attributes["columns"])
        exog_columns = attributes.get("exog_columns")
        self.exog_columns_ = None if exog_columns is None else names_from_plain(exog_columns)
        self.n_future_ = int(attributes.get("n_future", 0))
        if "static_mean" in attributes:  # (archives written before static covariates: none)
            self.static_mean_ = _saved(attributes, "static_mean", torch.float64)
            self.static_scale_ = _saved(attributes, "static_scale", torch.float64)
            if (
                self.static_mean_.shape != (len(self._static_positions()),)
                or self.static_scale_.shape != self.static_mean_.shape
            ):
                raise ValueError(
                    "the saved standardisation of the static covariates does not fit its columns"
                )
        else:
            self.static_mean_, self.static_scale_ = np.zeros(0), np.ones(0)
        # (archives written before per-network losses: every network on the loss parameter)
        self.member_losses_ = tuple(attributes.get("member_losses", self._planned_losses()))
        # (archives written without the starts: those planned for the losses)
        starts = attributes.get("member_initial_forecasts", self._planned_starts(self.member_losses_))
        self.member_initial_forecasts_ = tuple(starts)
        # (archives written before linear_share: the networks alone; the blend is in the weights)
        self.linear_share_ = float(attributes.get("linear_share", 0.0))
        self.net_ = self._build_forecast_net(with_callbacks=False).initialize()
        self.net_.module_.load_state_dict(state_dict)
        self.net_.module_.eval()
        levels = attributes["level_names"]
        self.level_names_ = None if levels is None else list(levels)
        ids = [key_from_plain(i) for i in attributes["series_ids"]]
        self._new_engine()
        mean, scale = (_saved(attributes, name, torch.float64) for name in ("mean", "scale"))
        if len(mean) != len(ids) or not (
            np.isfinite(mean).all() and (scale > 0).all() and (scale <= MAX_SCALE).all()
        ):
            raise ValueError(
                f"the saved standardisation does not fit the {len(ids)} saved series (one finite mean and "
                f"positive scale of at most {MAX_SCALE:.3g} per series and channel)"
            )
        # (archives written before target_transform: every channel on its own scale)
        self._fitted_target_transform = attributes.get("target_transform")
        log_target = _saved(attributes, "log_target", torch.bool) if "log_target" in attributes else None
        if log_target is not None and log_target.shape != (len(ids), self.n_channels_):
            raise ValueError(
                f"the saved log_target has shape {log_target.shape}, not one row of {self.n_channels_} "
                f"channels for each of the {len(ids)} saved series"
            )
        self._add_series(ids, mean, scale, log_target)
        if "naive" in attributes:  # (archives written before the per-series fallback: none falls back)
            spread, naive_std, max_std = (
                _saved(attributes, name, torch.float64) if name in attributes else None
                # (older archives: factors of 1, the head's intervals, uncapped)
                for name in ("spread", "naive_std", "max_std")
            )
            # (archives written before the naive forecast's share: a bool per channel, 1 or 0)
            old = getattr(attributes["naive"], "dtype", None) == torch.bool
            naive = _saved(attributes, "naive", torch.bool if old else torch.float64)
            self.engine_.use_naive(naive, spread, naive_std, max_std)
        n_seen, n_observed = (_saved(attributes, name, torch.int64) for name in ("n_seen", "n_observed"))
        theta = attributes.get("theta")  # (archives written before the Theta combination: none)
        if theta is not None:
            if not isinstance(theta, dict) or not all(isinstance(v, torch.Tensor) for v in theta.values()):
                raise ValueError("the saved Theta streams must be a mapping of names to arrays")
            self.engine_.restore_theta({name: value.numpy() for name, value in theta.items()}, n_seen)
        self.engine_.restore(attributes["streams"], n_seen, n_observed)
        _check_forecasts_finite(self, n_observed)
        self._cutoffs = SeriesCutoffs.from_plain(attributes["series_cutoffs"])
        if len(self._cutoffs) != len(ids):
            raise ValueError(
                f"the saved cutoffs ({len(self._cutoffs)}) do not fit the {len(ids)} saved series"
            )
        if "fit_report" in attributes:  # (archives written before the fit report: none)
            self.fit_report_ = report_from_plain(attributes["fit_report"], ids, list(self.columns_))
        restore_sktime_state(self, attributes, index_from_plain(attributes["cutoff"]))


def _check_forecasts_finite(forecaster: Any, n_observed: np.ndarray) -> None:
    """Refuse restored streams whose forecasts, or 99 % bounds, are not finite in the series' units
    (each stream that has observed a value): values on the log scale are mapped back through the
    exponential, so a ``log_target`` or standardisation altered in the file would forecast ``inf``."""
    rows = np.flatnonzero(np.asarray(n_observed) > 0)
    if not len(rows):
        return
    engine = forecaster.engine_
    quantiles = engine.predict_quantiles([0.005, 0.995], rows).transpose(0, 1, 3, 2)  # channels last
    forecasts = [engine.predict(rows), quantiles]
    if not all(np.isfinite(forecaster._from_model_scale(f, rows)).all() for f in forecasts):
        raise ValueError(
            "the saved streams forecast non-finite values in the series' units: the saved log_target, "
            "standardisation or streams do not belong together (altered or damaged?)"
        )


def _saved(attributes: dict[str, Any], name: str, dtype: torch.dtype) -> np.ndarray:
    """The saved array ``attributes[name]``, refused unless it is a tensor of ``dtype`` (as saved)."""
    value = attributes[name]
    if not isinstance(value, torch.Tensor) or value.dtype != dtype:
        found = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"the saved {name} must be a tensor of {dtype}, found {found}")
    return value.numpy()
