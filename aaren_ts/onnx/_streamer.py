"""Stream observations through an exported model with ONNX Runtime and numpy alone (no PyTorch)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from aaren_ts._normal import gaussian_z, interpolate_z, level_z
from aaren_ts.onnx._format import ModelSpec, read_metadata

__all__ = ["OnnxStreamer"]

_ONE_SIGMA = math.erf(1.0 / math.sqrt(2.0))  # the coverage of mean +- one standard deviation
_EXTRA_HINT = 'OnnxStreamer needs ONNX Runtime, in the "onnx" extra: pip install "aaren_ts[onnx]"'


class OnnxStreamer:
    """Serve a model exported with ``to_onnx``: the streams' state, advanced one observation at a time.

    The ONNX file holds one streaming step (the state is an explicit input and output) and the state
    the estimator's streams had when it was exported; this class keeps that state between calls and
    offers the estimator's streaming calls on numpy arrays. It imports numpy and ONNX Runtime only.

    Parameters
    ----------
    path : str or path-like
        A file written by :meth:`AarenForecaster.to_onnx <aaren_ts.AarenForecaster.to_onnx>` or
        :meth:`AarenClassifier.to_onnx <aaren_ts.AarenClassifier.to_onnx>`.
    n_threads : int, default=1
        Threads ONNX Runtime may use within one step (``intra_op_num_threads``).
    providers : sequence of str, optional
        ONNX Runtime execution providers, in order of preference (default: the CPU provider).

    Attributes
    ----------
    kind : {"forecaster", "classifier"}
        Which estimator the file came from.
    n_streams : int
        Streams held (the forecaster's series; the classifier's streams once started).
    n_seen : int
        Observations every stream has taken since the export (or :meth:`reset`).
    series_ids : list of str
        The forecaster's series, as text, in stream order.
    classes_ : ndarray
        The classifier's class labels.

    Examples
    --------
    >>> streamer = OnnxStreamer("model.onnx")  # doctest: +SKIP
    >>> streamer.partial_update(y_new)  # (time, channels) for a model fitted on one series  # doctest: +SKIP
    >>> streamer.predict()  # (horizon, channels), original units  # doctest: +SKIP
    """

    def __init__(
        self, path: str | os.PathLike, n_threads: int = 1, providers: Sequence[str] | None = None
    ) -> None:
        try:
            import onnxruntime
        except ImportError as err:
            raise ImportError(_EXTRA_HINT) from err
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = int(n_threads)
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            os.fspath(path), sess_options=options, providers=list(providers or ["CPUExecutionProvider"])
        )
        spec, state, quantile_function = read_metadata(self._session.get_modelmeta().custom_metadata_map)
        self._quantiles = (
            None
            if quantile_function is None
            else onnxruntime.InferenceSession(
                quantile_function, sess_options=options, providers=self._session.get_providers()
            )
        )
        self.spec: ModelSpec = spec
        self._initial = state
        self._output_names = [*spec.outputs, *(f"new.{name}" for name in spec.state)]
        self.reset()

    # ------------------------------------------------------------------ properties
    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def series_ids(self) -> list[str]:
        return list(self.spec.series_ids)

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.spec.classes)

    @property
    def n_streams(self) -> int:
        return 0 if self._state is None else len(self._state[self.spec.state[0]])

    def state(self) -> dict[str, np.ndarray]:
        """A copy of every per-stream array the streamer holds (state, constants, latest outputs)."""
        return {} if self._state is None else {k: v.copy() for k, v in self._state.items()}

    def save_state(self, path: str | os.PathLike) -> None:
        """Write the streams' state (every array of :meth:`state`, and :attr:`n_seen`) to a ``.npz`` file.

        :meth:`load_state` on a streamer of the same exported file restores it, e.g. after a restart.
        Nothing in the file is pickled.
        """
        if self._state is None:
            raise ValueError("no streams to save: feed time points with partial_update first")
        np.savez(path, **self._state, __n_seen__=np.asarray(self.n_seen))

    def load_state(self, path: str | os.PathLike) -> OnnxStreamer:
        """Restore streams saved by :meth:`save_state` from a streamer of the same exported file.

        Raises
        ------
        ValueError
            If the file's arrays do not match this model's state (names, dtypes, shapes, one number
            of streams); the streamer is then left as it was.
        """
        with np.load(path, allow_pickle=False) as archive:
            loaded = {name: archive[name] for name in archive.files}
        n_seen = int(loaded.pop("__n_seen__", -1))
        reference = self._initial if self.kind == "forecaster" else self._template()
        if set(loaded) != set(reference) or n_seen < 0:
            missing, extra = sorted(set(reference) - set(loaded)), sorted(set(loaded) - set(reference))
            raise ValueError(
                f"{path} is not a saved state of this model: missing {missing}, unexpected {extra}"
            )
        per_stream = {len(loaded[name]) for name in self.spec.state}
        if len(per_stream) != 1:
            raise ValueError(f"{path}: the state's arrays disagree on the number of streams")
        for name, ref in reference.items():
            got = loaded[name]
            same_rows = name == "future_coefficients" or got.shape[1:] == ref.shape[1:]
            if (
                got.dtype != ref.dtype
                or not same_rows
                or (name == "future_coefficients" and got.shape != ref.shape)
            ):
                raise ValueError(
                    f"{path}: {name} has dtype {got.dtype} and shape {got.shape}; this model's is "
                    f"{ref.dtype} with per-stream shape {ref.shape[1:]}"
                )
        self._state, self.n_seen = loaded, n_seen
        return self

    def _template(self) -> dict[str, np.ndarray]:
        """A classifier's state and outputs for one stream, as a stream that has seen a step has them."""
        template = {name: self._initial[name] for name in self.spec.state}
        template["output.proba"] = np.zeros((1, len(self.spec.classes)), dtype=np.float32)
        return template

    def reset(self) -> OnnxStreamer:
        """Go back to the state the file was exported with (the classifier: no streams)."""
        self.n_seen = 0
        self._state = None if self.kind == "classifier" else dict(self._initial)
        return self

    # ------------------------------------------------------------------ stepping
    def _check_observations(self, values: Any, name: str) -> np.ndarray:
        """``values`` as a float64 array (shape unchecked); a clear error for non-numeric or non-finite."""
        arr = np.asarray(values)
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"{name} must hold real numbers, got an array of dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            where = np.argwhere(~np.isfinite(arr))[0].tolist()
            raise ValueError(
                f"{name} holds a non-finite value (NaN or inf) at index {where}; the exported step "
                "takes observed values only"
            )
        return arr

    def _advance(self, steps: np.ndarray, covariates: np.ndarray | None = None) -> None:
        """Run the step through ``steps`` ``(n_streams, n_steps, n_channels)`` (and ``covariates``
        ``(n_streams, n_steps, n_exog)``); commit only at the end."""
        spec = self.spec
        state = dict(self._state)
        constants = [state[name] for name in spec.constants]
        for t in range(steps.shape[1]):
            feed = {spec.observation: np.ascontiguousarray(steps[:, t])}
            if covariates is not None:
                feed[spec.covariates] = np.ascontiguousarray(covariates[:, t])
            feed.update(zip(spec.constants, constants, strict=True))
            feed.update((name, state[name]) for name in spec.state)
            results = self._session.run(self._output_names, feed)
            for name, value in zip(spec.outputs, results, strict=False):
                state[f"output.{name}"] = value
            state.update(zip(spec.state, results[len(spec.outputs) :], strict=True))
        self._state = state
        self.n_seen += steps.shape[1]

    def partial_update(self, values: Any, X: Any = None) -> OnnxStreamer:
        """Advance every stream by its next observations.

        Parameters
        ----------
        values : array-like
            Forecaster: ``(n_steps, n_channels)`` for a model fitted on one series, else
            ``(n_streams, n_steps, n_channels)`` (or ``(n_streams, n_channels)`` for one step), the
            streams in :attr:`series_ids` order. Classifier: ``(n_streams, n_channels, n_steps)``, as
            sktime's numpy3D; the first call after loading or :meth:`reset` starts ``n_streams``
            streams.
        X : array-like, optional
            A forecaster fitted with covariates: their values at the same steps, shaped as ``values``
            with ``len(spec.exog_columns)`` columns in the order of ``spec.exog_columns``.

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            On non-numeric values, a wrong shape or number of streams, or a NaN or infinite value; the
            streams are then left exactly as they were.
        """
        if self.kind == "classifier":
            if X is not None:
                raise ValueError("X is a forecaster's covariates; the classifier takes X_new only")
            return self._classifier_update(values)
        spec = self.spec
        arr = self._steps(values, "y_new", spec.n_channels)
        covariates = None
        if spec.covariates:
            if X is None:
                raise ValueError("X is required: the forecaster was fitted with covariates")
            covariates = self._steps(X, "X", len(spec.exog_columns))
            if covariates.shape[1] != arr.shape[1]:
                raise ValueError(
                    f"X holds {covariates.shape[1]} steps, y_new {arr.shape[1]}: give X at every step"
                )
        elif X is not None:
            raise ValueError("X given, but the forecaster was fitted without covariates")
        self._advance(arr, covariates)
        return self

    def _steps(self, values: Any, name: str, width: int) -> np.ndarray:
        """The forecaster's ``values`` as ``(n_streams, n_steps, width)`` float64, checked."""
        spec = self.spec
        arr = self._check_observations(values, name)
        if arr.ndim == 2:  # one series' steps, or one step of every series
            arr = arr[None] if spec.single_series else arr[:, None, :]
        expected = (
            f"(n_steps, {width})"
            if spec.single_series
            else f"({self.n_streams}, n_steps, {width}) or ({self.n_streams}, {width})"
        )
        if arr.ndim != 3 or arr.shape[0] != self.n_streams or arr.shape[2] != width or arr.shape[1] < 1:
            raise ValueError(f"{name} must have shape {expected}, got {np.shape(values)}")
        return arr

    def _classifier_update(self, values: Any) -> OnnxStreamer:
        spec = self.spec
        arr = self._check_observations(values, "X_new")
        if arr.ndim != 3 or arr.shape[1] != spec.n_channels or arr.shape[2] < 1:
            raise ValueError(
                f"X_new must have shape (n_streams, {spec.n_channels}, n_steps >= 1), got {np.shape(values)}"
            )
        if self._state is not None and arr.shape[0] != self.n_streams:
            raise ValueError(
                f"X_new holds {arr.shape[0]} streams but {self.n_streams} are ongoing; pass one series per "
                "stream (or call reset() to start new streams)"
            )
        if self._state is None:
            if arr.shape[0] == 0:
                raise ValueError("X_new holds no stream")
            fresh = {name: np.repeat(self._initial[name], arr.shape[0], axis=0) for name in spec.state}
            self._state = fresh
            try:
                self._advance(arr.transpose(0, 2, 1))
            except BaseException:
                self._state = None
                raise
            return self
        self._advance(arr.transpose(0, 2, 1))
        return self

    # ------------------------------------------------------------------ forecaster
    def _forecaster_only(self, where: str) -> None:
        if self.kind != "forecaster":
            raise AttributeError(f"{where} is a forecaster's call; this file holds a {self.kind}")

    def _shaped(self, values: np.ndarray) -> np.ndarray:
        return values[0] if self.spec.single_series else values

    def _future_effect(self, X: Any) -> np.ndarray | float:
        """What the future-known covariates ``X`` add to the forecasts: ``(n_streams, T, C)``, original
        units."""
        spec = self.spec
        if not spec.n_future:
            if X is not None:
                raise ValueError("X given, but the forecaster has no future-known covariates")
            return 0.0
        if X is None:
            raise ValueError(
                f"X is required: the future values of {spec.exog_columns[: spec.n_future]} at the "
                f"{spec.horizon} forecast steps"
            )
        arr = self._check_observations(X, "X")
        arr = arr[None] if spec.single_series and arr.ndim == 2 else arr
        if arr.shape != (self.n_streams, spec.horizon, spec.n_future):
            expected = (spec.horizon, spec.n_future)
            expected = expected if spec.single_series else (self.n_streams, *expected)
            raise ValueError(f"X must have shape {expected}, got {np.shape(X)}")
        c, f = spec.n_channels, spec.n_future
        mean, scale = self._state["series_mean"], self._state["series_scale"]
        z = (arr - mean[:, None, c : c + f]) / scale[:, None, c : c + f]
        effect = np.einsum("rtf,ctf->rtc", z, self._state["future_coefficients"])
        return effect * scale[:, None, :c]

    def predict(self, X: Any = None) -> np.ndarray:
        """Forecaster: the forecast of the ``horizon`` steps after the last observation, in original
        units; classifier: each stream's most probable class.

        Parameters
        ----------
        X : array-like, optional
            A forecaster with future-known covariates: their values at the ``horizon`` forecast steps,
            ``(horizon, n_future)`` (with a leading stream axis for a panel), columns in the order of
            ``spec.exog_columns``.

        Returns
        -------
        ndarray
            Forecaster: ``(horizon, n_channels)``, or ``(n_streams, horizon, n_channels)`` for a panel.
            Classifier: ``(n_streams,)`` class labels.
        """
        if self.kind == "classifier":
            return self.classes_[self.predict_proba().argmax(axis=1)]
        return self._shaped(self._state["output.loc"] + self._future_effect(X))

    def predict_var(self) -> np.ndarray:
        """The variance of each forecast, in squared original units (calibrated if the estimator is):
        the squared half-width of the central interval of one standard deviation's nominal coverage."""
        self._forecaster_only("predict_var")
        z = self._half_widths([_ONE_SIGMA])
        bounds = self._quantiles_at(0.0, np.concatenate([-z, z], axis=1))
        std = 0.5 * (bounds[:, 1] - bounds[:, 0])
        return self._shaped(std**2)

    def _half_widths(self, coverage: Sequence[float]) -> np.ndarray:
        """``(n_streams, len(coverage), horizon, C)`` half-widths in standard deviations."""
        if self.spec.calibrated:
            return interpolate_z(level_z(self._state["levels"]), coverage)
        z = gaussian_z(np.asarray(coverage, dtype=np.float64))
        shape = (self.n_streams, len(z), self.spec.horizon, self.spec.n_channels)
        return np.broadcast_to(z[None, :, None, None], shape)

    def predict_quantiles(self, alpha: Sequence[float], X: Any = None) -> np.ndarray:
        """Quantiles of each forecast, calibrated online if the estimator was.

        Parameters
        ----------
        alpha : sequence of float
            Probabilities in [0, 1].
        X : array-like, optional
            The future-known covariates at the forecast steps, as for :meth:`predict`.

        Returns
        -------
        ndarray of shape (horizon, n_channels, len(alpha)), or with a leading stream axis for a panel
        """
        self._forecaster_only("predict_quantiles")
        probabilities = np.asarray(alpha, dtype=np.float64).ravel()
        if not np.all((probabilities >= 0.0) & (probabilities <= 1.0)):
            raise ValueError(f"alpha must lie in [0, 1], got {list(alpha)}")
        z = self._half_widths(np.abs(2.0 * probabilities - 1.0))
        z = z * np.sign(probabilities - 0.5)[None, :, None, None]
        return self._shaped(np.moveaxis(self._quantiles_at(self._future_effect(X), z), 1, -1))

    def _quantiles_at(self, known: np.ndarray | float, z: np.ndarray) -> np.ndarray:
        """The current forecasts' quantiles at probabilities ``Phi(z)``, ``z`` ``(n_streams, A, T, C)``,
        through the exported quantile graph of the forecaster's distribution head (``known``: the
        future-known covariates' effect, added to every forecast's location)."""
        feed = {
            "loc": np.ascontiguousarray(self._state["output.loc"] + known, dtype=np.float64),
            "params": np.ascontiguousarray(self._state["output.params"], dtype=np.float64),
            "z": np.ascontiguousarray(z, dtype=np.float64),
        }
        return self._quantiles.run(["quantiles"], feed)[0]

    def predict_interval(self, coverage: float = 0.9, X: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the central ``coverage`` interval of each forecast (``X``: the
        future-known covariates, as for :meth:`predict`)."""
        if not 0.0 <= coverage <= 1.0:
            raise ValueError(f"coverage must lie in [0, 1], got {coverage}")
        quantiles = self.predict_quantiles([0.5 - coverage / 2.0, 0.5 + coverage / 2.0], X)
        return quantiles[..., 0], quantiles[..., 1]

    # ------------------------------------------------------------------ classifier
    def predict_proba(self) -> np.ndarray:
        """Class probabilities ``(n_streams, n_classes)`` of every stream after its last time point."""
        if self.kind != "classifier":
            raise AttributeError(f"predict_proba is a classifier's call; this file holds a {self.kind}")
        if self._state is None or self.n_seen == 0:
            raise ValueError("no ongoing streams: feed time points with partial_update(X_new) first")
        return self._state["output.proba"].astype(np.float64)
