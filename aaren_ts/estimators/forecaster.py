"""AarenForecaster: an sktime forecaster on Aaren whose updates cost O(1) per new observation."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd
import torch
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from aaren_ts.engine.forecast import ForecastEngine, series_label
from aaren_ts.estimators._base import AarenEstimatorMixin, standardization
from aaren_ts.estimators._covariates import covariate_columns, covariates_at
from aaren_ts.estimators._cutoffs import (
    SeriesCutoffs,
    absolute_times,
    continuation,
    index_from_plain,
    index_to_plain,
    relative_steps,
)
from aaren_ts.estimators._forecast_data import SegmentDataset, pad_segments
from aaren_ts.estimators._inputs import real_array
from aaren_ts.estimators._panel import SeriesPanel, panel_frame, split_series
from aaren_ts.estimators._params import (
    SHARED_CONSTRAINTS,
    Flag,
    Interval,
    Names,
    Optional,
    Options,
    PositiveInt,
    Registered,
)
from aaren_ts.estimators._sktime_state import (
    empty_data_slots,
    plain_metadata,
    plain_names,
    restore_sktime_state,
    sktime_state,
)
from aaren_ts.nn.forecast import LOCAL_NORMS, ForecastLoss, ForecastNet, beats_naive
from aaren_ts.nn.heads import HEADS

__all__ = ["AarenForecaster"]

# the default context length: 96 (the long-horizon protocol's input), longer where the series' training
# parts hold four windows or more, up to a week of hourly data (M4 Hourly: 168, OWA 0.563 against 0.631
# at 96; airline stays at 96: MSE 375-464 over seeds 0-2, against 503-606 with a quarter of its length)
_MIN_DEFAULT_CONTEXT, _MAX_DEFAULT_CONTEXT = 96, 168


class AarenForecaster(AarenEstimatorMixin, BaseForecaster):
    """Multi-horizon forecaster on Aaren: one global network over one or many series, streamed at O(1).

    At every time step the network embeds the last ``context_length`` values (standardised by their own
    mean and standard deviation, so tokens do not depend on the series' level or scale; the forecast is
    scaled back) and feeds the embedding, plus a learned per-channel vector, to a causal encoder
    (:class:`~aaren_ts.nn.AarenEncoder`, or the KV-cached Transformer baseline). The encoder's output at
    step ``t`` summarises the whole history up to ``t``; a linear head forecasts the next ``horizon``
    values from it, added to a direct linear forecast from the token's window. Values are standardised
    per series and channel with statistics of the training part of each series, fixed after ``fit``.

    **Many series.** ``y`` may be one series (``pd.Series``/``pd.DataFrame``) or a panel or hierarchy
    (sktime's ``pd-multiindex`` and ``pd_multiindex_hier``: series of any lengths and start times,
    with the same columns). One network is trained over all of them (no per-series broadcasting); each
    series keeps its own scaling, its own stream state and its own cutoff, and ``predict`` returns
    every series' forecast in the input's format. ``pretrain`` learns on a panel; ``fit`` on
    another series then conditions the stream on it with the pretrained weights (fine-tuning for
    ``fine_tune_epochs`` epochs if set).

    **Intervals.** Beside the mean, the network forecasts the standard deviation of every step (a
    Gaussian spread head that reads the encoder's output detached, so the mean trains as without it):
    ``predict_interval``, ``predict_quantiles``, ``predict_var`` and ``predict_proba`` work with the
    defaults, from the stream state, and quantiles never cross. With ``interval_calibration="aci"`` each
    stream re-calibrates its intervals from the errors it sees (adaptive conformal inference).

    **Covariates.** ``X`` (sktime's exogenous data) enters every step's token; its columns other than
    ``past_covariates`` are known for the future and also enter the forecast through a linear effect
    of their values at the forecast steps, so ``predict`` then needs them for ``fh``.

    **Missing values.** NaN marks a missing observation, in ``fit``, ``update`` and
    :meth:`partial_update`. It adds nothing to the loss, and its token is not seen by the encoder: the
    state carries over it, so streaming through gaps equals encoding the whole series with the same
    gaps. A window that contains a gap sees the last observed value carried forward (values before a
    series' first observation: that first observation), and the token embeds, beside the window, which
    of its positions were carried. The forecast at a missing step comes from the state of the
    observations so far and the carried window, so forecasts after a gap stay finite.

    **Training.** Each series is cut into segments of ``segment_length`` steps (a random crop of each
    stretch of every series, every epoch; at least 32 crops per epoch, so an epoch is several optimizer
    steps), each encoded from scratch. The untrained network is the naive forecast (the direct
    forecast repeats the last value, or the last season with ``sp``; the encoder's head starts at
    zero): training learns corrections to it. Because the encoder outputs a forecast at every step, the
    loss is the MSE of the forecasts at *every* step of a segment (each prefix forecasts its own next
    ``horizon`` values), so the model learns to forecast from any history length: from one
    observation through a fresh window of ``context_length`` to ``segment_length`` steps. Early
    stopping watches the same loss on the last ``validation_fraction`` of every series; if the trained
    network's MSE there is not at least 10 % below the naive forecast's, it is reset to the naive
    forecast (nothing reliably learnt, as on a random walk). The model's inputs do not depend on the
    history's length (tokens are local windows relative to their own level; the global scaling is
    fixed), and an Aaren layer's output is a softmax-weighted average over the history, which settles
    as history grows; so a model trained on segments of a few times ``context_length`` keeps
    forecasting as well after streaming through thousands of steps (measured on ETTh1 in
    ``benchmarks/forecasting.py``: streaming MSE within 1 % of, and slightly below, the MSE from fresh
    windows).

    **Streaming.** After ``fit`` the forecaster holds, for every series, the encoder's recurrent state
    after the whole series, its last ``context_length - 1`` values and its forecast at its cutoff.
    :meth:`partial_update` (and ``update(y, update_params=False)``) advances them through new
    observations in ``O(len(y))`` time and, with ``backbone="aaren"``, ``O(1)`` memory per series:
    history is never re-encoded and never stored (sktime's ``remember_data`` config is off, so
    ``self._y`` is not kept either). A panel's series present in the new data advance in one batched
    call, each from its own cutoff; a series id not seen before starts a new stream. The result equals
    (to float32 round-off) encoding every whole series at once with the same weights.
    :meth:`partial_update_array` and :meth:`predict_array` are the same on arrays, for serving many
    streams. With ``backbone="transformer"`` the state is a KV cache that grows by one entry per
    observation.

    Parameters
    ----------
    context_length : int or None, default=None
        Number of recent values each time step's token embeds (the look-back of the direct forecast).
        Older history reaches the forecast through the encoder's state. Series shorter than this are
        fine: missing values of a window are filled with the series' first value. ``None``: 96, or
        longer where the series' training parts (median length) hold four windows or more, up to 168
        (a week of hourly data); fixed at the first ``fit`` or ``pretrain`` as ``context_length_``
        (M4 Hourly: 168, where a 96-step window misses the weekly cycle; airline: 96).
    horizon : int or None, default=None
        Number of steps the network forecasts. ``None``: the largest step of the ``fh`` passed to ``fit``
        (then ``fh`` is required in ``fit``). Predicting further than ``horizon`` raises ``ValueError``;
        refit with a larger ``horizon``.
    sp : int, default=1
        Seasonal period (sktime's name; 24 for hourly data with a daily cycle). The untrained network
        is the seasonal naive forecast with this period (``1``: the last value), training learns
        corrections to it, and a trained network must beat it on the validation tail to be kept. At
        most ``context_length``.
    backbone : {"aaren", "transformer"}, default="aaren"
        Sequence mixer of the encoder.
    d_model : int, default=64
        Width of the encoder.
    n_heads : int, default=4
        Attention heads per layer.
    n_layers : int, default=2
        Encoder layers.
    d_ff : int, default=128
        Hidden width of the feed-forward layers.
    dropout : float, default=0.1
        Dropout in the encoder.
    channel_independent : bool, default=True
        Model every channel as a separate univariate series through shared weights (best on the
        ETT/Weather benchmarks); ``False`` embeds all channels of a window into one token.
    channel_embedding : bool, default=True
        With ``channel_independent=True``, add a learned vector per channel (zero at the start) to
        that channel's tokens, so the shared weights can treat the channels differently; the
        streaming state is unchanged. Has no effect when ``channel_independent=False``.
    local_norm : {"last", "mean", "standard", None}, default="standard"
        Level subtracted from each token's window and added back to its forecast. ``"standard"``
        subtracts the window's mean and divides by its standard deviation, then undoes both on the
        forecast (RevIN-style instance normalisation, computed per token: causal and streamable).
        ``None`` feeds the windows as they are.
    normalization : {"standard", None}, default="standard"
        ``"standard"`` standardises each channel with the mean and standard deviation of the training
        part of the series (stored at fit, so streaming uses the same statistics); ``None`` feeds raw
        values.
    segment_length : int or None, default=None
        Steps per training segment; ``None`` means ``2 * context_length``.
    optimizer : {"adam", "adamw", "sgd", "rmsprop"} or torch optimizer class, default="adam"
        Optimizer of the skorch training loop.
    lr : float, default=3e-3
        Learning rate of the first epoch.
    weight_decay : float, default=0.0
        Weight decay of the optimizer.
    lr_schedule : {"cosine", "exponential", None}, default="exponential"
        How the learning rate changes after every epoch: ``"cosine"`` anneals it to 0 at
        ``max_epochs``, ``"exponential"`` multiplies it by ``lr_decay``, ``None`` keeps it constant.
    lr_decay : float, default=0.8
        Factor of the ``"exponential"`` schedule, in (0, 1] (``1.0`` keeps the rate constant).
    batch_size : int, default=4
        Segments per gradient step (each gives ``segment_length`` forecasts per channel).
    max_epochs : int, default=20
        Upper bound on training epochs (one epoch crops each stretch of the series once, at least
        32 crops in all).
    early_stopping : bool, default=True
        Stop when the validation loss has not improved for ``patience`` epochs and restore the best
        epoch's weights. Needs a validation tail; without one, all ``max_epochs`` run.
    patience : int, default=3
        Epochs without improvement before early stopping.
    validation_fraction : float or None, default=0.2
        Fraction of the series' end held out for early stopping. ``None`` or ``0`` disables it; it is
        also skipped when the tail would be shorter than ``horizon + 2`` steps.
    update_epochs : int, default=1
        Epochs of fine-tuning on the new observations in ``update(y, update_params=True)``, and of
        further training when ``pretrain`` is called again.
    fine_tune_epochs : int, default=0
        After ``pretrain``, epochs of fine-tuning on the series passed to ``fit`` (``0``: ``fit``
        only conditions the streams on them, with the pretrained weights).
    interval_calibration : {"aci", None}, default="aci"
        ``"aci"``: every stream re-calibrates its forecast intervals online from the errors it sees
        (adaptive conformal inference, Gibbs and Candes 2021): in ``fit``, through the validation
        tail (which the network did not train on), then through :meth:`partial_update` and
        ``update``, so their coverage holds when the noise level drifts; each stream then keeps its
        last ``horizon`` forecasts (``horizon**2 * n_channels`` numbers). ``None``: the network's
        Gaussian intervals as they are.
    calibration_rate : float, default=0.005
        Step of the adaptive conformal update (``gamma`` in Gibbs and Candes): larger adapts faster to
        a change and fluctuates more.
    distribution : str, default="normal"
        Family of the forecast distribution around the point forecast, by the name it is registered
        under (:mod:`aaren_ts.nn.heads`): ``"normal"``, a Gaussian learnt by maximum likelihood;
        ``"quantile"``, quantiles from 1 % to 99 % learnt with the pinball loss (for skewed or
        heavy-tailed errors). The point forecast is the same network's either way; intervals,
        quantiles, variances and the online calibration follow the family.
    past_covariates : list of column names or None, default=None
        Columns of ``X`` known only up to the present (e.g. other measured series): they enter each
        step's token, and ``predict`` does not need them. Every other column of ``X`` is also known
        for the future (calendars, plans, weather forecasts): it enters the tokens too, and its values
        at the forecast steps, which ``predict`` then needs in ``X``, enter the forecast.
    device : str, default="auto"
        Torch device; ``"auto"`` picks CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds weight initialisation, segment crops, shuffling and dropout; an int makes ``fit``
        reproducible.
    verbose : int, default=0
        ``> 0`` shows skorch's progress bar and epoch log.
    callbacks : list of skorch callbacks or (name, callback) pairs, optional
        Extra skorch callbacks (cloned at ``fit``).
    num_threads : int or None, default=None
        torch intra-op threads while fitting, predicting and streaming (restored afterwards); ``None``
        keeps torch's setting.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel across the processes that ``accelerate launch`` (or ``torchrun``) started,
        through Hugging Face Accelerate (skorch's ``AccelerateMixin``): each process trains on its
        share of every epoch's batches (``batch_size`` per process), gradients are averaged, and every
        process ends with the same network. Validation runs on the whole hold-out in each process, so
        early stopping agrees everywhere. Devices are the accelerator's (``device`` is not used for
        training). Needs the ``distributed`` extra; not saved (a saved model loads and streams in one
        process). See the user guide's "Scaling out".

    Attributes
    ----------
    horizon_ : int
        Steps the fitted network forecasts.
    context_length_ : int
        Values each token embeds (``context_length``, or the one chosen from the data).
    n_channels_ : int
        Number of channels seen in ``fit``.
    columns_ : pandas.Index
        Column names seen in ``fit``.
    mean_, scale_ : ndarray
        Per-channel standardisation statistics (from the training part of the series).
    net_ : skorch.NeuralNet
        The trained network (``net_.module_`` is the torch module).
    engine_ : aaren_ts.engine.ForecastEngine
        The series' streams (states, recent values, forecasts, interval calibration) and the
        computations on them, on arrays; the forecaster adapts pandas and sktime to it.
    level_names_ : list or None
        Names of the index levels of the panel seen in ``fit`` (``None`` for a single series).
    n_seen_ : int
        Observations consumed so far (``fit`` plus updates).
    exog_columns_ : pandas.Index or None
        The columns of ``X`` the network takes, future-known ones first (``None`` without ``X``).
    n_future_ : int
        How many of them are known for the future (the first ones).

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
        "context_length": Optional(PositiveInt),
        "horizon": Optional(PositiveInt),
        "channel_independent": Flag(),
        "channel_embedding": Flag(),
        "local_norm": Options(LOCAL_NORMS),
        "segment_length": Optional(PositiveInt),
        "update_epochs": Interval(0, None, integer=True),
        "fine_tune_epochs": Interval(0, None, integer=True),
        "sp": PositiveInt,
        "interval_calibration": Options(("aci", None)),
        "distribution": Registered(HEADS),
        "calibration_rate": Interval(0.0, 1.0, closed="neither"),
        "past_covariates": Optional(Names()),
    }

    def __init__(
        self,
        context_length: int | None = None,
        horizon: int | None = None,
        sp: int = 1,
        backbone: str = "aaren",
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 128,
        dropout: float = 0.1,
        channel_independent: bool = True,
        channel_embedding: bool = True,
        local_norm: str | None = "standard",
        normalization: str | None = "standard",
        segment_length: int | None = None,
        optimizer: str | type = "adam",
        lr: float = 3e-3,
        weight_decay: float = 0.0,
        lr_schedule: str | None = "exponential",
        lr_decay: float = 0.8,
        batch_size: int = 4,
        max_epochs: int = 20,
        early_stopping: bool = True,
        patience: int = 3,
        validation_fraction: float | None = 0.2,
        update_epochs: int = 1,
        fine_tune_epochs: int = 0,
        interval_calibration: str | None = "aci",
        calibration_rate: float = 0.005,
        distribution: str = "normal",
        past_covariates: Sequence[Any] | None = None,
        device: str = "auto",
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        callbacks: Sequence[Any] | None = None,
        num_threads: int | None = None,
        accelerator: Any = None,
    ) -> None:
        self._store_init_params(locals())
        super().__init__()
        empty_data_slots(self)
        # fh is needed in fit only to learn the horizon, when it is not given here.
        self.set_tags(**{"requires-fh-in-fit": horizon is None})

    # ------------------------------------------------------------------ parameters and helpers
    def _build_forecast_net(self, train_split: Any = None, with_callbacks: bool = True) -> Any:
        from skorch import NeuralNet

        module_params = {
            "n_channels": int(self.n_channels_),
            "context_length": int(self.context_length_),
            "horizon": int(self.horizon_),
            "encoder": self._encoder_config(),
            "channel_independent": bool(self.channel_independent),
            "channel_embedding": bool(self.channel_embedding),
            "local_norm": self.local_norm,
            "sp": int(self.sp),
            "n_exog": self.n_exog_,
            "n_future": int(getattr(self, "n_future_", 0)),
            "distribution": self.distribution,
        }
        return self._build_net(
            NeuralNet,
            ForecastNet,
            module_params,
            train_split=train_split,
            with_callbacks=with_callbacks,
            # (the loss is a plain callable, not a module: its arguments are bound here)
            criterion=functools.partial(
                ForecastLoss, full_window=int(self.context_length_), distribution=self.distribution
            ),
            iterator_train__collate_fn=pad_segments,
            iterator_valid__collate_fn=pad_segments,
        )

    def _split(self, y: pd.DataFrame, where: str) -> SeriesPanel:
        """``y`` taken apart into series, checked against what ``fit`` (or ``pretrain``) saw."""
        panel = split_series(y, where)
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
        self.exog_columns_ = covariate_columns(X, self.past_covariates, where)
        self.n_future_ = len(self.exog_columns_) - len(self.past_covariates or [])

    @property
    def n_exog_(self) -> int:
        """Number of exogenous variables the network takes (0 without ``X`` in ``fit``)."""
        columns = getattr(self, "exog_columns_", None)
        return 0 if columns is None else len(columns)

    def _standardize(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Per-series ``(mean, scale)`` of shape ``(n_series, C)`` from each series' observed values."""
        stats = [standardization(v, self.normalization == "standard") for v in parts]
        return np.stack([m for m, _ in stats]), np.stack([s for _, s in stats])

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
        """``context_length``, or the default: a quarter of the median training length, in [96, 168]."""
        if self.context_length is not None:
            return int(self.context_length)
        train, _ = self._holdout(panel)
        median = float(np.median([len(v) for v in train]))
        return int(min(_MAX_DEFAULT_CONTEXT, max(_MIN_DEFAULT_CONTEXT, median // 4)))

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

    def _train(self, panel: SeriesPanel, epochs: int | None = None) -> None:
        """Train the network on ``panel`` (each series scaled by its own training statistics).

        ``epochs=None`` builds and trains a new network with early stopping on the series' tails;
        an int continues training the current one for that many epochs on whole series.
        """
        seg_len = int(self.segment_length or 2 * self.context_length_)
        if epochs is None:
            train, valid = self._holdout(panel)
        else:
            train, valid = panel.values, []
        mean, scale = self._standardize(train)
        train = [((v - m) / s).astype(np.float32) for v, m, s in zip(train, mean, scale, strict=True)]
        valid = [((v - m) / s).astype(np.float32) for v, m, s in zip(valid, mean, scale, strict=False)]
        with self._torch_context(seed=True):
            generator = torch.Generator().manual_seed(int(torch.randint(2**31 - 1, (1,))))
            exog = {"n_exog": self.n_exog_, "n_future": self.n_future_}
            train_ds = SegmentDataset(train, seg_len, self.horizon_, generator, **exog)
            if len(train_ds) == 0:
                raise ValueError("fit: y needs a series with at least 2 observations")
            valid_ds = SegmentDataset(valid, seg_len, self.horizon_, **exog) if valid else None
            if valid_ds is not None and len(valid_ds) == 0:
                valid_ds = None
            if epochs is None:
                from skorch.helper import predefined_split

                train_split = predefined_split(valid_ds) if valid_ds is not None else None
                self.net_ = self._build_forecast_net(train_split)
                self.net_.fit(train_ds, y=None)
            else:
                if self.net_.train_split is not None:
                    # fine-tuning trains on the new data only: no validation split, no early stopping
                    self.net_.set_params(train_split=None)
                    if "early_stopping" in dict(self.net_.callbacks_):
                        self.net_.set_params(callbacks__early_stopping=None)
                        self.net_.initialize_callbacks()
                self.net_.partial_fit(train_ds, y=None, epochs=int(epochs))
        if valid_ds is not None and not beats_naive(self.net_.module_, valid_ds, self._resolved_device()):
            self.net_.module_.reset_to_naive()  # no clear gain over the last value on held-out data
        self.net_.module_.eval()

    def _new_engine(self) -> None:
        """Empty streams for the trained network (no series yet)."""
        rate = None if self.interval_calibration is None else float(self.calibration_rate)
        self.engine_ = ForecastEngine(self.net_.module_, self._resolved_device(), rate)
        self._cutoffs = SeriesCutoffs()

    # ------------------------------------------------------------------ sktime interface
    def _pretrain(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None):
        """Train the global network on a panel; ``fit`` then conditions it on a series."""
        self._validate_params()
        self._set_covariates(X, "pretrain")
        panel = self._split_with_covariates(y, X, "pretrain")
        self.horizon_ = self._horizon(fh, "pretrain")
        self.context_length_ = self._context_length(panel)
        self.n_channels_ = len(panel.columns)
        self.columns_ = panel.columns.copy()
        self._train(panel)
        return self

    def _pretrain_update(
        self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None
    ):
        """Continue pretraining on more series for ``update_epochs`` epochs."""
        self._horizon(fh, "pretrain")
        panel = self._split_with_covariates(y, X, "pretrain")
        if self.update_epochs > 0:
            self._train(panel, epochs=int(self.update_epochs))
        return self

    def _fit(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None):
        """Train one network over every series of ``y`` (unless pretrained), then encode each series.

        After ``pretrain`` the pretrained network is kept: it is fine-tuned on ``y`` for
        ``fine_tune_epochs`` epochs (none by default) and the streams are conditioned on ``y``.
        """
        self._validate_params()
        pretrained = self._state_is_pretrained()
        if not pretrained:
            self._set_covariates(X, "fit")
        panel = self._split_with_covariates(y, X, "fit")
        if sum(len(v) for v in panel.values) < 2:
            raise ValueError(f"fit: y needs at least 2 observations, got {sum(len(v) for v in panel.values)}")
        if pretrained:
            self._horizon(fh, "fit")
            if self.fine_tune_epochs > 0:
                self._train(panel, epochs=int(self.fine_tune_epochs))
        else:
            self.horizon_ = self._horizon(fh, "fit")
            self.context_length_ = self._context_length(panel)
            self.n_channels_ = len(panel.columns)
            self._train(panel)
        self.columns_ = panel.columns.copy()
        self.level_names_ = panel.level_names
        self._new_engine()
        train, valid = self._holdout(panel)
        mean, scale = self._standardize(train)
        rows = self._add_series(panel.ids, mean, scale)
        # the training parts leave the interval calibration at its nominal levels; the validation
        # tails, which the network did not train on, calibrate it (adaptive conformal inference)
        n_train = [len(v) for v in train]
        train_times = [t[:k] for t, k in zip(panel.times, n_train, strict=True)]
        self._consume(rows, train, train_times, calibrate=False, where="fit")
        tails = np.flatnonzero([len(v) > 0 for v in valid])
        if len(tails):
            tail_times = [panel.times[k][n_train[k] :] for k in tails]
            self._consume(rows[tails], [valid[k] for k in tails], tail_times, calibrate=True, where="fit")
        return self

    def _state_is_pretrained(self) -> bool:
        """Whether ``pretrain`` (and no ``fit``) trained the network this ``fit`` conditions on."""
        return getattr(self, "_state", "new") == "pretrained" and hasattr(self, "net_")

    def _add_series(self, ids: list[Any], mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
        rows = self.engine_.add(ids, mean, scale)
        self._cutoffs.extend(len(ids))
        return rows

    def _consume(
        self,
        rows: np.ndarray,
        parts: Sequence[np.ndarray],
        times: Sequence[pd.Index],
        calibrate: bool = True,
        where: str = "update",
    ) -> None:
        """Advance the streams at ``rows`` through their new values ``parts`` (original units) and
        move their cutoffs to the ends of ``times``."""
        lengths = np.array([len(v) for v in parts], dtype=np.int64)
        raw = np.full((len(rows), int(lengths.max()), self.n_channels_ + self.n_exog_), np.nan)
        for i, part in enumerate(parts):
            raw[i, : lengths[i]] = part
        with self._torch_context():
            self.engine_.advance(rows, raw, lengths, calibrate=calibrate, where=where)
        self._cutoffs.set(rows, times)

    def _predict(self, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
        """Read each series' forecast at its own cutoff for the steps of ``fh``."""
        steps, times = self._forecast_steps(fh, "predict")
        known = self._known_future(X, steps, times, "predict")
        loc = self.engine_.predict()
        values = [loc[row, s - 1] + known[row] for row, s in enumerate(steps)]
        return self._frame(times, values)

    def _predict_quantiles(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None, alpha: list[float]
    ) -> pd.DataFrame:
        """Quantiles of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        steps, times = self._forecast_steps(fh, "predict_quantiles")
        known = self._known_future(X, steps, times, "predict_quantiles")
        alpha = [float(a) for a in alpha]
        quantiles = self.engine_.predict_quantiles(alpha)
        frames = [
            self._frame(times, [quantiles[r, s - 1, :, k] + known[r] for r, s in enumerate(steps)])
            for k in range(len(alpha))
        ]
        columns = self._get_columns(method="predict_quantiles", alpha=alpha)
        values = np.stack([f.to_numpy() for f in frames], axis=-1)  # (rows, C, len(alpha))
        return pd.DataFrame(values.reshape(len(frames[0]), -1), index=frames[0].index, columns=columns)

    def _predict_var(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None = None, cov: bool = False
    ) -> pd.DataFrame:
        """Variance of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        if cov:
            raise NotImplementedError("AarenForecaster forecasts marginal variances only (cov=False)")
        steps, times = self._forecast_steps(fh, "predict_var")
        std = self.engine_.predict_std()
        return self._frame(times, [std[row, s - 1] ** 2 for row, s in enumerate(steps)])

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

    def _update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, update_params: bool = True):
        """Advance the streams by the observations of ``y`` after each series' cutoff.

        Observations at or before a series' cutoff are skipped (its state has consumed them). sktime's
        ``update`` has already moved the cutoff to ``y``'s end; on bad input it is put back, so the
        forecaster is left exactly as it was.
        """
        old_cutoff = self._cutoffs.latest()
        try:
            with self.engine_.lock:
                plan = self._plan(y, X, strict=False, where="update")
                if update_params and self.update_epochs > 0:
                    fresh = SeriesPanel(plan.ids, plan.times, plan.values, self.columns_, self.level_names_)
                    if any(len(v) >= 2 for v in fresh.values):
                        self._train(fresh, epochs=int(self.update_epochs))
                self._apply(plan, "update")
        except (TypeError, ValueError):
            self._set_cutoff(old_cutoff)
            raise
        self._set_cutoff(self._cutoffs.latest())
        return self

    def _sync_cutoffs(self) -> None:
        """Bring every series' cutoff, and sktime's ``cutoff``, up to date after array updates."""
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
                keep = continuation(time, self._cutoffs.cutoffs[row], strict, where, series_id)
                if keep is None:
                    continue
                time, part = time[keep], part[keep]
            ids.append(series_id)
            times.append(time)
            values.append(part)
        values = self._with_covariates(values, ids, times, X, where, panel.is_panel) if ids else values
        if ids and not new:  # (a new series is checked against its own scale when it is added)
            rows = np.array([engine.row_of[i] for i in ids], dtype=np.int64)
            for row, part in zip(rows, values, strict=True):
                engine.check_values(row[None], part[None], where)
        return _StreamPlan(ids, times, values, new)

    def _apply(self, plan: _StreamPlan, where: str) -> None:
        if not plan.ids:
            return
        engine = self.engine_
        if plan.new:
            new_ids = set(plan.new)
            parts = [v for i, v in zip(plan.ids, plan.values, strict=True) if i in new_ids]
            mean, scale = self._standardize(parts)
            self._add_series(plan.new, mean, scale)
        rows = np.array([engine.row_of[i] for i in plan.ids], dtype=np.int64)
        self._consume(rows, plan.values, plan.times, where=where)

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
        frame = self._as_frame(y, "partial_update")
        if self.get_config()["remember_data"]:
            return self.update(y, X=X, update_params=False)  # the user asked sktime to keep the data
        # Fast path, same result as update(y, update_params=False) without sktime's per-call conversions.
        with self.engine_.lock:
            self._apply(self._plan(frame, X, strict=True, where="partial_update"), "partial_update")
            self._set_cutoff(self._cutoffs.latest())
        return self

    def partial_update_array(
        self, y: np.ndarray, series_ids: Sequence[Any] | None = None, X: np.ndarray | None = None
    ) -> AarenForecaster:
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
            The covariates at the same steps, columns in the order of :attr:`exog_columns_` (required
            if ``fit`` had ``X``).

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            On a wrong shape or type, infinite or overflowing values, missing or non-finite covariates,
            or an unknown or repeated series id; the forecaster is then left exactly as it was.
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
        with engine.lock, self._torch_context():
            engine.advance(rows, arr, where="partial_update_array")
            self._cutoffs.defer(rows, arr.shape[1])
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
            ``n_future_`` columns of :attr:`exog_columns_`); required if there are any.

        Returns
        -------
        ndarray of shape (n_series, horizon_, n_channels)
            Each series' forecast of the ``horizon_`` steps after its cutoff, in original units.
        """
        self.check_is_fitted()
        rows = self.engine_.rows_of(series_ids, "predict_array")
        self.engine_.require_observed(rows, "predict_array")
        return self.engine_.predict(rows) + self._known_future_array(X, rows, "predict_array")

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
        if len(probabilities) == 0 or not np.all((probabilities > 0.0) & (probabilities < 1.0)):
            raise ValueError(
                f"predict_quantiles_array: alpha must be probabilities strictly between 0 and 1 (the "
                f"quantiles at 0 and 1 are infinite), got {np.asarray(alpha).tolist()}"
            )
        rows = self.engine_.rows_of(series_ids, "predict_quantiles_array")
        self.engine_.require_observed(rows, "predict_quantiles_array")
        known = self._known_future_array(X, rows, "predict_quantiles_array")
        return self.engine_.predict_quantiles(probabilities.tolist(), rows) + np.asarray(known)[..., None]

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

    @property
    def cutoff(self) -> pd.Index:
        """The latest cutoff over all series (sktime's ``cutoff``), including array updates."""
        if getattr(self, "_cutoffs", None) is not None:
            self._sync_cutoffs()
        return super().cutoff

    def _as_frame(self, y: Any, where: str) -> pd.DataFrame:
        if isinstance(y, pd.Series):
            frame = y.to_frame()
            if len(self.columns_) == 1:
                frame.columns = self.columns_
            return frame
        if isinstance(y, pd.DataFrame):
            return y
        raise TypeError(f"{where}: y must be a pandas Series or DataFrame, got {type(y).__name__}")

    def _single_stream(self, where: str) -> None:
        if self.level_names_ is not None:
            raise ValueError(f"{where} works on a forecaster fitted on a single series, not on a panel")
        if self.n_exog_:
            raise ValueError(
                f"{where} does not take covariates; the forecaster was fitted with X: stream with "
                "partial_update(y, X) and predict(fh, X)"
            )

    def stream_forecasts(self, y: pd.Series | pd.DataFrame) -> np.ndarray:
        """The forecasts the stream would make after each observation of ``y``, without advancing it.

        Continues from the current state exactly as :meth:`partial_update` would (same checks, same
        computation, in blocks), but returns the forecast after every observation and leaves the
        forecaster unchanged. Used to score streaming forecasts over a long period in one pass. For a
        forecaster fitted on a single series.

        Parameters
        ----------
        y : pandas Series or DataFrame
            The observations right after the cutoff (no gap, no overlap).

        Returns
        -------
        ndarray of shape (len(y), horizon_, n_channels)
            Row ``i`` is the forecast of the ``horizon_`` steps after ``y``'s ``i``-th observation, in
            original units.
        """
        self.check_is_fitted()
        self._single_stream("stream_forecasts")
        frame = self._as_frame(y, "stream_forecasts")
        with self.engine_.lock, self._torch_context():
            plan = self._plan(frame, None, strict=True, where="stream_forecasts")
            return self.engine_.stream_forecasts(0, plan.values[0])

    def predict_windows(
        self, windows: np.ndarray, batch_size: int = 256, return_std: bool = False
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

        Returns
        -------
        mean : ndarray of shape (n_windows, horizon_, n_channels)
            The forecast of the next ``horizon_`` steps after each window, in original units.
        std : ndarray of shape (n_windows, horizon_, n_channels)
            Its standard deviation, in original units; only with ``return_std=True``.
        """
        self.check_is_fitted()
        self._single_stream("predict_windows")
        arr = real_array(windows, "predict_windows", "windows")
        if arr.ndim == 2 and self.n_channels_ == 1:
            arr = arr[..., None]
        if arr.ndim != 3 or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"windows must have shape (n_windows, length >= 1, {self.n_channels_}), got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise ValueError("windows contain NaN or infinite values")
        with self._torch_context():
            loc, std = self.engine_.forecast_windows(arr, batch_size=batch_size)
        return (loc, std) if return_std else loc

    def stream_state_tensors(self) -> list[torch.Tensor]:
        """Copies of every tensor of the streams (encoder states, recent values, current forecasts)."""
        self.check_is_fitted()
        return [t.detach().clone() for t in self.engine_.tensors()]

    def _export_onnx(self, path: str | os.PathLike) -> Path:
        from aaren_ts.onnx.export import export_forecaster

        exog = [] if self.exog_columns_ is None else [str(c) for c in self.exog_columns_]
        return export_forecaster(self.engine_, path, exog_columns=exog)

    # ------------------------------------------------------------------ fitted attributes
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
                "n_channels": self.n_channels_,
                "columns": plain_names(self.columns_),
                "exog_columns": None if self.exog_columns_ is None else plain_names(self.exog_columns_),
                "n_future": int(self.n_future_),
                "level_names": plain_metadata(self.level_names_),
                "series_ids": [plain_metadata(i) for i in engine.ids],
                "series_cutoffs": self._cutoffs.to_plain(),
                "mean": engine.mean,
                "scale": engine.scale,
                "n_seen": engine.n_seen,
                "n_observed": engine.n_observed,
                "streams": [t.cpu() for t in engine.tensors()],
                "cutoff": index_to_plain(cutoff),
                **sktime_state(self, cutoff),
            }

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        self.horizon_ = int(attributes["horizon"])
        self.context_length_ = int(attributes["context_length"])
        self.n_channels_ = int(attributes["n_channels"])
        self.columns_ = pd.Index(attributes["columns"])
        exog_columns = attributes.get("exog_columns")
        self.exog_columns_ = None if exog_columns is None else pd.Index(exog_columns)
        self.n_future_ = int(attributes.get("n_future", 0))
        self.net_ = self._build_forecast_net(with_callbacks=False).initialize()
        self.net_.module_.load_state_dict(state_dict)
        self.net_.module_.eval()
        levels = attributes["level_names"]
        self.level_names_ = None if levels is None else list(levels)
        ids = [i if not isinstance(i, list) else tuple(i) for i in attributes["series_ids"]]
        self._new_engine()
        self._add_series(ids, attributes["mean"].numpy(), attributes["scale"].numpy())
        self.engine_.restore(
            attributes["streams"], attributes["n_seen"].numpy(), attributes["n_observed"].numpy()
        )
        self._cutoffs = SeriesCutoffs.from_plain(attributes["series_cutoffs"])
        restore_sktime_state(self, attributes, index_from_plain(attributes["cutoff"]))

    # ------------------------------------------------------------------ test parameters
    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict[str, Any]]:
        """Tiny configurations for sktime's conformance suite.

        Parameters
        ----------
        parameter_set : str, default="default"
            Unused; one set of parameters is returned.

        Returns
        -------
        list of dict
        """
        tiny = {
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "context_length": 6,
            "segment_length": 8,
            "max_epochs": 1,
            "batch_size": 4,
            "device": "cpu",
            "random_state": 0,
        }
        return [
            tiny,
            {
                **tiny,
                "horizon": 12,
                "backbone": "transformer",
                "channel_independent": False,
                "local_norm": "mean",
                "context_length": 4,
                "max_epochs": 1,
                "validation_fraction": None,
            },
        ]


class _StreamPlan(NamedTuple):
    """What a batch of new observations does to the streams (built before anything changes)."""

    ids: list[Any]
    times: list[pd.Index]
    values: list[np.ndarray]
    new: list[Any]


def _describe_levels(level_names: list[Any] | None) -> str:
    if level_names is None:
        return "a single series (no MultiIndex)"
    return f"a MultiIndex of {len(level_names)} levels {list(level_names)}"
