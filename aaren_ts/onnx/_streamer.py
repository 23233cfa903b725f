"""Stream observations through an exported model with ONNX Runtime and numpy alone (no PyTorch)."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from aaren_ts.onnx._format import ModelSpec, check_interface, read_metadata, verify_checksum, verify_signature
from aaren_ts.onnx._input_checks import check_magnitude, check_observations, checked_probabilities
from aaren_ts.onnx._state_checks import check_state_values
from aaren_ts.onnx._state_files import npz_path, read_state, write_state
from aaren_ts.statistical.partner import (
    STATE_PREFIX,
    PartnerStreams,
    combination_shift,
    state_entries,
    stream_arrays,
)
from aaren_ts.utils.log_target import first_non_positive, from_log, to_log
from aaren_ts.utils.normal import gaussian_z, interpolate_z, level_z

__all__ = ["OnnxStreamer"]

_ONE_SIGMA = math.erf(1.0 / math.sqrt(2.0))  # the coverage of mean +- one standard deviation
_EXTRA_HINT = 'OnnxStreamer needs ONNX Runtime, in the "onnx" extra: pip install "aaren_ts[onnx]"'


THETA_WEIGHT = f"{STATE_PREFIX}weight"  # the state's entry that marks streams with a partner


def _listed(nodes: list[Any]) -> list[tuple[str, str, list[Any]]]:
    """ONNX Runtime's description of a graph's inputs or outputs as ``(name, type, shape)``."""
    return [(node.name, node.type, list(node.shape)) for node in nodes]


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
    signing_key : bytes or str, optional
        The key the file was signed with (``to_onnx(path, signing_key=...)``): an unsigned file, or one
        whose signature does not match, is refused before ONNX Runtime reads it. Without a key a
        signature is not checked.

    Raises
    ------
    ValueError
        If the file is not an export of aaren_ts, is of an older export format (export it again) or a
        newer one, fails its integrity checksum (damaged or altered after export), or its metadata
        disagrees with its graph (input and output names, dtypes, sizes).

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

    Notes
    -----
    **Threads.** One streamer may be shared by threads. Its updates (:meth:`partial_update`,
    :meth:`reset`, :meth:`load_state`) are serialised by a lock and each is applied whole: concurrent
    updates give the result of the same updates made one after the other, in the order they took the
    lock, and none is lost. The reading calls (``predict*``, :meth:`state`, :meth:`save_state`) take no
    lock: each reads the streams as the latest completed update left them (the state, the outputs and
    :attr:`n_seen` together, never a half-applied update), so predictions keep running while an update
    is under way. As with any shared object, the order of concurrent updates is the threads' order.

    Examples
    --------
    >>> streamer = OnnxStreamer("model.onnx")  # doctest: +SKIP
    >>> streamer.partial_update(y_new)  # (time, channels) for a model fitted on one series  # doctest: +SKIP
    >>> streamer.predict()  # (horizon, channels), original units  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike,
        n_threads: int = 1,
        providers: Sequence[str] | None = None,
        signing_key: bytes | str | None = None,
    ) -> None:
        try:
            import onnxruntime
        except ImportError as err:
            raise ImportError(_EXTRA_HINT) from err
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = int(n_threads)
        options.inter_op_num_threads = 1
        source = os.fspath(path)
        with open(source, "rb") as handle:  # read once: what is checked is what ONNX Runtime parses
            data = handle.read()
        sealed = verify_checksum(data, source)
        if signing_key is not None:
            verify_signature(data, signing_key, source)
        try:
            self._session = onnxruntime.InferenceSession(
                data, sess_options=options, providers=list(providers or ["CPUExecutionProvider"])
            )
        except Exception as err:  # ONNX Runtime's own exception types (not a protobuf, bad graph, ...)
            damaged = "is damaged" if sealed else "is not an ONNX model written by to_onnx, or is damaged"
            raise ValueError(f"{source} {damaged}: ONNX Runtime cannot load it ({err})") from err
        try:
            spec, state, graphs = read_metadata(self._session.get_modelmeta().custom_metadata_map)
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from err
        if not sealed:
            raise ValueError(
                f"{source} is damaged or was altered after export: its integrity checksum is missing"
            )
        try:
            graph = [_listed(self._session.get_inputs()), _listed(self._session.get_outputs())]
            check_interface(spec, state, *graph)
        except ValueError as err:
            raise ValueError(f"{source} is not a consistent export: {err}") from err
        # a forecaster's quantile function and covariates' effect: graphs of their own in the same file
        providers = self._session.get_providers()
        self._graphs = {
            name: onnxruntime.InferenceSession(graph, sess_options=options, providers=providers)
            for name, graph in graphs.items()
        }
        self.spec: ModelSpec = spec
        # the forecaster's channels on the log scale, per stream (exports without any: none)
        n_streams = len(spec.series_ids)
        self._log_target = (
            np.array(spec.log_target, dtype=bool).reshape(n_streams, spec.n_channels)
            if spec.log_target
            else np.zeros((n_streams, spec.n_channels), dtype=bool)
        )
        self._initial = state
        if spec.kind == "forecaster":  # the streams the file starts from: values a stream can hold
            check_state_values(self, state, 0, f"{source} (its embedded streams)")
        self._output_names = [*spec.outputs, *(f"new.{name}" for name in spec.state)]
        self._lock = threading.Lock()  # serialises the updates; readers take the committed snapshot
        self._snapshot: tuple[dict[str, np.ndarray] | None, int] = (None, 0)
        self.reset()

    # ------------------------------------------------------------------ properties
    @property
    def kind(self) -> str:
        """``"forecaster"`` or ``"classifier"``: the estimator the graph was exported from."""
        return self.spec.kind

    @property
    def series_ids(self) -> list[str]:
        """The ids of the exported forecaster's series (as strings), in the streams' order."""
        return list(self.spec.series_ids)

    @property
    def classes_(self) -> np.ndarray:
        """The exported classifier's class labels, in the order of :meth:`predict_proba`'s columns."""
        return np.asarray(self.spec.classes)

    @property
    def _state(self) -> dict[str, np.ndarray] | None:
        """The streams' arrays as the latest completed update left them (never modified in place)."""
        return self._snapshot[0]

    @property
    def n_seen(self) -> int:
        """Observations every stream has taken since the export (or :meth:`reset`)."""
        return self._snapshot[1]

    def _streams_in(self, state: dict[str, np.ndarray] | None) -> int:
        return 0 if state is None else len(state[self.spec.state[0]])

    @property
    def n_streams(self) -> int:
        """The number of streams (series, or series being classified) the state holds."""
        return self._streams_in(self._state)

    def state(self) -> dict[str, np.ndarray]:
        """A copy of every per-stream array the streamer holds (state, constants, latest outputs)."""
        state = self._state
        return {} if state is None else {k: v.copy() for k, v in state.items()}

    def save_state(self, path: str | os.PathLike, signing_key: bytes | str | None = None) -> None:
        """Write the streams' state (every array of :meth:`state`, and :attr:`n_seen`) to a ``.npz`` file.

        :meth:`load_state` on a streamer of the same exported file restores it, e.g. after a restart.
        Nothing in the file is pickled. As with :func:`numpy.savez`, ``".npz"`` is appended to a path
        without it. The file is written atomically (a temporary file renamed onto it): a process
        killed while saving leaves the previous file intact, never a broken one. With
        ``signing_key`` (bytes or str, at least 16 bytes, kept secret) the file is signed
        (HMAC-SHA256): :meth:`load_state` with the same key refuses it once altered.
        """
        state, n_seen = self._snapshot
        if state is None:
            raise ValueError("no streams to save: feed time points with partial_update first")
        write_state(path, state, n_seen, signing_key)

    def load_state(self, path: str | os.PathLike, signing_key: bytes | str | None = None) -> OnnxStreamer:
        """Restore streams saved by :meth:`save_state` from a streamer of the same exported file (the
        path as given to :meth:`save_state`: ``".npz"`` is appended where it lacks it). With
        ``signing_key``, only a file signed with that key is read.

        Raises
        ------
        ValueError
            If the file's arrays do not match this model's state (names, dtypes, shapes, one number
            of streams), or (with ``signing_key``) it is unsigned or altered since it was signed; the
            streamer is then left as it was.
        """
        path = npz_path(path)
        loaded, n_seen = read_state(path, signing_key)
        reference = self._initial if self.kind == "forecaster" else self._template()
        if set(loaded) != set(reference):
            missing, extra = sorted(set(reference) - set(loaded)), sorted(set(loaded) - set(reference))
            raise ValueError(
                f"{path} is not a saved state of this model: missing {missing}, unexpected {extra}"
            )
        per_stream = {len(arr) if arr.ndim else -1 for arr in loaded.values()}
        if len(per_stream) != 1:
            raise ValueError(f"{path}: the state's arrays disagree on the number of streams")
        for name, ref in reference.items():
            got = loaded[name]
            if got.dtype != ref.dtype or got.shape[1:] != ref.shape[1:]:
                raise ValueError(
                    f"{path}: {name} has dtype {got.dtype} and shape {got.shape}; this model's is "
                    f"{ref.dtype} with per-stream shape {ref.shape[1:]}"
                )
        check_state_values(self, loaded, n_seen, os.fspath(path))
        with self._lock:
            self._snapshot = (loaded, n_seen)
        return self

    def _template(self) -> dict[str, np.ndarray]:
        """A classifier's state and outputs for one stream, as a stream that has seen a step has them."""
        template = {name: self._initial[name] for name in self.spec.state}
        template["output.proba"] = np.zeros((1, len(self.spec.classes)), dtype=np.float32)
        return template

    def reset(self) -> OnnxStreamer:
        """Go back to the state the file was exported with (the classifier: no streams)."""
        with self._lock:
            self._snapshot = (None if self.kind == "classifier" else dict(self._initial), 0)
        return self

    # ------------------------------------------------------------------ stepping
    def _series(self, s: int) -> str:
        return "" if self.spec.single_series else f"series {self.spec.series_ids[s]!r}, "

    def _advance(
        self, state: dict[str, np.ndarray], steps: np.ndarray, covariates: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The streams' arrays after running the step from ``state`` through ``steps``
        ``(n_streams, n_steps, n_channels)`` (and ``covariates`` ``(n_streams, n_steps, n_exog)``);
        ``state`` itself is not modified."""
        spec = self.spec
        state = dict(state)
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
        if THETA_WEIGHT in state:
            theta = PartnerStreams.of(stream_arrays(state, copy=True))
            for t in range(steps.shape[1]):
                theta.update(steps[:, t].ravel())
            state.update(state_entries(theta, steps.shape[0]))
        return state

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
        TypeError
            On values that are not real numbers (booleans, complex numbers, text, objects).
        ValueError
            On a wrong shape or number of streams, a NaN or infinite value, or a value so far from its
            series' (or channel's) training mean that the step's float32 arithmetic would overflow:
            more than ``aaren_ts.utils.limits.MAX_STANDARDISED`` (1e12) standard deviations out. The
            error names the series (or stream), the position and the value; the streams are then left
            exactly as they were.
        """
        with self._lock:
            state, n_seen = self._snapshot
            if self.kind == "classifier":
                if X is not None:
                    raise ValueError("X is a forecaster's covariates; the classifier takes X_new only")
                state, n_steps = self._classifier_update(state, values)
            else:
                state, n_steps = self._forecaster_update(state, values, X)
            self._snapshot = (state, n_seen + n_steps)
        return self

    def _forecaster_update(
        self, state: dict[str, np.ndarray], values: Any, X: Any
    ) -> tuple[dict[str, np.ndarray], int]:
        spec = self.spec
        c = spec.n_channels
        n_streams = self._streams_in(state)
        mean, scale = state["series_mean"][:, None], state["series_scale"][:, None]
        arr = self._steps(values, "y_new", c, n_streams)
        bad = first_non_positive(arr, self._log_target[:, None, :])
        if bad is not None:
            s, t, k = bad
            raise ValueError(
                f"y_new: {self._series(s)}step {t}, channel {k}, holds {arr[s, t, k]:g}: the channel is "
                "forecast on the log scale (the estimator's target_transform), where a value at or below "
                "zero has no place (the estimator, under target_transform='auto', takes it as missing; "
                "the exported step takes observed values only)"
            )
        arr = to_log(arr, self._log_target[:, None, :])
        check_magnitude(
            arr,
            mean[..., :c],
            scale[..., :c],
            "y_new",
            lambda s, t, k: f"{self._series(s)}step {t}, channel {k}",
        )
        covariates = None
        if spec.covariates:
            if X is None:
                raise ValueError("X is required: the forecaster was fitted with covariates")
            covariates = self._steps(X, "X", len(spec.exog_columns), n_streams)
            if covariates.shape[1] != arr.shape[1]:
                raise ValueError(
                    f"X holds {covariates.shape[1]} steps, y_new {arr.shape[1]}: give X at every step"
                )
            check_magnitude(
                covariates,
                mean[..., c:],
                scale[..., c:],
                "X",
                lambda s, t, k: f"{self._series(s)}step {t}, covariate {spec.exog_columns[k]!r}",
            )
        elif X is not None:
            raise ValueError("X given, but the forecaster was fitted without covariates")
        return self._advance(state, arr, covariates), arr.shape[1]

    def _steps(self, values: Any, name: str, width: int, n_streams: int) -> np.ndarray:
        """The forecaster's ``values`` as ``(n_streams, n_steps, width)`` float64, checked."""
        spec = self.spec
        arr = check_observations(values, name)
        if arr.ndim == 2:  # one series' steps, or one step of every series
            arr = arr[None] if spec.single_series else arr[:, None, :]
        expected = (
            f"(n_steps, {width})"
            if spec.single_series
            else f"({n_streams}, n_steps, {width}) or ({n_streams}, {width})"
        )
        if arr.ndim != 3 or arr.shape[0] != n_streams or arr.shape[2] != width or arr.shape[1] < 1:
            raise ValueError(f"{name} must have shape {expected}, got {np.shape(values)}")
        return arr

    def _classifier_update(
        self, state: dict[str, np.ndarray] | None, values: Any
    ) -> tuple[dict[str, np.ndarray], int]:
        spec = self.spec
        arr = check_observations(values, "X_new")
        if arr.ndim != 3 or arr.shape[1] != spec.n_channels or arr.shape[2] < 1:
            raise ValueError(
                f"X_new must have shape (n_streams, {spec.n_channels}, n_steps >= 1), got {np.shape(values)}"
            )
        if state is not None and arr.shape[0] != self._streams_in(state):
            raise ValueError(
                f"X_new holds {arr.shape[0]} streams but {self._streams_in(state)} are ongoing; pass one "
                "series per stream (or call reset() to start new streams)"
            )
        check_magnitude(
            arr,
            np.asarray(spec.channel_mean)[:, None],
            np.asarray(spec.channel_scale)[:, None],
            "X_new",
            lambda s, k, t: f"stream {s}, channel {k}, time point {t}",
        )
        if state is None:
            if arr.shape[0] == 0:
                raise ValueError("X_new holds no stream")
            state = {name: np.repeat(self._initial[name], arr.shape[0], axis=0) for name in spec.state}
        return self._advance(state, arr.transpose(0, 2, 1)), arr.shape[2]

    # ------------------------------------------------------------------ forecaster
    def _forecaster_only(self, where: str) -> None:
        if self.kind != "forecaster":
            raise AttributeError(f"{where} is a forecaster's call; this file holds a {self.kind}")

    def _shaped(self, values: np.ndarray) -> np.ndarray:
        return values[0] if self.spec.single_series else values

    def _future_effect(self, state: dict[str, np.ndarray], X: Any) -> np.ndarray | float:
        """What the future-known covariates ``X`` add to the forecasts of the streams in ``state``:
        ``(n_streams, T, C)``, original units."""
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
        n_streams = self._streams_in(state)
        arr = check_observations(X, "X")
        arr = arr[None] if spec.single_series and arr.ndim == 2 else arr
        if arr.shape != (n_streams, spec.horizon, spec.n_future):
            expected = (spec.horizon, spec.n_future)
            expected = expected if spec.single_series else (n_streams, *expected)
            raise ValueError(f"X must have shape {expected}, got {np.shape(X)}")
        c, f = spec.n_channels, spec.n_future
        mean, scale = state["series_mean"], state["series_scale"]
        check_magnitude(
            arr,
            mean[:, None, c : c + f],
            scale[:, None, c : c + f],
            "X",
            lambda s, t, k: f"{self._series(s)}forecast step {t + 1}, covariate {spec.exog_columns[k]!r}",
        )
        feed = {"future": np.ascontiguousarray(arr, dtype=np.float64), "mean": mean, "scale": scale}
        return self._graphs["future_effect"].run(["effect"], feed)[0]

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
        state = self._state
        loc = state["output.loc"] + self._theta_shift(state)
        return self._shaped(self._from_model_scale(loc + self._future_effect(state, X)))

    def predict_var(self) -> np.ndarray:
        """The variance of each forecast, in squared original units (calibrated if the estimator is):
        the squared half-width of the central interval of one standard deviation's nominal coverage."""
        self._forecaster_only("predict_var")
        state = self._state
        z = self._half_widths(state, [_ONE_SIGMA])
        bounds = self._quantiles_at(state, 0.0, np.concatenate([-z, z], axis=1))
        std = 0.5 * (self._from_model_scale(bounds[:, 1]) - self._from_model_scale(bounds[:, 0]))
        return self._shaped(std**2)

    def _half_widths(self, state: dict[str, np.ndarray], coverage: Sequence[float]) -> np.ndarray:
        """``(n_streams, len(coverage), horizon, C)`` half-widths in standard deviations."""
        if self.spec.calibrated:
            return interpolate_z(level_z(state["levels"]), coverage)
        z = gaussian_z(np.asarray(coverage, dtype=np.float64))
        shape = (self._streams_in(state), len(z), self.spec.horizon, self.spec.n_channels)
        return np.broadcast_to(z[None, :, None, None], shape)

    def predict_quantiles(self, alpha: Sequence[float] | float, X: Any = None) -> np.ndarray:
        """Quantiles of each forecast, calibrated online if the estimator was.

        Parameters
        ----------
        alpha : float or sequence of float
            Probabilities, each strictly between 0 and 1 (the quantiles 0 and 1 of a Gaussian forecast
            are infinite), as the estimators' ``predict_quantiles`` requires.
        X : array-like, optional
            The future-known covariates at the forecast steps, as for :meth:`predict`.

        Returns
        -------
        ndarray of shape (horizon, n_channels, len(alpha)), or with a leading stream axis for a panel

        Raises
        ------
        TypeError
            If ``alpha`` holds anything but real numbers.
        ValueError
            If ``alpha`` is empty or a probability is not strictly between 0 and 1.
        """
        self._forecaster_only("predict_quantiles")
        probabilities = checked_probabilities(alpha, "alpha")
        state = self._state
        z = self._half_widths(state, np.abs(2.0 * probabilities - 1.0))
        z = z * np.sign(probabilities - 0.5)[None, :, None, None]
        quantiles = self._from_model_scale(self._quantiles_at(state, self._future_effect(state, X), z))
        return self._shaped(np.moveaxis(quantiles, 1, -1))

    def _from_model_scale(self, values: np.ndarray) -> np.ndarray:
        """``values`` ``(n_streams, ..., n_channels)`` from the network's scale to the series' units
        (the exponential of the log-scale channels)."""
        log = self._log_target.reshape(len(self._log_target), *([1] * (values.ndim - 2)), -1)
        return from_log(values, log)

    def _quantiles_at(
        self, state: dict[str, np.ndarray], known: np.ndarray | float, z: np.ndarray
    ) -> np.ndarray:
        """The forecasts' quantiles at probabilities ``Phi(z)``, ``z`` ``(n_streams, A, T, C)``, through
        the exported quantile graph of the forecaster's distribution head (``known``: the future-known
        covariates' effect, added to every forecast's location)."""
        feed = {
            "loc": np.ascontiguousarray(state["output.loc"] + known, dtype=np.float64),
            "params": np.ascontiguousarray(state["output.params"], dtype=np.float64),
            "z": np.ascontiguousarray(z, dtype=np.float64),
        }
        quantiles = self._graphs["quantile_function"].run(["quantiles"], feed)[0]
        if THETA_WEIGHT in state:
            quantiles = quantiles + self._theta_shift(state)[:, None]
        return quantiles

    def _theta_shift(self, state: dict[str, np.ndarray]) -> np.ndarray | float:
        """What the combination with the statistical partner adds to every forecast (the estimator's
        ``combination="theta"`` or ``"theta_ets"``), ``(n_streams, horizon, C)`` on the network's scale
        (0 without it)."""
        if THETA_WEIGHT not in state:
            return 0.0
        loc = state["output.loc"]
        streams = PartnerStreams.of(stream_arrays(state))
        return combination_shift(streams, state[THETA_WEIGHT], loc, np.arange(len(loc)))

    def predict_interval(self, coverage: float = 0.9, X: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the central ``coverage`` interval of each forecast (``X``: the
        future-known covariates, as for :meth:`predict`).

        ``coverage`` is a probability strictly between 0 and 1, as the estimators' ``predict_interval``
        requires (a coverage of 1 is an infinite interval); anything else raises ``TypeError`` (not a
        real number) or ``ValueError``.
        """
        if np.ndim(coverage) != 0:
            raise TypeError(f"coverage must be one probability strictly between 0 and 1, got {coverage!r}")
        (coverage,) = checked_probabilities([coverage], "coverage")
        quantiles = self.predict_quantiles([0.5 - coverage / 2.0, 0.5 + coverage / 2.0], X)
        return quantiles[..., 0], quantiles[..., 1]

    # ------------------------------------------------------------------ classifier
    def predict_proba(self) -> np.ndarray:
        """Class probabilities ``(n_streams, n_classes)`` of every stream after its last time point."""
        if self.kind != "classifier":
            raise AttributeError(f"predict_proba is a classifier's call; this file holds a {self.kind}")
        state, n_seen = self._snapshot
        if state is None or n_seen == 0:
            raise ValueError("no ongoing streams: feed time points with partial_update(X_new) first")
        return state["output.proba"].astype(np.float64)
