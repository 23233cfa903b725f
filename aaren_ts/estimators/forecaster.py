"""AarenForecaster: an sktime forecaster on Aaren whose updates cost O(1) per new observation."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from aaren_ts.engine.forecast import ForecastEngine
from aaren_ts.estimators._base import AarenEstimatorMixin
from aaren_ts.estimators._cutoffs import SeriesCutoffs, zoned_horizon
from aaren_ts.estimators._deprecations import accepts_removed_parameters
from aaren_ts.estimators._docs import document_shared_parameters
from aaren_ts.estimators._fit_report import SKIPPABLE_STEPS
from aaren_ts.estimators._forecast_arrays import ForecastArraysMixin
from aaren_ts.estimators._forecast_checks import ForecastInputChecksMixin
from aaren_ts.estimators._forecast_fit import (
    fit_and_condition,
    pretrain_on_panel,
    pretrain_update,
    update_streams,
)
from aaren_ts.estimators._forecast_fitted import FittedForecasterMixin
from aaren_ts.estimators._forecast_frames import as_frame, point_frame, quantile_frame, variance_frame
from aaren_ts.estimators._forecast_panels import ForecastPanelsMixin
from aaren_ts.estimators._forecast_training import ForecasterTrainingMixin
from aaren_ts.estimators._params import (
    SHARED_CONSTRAINTS,
    Each,
    Either,
    Flag,
    Interval,
    Names,
    Optional,
    Options,
    PositiveInt,
    Registered,
    Size,
)
from aaren_ts.estimators._sktime_state import empty_data_slots
from aaren_ts.nn.forecast import LOCAL_NORMS
from aaren_ts.nn.forecast_training import POINT_LOSSES
from aaren_ts.nn.heads import HEADS
from aaren_ts.utils.log_target import TARGET_TRANSFORMS

__all__ = ["AarenForecaster"]

#: The step of the adaptive conformal update under ``interval_calibration="aci"``
#: (:doc:`/design_notes/forecaster_calibration`).
ACI_RATE = 0.005


@document_shared_parameters
class AarenForecaster(
    ForecastInputChecksMixin,
    ForecastPanelsMixin,
    ForecasterTrainingMixin,
    ForecastArraysMixin,
    FittedForecasterMixin,
    AarenEstimatorMixin,
    BaseForecaster,
):
    """Multi-horizon forecaster on Aaren: one global network over one or many series, streamed at O(1).

    An sktime forecaster (``fit(y, X, fh)``, ``predict``, ``predict_interval``, ``update``) for one
    series, a panel or a hierarchy, with covariates, missing values and intervals re-calibrated
    online. :meth:`partial_update` advances every series' recurrent state through new observations
    at O(1) memory per series, without refitting. The user guide's "Forecasting" page explains the
    model, training, panels, covariates, intervals and streaming; the :doc:`/design_notes/index` hold
    the measurements behind the defaults.

    Parameters
    ----------
    context_length : int or None, default=None
        Values each step's token embeds (at most 16384); older history reaches the forecast through the
        encoder's state. ``None``: a quarter of the median training length, within [96, 168], or two horizons
        (at most a third of that median, at least 8) where the median is below 96; fixed as
        ``context_length_``.
        See :doc:`/design_notes/forecaster_context_length` for the evidence behind the default.
    horizon : int or None, default=None
        Number of steps the network forecasts (at most 16384). ``None``: the largest step of the ``fh`` passed
        to ``fit`` (then ``fh`` is required in ``fit``). Predicting further than ``horizon`` raises
        ``ValueError``; refit with a larger ``horizon``.
    sp : int or "auto", default="auto"
        Seasonal period (24 for hourly data with a daily cycle), at most ``context_length``: that of the
        seasonal naive forecast the network starts from and falls back to (see Notes). ``"auto"``
        detects it from the autocorrelation of the training series' changes (1 when they show no
        cycle); fixed at the first ``fit`` as ``sp_``.
    {backbone d_model n_heads n_layers d_ff}
    dropout : float, default=0.1
        Dropout in the encoder, in [0, 1); larger regularises more.
        See :doc:`/design_notes/forecaster_dropout` for the evidence behind the default.
    channel_independent : bool, default=True
        Model every channel as a separate univariate series through shared weights, each channel's
        tokens with a learned vector of their own; ``False`` embeds all channels of a window into one token.
    local_norm : {"last", "mean", "standard", None}, default="standard"
        Level subtracted from each token's window and added back to its forecast: its last value or
        mean; ``"standard"`` (RevIN-style, per token: causal and streamable) also divides by the
        window's standard deviation; ``None``: none.
        See :doc:`/design_notes/forecaster_local_norm` for the evidence behind the default.
    target_transform : {"auto", "log", None}, default="auto"
        The scale the network forecasts on: ``"log"`` the logarithm of every channel (a value at or below
        zero is refused), ``None`` each series' own, ``"auto"`` the logarithm of the positive channels
        whose seasonal changes grow with their level (``log_target_``; see Notes).
        See :doc:`/design_notes/forecaster_target_transform` for the evidence behind the default.
    {optimizer}
    lr : float, default=3e-3
        Learning rate of the first epoch, > 0 (then changed by ``lr_schedule``).
        See :doc:`/design_notes/forecaster_learning_rate` for the evidence behind the default.
    {weight_decay lr_schedule lr_decay}
    batch_size : int, default=4
        Segments per gradient step (each of ``2 * context_length`` steps, every one a forecast origin;
        :doc:`/design_notes/forecaster_segments`).
        See :doc:`/design_notes/forecaster_batch_size` for the evidence behind the default.
    max_epochs : int, default=20
        Upper bound on training epochs (an epoch crops each stretch of the series once).
        See :doc:`/design_notes/forecaster_early_stopping` for the evidence behind the default.
    patience : int or None, default=5
        Epochs without improvement of the validation loss before training stops; it ends with the mean
        of the weights of the three best epochs (:doc:`/design_notes/forecaster_weight_averaging`).
        ``None``, or no validation tail: every one of ``max_epochs`` runs, and the last weights stay.
        See :doc:`/design_notes/forecaster_early_stopping` for the evidence behind the default.
    n_estimators : int, default=3
        Networks of the deep ensemble (at most 64), each trained as a lone network would be; the forecast is
        their mean (their quantile functions averaged). Fitting, every streamed observation (still O(1)) and
        the export cost that many networks.
        See :doc:`/design_notes/forecaster_ensemble_size` for the evidence behind the default.
    validation_fraction : float or None, default=0.2
        Fraction of each series' end held out, in [0, 1), for early stopping and the choices made on
        the tails; ``None`` or ``0`` disables it, and a tail shorter than ``horizon + 2`` is not taken.
        See :doc:`/design_notes/forecaster_validation_fraction` for the evidence behind the default.
    update_epochs : int, default=1
        Epochs of fine-tuning, >= 0, where trained weights meet new data: ``update(y,
        update_params=True)``, a repeated ``pretrain``, and ``fit`` after ``pretrain`` (``0``: ``fit``
        only conditions the streams on its series, with the pretrained weights).
    interval_calibration : "aci", float in (0, 1) or None, default="aci"
        Every stream re-calibrates its intervals online from the errors it sees (adaptive conformal
        inference), in ``fit`` through the validation tails, then through every update. A float is
        the step of the update (``gamma`` in Gibbs and Candes; ``"aci"``: ``0.005``), larger adapting
        faster. ``None``: the head's intervals as they are (:doc:`/design_notes/forecaster_calibration`).
    distribution : str, default="normal"
        Forecast-distribution head, by its registered name (:mod:`aaren_ts.nn.heads`): ``"normal"``
        (a Gaussian), or ``"quantile"`` (1-99 % quantiles learnt with the pinball loss,
        for skewed or heavy-tailed errors). The point forecast is the same either way.
    loss : {"auto", "mse", "mae", "smape"} or sequence of them, default="auto"
        The point forecast's training loss: squared or absolute error of the standardised values, or
        the sMAPE on each series' own scale; a sequence gives the ensemble's networks theirs in turn.
        ``"auto"``: see Notes (``member_losses_`` holds what was settled).
        See :doc:`/design_notes/forecaster_loss` for the evidence behind the default.
    combination : {"auto", "theta", "theta_ets", None}, default="auto"
        ``"theta"``: a mean of each forecast and the Theta method's, weighted on the validation tails
        (short series without: equally where Theta beats the naive forecast on the history); ``"theta_ets"``:
        Theta averaged with damped ETS; ``"auto"``: ``"theta"`` without covariates, else ``None``.
        See :doc:`/design_notes/forecaster_theta_combination`.
    past_covariates : list of column names or None, default=None
        Columns of ``X`` known only up to the present: they enter each step's token. Every other column
        is known for the future too (calendars, plans): its values at the forecast steps enter the
        forecast, so ``predict`` needs them in ``X``.
    static_covariates : list of column names or None, default=None
        Columns of ``X`` constant within each series (a store's size): per-series features that enter
        every token, standardised over the whole panel so they tell the series apart; ``predict`` does
        not need them. A column that varies within a series is refused, the series named.
    skip_steps : list of str or None, default=None
        Decision steps of ``fit`` not to take; each keeps its neutral choice (``"naive_fallback"``: the
        network everywhere; ``"initial_forecast"``: every network starts from the seasonal naive
        forecast; ``"linear_share"``: no linear model; ...). The steps, in order, are
        ``aaren_ts.estimators.FIT_STEPS``; ``fit_report_`` says what each decided.
    {device}
    random_state : int, RandomState or None, default=None
        Seeds weight initialisation, segment crops, shuffling and dropout; an int makes ``fit`` reproducible.
    {verbose callbacks num_threads}

    Attributes
    ----------
    horizon_ : int
        Steps the fitted network forecasts.
    context_length_ : int
        Values each token embeds (``context_length``, or the one chosen from the data).
    sp_ : int
        The seasonal period (``sp``, or the one detected from the data).
    member_losses_ : tuple of str
        The point loss each network trained on (``loss``, as ``"auto"`` settled it).
    member_initial_forecasts_ : tuple of str
        The initial forecast each network trained from: ``"naive"`` (the seasonal naive forecast of
        period ``sp_``) or ``"level"`` (each window's local level), as the ``initial_forecast`` step
        chose on the validation tails (:doc:`/design_notes/forecaster_initial_forecast`).
    linear_share_ : float
        The share in every point forecast of a linear map of each normalised window (RLinear), fitted
        by least squares and folded into the networks, as the ``linear_share`` step chose among 0, 0.1,
        ..., 1 (:doc:`/design_notes/forecaster_linear_share`).
    fit_report_ : pandas.DataFrame
        What each decision step of ``fit`` decided, in order: one row per step, or per series and
        channel for a step that decides per series, with the value chosen, the relative change of the
        validation tails' error it was judged on, its test statistic and threshold.
    n_channels_ : int
        Number of channels seen in ``fit``.
    columns_ : pandas.Index
        Column names seen in ``fit``.
    mean_, scale_ : ndarray
        Per-channel standardisation statistics (from the training part of the series), on the network's
        scale (of the logarithm, for the channels in ``log_target_``).
    log_target_ : ndarray
        Which channels the network forecasts on the log scale (``target_transform``): ``(n_channels,)``
        bool for a single series, one row per series of a panel.
    net_ : skorch.NeuralNet
        The trained network (``net_.module_`` is the torch module).
    engine_ : aaren_ts.engine.ForecastEngine
        The series' streams and the computations on them, on arrays (see :doc:`/architecture`).
    level_names_ : list or None
        Names of the index levels of the panel seen in ``fit`` (``None`` for a single series).
    n_seen_ : int
        Observations consumed so far (``fit`` plus updates).
    exog_columns_ : pandas.Index or None
        The columns of ``X`` the network takes, future-known ones first (``None`` without ``X``).
    static_mean_, static_scale_ : ndarray
        The standardisation of the ``static_covariates`` (in the order of ``exog_columns_``), over
        the whole panel seen in ``fit``.
    n_future_ : int
        How many of them are known for the future (the first ones).

    See Also
    --------
    aaren_ts.AarenClassifier : The classifier on the same encoder.
    aaren_ts.onnx.OnnxStreamer : Streams an exported forecaster with ONNX Runtime alone.
    aaren_ts.model_selection.cross_validation : Backtests a forecaster over the last windows of a panel.

    Notes
    -----
    **Naive fallback.** After training, every series (channel) is streamed through its validation
    tail; one whose tail the network does not forecast clearly better than the seasonal naive forecast
    of period ``sp_`` keeps that forecast, alone where the tails pooled show no gain from the network,
    else weighed with the network's by their tail errors (:doc:`/design_notes/forecaster_naive_fallback`).

    **Intervals.** Each series' spread is capped at the seasonal naive method's and multiplied by a
    factor chosen on its tail by the interval score, then re-calibrated online
    (:doc:`/design_notes/forecaster_intervals`).

    **Log scale.** Under ``target_transform="auto"``, a network trained on the log scale that beats the
    naive forecast on no tail is trained again on the series' own scale. Forecasts and quantiles are
    mapped back exactly (the point forecast of a log-scale channel is the median of its distribution);
    ``predict_var`` is the squared half-width of the mapped interval of one standard deviation. A later
    value at or below zero in such a channel (``update``, ``partial_update``) is taken as missing under
    ``"auto"``, with a :class:`~aaren_ts.NonPositiveValueWarning`, and refused under ``"log"``, leaving
    the forecaster as it was (the ONNX streamer refuses it under both).

    **Loss "auto".** The networks train on ``"mse"``, ``"mse"``, ``"mae"`` in turn (``"mse"``,
    ``"smape"``, ``"smape"`` where every target value is positive); those on another loss than the
    first are kept only where they make the ensemble forecast the validation tails clearly better (the
    typical series' error at least 2 % lower, significantly across the series), and train again
    on ``"mse"`` elsewhere. The fallback and the Theta weights judge the tails by the first loss.

    References
    ----------
    * Feng et al. (2024). Attention as an RNN. arXiv:2405.13956 (the Aaren encoder).
    * Kim et al. (2022). Reversible instance normalization for accurate time-series forecasting against
      distribution shift. ICLR (``local_norm="standard"``).
    * Li, Qi, Li and Xu (2023). Revisiting long-term time series forecasting: an investigation on linear
      mapping. arXiv:2305.10721 (RLinear, ``linear_share_``).
    * Oreshkin, Carpov, Chapados and Bengio (2020). N-BEATS: neural basis expansion analysis for
      interpretable time series forecasting. ICLR (ensembles over losses, ``loss``).
    * Lakshminarayanan, Pritzel and Blundell (2017). Simple and scalable predictive uncertainty
      estimation using deep ensembles. NeurIPS (``n_estimators``).
    * Izmailov et al. (2018). Averaging weights leads to wider optima and better generalization. UAI
      (the mean of the best epochs' weights).
    * Gibbs and Candes (2021). Adaptive conformal inference under distribution shift. NeurIPS
      (``interval_calibration``).
    * Assimakopoulos and Nikolopoulos (2000). The theta model: a decomposition approach to forecasting;
      Hyndman and Billah (2003). Unmasking the Theta method. International Journal of Forecasting
      (``combination``).
    * Hyndman, Koehler, Ord and Snyder (2008). Forecasting with Exponential Smoothing: The State Space
      Approach. Springer (``combination="theta_ets"``).
    * Bates and Granger (1969). The combination of forecasts. Operational Research Quarterly (the
      weighed naive fallback).
    * Box and Cox (1964). An analysis of transformations. Journal of the Royal Statistical Society B
      (``target_transform="auto"``).

    Examples
    --------
    >>> from sktime.datasets import load_airline
    >>> from aaren_ts import AarenForecaster
    >>> y = load_airline()
    >>> f = AarenForecaster(context_length=24, horizon=12, max_epochs=2, random_state=0)
    >>> f = f.fit(y[:-12])
    >>> y_pred = f.predict(fh=range(1, 13))
    >>> f = f.partial_update(y[-12:])  # O(1) per observation, no refit
    >>> len(f.predict(fh=[1, 2, 3]))
    3
    """

    _tags: ClassVar[dict[str, Any]] = {
        "authors": ["aaren_ts developers"],
        "maintainers": ["aaren_ts developers"],
        "python_dependencies": ["torch", "skorch"],
        "y_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "X_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "capability:multivariate": True,
        "capability:exogenous": True,
        "capability:insample": False,
        "capability:pred_int": True,
        "capability:pred_int:insample": False,
        "capability:missing_values": True,
        "capability:pretrain": True,
        "capability:update": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "requires-fh-in-fit": True,
        "X-y-must-have-same-index": False,
        "remember_data": False,
    }
    _config: ClassVar[dict[str, Any]] = {"remember_data": False}
    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **SHARED_CONSTRAINTS,
        "context_length": Optional(Size(16384)),
        "horizon": Optional(Size(16384)),
        "channel_independent": Flag(),
        "local_norm": Options(LOCAL_NORMS),
        "target_transform": Options(TARGET_TRANSFORMS),
        "update_epochs": Interval(0, None, integer=True),
        "sp": Either(PositiveInt, Options(("auto",))),
        "interval_calibration": Either(Options(("aci", None)), Interval(0.0, 1.0, closed="neither")),
        "distribution": Registered(HEADS),
        "loss": Either(Options((*POINT_LOSSES, "auto")), Each(Options(tuple(POINT_LOSSES)))),
        "combination": Options(("auto", "theta_ets", "theta", None)),
        "past_covariates": Optional(Names()),
        "static_covariates": Optional(Names()),
        "skip_steps": Optional(Each(Options(SKIPPABLE_STEPS))),
    }

    @accepts_removed_parameters
    def __init__(
        self,
        context_length: int | None = None,
        horizon: int | None = None,
        sp: int | str = "auto",
        backbone: str = "aaren",
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 128,
        dropout: float = 0.1,
        channel_independent: bool = True,
        local_norm: str | None = "standard",
        target_transform: str | None = "auto",
        optimizer: str | type = "adam",
        lr: float = 3e-3,
        weight_decay: float = 0.0,
        lr_schedule: str | None = "exponential",
        lr_decay: float = 0.8,
        batch_size: int = 4,
        max_epochs: int = 20,
        patience: int | None = 5,
        n_estimators: int = 3,
        validation_fraction: float | None = 0.2,
        update_epochs: int = 1,
        interval_calibration: str | float | None = "aci",
        distribution: str = "normal",
        loss: str | Sequence[str] = "auto",
        combination: str | None = "auto",
        past_covariates: Sequence[Any] | None = None,
        static_covariates: Sequence[Any] | None = None,
        skip_steps: Sequence[str] | None = None,
        device: Any = "auto",
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        callbacks: Sequence[Any] | None = None,
        num_threads: int | None = 1,
    ) -> None:
        self._store_init_params(locals())
        super().__init__()
        empty_data_slots(self)
        # fh is needed in fit only to learn the horizon, when it is not given here.
        self.set_tags(**{"requires-fh-in-fit": horizon is None})

    # ------------------------------------------------------------------ parameters and helpers
    def _new_engine(self) -> None:
        """Empty streams for the trained network (no series yet)."""
        calibration = self.interval_calibration
        rate = ACI_RATE if calibration == "aci" else calibration
        self.engine_ = ForecastEngine(self.net_.module_, self._resolved_device(), rate)
        self._cutoffs = SeriesCutoffs()

    # ------------------------------------------------------------------ sktime interface
    def fit(self, y: Any, X: Any = None, fh: Any = None) -> AarenForecaster:
        """Fit to ``y`` (sktime's ``fit``); if it fails, a fitted forecaster is left as it was.

        sktime's ``fit`` resets the estimator before it checks ``y``, ``X`` and ``fh``, so bad input
        would erase a fitted model and its streams; here any exception (bad input, a failure while
        training, an interrupt) puts every attribute back before it propagates.

        Parameters
        ----------
        y, X, fh
            As :meth:`sktime.forecasting.base.BaseForecaster.fit`.

        Returns
        -------
        self
        """
        return self._all_or_nothing(lambda: super(AarenForecaster, self).fit(y, X=X, fh=fh))

    def update(self, y: Any, X: Any = None, update_params: bool = True) -> AarenForecaster:
        """sktime's ``update``; if it fails or is interrupted, the forecaster is left as it was (sktime
        moves the cutoff and stores ``y`` before the streams advance).

        Parameters
        ----------
        y, X, update_params
            As :meth:`sktime.forecasting.base.BaseForecaster.update`.

        Returns
        -------
        self
        """
        call = super().update
        return self._all_or_nothing(lambda: call(y, X=X, update_params=update_params), trains=update_params)

    def _check_fh(self, fh: Any, pred_int: bool = False) -> Any:
        """sktime's check of ``fh``, its absolute times first converted to the cutoff's time zone (a mix
        of time-zone-aware and naive times is refused)."""
        if self.is_fitted and fh is not None:
            fh = zoned_horizon(fh, self.cutoff, "predict")
        return super()._check_fh(fh, pred_int=pred_int)

    def _pretrain(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None):
        """Train the global network on a panel; ``fit`` then conditions it on a series."""
        self._validate_params()
        pretrain_on_panel(self, y, X, fh)
        return self

    def _pretrain_update(
        self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None
    ):
        """Continue pretraining on more series for ``update_epochs`` epochs."""
        pretrain_update(self, y, X, fh)
        return self

    def _fit(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None):
        """Train one network over every series of ``y`` (unless pretrained), then encode each series
        (:func:`~aaren_ts.estimators._forecast_fit.fit_and_condition`).

        After ``pretrain`` the pretrained network is kept: it is fine-tuned on ``y`` for
        ``update_epochs`` epochs and the streams are conditioned on ``y``.
        """
        self._validate_params()
        self.fit_report_ = fit_and_condition(self, y, X, fh)
        return self

    def _predict(self, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
        """Read each series' forecast at its own cutoff for the steps of ``fh``."""
        return point_frame(self, fh, X)

    def _predict_quantiles(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None, alpha: list[float]
    ) -> pd.DataFrame:
        """Quantiles of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        return quantile_frame(self, fh, X, alpha)

    def _predict_var(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None = None, cov: bool = False
    ) -> pd.DataFrame:
        """Variance of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        if cov:
            raise NotImplementedError("AarenForecaster forecasts marginal variances only (cov=False)")
        return variance_frame(self, fh, X)

    def _update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, update_params: bool = True):
        """Advance the streams by the observations of ``y`` after each series' cutoff
        (:func:`~aaren_ts.estimators._forecast_fit.update_streams`)."""
        update_streams(self, y, X, update_params)
        return self

    # ------------------------------------------------------------------ public extensions
    def partial_update(self, y: pd.Series | pd.DataFrame, X: pd.DataFrame | None = None) -> AarenForecaster:
        """Advance the forecaster by new observations that follow each series' cutoff, without refitting.

        Costs ``O(len(y))`` time and, with ``backbone="aaren"``, ``O(1)`` memory per series: the
        recurrent states move on, history is neither re-encoded nor stored. For a panel, every series
        present in ``y`` advances in one batched computation, each by its own number of observations
        from its own cutoff; series absent from ``y`` are left as they are, and a series id not seen
        before starts a new stream (scaled by the observations given). The forecasts afterwards equal
        (to float32 round-off) those from encoding every whole series at once with the same weights.
        Calls from several threads are serialised: none of their observations is lost.

        Parameters
        ----------
        y : pandas Series or DataFrame
            The observations right after the cutoff (for a panel: after each series' cutoff), with the
            columns seen in ``fit`` and the same index levels; NaN marks a missing observation.
        X : pandas DataFrame, optional
            The covariates at the steps of ``y`` (required if ``fit`` had ``X``; other rows are ignored).

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            On bad input (not pandas, infinite or overflowing values, other columns or index levels, a
            gap or overlap with the observations already seen, missing or non-finite covariates, named
            by series); the forecaster is then left exactly as it was.
        """
        self.check_is_fitted()
        frame = as_frame(y, self.columns_, "partial_update")
        if self.get_config()["remember_data"]:
            return self.update(y, X=X, update_params=False)  # the user asked sktime to keep the data
        # Fast path, same result as update(y, update_params=False) without sktime's per-call conversions.
        with self.engine_.lock:
            self._apply(self._plan(frame, X, strict=True, where="partial_update"), "partial_update")
            self._set_cutoff(self._cutoffs.latest())
        return self

    @property
    def cutoff(self) -> pd.Index:
        """The latest cutoff over all series (sktime's ``cutoff``), including array updates."""
        if getattr(self, "_cutoffs", None) is not None:
            self._sync_cutoffs()
        return super().cutoff

    def _export_onnx(self, path: str | os.PathLike, signing_key: bytes | str | None) -> Path:
        from aaren_ts.onnx.export import export_forecaster

        exog = [] if self.exog_columns_ is None else [str(c) for c in self.exog_columns_]
        return export_forecaster(self.engine_, path, exog_columns=exog, signing_key=signing_key)

    # ------------------------------------------------------------------ test parameters
    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict[str, Any]]:
        """Tiny configurations for sktime's conformance suite (``parameter_set`` is not used): one
        network with the other defaults, and an ensemble of two Transformer networks (``_TEST_PARAMS``)."""
        return [dict(params) for params in _TEST_PARAMS]


#: The tiny configurations of :meth:`AarenForecaster.get_test_params`.
_TINY: dict[str, Any] = {
    "n_estimators": 1,
    "d_model": 8,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 16,
    "context_length": 6,
    "max_epochs": 1,
    "batch_size": 4,
    "device": "cpu",
    "random_state": 0,
}
_TEST_PARAMS: tuple[dict[str, Any], ...] = (
    _TINY,
    {
        **_TINY,
        "horizon": 12,
        "backbone": "transformer",
        "channel_independent": False,
        "local_norm": "mean",
        "target_transform": None,
        "context_length": 4,
        "max_epochs": 1,
        "validation_fraction": None,
        "n_estimators": 2,
    },
)
