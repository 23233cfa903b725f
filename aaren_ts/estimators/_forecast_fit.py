"""What :class:`~aaren_ts.AarenForecaster`'s ``fit``, ``pretrain`` and ``update`` do with the network and
the streams once the parameters are checked.

:func:`fit_and_condition` is ``fit``'s sequence. :func:`train_on_panel` checks the series, fixes the
horizon, context length and seasonal period, and trains the network on the series' scale (or fine-tunes
a pretrained one), training again on the series' own scale where the log scale kept no network; it
returns the panel as the network saw it and the verdict against the naive forecast.
:func:`condition_streams` then starts every series' stream with that verdict and the combination
:func:`theta_partners` chooses, and runs the streams through the training parts and the validation
tails, which calibrate the intervals. :func:`pretrain_on_panel` trains the network alone, the streams
left for ``fit``; :func:`update_streams` fine-tunes it on new observations and advances the streams
through them.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from aaren_ts.engine._undo import all_or_nothing
from aaren_ts.estimators._fit_report import FitReport, notable_decisions
from aaren_ts.estimators._forecast_checks import too_short
from aaren_ts.estimators._forecast_decisions import NaiveVerdict
from aaren_ts.estimators._panel import SeriesPanel
from aaren_ts.estimators._progress import fit_progress, note, stage
from aaren_ts.estimators._theta_combination import fit_combination
from aaren_ts.statistical.ets import ETSStreams

__all__ = [
    "ThetaPartners",
    "condition_streams",
    "fit_and_condition",
    "pretrain_on_panel",
    "pretrain_update",
    "theta_partners",
    "train_on_panel",
    "update_streams",
]

#: Where a fit's notable decisions are announced (see :func:`announce_notable`).
LOGGER = logging.getLogger("aaren_ts")


class ThetaPartners(NamedTuple):
    """The combination with the Theta method, as :meth:`~aaren_ts.engine.ForecastEngine.use_theta`
    takes it: smoothing parameters, seasonal components (in the streams' units), the network's weights
    and the exponential smoothing's streams (``None``: the Theta method alone)."""

    alpha: np.ndarray
    season: np.ndarray
    weight: np.ndarray
    ets: ETSStreams | None


def fit_and_condition(
    forecaster: Any, y: pd.DataFrame, X: pd.DataFrame | None, fh: ForecastingHorizon | None
) -> pd.DataFrame:
    """``fit``: train ``forecaster``'s network on ``y`` (after ``pretrain``, keep the pretrained one)
    and condition its streams on the series (:func:`train_on_panel`, :func:`condition_streams`);
    returns the fit report (``fit_report_``), the pretraining's decisions first."""
    f = forecaster
    pretrained = getattr(f, "_state", "new") == "pretrained" and hasattr(f, "net_")
    report = f._start_fit_report()
    if pretrained:
        report.extend(getattr(f, "_pretrain_report", ()))
    epochs, networks = (int(f.update_epochs), 1) if pretrained else (int(f.max_epochs), int(f.n_estimators))
    try:
        with fit_progress(f.verbose, "AarenForecaster.fit", epochs * networks, networks):
            panel, log_target, fallback = train_on_panel(f, y, X, fh, pretrained)
            with stage("streams through the series"):
                condition_streams(f, panel, log_target, fallback)
    finally:
        f._report = None
    frame = report.frame()
    announce_notable(frame)
    return frame


def announce_notable(report: pd.DataFrame) -> None:
    """Log the fit's notable decisions (:func:`~aaren_ts.estimators._fit_report.notable_decisions`) as
    one line on the ``aaren_ts`` logger: a warning where series forecast with the seasonal naive method
    instead of the network (or the network was trained again), information for a combination alone."""
    notes = notable_decisions(report)
    if not notes:
        return
    combination_only = all("combine the network with" in note or "equal mean" in note for note in notes)
    level = logging.INFO if combination_only else logging.WARNING
    LOGGER.log(level, "AarenForecaster.fit: %s (fit_report_ has the statistics)", "; ".join(notes))


def train_on_panel(
    forecaster: Any, y: pd.DataFrame, X: pd.DataFrame | None, fh: ForecastingHorizon | None, pretrained: bool
) -> tuple[SeriesPanel, np.ndarray, NaiveVerdict | None]:
    """Train ``forecaster``'s network on ``y`` (unless ``pretrained``: then fine-tune it for
    ``update_epochs``) after its checks; returns the panel on the network's scale, the channels it
    holds on the log scale and the verdict against the naive forecast (``None`` when pretrained)."""
    f, report, fallback = forecaster, forecaster._fit_report(), None
    if not pretrained:
        f._set_covariates(X, "fit")
    raw = f._split_with_covariates(y, X, "fit")
    if f.combination in ("theta", "theta_ets") and f.n_exog_:
        raise ValueError(
            f"fit: combination={f.combination!r} takes series without covariates; got "
            f"{f.n_exog_} covariate column(s) in X"
        )
    observed = [int(np.isfinite(v[:, : len(raw.columns)]).any(axis=1).sum()) for v in raw.values]
    if max(observed) < 2:
        raise ValueError(too_short(raw, max(observed)))
    if pretrained:
        f._horizon(fh, "fit")
    else:
        f.horizon_ = f._horizon(fh, "fit")
        f.context_length_ = f._context_length(raw)
        f.n_channels_ = len(raw.columns)
        f.sp_ = f._seasonal_period(raw)  # (on the series' own scale: it decides the log scale's)
    panel, log_target = f._on_model_scale(raw, "fit")
    if pretrained:
        if f.update_epochs > 0:
            f._train(panel, epochs=int(f.update_epochs), log_target=log_target)
        return panel, log_target, None
    f._set_static_standardization(panel, "fit")
    f._check_stream_memory(len(panel.ids))
    fallback = f._train(panel, log_target=log_target)
    retry = fallback.network_is_naive and log_target.any() and f.target_transform == "auto"
    if not retry:
        report.panel("own_scale_retry", "not needed")
    elif not report.skips("own_scale_retry"):
        # on the log scale the network beat the naive forecast nowhere: before settling for
        # the naive forecast, the series' own scale gets its chance
        report.panel(
            "own_scale_retry",
            "trained again on the own scale",
            message="Training again on the series' own scale: on the log scale the network beat "
            "the naive forecast on no series' validation tail",
        )
        note("the log scale kept no network: training again on the series' own scale")
        panel, log_target = f._on_model_scale(raw, "fit", own_scale=True)
        fallback = f._train(panel, log_target=log_target)
    return panel, log_target, fallback


def pretrain_on_panel(
    forecaster: Any, y: pd.DataFrame, X: pd.DataFrame | None, fh: ForecastingHorizon | None
) -> None:
    """``pretrain``: train ``forecaster``'s global network on the panel ``y``, fixing the horizon,
    context length and seasonal period as ``fit`` does; the decisions are kept for the next ``fit``'s
    report."""
    f = forecaster
    report = f._start_fit_report()
    f._set_covariates(X, "pretrain")
    raw = f._split_with_covariates(y, X, "pretrain")
    f.horizon_ = f._horizon(fh, "pretrain")
    f.context_length_ = f._context_length(raw)
    f.n_channels_ = len(raw.columns)
    f.sp_ = f._seasonal_period(raw)  # (on the series' own scale: it decides the log scale's)
    panel, log_target = f._on_model_scale(raw, "pretrain")
    f._set_static_standardization(panel, "pretrain")
    f.columns_ = panel.columns.copy()
    networks = int(f.n_estimators)
    with fit_progress(f.verbose, "AarenForecaster.pretrain", int(f.max_epochs) * networks, networks):
        f._train(panel, log_target=log_target)
    f._pretrain_report = list(report.rows)
    f._report = None


def pretrain_update(
    forecaster: Any, y: pd.DataFrame, X: pd.DataFrame | None, fh: ForecastingHorizon | None
) -> None:
    """A repeated ``pretrain``: continue training ``forecaster``'s network on the series of ``y`` for
    ``update_epochs`` epochs."""
    f = forecaster
    f._horizon(fh, "pretrain")
    panel, log_target = f._on_model_scale(f._split_with_covariates(y, X, "pretrain"), "pretrain")
    if f.update_epochs > 0:
        with fit_progress(f.verbose, "AarenForecaster.pretrain", int(f.update_epochs), 1):
            f._train(panel, epochs=int(f.update_epochs), log_target=log_target)


def condition_streams(
    forecaster: Any, panel: SeriesPanel, log_target: np.ndarray, fallback: NaiveVerdict | None
) -> None:
    """Start ``forecaster``'s streams for the series of ``panel`` (``fallback``: the verdict against the
    naive forecast, ``None`` to keep the network everywhere), with the combination with the Theta method
    where ``combination`` asks for it, and run them through the series: the training parts leave the
    interval calibration at its nominal levels; the validation tails, which the network did not train
    on, calibrate it (adaptive conformal inference)."""
    f, report = forecaster, forecaster._fit_report()
    f.columns_ = panel.columns.copy()
    f.level_names_ = panel.level_names
    f._new_engine()
    train, valid = f._holdout(panel)
    mean, scale = f._standardize(train)
    rows = f._add_series(panel.ids, mean, scale, log_target)
    if fallback is not None:
        f.engine_.use_naive(fallback.naive, fallback.spread, fallback.naive_std, fallback.max_std)
    if f.combination is None or f.n_exog_:  # ("theta" with covariates: refused in train_on_panel)
        report.panel("theta_combination", "off" + (" (covariates)" if f.n_exog_ else " (parameter)"))
    elif not report.skips("theta_combination"):
        whole = [
            (np.concatenate([t, v]) - m) / s for t, v, m, s in zip(train, valid, mean, scale, strict=True)
        ]
        partners = theta_partners(
            f.net_.module_,
            whole,
            [len(t) for t in train],
            f.engine_.naive.copy(),
            (mean, scale),
            int(f.sp_),
            f._resolved_device(),
            f._member_losses()[0],
            f.combination == "theta_ets",
            report,
            (panel.ids, list(panel.columns[: f.n_channels_])),
        )
        if partners is not None:
            f.engine_.use_theta(partners.alpha, partners.season, partners.weight, ets=partners.ets)
    n_train = [len(v) for v in train]
    train_times = [t[:k] for t, k in zip(panel.times, n_train, strict=True)]
    f._consume(rows, train, train_times, calibrate=False, where="fit")
    tails = np.flatnonzero([len(v) > 0 for v in valid])
    calibrate = True
    if f.interval_calibration is None:
        report.panel("interval_calibration", "off (parameter)")
    elif not len(tails):
        report.panel("interval_calibration", "nominal levels: no validation tail", value=0)
    elif report.skips("interval_calibration"):
        calibrate = False
    else:
        report.panel("interval_calibration", "started on the validation tails", value=len(tails))
    if len(tails):
        tail_times = [panel.times[k][n_train[k] :] for k in tails]
        parts = [valid[k] for k in tails]
        f._consume(rows[tails], parts, tail_times, calibrate=calibrate, where="fit")


def theta_partners(
    module: Any,
    series: list[np.ndarray],
    n_train: list[int],
    naive: np.ndarray,
    standardization: tuple[np.ndarray, np.ndarray],
    sp: int,
    device: str,
    loss: str,
    ets: bool,
    report: FitReport,
    labels: tuple[Any, Any],
) -> ThetaPartners | None:
    """The combination of the streams' forecasts with the Theta method's (``combination="theta"``;
    with ``ets``, ``"theta_ets"``): fitted on the standardised ``series`` (``n_train``: their training
    parts' lengths), weighted on the tails (:func:`fit_combination`) against the network blended with
    the naive forecast by its share ``naive``, recorded in ``report`` (``labels``: the series' ids and
    the channels' names); ``None`` where every weight is 1 (the engine then gets no Theta streams).
    ``standardization`` (each series' ``(mean, scale)``) brings the seasonal components and the
    smoothing's states to the streams' units."""
    mean, scale = standardization
    c = module.n_channels
    alpha, season, weight, prior, smoothing = fit_combination(
        module, series, n_train, naive, sp, device, loss=loss, ets=ets
    )
    partner = "Theta and ETS" if ets else "Theta"
    combined = weight < 1.0
    decision = np.where(
        prior,
        np.where(
            combined,
            f"equal mean with {partner}: no tail",
            f"network alone: {partner} no better than the naive forecast on the history",
        ),
        np.where(combined, f"combined with {partner}", "network alone"),
    )
    report.per_channel(
        "theta_combination",
        *labels,
        decision,
        value=weight,
        message=f"Combination with {partner}: {int((combined & ~prior).sum())} of {combined.size} "
        f"channel(s) combined as their tails weigh it, {int((combined & prior).sum())} with equal weights "
        "(no tail to weigh it; the partner beat the naive forecast on the history)",
    )
    if not (weight < 1.0).any():  # (no Theta streams at all: nothing to carry, step or export)
        return None
    # (fitted on standardised values: the seasonal components and states in the streams' units)
    if smoothing is not None:
        smoothing = smoothing.rescaled(scale[:, :c].ravel(), mean[:, :c].ravel())
    return ThetaPartners(alpha, season * scale[:, :c, None], weight, smoothing)


def _weights_restorer(net: Any) -> Callable[[], None]:
    """How to put back the weights and the optimizer's state of the skorch ``net``, as they are now."""
    weights = copy.deepcopy(net.module_.state_dict())
    optimizer = copy.deepcopy(net.optimizer_.state_dict()) if hasattr(net, "optimizer_") else None

    def put_back() -> None:
        net.module_.load_state_dict(weights)
        if optimizer is not None:
            net.optimizer_.load_state_dict(optimizer)

    return put_back


def update_streams(forecaster: Any, y: pd.DataFrame, X: pd.DataFrame | None, update_params: bool) -> None:
    """``update``: advance ``forecaster``'s streams by the observations of ``y`` after each series'
    cutoff, fine-tuning the network on them first for ``update_epochs`` where ``update_params``.

    Observations at or before a series' cutoff are skipped (its state has consumed them). sktime's
    ``update`` has already moved the cutoff to ``y``'s end; if anything fails (bad input, an
    interrupt), it is put back with the network's weights and every stream, so the forecaster is left
    exactly as it was.
    """
    f = forecaster
    old_cutoff = f._cutoffs.latest()
    try:
        with f.engine_.lock, all_or_nothing() as undo:
            plan = f._plan(y, X, strict=False, where="update")
            if update_params and f.update_epochs > 0:
                fresh = SeriesPanel(plan.ids, plan.times, plan.values, f.columns_, f.level_names_)
                if any(len(v) >= 2 for v in fresh.values):
                    undo.add(_weights_restorer(f.net_))
                    with fit_progress(f.verbose, "AarenForecaster.update", int(f.update_epochs), 1):
                        f._train(fresh, epochs=int(f.update_epochs), log_target=plan.log_target)
            f._apply(plan, "update", undo)
    except BaseException:
        f._set_cutoff(old_cutoff)
        raise
    f._set_cutoff(f._cutoffs.latest())
