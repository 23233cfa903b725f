"""How the forecaster builds and trains its network: the training orchestration of the adapter.

:class:`ForecasterTrainingMixin` turns :class:`~aaren_ts.AarenForecaster`'s parameters and a panel of
series into a trained :class:`~aaren_ts.nn.forecast.ForecastNet` through skorch: each series scaled by
its own training statistics and split into a training part and a validation tail, segments cropped
from them, early stopping on the tails, and, series by series, the (seasonal) naive forecast instead
of the network's where the network does not beat it on the series' tail. The decisions taken on the
tails are :class:`~aaren_ts.estimators._forecast_decisions.ValidationTails`'s, which this mixin hands
the networks to judge and whose results it keeps.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts.estimators._base import standardization
from aaren_ts.estimators._cutoffs import relative_steps
from aaren_ts.estimators._fit_report import FitReport
from aaren_ts.estimators._forecast_data import SegmentDataset, pad_segments
from aaren_ts.estimators._forecast_decisions import (
    MIN_TAILS,
    MIXED_LOSSES,
    POSITIVE_MIXED_LOSSES,
    NaiveVerdict,
    ValidationTails,
    auto_starts,
)
from aaren_ts.estimators._panel import SeriesPanel, series_label
from aaren_ts.estimators._progress import note, stage
from aaren_ts.estimators._seasonality import detect_sp
from aaren_ts.estimators._weight_averaging import AVERAGED_BEST_EPOCHS, join_members, unwrapped_network
from aaren_ts.nn.ensemble import ForecastEnsemble
from aaren_ts.nn.forecast import ForecastNet
from aaren_ts.nn.forecast_training import ForecastLoss
from aaren_ts.nn.heads import HEADS

__all__ = ["ForecasterTrainingMixin"]


# the default context length: a quarter of the median training part, within 96 (the long-horizon
# protocol's input) and 168 (a week of hourly data); where the median is shorter than 96, a window that
# long would be mostly padding: two horizons (N-BEATS's shortest lookback; older values still reach the
# forecast through the state), at most a third of the median and at least 8.
# See docs/design_notes/forecaster_context_length.rst.
_SHORT_CONTEXT_HORIZONS = 2
_MIN_DEFAULT_CONTEXT, _MAX_DEFAULT_CONTEXT, _MIN_SHORT_CONTEXT = 96, 168, 8


class ForecasterTrainingMixin:
    """Network building and training of :class:`~aaren_ts.AarenForecaster`."""

    def _start_fit_report(self) -> FitReport:
        """A new record of the decisions of this fit (``fit_report_``), announcing each when verbose."""
        self._report = FitReport(self.skip_steps or (), note if int(self.verbose) >= 2 else None)
        return self._report

    def _fit_report(self) -> FitReport:
        """The record of the fit in progress (a detached one outside ``fit``)."""
        report = getattr(self, "_report", None)
        return report if report is not None else FitReport(self.skip_steps or ())

    def _planned_losses(self, positive: bool = False, n_tails: int = MIN_TAILS) -> tuple[str, ...]:
        """The point loss each of the ``n_estimators`` networks starts training on: ``loss``, or its
        entries in turn (repeated from the first when there are more networks than entries);
        ``"auto"`` takes the entries of ``MIXED_LOSSES``, or of ``POSITIVE_MIXED_LOSSES`` for series
        whose target values are all ``positive``, where there are ``n_tails`` of ``MIN_TAILS`` or more
        validation tails (series' channels) to judge them on; with fewer the tail test could never
        keep the other losses' networks (:func:`~aaren_ts.estimators._forecast_decisions.clear_gain`),
        so every network trains on the first loss from the start instead of twice (a single univariate
        series)."""
        if isinstance(self.loss, str):
            mixed = POSITIVE_MIXED_LOSSES if positive else MIXED_LOSSES
            if n_tails < MIN_TAILS:
                mixed = mixed[:1]
            losses: tuple[str, ...] = mixed if self.loss == "auto" else (self.loss,)
        else:
            losses = tuple(self.loss)
        return tuple(str(losses[k % len(losses)]) for k in range(int(self.n_estimators)))

    def _planned_starts(self, losses: Sequence[str]) -> tuple[str, ...]:
        """The initial forecast each network trains from: the rival network
        (:func:`~aaren_ts.estimators._forecast_decisions.start_rival`) from the level and the others
        from the naive forecast until the validation tails settle it
        (:meth:`~aaren_ts.estimators._forecast_decisions.ValidationTails.choose_start`)."""
        return auto_starts(losses)

    def _member_starts(self) -> tuple[str, ...]:
        """The initial forecast each network trained from (``member_initial_forecasts_``); before
        training, the planned ones."""
        fitted = getattr(self, "member_initial_forecasts_", None)
        return tuple(fitted) if fitted is not None else self._planned_starts(self._member_losses())

    def _member_losses(self) -> tuple[str, ...]:
        """The point loss each network was trained on (``member_losses_``); before training, the
        planned ones."""
        fitted = getattr(self, "member_losses_", None)
        return tuple(fitted) if fitted is not None else self._planned_losses()

    def _build_forecast_net(
        self,
        train_split: Any = None,
        with_callbacks: bool = True,
        n_members: int | None = None,
        member: int = 0,
        losses: Sequence[str] | None = None,
        start: str | None = None,
    ) -> Any:
        """The skorch net of ``n_members`` networks (default ``n_estimators``; more than one: a
        :class:`~aaren_ts.nn.ensemble.ForecastEnsemble`, each member on its own loss); one network
        trains on the loss of the ensemble's member ``member`` (``losses``: every member's, by
        default :meth:`_member_losses`) from the initial forecast ``start`` (default the member's,
        :meth:`_member_starts`; an ensemble's members are built alike and then take the trained
        networks' weights)."""
        from aaren_ts.estimators._nets import ForecastNeuralNet

        module_params = {
            "n_channels": int(self.n_channels_),
            "context_length": int(self.context_length_),
            "horizon": int(self.horizon_),
            "encoder": self._encoder_config(),
            "channel_independent": bool(self.channel_independent),
            "channel_embedding": True,
            "local_norm": self.local_norm,
            "sp": int(self.sp_),
            "n_exog": self.n_exog_,
            "n_future": int(getattr(self, "n_future_", 0)),
            "distribution": self.distribution,
            "initial_forecast": start or self._member_starts()[member],
        }
        n_members = int(self.n_estimators if n_members is None else n_members)
        losses = tuple(self._member_losses() if losses is None else losses)
        loss = functools.partial(
            ForecastLoss,
            full_window=int(self.context_length_),
            distribution=self.distribution,
            point_loss=losses if n_members > 1 else losses[member],
        )
        collate = {"iterator_train__collate_fn": pad_segments, "iterator_valid__collate_fn": pad_segments}
        module: type[torch.nn.Module] = ForecastNet
        if n_members > 1:
            module, module_params = ForecastEnsemble, {"n_members": n_members, **module_params}
        return self._build_net(
            ForecastNeuralNet, module, module_params, loss, train_split, with_callbacks,
            average_best_epochs=AVERAGED_BEST_EPOCHS, **collate,
        )  # fmt: skip

    def _fit_networks(
        self,
        train_split: Any,
        train_ds: SegmentDataset,
        losses: tuple[str, ...],
        trained: dict[int, Any] | None = None,
        starts: tuple[str, ...] | None = None,
    ) -> tuple[Any, list[Any]]:
        """A new skorch net trained on ``train_ds`` (early stopping on ``train_split``'s data), member
        ``k`` on ``losses[k]`` from the initial forecast ``starts[k]`` (default
        :meth:`_member_starts`), and the members' own nets; ``trained`` gives members already trained
        (by index), which are taken as they are.

        With ``n_estimators > 1`` the networks are trained one after the other, each as the only
        one would be (its own initialisation, segment crops, shuffling, dropout, early stopping and
        best epochs' average), then joined into one :class:`~aaren_ts.nn.ensemble.ForecastEnsemble`
        whose net fine-tunes them together, from the learning rate the first member ended at; its
        ``history`` holds every member's epochs in turn (the ``"member"`` of each row). See
        :doc:`/design_notes/forecaster_ensemble_size`.
        """

        members, n_members, trained = [], int(self.n_estimators), trained or {}
        starts = self._member_starts() if starts is None else starts
        for k in range(n_members):
            if k in trained:
                members.append(trained[k])
                continue
            members.append(self._train_member(train_split, train_ds, losses, k, starts[k]))
        if len(members) == 1:
            return members[0], members
        # (under Accelerate, every net's module is wrapped for data-parallel training)
        ensemble = join_members(self._build_forecast_net(train_split, losses=losses).initialize(), members)
        # fine-tuning carries on from the learning rate the first member's training ended at
        trained_groups = members[0].optimizer_.param_groups
        for group, trained in zip(ensemble.optimizer_.param_groups, trained_groups, strict=True):
            group["lr"] = trained["lr"]
            group["initial_lr"] = trained.get("initial_lr", trained["lr"])
        return ensemble, members

    def _train_member(
        self, train_split: Any, train_ds: SegmentDataset, losses: tuple[str, ...], k: int, start: str
    ) -> Any:
        """Network ``k``'s skorch net, trained alone on ``losses[k]`` from the initial forecast ``start``."""
        label = f"network {k + 1} of {len(losses)} ({losses[k]} loss, from the {start} forecast)"
        with stage(label, epochs=int(self.max_epochs)):
            net = self._build_forecast_net(train_split, n_members=1, member=k, losses=losses, start=start)
            net.fit(train_ds, y=None)
        return net

    def _standardize(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Per-series ``(mean, scale)`` of shape ``(n_series, C)`` from each series' observed values
        (:doc:`/design_notes/forecaster_scaling`)."""
        stats = [standardization(v, True) for v in parts]
        mean, scale = np.stack([m for m, _ in stats]), np.stack([s for _, s in stats])
        positions = self._static_positions()
        if len(positions):  # the static covariates: one standardisation over the panel, as fitted
            mean[:, positions], scale[:, positions] = self.static_mean_, self.static_scale_
        return mean, scale

    def _first_non_positive(self, panel: SeriesPanel, log_target: np.ndarray | None) -> int | None:
        """The first series of ``panel`` (on the network's scale; ``log_target`` marks the channels
        held as logarithms, of positive values) with no observed target value or one at or below
        zero on its own scale; ``None`` where every series' values are positive."""
        c = self.n_channels_
        for k, values in enumerate(panel.values):
            target = values[:, :c]
            on_log = np.zeros(c, dtype=bool) if log_target is None else np.asarray(log_target[k], bool)
            observed = np.isfinite(target)
            if not observed.any() or not np.where(observed & ~on_log, target > 0.0, True).all():
                return k
        return None

    def _series_levels(
        self, mean: np.ndarray, scale: np.ndarray, log_target: np.ndarray | None
    ) -> list[np.ndarray]:
        """Each series' ``(offset, log_scale)`` ``(2, C)`` of its target channels, as
        :func:`~aaren_ts.nn.forecast_training.masked_smape` reads them: the mean over the scale where
        the channel is on its own scale, the scale of the logarithm where it is on the log scale."""
        c = self.n_channels_
        log = np.zeros((len(mean), c), dtype=bool) if log_target is None else np.asarray(log_target, bool)
        offset = np.where(log, 0.0, mean[:, :c] / scale[:, :c])
        log_scale = np.where(log, scale[:, :c], 0.0)
        return list(np.stack([offset, log_scale], axis=1))

    def _holdout(self, panel: SeriesPanel) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each series' training part and validation tail (empty when too short for one)."""
        train, valid = [], []
        for values in panel.values:
            n = len(values)
            n_valid = math.floor((self.validation_fraction or 0.0) * n)
            if bool(self.validation_fraction) and n_valid >= self.horizon_ + 2 and n - n_valid >= 2:
                train.append(values[: n - n_valid])
                valid.append(values[n - n_valid :])
            else:
                train.append(values)
                valid.append(values[:0])
        return train, valid

    def _context_length(self, panel: SeriesPanel) -> int:
        """``context_length``, or the default: a quarter of the median training length, in [96, 168];
        where that median is shorter than 96, two horizons, at most a third of it, at least 8."""
        report = self._fit_report()
        if self.context_length is not None:
            report.panel("context_length", "set by parameter", value=int(self.context_length))
            return int(self.context_length)
        train, _ = self._holdout(panel)
        median = float(np.median([len(v) for v in train]))
        if median < _MIN_DEFAULT_CONTEXT:
            short = min(_SHORT_CONTEXT_HORIZONS * self.horizon_, median // 3)
            length = int(max(_MIN_SHORT_CONTEXT, short))
            rule = f"short series (median training length {median:g}): two horizons"
        else:
            length = int(min(_MAX_DEFAULT_CONTEXT, max(_MIN_DEFAULT_CONTEXT, median // 4)))
            rule = f"a quarter of the median training length ({median:g}), in [96, 168]"
        report.panel("context_length", rule, value=length)
        return length

    def _seasonal_period(self, panel: SeriesPanel) -> int:
        """``sp``, or the period detected in the series' training parts (at most ``context_length_``)."""
        report = self._fit_report()
        if self.sp != "auto":
            report.panel("seasonal_period", "set by parameter", value=int(self.sp))
            return int(self.sp)
        train, _ = self._holdout(panel)
        c = len(panel.columns)
        sp = detect_sp([v[:, :c] for v in train], max_sp=int(self.context_length_))
        report.panel("seasonal_period", "detected" if sp > 1 else "no cycle detected", value=sp)
        return sp

    def _horizon(self, fh: ForecastingHorizon | None, where: str) -> int:
        steps = None if fh is None else int(relative_steps(fh, self.cutoff).max())
        horizon = getattr(self, "horizon_", None) or self.horizon
        if horizon is None:
            if steps is None:
                raise ValueError(f"{where}: pass fh, or set the horizon parameter")
            return steps
        if steps is not None and steps > horizon:
            raise ValueError(f"{where}: fh reaches {steps} steps ahead, beyond horizon={horizon}")
        return int(horizon)

    def _check_stream_memory(self, n_series: int) -> None:
        """Refuse, before training, a horizon whose streams would not fit in memory.

        With ``interval_calibration="aci"`` every series keeps its last ``horizon`` forecasts (``horizon**2
        * n_channels * (1 + n_params)`` float32 numbers, :class:`~aaren_ts.engine.calibration.Calibration`):
        refused when that exceeds :func:`memory_budget` for the series being fitted.
        """
        if self.interval_calibration is None:
            return
        n_params = HEADS[self.distribution].n_params
        per_series = self.horizon_**2 * self.n_channels_ * (1 + n_params) * 4
        needed, budget = per_series * n_series, memory_budget()
        if needed > budget:
            raise ValueError(
                f"fit: horizon={self.horizon_} with interval_calibration={self.interval_calibration!r} keeps "
                f"the last horizon forecasts of every series: {per_series / 1e9:.3g} GB a series, "
                f"{needed / 1e9:.3g} GB for {n_series}, beyond {budget / 1e9:.3g} GB (half this machine's "
                "memory). Use a shorter horizon, fewer series per forecaster, or interval_calibration=None"
            )

    def _train(
        self, panel: SeriesPanel, epochs: int | None = None, log_target: np.ndarray | None = None
    ) -> NaiveVerdict | None:
        """Train the network on ``panel`` (each series scaled by its own training statistics;
        ``log_target`` ``(n_series, n_channels)`` marks the channels it holds on the log scale).

        ``epochs=None`` builds and trains a new network with early stopping on the series' tails and
        returns which series should fall back to the naive forecast, their spread factors, which take
        the naive method's intervals and the caps on the head's spread
        (:meth:`~aaren_ts.estimators._forecast_decisions.ValidationTails.judge_against_naive`);
        an int continues training the current one for that many epochs on whole series (returns
        ``None``).
        """
        seg_len = 2 * int(self.context_length_)
        if epochs is None:
            train, valid = self._holdout(panel)
        else:
            train, valid = panel.values, []
        mean, scale = self._standardize(train)
        train = [((v - m) / s).astype(np.float32) for v, m, s in zip(train, mean, scale, strict=True)]
        valid = [((v - m) / s).astype(np.float32) for v, m, s in zip(valid, mean, scale, strict=False)]
        with self._torch_context(seed=True):
            generator = torch.Generator().manual_seed(int(torch.randint(2**31 - 1, (1,))))
            exog: dict[str, Any] = {"n_exog": self.n_exog_, "n_future": self.n_future_}
            if epochs is None:
                non_positive = self._first_non_positive(panel, log_target)
                n_tails = sum(len(v) > 0 for v in valid) * self.n_channels_
                losses = self._planned_losses(positive=non_positive is None, n_tails=n_tails)
                report = self._fit_report()
                if self.loss == "auto" and len(set(losses)) > 1 and report.skips("mixed_losses"):
                    losses = (losses[0],) * len(losses)
                elif self.loss == "auto" and len(set(losses)) == 1:
                    report.panel("mixed_losses", f"every network on {losses[0]}: too few validation tails",
                                 value=n_tails)  # fmt: skip
                elif self.loss != "auto":
                    report.panel("mixed_losses", f"set by parameter: {', '.join(losses)}")
                if "smape" in losses and non_positive is not None:
                    raise ValueError(
                        f"fit: loss 'smape' scores forecasts relative to positive values, but "
                        f"{series_label(panel.ids[non_positive])} has values at or below zero (or none "
                        "observed); use 'mae' or 'mse' for it"
                    )
            else:
                losses = self._member_losses()
            if "smape" in losses:
                exog["levels"] = self._series_levels(mean, scale, log_target)
            train_ds = SegmentDataset(train, seg_len, self.horizon_, generator, **exog)
            if len(train_ds) == 0:
                raise ValueError("fit: y needs a series with at least 2 observations")
            valid_ds = SegmentDataset(valid, seg_len, self.horizon_, **exog) if valid else None
            if valid_ds is not None and len(valid_ds) == 0:
                valid_ds = None
            if epochs is None:
                from skorch.helper import predefined_split

                train_split = predefined_split(valid_ds) if valid_ds is not None else None
                whole = [np.concatenate([t, v]) for t, v in zip(train, valid, strict=True)]
                tails = ValidationTails(whole, [len(t) for t in train], self._resolved_device(), report,
                                        int(self.verbose) >= 2)  # fmt: skip
                trained: dict[int, Any] = {}
                self.member_losses_, self.member_initial_forecasts_ = losses, self._planned_starts(losses)
                if report.skips("initial_forecast"):
                    self.member_initial_forecasts_ = ("naive",) * len(losses)
                else:
                    self.member_initial_forecasts_, trained = tails.choose_start(
                        functools.partial(self._train_member, train_split, train_ds, losses),
                        lambda start: self._build_forecast_net(
                            with_callbacks=False, n_members=1, start=start
                        ).initialize(),
                        losses,
                    )
                self.net_, members = self._fit_networks(train_split, train_ds, losses, trained)
                if self.loss == "auto" and len(set(losses)) > 1:
                    module = unwrapped_network(self.net_)
                    module.eval()
                    if not tails.mixed_losses_help(module, losses):
                        # the other losses' networks train again, on the first loss
                        kept = {k: net for k, net in enumerate(members) if losses[k] == losses[0]}
                        self.member_losses_ = (losses[0],) * len(losses)
                        self.net_, _ = self._fit_networks(train_split, train_ds, self.member_losses_, kept)
            else:
                if self.net_.train_split is not None:
                    # fine-tuning trains on the new data only: no validation split, no early stopping
                    self.net_.set_params(train_split=None)
                    if "early_stopping" in dict(self.net_.callbacks_):
                        self.net_.set_params(callbacks__early_stopping=None)
                        self.net_.initialize_callbacks()
                with stage("fine-tuning on the series", epochs=int(epochs)):
                    self.net_.partial_fit(train_ds, y=None, epochs=int(epochs))
        fallback = None
        if epochs is None:
            with stage("decisions on the validation tails"):
                loss = self._member_losses()[0]
                self.linear_share_ = tails.blend_linear(unwrapped_network(self.net_), loss)
                c = self.n_channels_
                log = np.zeros((len(train), c), dtype=bool) if log_target is None else np.asarray(log_target)
                log_scale = np.where(log, scale[:, :c], 0.0)
                labels = (panel.ids, list(panel.columns[:c]))
                fallback = tails.judge_against_naive(self.net_.module_, loss, log_scale, labels)
        self.net_.module_.eval()
        return fallback


def memory_budget() -> int:
    """Bytes the streams of one forecaster may take: half the machine's physical memory (16 GiB where
    the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 2**34
