"""AarenForecaster: an sktime forecaster on Aaren whose updates cost O(1) per new observation."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from aaren_ts.estimators._base import AarenEstimatorMixin, standardization
from aaren_ts.estimators._forecast_data import SegmentDataset
from aaren_ts.estimators._forecast_module import LOCAL_NORMS, ForecastNet, MaskedMSELoss, beats_naive
from aaren_ts.estimators._params import SHARED_CONSTRAINTS, Flag, Interval, Optional, Options, PositiveInt
from aaren_ts.estimators._skorch import resolve_device
from aaren_ts.estimators._stream_state import flatten_state, unflatten_state

__all__ = ["AarenForecaster"]

_ENCODE_CHUNK = 512  # tokens per block when encoding a long series (bounds attention memory)


class AarenForecaster(AarenEstimatorMixin, BaseForecaster):
    """Multi-horizon point forecaster on Aaren, with streaming updates at O(1) cost per observation.

    At every time step the network embeds the last ``context_length`` values (standardised by their own
    mean and standard deviation, so tokens do not depend on the series' level or scale; the forecast is
    scaled back) and feeds the embedding, plus a learned per-channel vector, to a causal encoder
    (:class:`~aaren_ts.nn.AarenEncoder`, or the KV-cached Transformer baseline). The encoder's output at
    step ``t`` summarises the whole history up to ``t``; a linear head forecasts the next ``horizon``
    values from it, added to a direct linear forecast from the token's window. Values are standardised
    per channel with statistics of the training part of the series, fixed after ``fit``.

    **Training.** The series is cut into segments of ``segment_length`` steps (a random crop of each
    stretch of the series, every epoch; a short series gets at least 32 crops per epoch, so an epoch is
    several optimizer steps), each encoded from scratch. The untrained network is the last-value forecast
    (the direct forecast repeats the last value, the encoder's head starts at zero): training learns
    corrections to it. Because the encoder outputs a forecast
    at every step, the loss is the MSE of the forecasts at *every* step of a segment (each prefix
    forecasts its own next ``horizon`` values), so the model learns to forecast from any history length:
    from one observation (windows padded with the first value) through a fresh window of
    ``context_length`` to ``segment_length`` steps. Early stopping watches the same loss on the last
    ``validation_fraction`` of the series; if the trained network's MSE there is not at least 10 % below
    the last value's, it is reset to the last-value forecast (nothing reliably learnt, as on a random
    walk). The model's inputs do not depend on the history's length
    (tokens are local windows relative to their own level; the global scaling is fixed), and an Aaren
    layer's output is a softmax-weighted average over the history, which settles as history grows; so a
    model trained on segments of a few times ``context_length`` keeps forecasting as well after streaming
    through thousands of steps (measured on ETTh1 in ``benchmarks/forecasting.py``: streaming MSE within
    1 % of, and slightly below, the MSE from fresh windows).

    **Streaming.** After ``fit`` the forecaster holds the encoder's recurrent state after the whole
    training series, the last ``context_length - 1`` values and the forecast at the cutoff.
    :meth:`partial_update` (and ``update(y, update_params=False)``) advances them through new observations
    in ``O(len(y))`` time and, with ``backbone="aaren"``, ``O(1)`` memory: history is never re-encoded and
    never stored (sktime's ``remember_data`` config is off, so ``self._y`` is not kept either). The result
    equals (to float32 round-off) encoding the whole series at once with the same weights. With
    ``backbone="transformer"`` the state is a KV cache that grows by one entry per observation.

    Parameters
    ----------
    context_length : int, default=96
        Number of recent values each time step's token embeds (the look-back of the direct forecast).
        Older history reaches the forecast through the encoder's state. Series shorter than this are
        fine: missing values of a window are filled with the series' first value.
    horizon : int or None, default=None
        Number of steps the network forecasts. ``None``: the largest step of the ``fh`` passed to ``fit``
        (then ``fh`` is required in ``fit``). Predicting further than ``horizon`` raises ``ValueError``;
        refit with a larger ``horizon``.
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
        Epochs of fine-tuning on the new observations in ``update(y, update_params=True)``.
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

    Attributes
    ----------
    horizon_ : int
        Steps the fitted network forecasts.
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
        "y_inner_mtype": "pd.DataFrame",
        "X_inner_mtype": "pd.DataFrame",
        "capability:multivariate": True,
        "capability:exogenous": False,
        "capability:insample": False,
        "capability:pred_int": False,
        "capability:missing_values": False,
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
        "context_length": PositiveInt,
        "horizon": Optional(PositiveInt),
        "channel_independent": Flag(),
        "channel_embedding": Flag(),
        "local_norm": Options(LOCAL_NORMS),
        "segment_length": Optional(PositiveInt),
        "update_epochs": Interval(0, None, integer=True),
    }

    def __init__(
        self,
        context_length: int = 96,
        horizon: int | None = None,
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
        device: str = "auto",
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        callbacks: Sequence[Any] | None = None,
        num_threads: int | None = None,
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
            "context_length": int(self.context_length),
            "horizon": int(self.horizon_),
            "encoder": self._encoder_config(),
            "channel_independent": bool(self.channel_independent),
            "channel_embedding": bool(self.channel_embedding),
            "local_norm": self.local_norm,
        }
        return self._build_net(
            NeuralNet,
            ForecastNet,
            module_params,
            train_split=train_split,
            with_callbacks=with_callbacks,
            criterion=MaskedMSELoss,
        )

    def _values(self, y: pd.DataFrame, where: str) -> np.ndarray:
        """Validated float values of ``y`` ``(n, C)``; raises ``TypeError``/``ValueError``."""
        if not isinstance(y, pd.DataFrame):
            raise TypeError(f"{where}: y must be a pandas Series or DataFrame, got {type(y).__name__}")
        if len(y) == 0:
            raise ValueError(f"{where}: y is empty")
        if hasattr(self, "columns_"):
            if y.shape[1] != self.n_channels_:
                raise ValueError(
                    f"{where}: y has {y.shape[1]} column(s), the forecaster was fitted on {self.n_channels_}"
                )
            if self.n_channels_ > 1 and not y.columns.equals(self.columns_):
                raise ValueError(
                    f"{where}: y's columns {list(y.columns)} differ from those seen in fit "
                    f"{list(self.columns_)}"
                )
        try:
            values = y.to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{where}: y must hold numbers ({err})") from err
        if not np.isfinite(values).all():
            bad = ~np.isfinite(values)
            raise ValueError(
                f"{where}: y contains {int(bad.sum())} NaN or infinite value(s) "
                f"(first at row {int(np.argwhere(bad)[0, 0])}); the forecaster needs finite values"
            )
        if not y.index.is_monotonic_increasing or not y.index.is_unique:
            raise ValueError(f"{where}: y's index must be strictly increasing")
        return values

    def _scale(self, values: np.ndarray) -> torch.Tensor:
        scaled = (values - self.mean_) / self.scale_
        return torch.as_tensor(scaled, dtype=torch.float32, device=self._device)

    def _encode(
        self, x: torch.Tensor, state: Any, history: torch.Tensor | None
    ) -> tuple[torch.Tensor, Any, torch.Tensor]:
        """Advance ``(state, history)`` through ``x`` ``(B, N, C)`` in blocks; return the last forecast."""
        module = self.net_.module_
        module.eval()
        out = None
        with torch.no_grad(), self._torch_context():
            for start in range(0, x.shape[1], _ENCODE_CHUNK):
                out, state, history = module(
                    x[:, start : start + _ENCODE_CHUNK],
                    state=state,
                    history=history,
                    last_only=True,
                    return_state=True,
                )
        return out[:, 0], state, history

    # ------------------------------------------------------------------ sktime interface
    def _fit(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh: ForecastingHorizon | None = None):
        """Standardise, train the network with skorch, then encode the whole series into the state."""
        self._validate_params()
        values = self._values(y, "fit")
        if len(values) < 2:
            raise ValueError(f"fit: y needs at least 2 observations, got {len(values)}")
        horizon = self.horizon
        if horizon is None:
            if fh is None:
                raise ValueError("fit: pass fh, or set the horizon parameter")
            horizon = int(self._relative_steps(fh).max())
        elif fh is not None and int(self._relative_steps(fh).max()) > horizon:
            raise ValueError(
                f"fit: fh reaches {int(self._relative_steps(fh).max())} steps ahead, beyond horizon={horizon}"
            )
        self.horizon_ = int(horizon)
        self.n_channels_ = int(values.shape[1])
        self.columns_ = y.columns.copy()
        self._device = resolve_device(self.device)

        n = len(values)
        n_valid = math.floor((self.validation_fraction or 0.0) * n)
        use_valid = bool(self.validation_fraction) and n_valid >= self.horizon_ + 2 and n - n_valid >= 2
        train_values = values[: n - n_valid] if use_valid else values
        self.mean_, self.scale_ = standardization(train_values, self.normalization == "standard")
        scaled = ((values - self.mean_) / self.scale_).astype(np.float32)

        seg_len = int(self.segment_length or 2 * self.context_length)
        with self._torch_context(seed=True):
            generator = torch.Generator().manual_seed(int(torch.randint(2**31 - 1, (1,))))
            train_ds = SegmentDataset(scaled[: len(train_values)], seg_len, self.horizon_, generator)
            train_split = valid_ds = None
            if use_valid:
                from skorch.helper import predefined_split

                valid_ds = SegmentDataset(scaled[len(train_values) :], seg_len, self.horizon_)
                train_split = predefined_split(valid_ds)
            self.net_ = self._build_forecast_net(train_split)
            self.net_.fit(train_ds, y=None)
        if valid_ds is not None and not beats_naive(self.net_.module_, valid_ds, self._device):
            self.net_.module_.reset_to_naive()  # no clear gain over the last value on held-out data
        self.net_.module_.eval()
        self._reset_stream(scaled)
        return self

    def _reset_stream(self, scaled: np.ndarray) -> None:
        x = torch.as_tensor(scaled, dtype=torch.float32, device=self._device)[None]
        forecast, self.state_, self.history_ = self._encode(x, None, None)
        self.last_forecast_ = forecast[0]  # (T, C), scaled
        self.n_seen_ = int(scaled.shape[0])

    def _relative_steps(self, fh: ForecastingHorizon) -> np.ndarray:
        if fh.is_relative:
            steps = np.asarray(fh.to_numpy(), dtype=np.int64)
        else:
            steps = np.asarray(fh.to_relative(self.cutoff).to_numpy(), dtype=np.int64)
        if (steps < 1).any():
            raise ValueError(
                f"fh contains in-sample step(s) {steps[steps < 1].tolist()}; AarenForecaster forecasts only "
                "steps after the cutoff (1, 2, ...)"
            )
        return steps

    def _predict(self, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
        """Read the forecast at the cutoff for the steps of ``fh``."""
        steps = self._relative_steps(fh)
        if steps.max() > self.horizon_:
            raise ValueError(
                f"fh reaches {int(steps.max())} steps ahead, but the forecaster was trained for a horizon of "
                f"{self.horizon_}; refit with horizon >= {int(steps.max())}"
            )
        forecast = self.last_forecast_.detach().cpu().numpy().astype(np.float64)
        values = forecast[steps - 1] * self.scale_ + self.mean_
        index = fh.to_absolute_index(self.cutoff)
        return pd.DataFrame(values, index=index, columns=self.columns_)

    def _update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, update_params: bool = True):
        """Advance the stream by the observations of ``y`` after the stream's position.

        sktime's ``update`` has already moved the cutoff to ``y``'s end; on bad input it is put back,
        so the forecaster is left exactly as it was.
        """
        old_cutoff = self._stream_cutoff
        try:
            new = self._new_observations(y, old_cutoff, strict=False, where="update")
            if new is not None:
                self._advance(new, update_params)
        except (TypeError, ValueError):
            self._set_cutoff(old_cutoff)
            raise
        if new is None:  # nothing after the stream's position: the cutoff stays where the state is
            self._set_cutoff(old_cutoff)
        else:
            self._state_cutoff = self._cutoff
        return self

    @property
    def _stream_cutoff(self) -> pd.Index:
        """Index of the last observation the stream state has consumed."""
        return self._state_cutoff

    def _new_observations(
        self, y: pd.DataFrame, cutoff: pd.Index, strict: bool, where: str
    ) -> pd.DataFrame | None:
        """The rows of ``y`` after ``cutoff``, checked to continue it without a gap.

        ``strict`` also rejects rows at or before ``cutoff`` (an overlap); otherwise they are skipped (the
        state has consumed them already; their values cannot be checked, history is not stored).
        """
        self._values(y, where)
        try:
            steps = np.asarray(
                ForecastingHorizon(y.index, is_relative=False, freq=cutoff).to_relative(cutoff).to_numpy(),
                dtype=np.int64,
            )
        except Exception as err:  # index of another type or frequency than the stream's
            raise ValueError(
                f"{where}: y's index ({type(y.index).__name__}) cannot be placed after the cutoff "
                f"{cutoff[0]!r}: {err}"
            ) from err
        if strict and steps[0] <= 0:
            raise ValueError(
                f"{where}: y overlaps the observations already seen: it starts at {y.index[0]!r}, "
                f"not after the cutoff {cutoff[0]!r}"
            )
        keep = steps > 0
        if not keep.any():
            return None
        steps = steps[keep]
        expected = np.arange(1, len(steps) + 1)
        if not np.array_equal(steps, expected):
            first_bad = int(np.argmax(steps != expected))
            raise ValueError(
                f"{where}: y leaves a gap after the cutoff {cutoff[0]!r}: observation "
                f"{y.index[keep][first_bad]!r} "
                f"is {int(steps[first_bad])} steps after it, expected {int(expected[first_bad])}"
            )
        return y.loc[keep]

    def _advance(self, y_new: pd.DataFrame, update_params: bool) -> None:
        values = y_new.to_numpy(dtype=np.float64)
        x = self._scale(values)[None]
        if update_params and self.update_epochs > 0 and len(values) >= 2:
            if self.net_.train_split is not None:
                # fine-tuning trains on the new data only: no validation split, no early stopping
                self.net_.set_params(train_split=None)
                if "early_stopping" in dict(self.net_.callbacks_):
                    self.net_.set_params(callbacks__early_stopping=None)
                    self.net_.initialize_callbacks()
            with self._torch_context(seed=True):
                self.net_.partial_fit(
                    SegmentDataset(
                        x[0].cpu().numpy(), int(self.segment_length or 2 * self.context_length), self.horizon_
                    ),
                    y=None,
                    epochs=int(self.update_epochs),
                )
            self.net_.module_.eval()
        forecast, self.state_, self.history_ = self._encode(x, self.state_, self.history_)
        self.last_forecast_ = forecast[0]
        self.n_seen_ += len(values)

    # ------------------------------------------------------------------ public extensions
    def partial_update(self, y: pd.Series | pd.DataFrame) -> AarenForecaster:
        """Advance the forecaster by new observations that follow the cutoff, without refitting.

        Costs ``O(len(y))`` time and, with ``backbone="aaren"``, ``O(1)`` memory: the recurrent state
        moves on, history is neither re-encoded nor stored. The forecasts afterwards equal (to float32
        round-off) those from encoding the whole series at once with the same weights.

        Parameters
        ----------
        y : pandas Series or DataFrame
            The observations right after the cutoff, with the columns seen in ``fit`` and an index
            continuing the cutoff's (no gap, no overlap).

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            On bad input (not pandas, NaN/inf, other columns, a gap or overlap with the observations
            already seen); the forecaster is then left exactly as it was.
        """
        self.check_is_fitted()
        if isinstance(y, pd.Series):
            frame = y.to_frame()
            if len(self.columns_) == 1:
                frame.columns = self.columns_
        elif isinstance(y, pd.DataFrame):
            frame = y
        else:
            raise TypeError(f"partial_update: y must be a pandas Series or DataFrame, got {type(y).__name__}")
        new = self._new_observations(frame, self._stream_cutoff, strict=True, where="partial_update")
        if self.get_config()["remember_data"]:
            return self.update(y, update_params=False)  # the user asked sktime to keep the data
        # Fast path, same result as update(y, update_params=False) without sktime's per-call conversions.
        self._advance(new, update_params=False)
        self._set_cutoff_from_y(new)
        self._state_cutoff = self._cutoff
        return self

    def stream_forecasts(self, y: pd.Series | pd.DataFrame) -> np.ndarray:
        """The forecasts the stream would make after each observation of ``y``, without advancing it.

        Continues from the current state exactly as :meth:`partial_update` would (same checks, same
        computation, in blocks), but returns the forecast after every observation and leaves the
        forecaster unchanged. Used to score streaming forecasts over a long period in one pass.

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
        frame = y.to_frame() if isinstance(y, pd.Series) else y
        if isinstance(y, pd.Series) and self.n_channels_ == 1:
            frame.columns = self.columns_
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"stream_forecasts: y must be a pandas Series or DataFrame, got {type(y).__name__}"
            )
        self._new_observations(frame, self._stream_cutoff, strict=True, where="stream_forecasts")
        x = self._scale(self._values(frame, "stream_forecasts"))[None]
        module = self.net_.module_
        module.eval()
        state, history, out = self.state_, self.history_, []
        with torch.no_grad(), self._torch_context():
            for start in range(0, x.shape[1], _ENCODE_CHUNK):
                pred, state, history = module(
                    x[:, start : start + _ENCODE_CHUNK], state=state, history=history, return_state=True
                )
                out.append(pred[0].cpu().numpy().astype(np.float64))
        return np.concatenate(out) * self.scale_ + self.mean_

    def predict_windows(self, windows: np.ndarray, batch_size: int = 256) -> np.ndarray:
        """Forecast after each of many separate histories, encoding each from scratch, in batches.

        This is the vectorised path for evaluating many windows (e.g. all stride-1 test windows of a
        benchmark); it does not touch the stream state.

        Parameters
        ----------
        windows : ndarray of shape (n_windows, length, n_channels) or (n_windows, length)
            Histories in the original units (all of one length).
        batch_size : int, default=256
            Windows per forward pass.

        Returns
        -------
        ndarray of shape (n_windows, horizon_, n_channels)
            The forecast of the next ``horizon_`` steps after each window, in original units.
        """
        self.check_is_fitted()
        arr = np.asarray(windows, dtype=np.float64)
        if arr.ndim == 2 and self.n_channels_ == 1:
            arr = arr[..., None]
        if arr.ndim != 3 or arr.shape[2] != self.n_channels_ or arr.shape[1] < 1:
            raise ValueError(
                f"windows must have shape (n_windows, length >= 1, {self.n_channels_}), got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise ValueError("windows contain NaN or infinite values")
        module = self.net_.module_
        module.eval()
        out = []
        with torch.no_grad(), self._torch_context():
            for start in range(0, len(arr), batch_size):
                x = self._scale(arr[start : start + batch_size])
                out.append(module(x, last_only=True)[:, 0].cpu().numpy().astype(np.float64))
        if not out:
            return np.zeros((0, self.horizon_, self.n_channels_))
        return np.concatenate(out) * self.scale_ + self.mean_

    def stream_state_tensors(self) -> list[torch.Tensor]:
        """Copies of every tensor of the stream (encoder state, recent values, current forecast)."""
        self.check_is_fitted()
        tensors = flatten_state(self.state_)
        return [t.detach().clone() for t in [*tensors, self.history_, self.last_forecast_]]

    # ------------------------------------------------------------------ sktime plumbing
    def _set_cutoff_from_y(self, y: Any) -> None:
        super()._set_cutoff_from_y(y)
        if not self.is_fitted:
            # fit: the state will consume all of y
            self._state_cutoff = self._cutoff

    # ------------------------------------------------------------------ persistence hooks
    def _fitted_attributes(self) -> dict[str, Any]:
        cutoff = self.cutoff
        return {
            "horizon": self.horizon_,
            "n_channels": self.n_channels_,
            "columns": [c if isinstance(c, int | str) else str(c) for c in self.columns_],
            "mean": self.mean_,
            "scale": self.scale_,
            "state": [t.cpu() for t in flatten_state(self.state_)],
            "history": self.history_.cpu(),
            "last_forecast": self.last_forecast_.cpu(),
            "n_seen": self.n_seen_,
            "cutoff": _index_to_plain(cutoff),
            "fh": None if self._fh is None else [int(s) for s in self._fh.to_relative(cutoff).to_numpy()],
            "y_mtype": str(self._y_mtype_last_seen),
            "y_name": _plain_metadata(getattr(self, "_converter_store_y", {}).get("name")),
            "y_metadata": _plain_metadata(getattr(self, "_y_metadata", {})),
        }

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        self._device = resolve_device(self.device)
        self.horizon_ = int(attributes["horizon"])
        self.n_channels_ = int(attributes["n_channels"])
        self.columns_ = pd.Index(attributes["columns"])
        self.mean_ = attributes["mean"].numpy()
        self.scale_ = attributes["scale"].numpy()
        self.net_ = self._build_forecast_net(with_callbacks=False).initialize()
        self.net_.module_.load_state_dict(state_dict)
        self.net_.module_.eval()
        template = self.net_.module_.init_state(1, self._device)
        self.state_ = unflatten_state(template, [t.to(self._device) for t in attributes["state"]])
        self.history_ = attributes["history"].to(self._device)
        self.last_forecast_ = attributes["last_forecast"].to(self._device)
        self.n_seen_ = int(attributes["n_seen"])
        cutoff = _index_from_plain(attributes["cutoff"])
        self._set_cutoff(cutoff)
        self._state_cutoff = cutoff
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
