"""AarenForecaster: an sktime forecaster on Aaren whose updates cost O(1) per new observation."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd
import torch
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from aaren_ts.estimators._base import AarenEstimatorMixin, standardization
from aaren_ts.estimators._covariates import covariate_columns, covariates_at
from aaren_ts.estimators._forecast_calibration import gaussian_z
from aaren_ts.estimators._forecast_data import SegmentDataset, pad_segments
from aaren_ts.estimators._forecast_module import LOCAL_NORMS, ForecastLoss, ForecastNet, beats_naive
from aaren_ts.estimators._forecast_streams import ForecastStreams
from aaren_ts.estimators._panel import SeriesPanel, panel_frame, series_label, split_series
from aaren_ts.estimators._params import (
    SHARED_CONSTRAINTS,
    Flag,
    Interval,
    Names,
    Optional,
    Options,
    PositiveInt,
)

__all__ = ["AarenForecaster"]

_ENCODE_CHUNK = 512  # tokens per block when encoding a long series (bounds attention memory)
_ENCODE_TOKENS = 2**19  # series x steps per batch when encoding many series (bounds activation memory)
# the default context length: 96 (the long-horizon protocol's input), longer where the series' training
# parts hold four windows or more, up to a week of hourly data (M4 Hourly: 168, OWA 0.563 against 0.631
# at 96; airline stays at 96: MSE 375-464 over seeds 0-2, against 503-606 with a quarter of its length)
_MIN_DEFAULT_CONTEXT, _MAX_DEFAULT_CONTEXT = 96, 168
_ONE_SIGMA = 0.6826894921370859  # coverage of mean +- one standard deviation of a Gaussian
_CALIBRATION_VALUES = 2**22  # forecast values per batch when every step's forecast is kept (calibration)


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
        # sktime keeps these only when the user opts in with set_config(remember_data=True)
        self._y = None
        self._X = None
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
        }
        return self._build_net(
            NeuralNet,
            ForecastNet,
            module_params,
            train_split=train_split,
            with_callbacks=with_callbacks,
            criterion=ForecastLoss,
            criterion__full_window=int(self.context_length_),
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
        streams = getattr(self, "_streams", None)
        if streams is not None and where != "fit":
            fitted_levels = self._level_names
            if (panel.level_names is None) != (fitted_levels is None) or (
                panel.level_names is not None and len(panel.level_names) != len(fitted_levels)
            ):
                raise ValueError(
                    f"{where}: y has {_describe_levels(panel.level_names)}, the forecaster was fitted on "
                    f"{_describe_levels(fitted_levels)}"
                )
        return panel

    def _with_covariates(
        self,
        values: list[np.ndarray],
        ids: list[Any],
        times: list[pd.Index],
        X: pd.DataFrame | None,
        where: str,
        is_panel: bool,
    ) -> list[np.ndarray]:
        """Each series' ``values`` followed by its covariates at the same steps (as is without covariates).

        The channels become ``C + n_exog``: the series', then the covariates (future-known first).
        """
        columns = getattr(self, "exog_columns_", None)
        if columns is None:
            return values
        exog = covariates_at(X, columns, ids, times, where, is_panel)
        return [np.concatenate([v, e], axis=1) for v, e in zip(values, exog, strict=True)]

    def _split_with_covariates(self, y: pd.DataFrame, X: pd.DataFrame | None, where: str) -> SeriesPanel:
        """:meth:`_split`, then :meth:`_with_covariates` on every series."""
        panel = self._split(y, where)
        values = self._with_covariates(panel.values, panel.ids, panel.times, X, where, panel.is_panel)
        return SeriesPanel(panel.ids, panel.times, values, panel.columns, panel.level_names)

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
        steps = None if fh is None else int(self._relative_steps(fh, None).max())
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
        if valid_ds is not None and not beats_naive(self.net_.module_, valid_ds, self._device):
            self.net_.module_.reset_to_naive()  # no clear gain over the last value on held-out data
        self.net_.module_.eval()

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
        self._device = self._resolved_device()
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
        pretrained = getattr(self, "_state", "new") == "pretrained" and hasattr(self, "net_")
        if not pretrained:
            self._set_covariates(X, "fit")
        panel = self._split_with_covariates(y, X, "fit")
        self._device = self._resolved_device()  # not among the attributes a pretrained clone copies
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
        self._level_names = panel.level_names
        module = self.net_.module_
        self._streams = ForecastStreams.empty(module, self._device, self.interval_calibration is not None)
        train, valid = self._holdout(panel)
        mean, scale = self._standardize(train)
        rows = self._streams.add(panel.ids, mean, scale, module, self._device)
        # the training parts leave the interval calibration at its nominal levels; the validation
        # tails, which the network did not train on, calibrate it (adaptive conformal inference)
        n_train = [len(v) for v in train]
        self._consume(
            rows, train, [t[:k] for t, k in zip(panel.times, n_train, strict=True)], calibrate=False
        )
        tails = np.flatnonzero([len(v) > 0 for v in valid])
        if len(tails):
            tail_times = [panel.times[k][n_train[k] :] for k in tails]
            self._consume(rows[tails], [valid[k] for k in tails], tail_times, calibrate=True)
        return self

    def _consume(
        self,
        rows: np.ndarray,
        parts: Sequence[np.ndarray],
        times: Sequence[pd.Index],
        calibrate: bool = True,
    ) -> None:
        """Advance the streams at ``rows`` through their new values ``parts`` (original units).

        ``calibrate=False`` (``fit``'s own series) keeps the interval calibration's levels as they are.
        """
        lengths = np.array([len(v) for v in parts], dtype=np.int64)
        groups = self._row_groups(len(rows), int(lengths.max()))
        for group in groups:
            raw = np.full((len(group), int(lengths[group].max()), self.n_channels_ + self.n_exog_), np.nan)
            for i, k in enumerate(group):
                raw[i, : lengths[k]] = parts[k]
            self._advance_rows(rows[group], raw, lengths[group], calibrate=calibrate)
        streams = self._streams
        for row, time in zip(rows, times, strict=True):
            streams.cutoffs[row] = time[-1:]
            streams.pending[row] = 0

    def _row_groups(self, n_rows: int, n_steps: int) -> list[np.ndarray]:
        """Positions of the rows to advance together (bounding the tokens, hence memory, per call)."""
        if self.backbone != "aaren":  # a KV cache grows for every series at once: one call for them all
            return [np.arange(n_rows)]
        steps = max(1, min(n_steps, _ENCODE_CHUNK))
        per_group = max(1, _ENCODE_TOKENS // steps)
        if self._streams.calibration is not None:  # every step's forecast is kept
            per_group = max(
                1, min(per_group, _CALIBRATION_VALUES // (steps * self.horizon_ * self.n_channels_))
            )
        return np.array_split(np.arange(n_rows), max(1, -(-n_rows // per_group)))

    def _advance_rows(
        self, rows: np.ndarray, raw: np.ndarray, lengths: np.ndarray | None = None, calibrate: bool = True
    ) -> None:
        """Advance the streams at ``rows`` by ``raw`` ``(R, N, C)`` (original units, NaN = missing).

        Row ``i`` consumes its first ``lengths[i]`` steps (all ``N`` when ``lengths`` is None); the rest
        is padding. Updates the states, histories, forecasts, interval calibrations (their levels only
        if ``calibrate``) and counters, not the cutoffs.
        """
        streams = self._streams
        n = raw.shape[1]
        if lengths is None:
            lengths = np.full(len(rows), n, dtype=np.int64)
        if self.backbone != "aaren" and len(rows) < len(streams):
            # a KV cache: every series in row order, the others with nothing new (padding)
            full = np.full((len(streams), n, raw.shape[2]), np.nan)
            full[rows] = raw
            full_lengths = np.zeros(len(streams), dtype=np.int64)
            full_lengths[rows] = lengths
            self._advance_rows(np.arange(len(streams)), full, full_lengths, calibrate)
            return
        if len(rows) > 1 and (np.diff(rows) < 0).any():  # in stream order: the states are read in sequence
            order = np.argsort(rows, kind="stable")
            rows, raw, lengths = rows[order], raw[order], lengths[order]
        within = np.arange(n)[None, :] < lengths[:, None]
        c = self.n_channels_
        x = (raw - streams.mean[rows, None, :]) / streams.scale[rows, None, :]
        x = torch.as_tensor(x, dtype=torch.float32, device=self._device)
        row_t = torch.as_tensor(rows, device=self._device)
        length_t = torch.as_tensor(lengths, device=self._device)
        module = self.net_.module_
        if module.training:  # (eval() walks every submodule: a measurable cost per streamed step)
            module.eval()
        every = len(rows) == len(streams) and bool((rows == np.arange(len(rows))).all())
        state, history = streams.take(row_t)
        forecast = streams.forecast if every else streams.forecast[row_t]
        spread = streams.spread if every else streams.spread[row_t]
        calibration = streams.calibration  # advanced in place, at these rows
        rate = float(self.calibration_rate) if calibrate else 0.0
        with torch.no_grad(), self._torch_context():
            for start in range(0, n, _ENCODE_CHUNK):
                chunk = (length_t - start).clamp(0, _ENCODE_CHUNK)
                ragged = bool((chunk < min(_ENCODE_CHUNK, n - start)).any())
                x_chunk = x[:, start : start + _ENCODE_CHUNK]
                out, state, history = module(
                    x_chunk,
                    state=state,
                    history=history,
                    last_only=calibration is None,
                    return_state=True,
                    lengths=chunk if ragged else None,
                )
                if calibration is not None:  # judge the intervals issued before, keep every new one
                    observed, known = x_chunk[..., :c], None
                    if self.n_future_:  # the future-known covariates' part of every judged forecast
                        future = x_chunk[..., c : c + self.n_future_, None].transpose(-1, -2)
                        known = module.future_effect(future.expand(-1, -1, self.horizon_, -1))
                    calibration.advance(
                        observed, out.loc, out.scale, chunk, rate, known, None if every else row_t
                    )
                    last = (chunk - 1).clamp_min(0)
                    pick = torch.arange(len(rows), device=x.device)
                    out = type(out)(out.loc[pick, last][:, None], out.scale[pick, last][:, None])
                if ragged:
                    advanced = (chunk > 0)[:, None, None]
                    forecast = torch.where(advanced, out.loc[:, 0], forecast)
                    spread = torch.where(advanced, out.scale[:, 0], spread)
                else:
                    forecast, spread = out.loc[:, 0], out.scale[:, 0]
        streams.put(row_t, state, history)
        if every:
            streams.forecast, streams.spread = forecast, spread
        else:
            streams.forecast[row_t] = forecast
            streams.spread[row_t] = spread
        streams.n_seen[rows] += lengths
        streams.n_observed[rows] += (np.isfinite(raw[..., :c]).any(axis=2) & within).sum(axis=1)

    def _relative_steps(self, fh: ForecastingHorizon, cutoff: pd.Index | None) -> np.ndarray:
        if fh.is_relative:
            steps = np.asarray(fh.to_numpy(), dtype=np.int64)
        else:
            reference = cutoff if cutoff is not None else self.cutoff
            steps = np.asarray(fh.to_relative(reference).to_numpy(), dtype=np.int64)
        if (steps < 1).any():
            raise ValueError(
                f"fh contains in-sample step(s) {steps[steps < 1].tolist()}; AarenForecaster forecasts only "
                "steps after the cutoff (1, 2, ...)"
            )
        return steps

    def _predict(self, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
        """Read each series' forecast at its own cutoff for the steps of ``fh``."""
        streams = self._streams
        steps, times = self._forecast_steps(fh, "predict")
        known = self._known_future(X, steps, times, "predict")
        loc = self._original_units(streams.forecast, np.arange(len(streams)))
        values = [loc[row, s - 1] + known[row] for row, s in enumerate(steps)]
        return panel_frame(streams.ids, times, values, self.columns_, self._level_names)

    def _predict_quantiles(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None, alpha: list[float]
    ) -> pd.DataFrame:
        """Quantiles of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        streams = self._streams
        steps, times = self._forecast_steps(fh, "predict_quantiles")
        known = self._known_future(X, steps, times, "predict_quantiles")
        alpha = [float(a) for a in alpha]
        quantiles = self._quantiles(alpha)
        frames = []
        for k in range(len(alpha)):
            quantile = quantiles[..., k]
            frames.append(
                panel_frame(
                    streams.ids,
                    times,
                    [quantile[r, s - 1] + known[r] for r, s in enumerate(steps)],
                    self.columns_,
                    self._level_names,
                )
            )
        columns = self._get_columns(method="predict_quantiles", alpha=alpha)
        values = np.stack([f.to_numpy() for f in frames], axis=-1)  # (rows, C, len(alpha))
        return pd.DataFrame(values.reshape(len(frames[0]), -1), index=frames[0].index, columns=columns)

    def _predict_var(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None = None, cov: bool = False
    ) -> pd.DataFrame:
        """Variance of each series' forecast distribution (calibrated if ``interval_calibration``)."""
        if cov:
            raise NotImplementedError("AarenForecaster forecasts marginal variances only (cov=False)")
        streams = self._streams
        steps, times = self._forecast_steps(fh, "predict_var")
        every = np.arange(len(streams))
        std = (
            self._original_units(streams.spread, every, shift=False)
            * self._half_widths([_ONE_SIGMA], every)[:, 0]
        )
        values = [std[row, s - 1] ** 2 for row, s in enumerate(steps)]
        return panel_frame(streams.ids, times, values, self.columns_, self._level_names)

    def _known_future(
        self, X: pd.DataFrame | None, steps: list[np.ndarray], times: list[pd.Index], where: str
    ) -> list[np.ndarray | float]:
        """What the future-known covariates add to each series' forecast at its ``steps`` (original units).

        ``0.0`` per series when the forecaster has no future-known covariates.
        """
        if not getattr(self, "n_future_", 0):
            return [0.0] * len(steps)
        streams = self._streams
        future_columns = self.exog_columns_[: self.n_future_]
        values = covariates_at(X, future_columns, streams.ids, times, where, self._level_names is not None)
        rows = np.arange(len(streams))  # (every series forecasts the same number of steps of fh)
        effect = self._future_effect(rows, np.stack(values), np.stack(steps) - 1)
        return list(effect * streams.scale[:, None, : self.n_channels_])

    def _quantiles(self, alpha: list[float], rows: np.ndarray | None = None) -> np.ndarray:
        """Quantiles ``(n_rows, horizon, C, len(alpha))`` of the streams at ``rows`` (all if None)."""
        rows = np.arange(len(self._streams)) if rows is None else rows
        z = self._half_widths([abs(2.0 * a - 1.0) for a in alpha], rows)  # (n_rows, len(alpha), T, C)
        z = z * np.sign(np.asarray(alpha) - 0.5)[None, :, None, None]
        loc = self._original_units(self._streams.forecast, rows)
        spread = self._original_units(self._streams.spread, rows, shift=False)
        return loc[..., None] + np.moveaxis(z, 1, -1) * spread[..., None]

    def _half_widths(self, coverage: list[float], rows: np.ndarray) -> np.ndarray:
        """Interval half-widths in standard deviations, ``(n_rows, len(coverage), horizon, C)``."""
        calibration = self._streams.calibration
        if calibration is not None:
            if len(rows) < len(self._streams):
                calibration = calibration.take(torch.as_tensor(rows, device=calibration.levels.device))
            return calibration.z(coverage)
        z = gaussian_z(np.asarray(coverage))
        return np.broadcast_to(z[None, :, None, None], (len(rows), len(z), self.horizon_, self.n_channels_))

    def _original_units(self, values: torch.Tensor, rows: np.ndarray, shift: bool = True) -> np.ndarray:
        """Standardised ``(n_series, horizon, C)`` values of ``rows`` in their own series' units.

        ``shift=False`` scales only (for spreads); otherwise the series' mean is added too.
        """
        streams = self._streams
        c = self.n_channels_
        if len(rows) < len(streams):
            values = values[torch.as_tensor(rows, device=values.device)]
        out = values.detach().cpu().numpy().astype(np.float64) * streams.scale[rows, None, :c]
        return out + streams.mean[rows, None, :c] if shift else out

    def _forecast_steps(self, fh: ForecastingHorizon, where: str) -> tuple[list[np.ndarray], list[pd.Index]]:
        """For every series: the steps of ``fh`` after its own cutoff and their time index."""
        streams = self._streams
        self._sync_cutoffs()
        self._require_observed(np.arange(len(streams)), where)
        steps, times = [], []
        for row, cutoff in enumerate(streams.cutoffs):
            row_steps = self._relative_steps(fh, cutoff)
            if row_steps.max() > self.horizon_:
                raise ValueError(
                    f"fh reaches {int(row_steps.max())} steps ahead of the cutoff of "
                    f"{series_label(streams.ids[row])}, "
                    f"but the forecaster was trained for a horizon of {self.horizon_}; refit with "
                    f"horizon >= {int(row_steps.max())}"
                )
            steps.append(row_steps)
            if fh.is_relative and _is_integer_index(cutoff):  # plain arithmetic, as sktime's would give
                times.append(pd.Index(int(cutoff[0]) + row_steps))
            else:
                times.append(fh.to_absolute_index(cutoff))
        return steps, times

    def _update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, update_params: bool = True):
        """Advance the streams by the observations of ``y`` after each series' cutoff.

        Observations at or before a series' cutoff are skipped (its state has consumed them). sktime's
        ``update`` has already moved the cutoff to ``y``'s end; on bad input it is put back, so the
        forecaster is left exactly as it was.
        """
        old_cutoff = self._latest_cutoff()
        try:
            plan = self._plan(y, X, strict=False, where="update")
            if update_params and self.update_epochs > 0:
                fresh = SeriesPanel(plan.ids, plan.times, plan.values, self.columns_, self._level_names)
                if any(len(v) >= 2 for v in fresh.values):
                    self._train(fresh, epochs=int(self.update_epochs))
            self._apply(plan)
        except (TypeError, ValueError):
            self._set_cutoff(old_cutoff)
            raise
        self._set_cutoff(self._latest_cutoff())
        return self

    def _sync_cutoffs(self) -> None:
        """Bring every series' cutoff, and sktime's ``cutoff``, up to date after array updates."""
        if self._streams.pending.any():
            self._set_cutoff(self._latest_cutoff())

    def _latest_cutoff(self) -> pd.Index:
        self._streams.sync_cutoffs()
        cutoffs = [c for c in self._streams.cutoffs if c is not None]
        return max(cutoffs, key=lambda c: c[0])

    def _plan(self, y: pd.DataFrame, X: pd.DataFrame | None, strict: bool, where: str) -> _StreamPlan:
        """Check ``y`` (and ``X``) against every stream and return what to consume; changes nothing.

        Each series' rows after its cutoff must continue it without a gap (``strict``: also no row at or
        before it); a series id not seen before starts a new stream, scaled by its own observations.
        The covariates of the rows to consume are appended to their values.
        """
        panel = self._split(y, where)
        streams = self._streams
        self._sync_cutoffs()
        ids, times, values, new = [], [], [], []
        for series_id, time, part in zip(panel.ids, panel.times, panel.values, strict=True):
            row = streams.row_of.get(series_id)
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
                keep = _continuation(time, streams.cutoffs[row], strict, where, series_id)
                if keep is None:
                    continue
                time, part = time[keep], part[keep]
            ids.append(series_id)
            times.append(time)
            values.append(part)
        values = self._with_covariates(values, ids, times, X, where, panel.is_panel) if ids else values
        return _StreamPlan(ids, times, values, new)

    def _apply(self, plan: _StreamPlan) -> None:
        if not plan.ids:
            return
        streams = self._streams
        if plan.new:
            new_ids = set(plan.new)
            parts = [v for i, v in zip(plan.ids, plan.values, strict=True) if i in new_ids]
            mean, scale = self._standardize(parts)
            streams.add(plan.new, mean, scale, self.net_.module_, self._device)
        rows = np.array([streams.row_of[i] for i in plan.ids], dtype=np.int64)
        self._consume(rows, plan.values, plan.times)

    # ------------------------------------------------------------------ public extensions
    def partial_update(self, y: pd.Series | pd.DataFrame, X: pd.DataFrame | None = None) -> AarenForecaster:
        """Advance the forecaster by new observations that follow each series' cutoff, without refitting.

        Costs ``O(len(y))`` time and, with ``backbone="aaren"``, ``O(1)`` memory per series: the
        recurrent states move on, history is neither re-encoded nor stored. For a panel, every series
        present in ``y`` advances in one batched computation, each by its own number of observations
        from its own cutoff; series absent from ``y`` are left as they are, and a series id not seen
        before starts a new stream (scaled by the observations given). The forecasts afterwards equal
        (to float32 round-off) those from encoding every whole series at once with the same weights.

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
            On bad input (not pandas, infinite values, other columns or index levels, a gap or overlap
            with the observations already seen, missing or non-finite covariates, named by series);
            the forecaster is then left exactly as it was.
        """
        self.check_is_fitted()
        frame = self._as_frame(y, "partial_update")
        if self.get_config()["remember_data"]:
            return self.update(y, X=X, update_params=False)  # the user asked sktime to keep the data
        # Fast path, same result as update(y, update_params=False) without sktime's per-call conversions.
        self._apply(self._plan(frame, X, strict=True, where="partial_update"))
        self._set_cutoff(self._latest_cutoff())
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
        ValueError
            On a wrong shape, infinite values, missing or non-finite covariates, or an unknown or
            repeated series id; the forecaster is then left exactly as it was.
        """
        self.check_is_fitted()
        rows = self._rows_of(series_ids, "partial_update_array")
        arr = np.asarray(y, dtype=np.float64)
        if arr.ndim == 2:
            arr = arr[:, None, :]
        if arr.ndim != 3 or arr.shape[0] != len(rows) or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"partial_update_array: y must have shape ({len(rows)}, n_steps >= 1, {self.n_channels_}) "
                f"or ({len(rows)}, {self.n_channels_}), got {np.shape(y)}"
            )
        if np.isinf(arr).any():
            bad = self._streams.ids[rows[int(np.argwhere(np.isinf(arr))[0, 0])]]
            raise ValueError(
                f"partial_update_array: {series_label(bad)} holds an infinite value; "
                "use NaN for a missing observation"
            )
        if self.n_exog_:
            exog = self._covariate_array(
                X, (len(rows), arr.shape[1], self.n_exog_), rows, "partial_update_array"
            )
            arr = np.concatenate([arr, exog], axis=2)
        for group in self._row_groups(len(rows), arr.shape[1]):
            self._advance_rows(rows[group], arr[group])
        self._streams.pending[rows] += arr.shape[1]
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
        rows = self._rows_of(series_ids, "predict_array")
        self._require_observed(rows, "predict_array")
        streams = self._streams
        forecast = streams.forecast if series_ids is None else streams.forecast[torch.as_tensor(rows)]
        forecast = forecast.cpu().numpy().astype(np.float64) + self._known_future_array(
            X, rows, "predict_array"
        )
        c = self.n_channels_
        return forecast * streams.scale[rows, None, :c] + streams.mean[rows, None, :c]

    def predict_quantiles_array(
        self, alpha: Sequence[float], series_ids: Sequence[Any] | None = None, X: np.ndarray | None = None
    ) -> np.ndarray:
        """Quantiles of the streams' current forecasts as an array: the fast path of ``predict_quantiles``.

        Parameters
        ----------
        alpha : sequence of float
            Probabilities of the quantiles, in [0, 1] (``0.5``: the point forecast).
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
        probabilities = np.asarray(alpha, dtype=np.float64).ravel()
        if not np.all((probabilities >= 0.0) & (probabilities <= 1.0)):
            raise ValueError(f"predict_quantiles_array: alpha must lie in [0, 1], got {list(alpha)}")
        rows = self._rows_of(series_ids, "predict_quantiles_array")
        self._require_observed(rows, "predict_quantiles_array")
        known = self._known_future_array(X, rows, "predict_quantiles_array")
        known = known * self._streams.scale[rows, None, : self.n_channels_] if self.n_future_ else 0.0
        return self._quantiles(probabilities.tolist(), rows) + np.asarray(known)[..., None]

    def _require_observed(self, rows: np.ndarray, where: str) -> None:
        """Refuse to forecast for a series at ``rows`` with no observed value yet (all NaN so far)."""
        unseen = rows[self._streams.n_observed[rows] == 0]
        if len(unseen):
            raise ValueError(
                f"{where}: {series_label(self._streams.ids[unseen[0]])} has no observed value yet (all NaN): "
                "nothing to forecast from" + (f" ({len(unseen)} such series)" if len(unseen) > 1 else "")
            )

    def _covariate_array(self, X: Any, shape: tuple[int, ...], rows: np.ndarray, where: str) -> np.ndarray:
        """``X`` as a float array of ``shape`` (or one step less), checked finite; in original units."""
        if X is None:
            raise ValueError(f"{where}: X is required: the forecaster was fitted with covariates")
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim == len(shape) - 1 and shape[1] == 1:
            arr = arr[:, None]
        if arr.shape != shape:
            raise ValueError(f"{where}: X must have shape {shape}, got {np.shape(X)}")
        if not np.isfinite(arr).all():
            bad = self._streams.ids[rows[int(np.argwhere(~np.isfinite(arr))[0, 0])]]
            raise ValueError(f"{where}: X holds a non-finite value for {series_label(bad)}")
        return arr

    def _known_future_array(self, X: Any, rows: np.ndarray, where: str) -> np.ndarray | float:
        """Effect ``(n_rows, horizon, C)`` of the future-known covariates ``X``, standardised units."""
        if not getattr(self, "n_future_", 0):
            return 0.0
        future = self._covariate_array(X, (len(rows), self.horizon_, self.n_future_), rows, where)
        return self._future_effect(rows, future, np.arange(self.horizon_))

    def _future_effect(self, rows: np.ndarray, future: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Effect ``(n_rows, k, C)``, standardised units, of future covariates ``(n_rows, k, n_future)``.

        ``future`` holds the values (original units) at the forecast steps ``steps`` (0-based, ``(k,)``
        shared by all rows or ``(n_rows, k)``).
        """
        c, f = self.n_channels_, self.n_future_
        streams = self._streams
        z = (future - streams.mean[rows, None, c : c + f]) / streams.scale[rows, None, c : c + f]
        weight = self.net_.module_.future_coefficients().detach().cpu().numpy().astype(np.float64)
        per_step = weight[:, np.broadcast_to(steps, z.shape[:2]), :]  # (C, n_rows, k, F)
        return np.einsum("rkf,crkf->rkc", z, per_step)

    def _rows_of(self, series_ids: Sequence[Any] | None, where: str) -> np.ndarray:
        streams = self._streams
        if series_ids is None:
            return np.arange(len(streams))
        try:
            rows = np.fromiter((streams.row_of[i] for i in series_ids), dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"{where}: unknown {series_label(err.args[0])}; a new series starts through partial_update"
            ) from None
        if len(np.unique(rows)) != len(rows):
            raise ValueError(f"{where}: series_ids repeats a series")
        return rows

    @property
    def cutoff(self) -> pd.Index:
        """The latest cutoff over all series (sktime's ``cutoff``), including array updates."""
        if getattr(self, "_streams", None) is not None:
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
        if self._level_names is not None:
            raise ValueError(f"{where} works on a forecaster fitted on a single series, not on a panel")

    def _no_covariates(self, where: str) -> None:
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
        self._no_covariates("stream_forecasts")
        frame = self._as_frame(y, "stream_forecasts")
        plan = self._plan(frame, None, strict=True, where="stream_forecasts")
        streams = self._streams
        x = torch.as_tensor(
            (plan.values[0] - streams.mean[0]) / streams.scale[0], dtype=torch.float32, device=self._device
        )[None]
        module = self.net_.module_
        if module.training:  # (eval() walks every submodule: a measurable cost per streamed step)
            module.eval()
        state, history = streams.take(torch.zeros(1, dtype=torch.long, device=self._device))
        out = []
        with torch.no_grad(), self._torch_context():
            for start in range(0, x.shape[1], _ENCODE_CHUNK):
                pred, state, history = module(
                    x[:, start : start + _ENCODE_CHUNK], state=state, history=history, return_state=True
                )
                out.append(pred.loc[0].cpu().numpy().astype(np.float64))
        return np.concatenate(out) * streams.scale[0] + streams.mean[0]

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
        self._no_covariates("predict_windows")
        arr = np.asarray(windows, dtype=np.float64)
        if arr.ndim == 2 and self.n_channels_ == 1:
            arr = arr[..., None]
        if arr.ndim != 3 or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"windows must have shape (n_windows, length >= 1, {self.n_channels_}), got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise ValueError("windows contain NaN or infinite values")
        mean, scale = self._streams.mean[0], self._streams.scale[0]
        module = self.net_.module_
        if module.training:  # (eval() walks every submodule: a measurable cost per streamed step)
            module.eval()
        locs, stds = [], []
        with torch.no_grad(), self._torch_context():
            for start in range(0, len(arr), batch_size):
                x = torch.as_tensor((arr[start : start + batch_size] - mean) / scale, dtype=torch.float32)
                pred = module(x.to(self._device), last_only=True)
                locs.append(pred.loc[:, 0].cpu().numpy().astype(np.float64))
                stds.append(pred.scale[:, 0].cpu().numpy().astype(np.float64))
        if not locs:
            empty = np.zeros((0, self.horizon_, self.n_channels_))
            return (empty, empty.copy()) if return_std else empty
        loc = np.concatenate(locs) * scale + mean
        return (loc, np.concatenate(stds) * scale) if return_std else loc

    def stream_state_tensors(self) -> list[torch.Tensor]:
        """Copies of every tensor of the streams (encoder states, recent values, current forecasts)."""
        self.check_is_fitted()
        return [t.detach().clone() for t in self._streams.tensors()]

    # ------------------------------------------------------------------ fitted attributes
    @property
    def series_ids_(self) -> list[Any]:
        """Ids of the series the forecaster streams, in order (``[None]`` for a single series)."""
        return list(self._streams.ids)

    @property
    def mean_(self) -> np.ndarray | pd.DataFrame:
        """Standardisation means: ``(n_channels,)`` for a single series, one row per series of a panel."""
        return self._per_series(self._streams.mean[:, : self.n_channels_])

    @property
    def scale_(self) -> np.ndarray | pd.DataFrame:
        """Standardisation scales: ``(n_channels,)`` for a single series, one row per series of a panel."""
        return self._per_series(self._streams.scale[:, : self.n_channels_])

    @property
    def n_seen_(self) -> int | pd.Series:
        """Time steps consumed (``fit`` plus updates): an int, or one per series of a panel."""
        if self._level_names is None:
            return int(self._streams.n_seen[0])
        return pd.Series(self._streams.n_seen, index=self._series_index(), name="n_seen")

    def _series_index(self) -> pd.Index:
        ids = self._streams.ids
        names = self._level_names[:-1]
        if len(names) == 1:
            return pd.Index(ids, name=names[0])
        return pd.MultiIndex.from_tuples(ids, names=names)

    def _per_series(self, stats: np.ndarray) -> np.ndarray | pd.DataFrame:
        if self._level_names is None:
            return stats[0].copy()
        return pd.DataFrame(stats, index=self._series_index(), columns=self.columns_)

    # ------------------------------------------------------------------ persistence hooks
    def _fitted_attributes(self) -> dict[str, Any]:
        streams = self._streams
        self._sync_cutoffs()
        cutoff = self.cutoff
        return {
            "horizon": self.horizon_,
            "context_length": int(self.context_length_),
            "n_channels": self.n_channels_,
            "columns": [c if isinstance(c, int | str) else str(c) for c in self.columns_],
            "exog_columns": None
            if self.exog_columns_ is None
            else [c if isinstance(c, int | str) else str(c) for c in self.exog_columns_],
            "n_future": int(self.n_future_),
            "level_names": _plain_metadata(self._level_names),
            "series_ids": [_plain_metadata(i) for i in streams.ids],
            "series_cutoffs": [_index_to_plain(c) for c in streams.cutoffs],
            "mean": streams.mean,
            "scale": streams.scale,
            "n_seen": streams.n_seen,
            "n_observed": streams.n_observed,
            "streams": [t.cpu() for t in streams.tensors()],
            "cutoff": _index_to_plain(cutoff),
            "fh": None if self._fh is None else [int(s) for s in self._fh.to_relative(cutoff).to_numpy()],
            "y_mtype": str(self._y_mtype_last_seen),
            "y_name": _plain_metadata(getattr(self, "_converter_store_y", {}).get("name")),
            "y_metadata": _plain_metadata(getattr(self, "_y_metadata", {})),
        }

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        self._device = self._resolved_device()
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
        self._level_names = None if levels is None else list(levels)
        ids = [i if not isinstance(i, list) else tuple(i) for i in attributes["series_ids"]]
        module = self.net_.module_
        streams = ForecastStreams.empty(module, self._device, self.interval_calibration is not None)
        streams.add(ids, attributes["mean"].numpy(), attributes["scale"].numpy(), module, self._device)
        streams.load_tensors(streams.state, [t.to(self._device) for t in attributes["streams"]])
        streams.n_seen = attributes["n_seen"].numpy().copy()
        streams.n_observed = attributes["n_observed"].numpy().copy()
        streams.cutoffs = [_index_from_plain(c) for c in attributes["series_cutoffs"]]
        self._streams = streams
        cutoff = _index_from_plain(attributes["cutoff"])
        self._set_cutoff(cutoff)
        if attributes["fh"] is not None:
            self._fh = ForecastingHorizon(attributes["fh"], is_relative=True, freq=cutoff)
        self._y_mtype_last_seen = attributes["y_mtype"]
        if attributes["y_name"] is not None:  # the name sktime gives a univariate forecast
            self._converter_store_y = {"name": attributes["y_name"]}
        self._y_metadata = _metadata_from_plain(attributes["y_metadata"])
        self._X_mtype_last_seen = None
        self._is_vectorized = False

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


def _index_to_plain(index: pd.Index) -> dict[str, Any]:
    """A one-element time index as plain data (for weights-only persistence)."""
    value = index[0]
    freq = getattr(index, "freqstr", None)
    if isinstance(index, pd.PeriodIndex):
        return {"kind": "period", "value": str(value), "freq": freq}
    if isinstance(index, pd.DatetimeIndex):
        tz = str(index.tz) if index.tz else None
        return {"kind": "datetime", "value": value.isoformat(), "freq": freq, "tz": tz}
    return {"kind": "int", "value": int(value), "freq": None}


def _index_from_plain(data: dict[str, Any]) -> pd.Index:
    if data["kind"] == "period":
        return pd.PeriodIndex([data["value"]], freq=data["freq"])
    if data["kind"] == "datetime":
        index = pd.DatetimeIndex([pd.Timestamp(data["value"])])
        if data.get("tz"):
            index = index.tz_convert(data["tz"]) if index.tz is not None else index.tz_localize(data["tz"])
        if data["freq"]:
            index.freq = data["freq"]
        return index
    return pd.Index([data["value"]])


def _plain_metadata(meta: Any) -> Any:
    """sktime's ``_y_metadata`` reduced to plain data (strings, numbers, lists, dicts)."""
    if isinstance(meta, dict):
        return {str(k): _plain_metadata(v) for k, v in meta.items()}
    if isinstance(meta, list | tuple | pd.Index):
        return [_plain_metadata(v) for v in meta]
    if isinstance(meta, enum.Enum):
        return meta.name
    if isinstance(meta, bool | int | float | str | type(None)):
        return meta
    if isinstance(meta, np.generic):
        return meta.item()
    return str(meta)


def _metadata_from_plain(meta: dict[str, Any]) -> dict[str, Any]:
    """Undo :func:`_plain_metadata` where sktime expects enums (the ``feature_kind`` entries)."""
    meta = dict(meta)
    if "feature_kind" in meta:
        try:
            from sktime.datatypes._dtypekind import DtypeKind

            meta["feature_kind"] = [DtypeKind[k] if isinstance(k, str) else k for k in meta["feature_kind"]]
        except (ImportError, KeyError):
            pass
    return meta


class _StreamPlan(NamedTuple):
    """What a batch of new observations does to the streams (built before anything changes)."""

    ids: list[Any]
    times: list[pd.Index]
    values: list[np.ndarray]
    new: list[Any]


def _is_integer_index(index: pd.Index) -> bool:
    return not isinstance(index, pd.MultiIndex) and pd.api.types.is_integer_dtype(index.dtype)


def _describe_levels(level_names: list[Any] | None) -> str:
    if level_names is None:
        return "a single series (no MultiIndex)"
    return f"a MultiIndex of {len(level_names)} levels {list(level_names)}"


def _continuation(
    time: pd.Index, cutoff: pd.Index, strict: bool, where: str, series_id: Any
) -> np.ndarray | None:
    """Which steps of ``time`` come after ``cutoff``, checked to continue it without a gap.

    ``strict`` also rejects steps at or before ``cutoff`` (an overlap); otherwise they are skipped (the
    state has consumed them already; their values cannot be checked, history is not stored). Returns
    ``None`` when nothing comes after the cutoff.
    """
    who = series_label(series_id)
    try:
        if _is_integer_index(time) and _is_integer_index(cutoff):  # plain arithmetic (a panel's usual case)
            steps = time.to_numpy(dtype=np.int64) - int(cutoff[0])
        else:
            steps = np.asarray(
                ForecastingHorizon(time, is_relative=False, freq=cutoff).to_relative(cutoff).to_numpy(),
                dtype=np.int64,
            )
    except Exception as err:  # index of another type or frequency than the stream's
        raise ValueError(
            f"{where}: {who}'s index ({type(time).__name__}) cannot be placed after its cutoff "
            f"{cutoff[0]!r}: {err}"
        ) from err
    if strict and steps[0] <= 0:
        raise ValueError(
            f"{where}: {who} overlaps the observations already seen: it starts at {time[0]!r}, "
            f"not after its cutoff {cutoff[0]!r}"
        )
    keep = steps > 0
    if not keep.any():
        return None
    expected = np.arange(1, int(keep.sum()) + 1)
    if not np.array_equal(steps[keep], expected):
        first_bad = int(np.argmax(steps[keep] != expected))
        raise ValueError(
            f"{where}: {who} leaves a gap after its cutoff {cutoff[0]!r}: observation "
            f"{time[keep][first_bad]!r} is {int(steps[keep][first_bad])} steps after it, expected "
            f"{int(expected[first_bad])} (mark missing observations with NaN)"
        )
    return keep
