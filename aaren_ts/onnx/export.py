"""Export one streaming step of a trained network to ONNX (needs PyTorch and the ``onnx`` extra).

The step is a torch module whose inputs are the new observation of every stream and every tensor of
the streams' state, and whose outputs are the forecast (or class probabilities) and the new state. It
is built from the network's own parts (:meth:`ForecastNet.tokens`, the encoder's general
:meth:`~aaren_ts.nn.blocks.StackedEncoder.step`, :meth:`ForecastNet.distribution`, the calibration's
:func:`~aaren_ts.engine.calibration.calibration_step`; the classifier's embedding, readout and head)
and exported with PyTorch's ONNX exporter, with the number of streams as a dynamic axis. The model's
metadata describes the inputs and outputs, carries the initial state and, for a forecaster, its
distribution head's quantile function and its future-known covariates' effect
(:class:`~aaren_ts.engine.covariates.FutureEffect`) as graphs of their own
(:mod:`aaren_ts.onnx._format`).

:func:`export_forecaster` takes a forecasting engine (:class:`~aaren_ts.engine.ForecastEngine`: the
network and its streams), :func:`export_classifier` a classifier network and its input scaling; the
estimators' ``to_onnx`` call them. Nothing here knows the estimators.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from aaren_ts.engine.calibration import CALIBRATION_COVERAGES, calibration_step
from aaren_ts.engine.covariates import FutureEffect
from aaren_ts.engine.forecast import ForecastEngine
from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.classify import ClassifierModule
from aaren_ts.nn.encoder import AarenEncoder
from aaren_ts.nn.ensemble import ClassifierEnsemble, EnsembleState, ForecastEnsemble, member_networks
from aaren_ts.nn.forecast import ForecastNet, pad_before_first
from aaren_ts.nn.functional import AarenState
from aaren_ts.nn.state import flatten_state
from aaren_ts.onnx._format import ModelSpec, sealed_bytes, write_metadata
from aaren_ts.statistical.partner import STATE_PREFIX, state_entries
from aaren_ts.utils.files import atomic_write

__all__ = ["ClassifierStep", "ForecasterStep", "export_classifier", "export_forecaster"]

_EXTRA_HINT = 'exporting to ONNX needs the "onnx" extra: pip install "aaren_ts[onnx]"'


def _encoder_state(flat: list[torch.Tensor], rows: int) -> list[AarenState]:
    """Per-layer states ``(B * rows, ...)`` from the exported ``(B, rows, ...)`` tensors ``[m, c, a] * L``."""
    merged = [t.flatten(0, 1) for t in flat] if rows > 1 else [t[:, 0] for t in flat]
    return [AarenState(*merged[i : i + 3]) for i in range(0, len(merged), 3)]


def _encoder_outputs(state: list[AarenState], rows: int) -> list[torch.Tensor]:
    """The inverse of :func:`_encoder_state`: every layer's ``m, c, a`` as ``(B, rows, ...)``."""
    return [t.unflatten(0, (-1, rows)) for layer in state for t in layer]


class ForecasterStep(nn.Module):
    """One observation for every stream of a fitted :class:`~aaren_ts.AarenForecaster`.

    Inputs: ``y`` ``(B, C)`` float64 (original units, finite), with covariates ``X`` ``(B, n_exog)``
    float64 (their values at the same step), the streams' standardisation ``series_mean`` and
    ``series_scale`` ``(B, C + n_exog)`` float64 and ``series_naive`` ``(B, C)`` bool (the channels
    forecast with the naive method, :attr:`~aaren_ts.engine.ForecastEngine.naive`) with
    ``series_spread`` ``(B, C)`` float64 (:attr:`~aaren_ts.engine.ForecastEngine.spread`),
    ``series_naive_std`` ``(B, C)`` float64 (:attr:`~aaren_ts.engine.ForecastEngine.naive_std`) and
    ``series_max_std`` ``(B, C)`` float64 (:attr:`~aaren_ts.engine.ForecastEngine.max_std`), then
    the state (:meth:`state_names`). Outputs: ``loc``
    ``(B, T, C)`` and ``params`` ``(B, T, C, K)`` float64 (the forecast distribution of the next ``T``
    steps, original units; without the future-known covariates' effect, which needs their future
    values), then the new state in the same order (with calibration, the state holds the working
    miscoverage ``levels`` from which :func:`aaren_ts.utils.normal.level_z` gives the calibrated normal
    scores that :class:`QuantileFunction` reads the intervals at).
    """

    def __init__(self, module: ForecastNet | ForecastEnsemble, calibration_rate: float | None) -> None:
        super().__init__()
        self.module = module
        self.rate = calibration_rate
        self.rows = module.n_channels if module.channel_independent else 1
        # an ensemble's members in turn, each with its own encoder state (its layers numbered on)
        self.members = list(member_networks(module))
        self.member_layers = [len(member.encoder.layers) for member in self.members]
        self.n_layers = sum(self.member_layers)

    def state_names(self) -> list[str]:
        names = ["history_values", "history_observed"]
        names += [f"encoder.{i}.{part}" for i in range(self.n_layers) for part in ("m", "c", "a")]
        if self.rate is not None:
            names += ["levels", "issued", "n_issued"]
        return names

    def output_names(self) -> list[str]:
        return ["loc", "params"]

    def forward(self, y: torch.Tensor, *inputs: torch.Tensor):
        module = self.module
        c, n_exog = module.n_channels, module.n_exog
        covariates, inputs = (inputs[0], inputs[1:]) if n_exog else (None, inputs)
        mean, scale, naive, spread, naive_std, max_std, history_values, history_observed, *rest = inputs
        encoder_flat, calibration = rest[: 3 * self.n_layers], rest[3 * self.n_layers :]
        dtype = history_values.dtype
        x = ((y - mean[:, :c]) / scale[:, :c]).to(dtype)  # (B, C) standardised, as the estimator does
        exog = None if covariates is None else ((covariates - mean[:, c:]) / scale[:, c:]).to(dtype)
        batch = x.shape[0]
        values = torch.cat([history_values, x[:, None]], dim=1)  # (B, H + 1, C)
        observed = torch.cat([history_observed, torch.ones_like(history_observed[:, :1])], dim=1)
        # the history is carried forward already: NaN only before a series' first observation
        filled = pad_before_first(values, torch.isfinite(values))
        offset = module.history_length - (module.context_length - 1)
        windows = filled[:, offset:].transpose(1, 2)[:, None]  # (B, 1, C, P)
        missing = (~observed[:, offset:]).to(x.dtype).transpose(1, 2)[:, None]
        locs, params, new_encoder, start = [], [], [], 0
        for member, n_layers in zip(self.members, self.member_layers, strict=True):
            tokens, z, level, local_scale, window_std = member.tokens(
                windows, missing, None if exog is None else exog[:, None]
            )
            own = _encoder_state(encoder_flat[start : start + 3 * n_layers], self.rows)
            h, own = StackedEncoder.step(member.encoder, tokens[:, 0], own)
            forecast = member.distribution(
                h[:, None], z, level, local_scale, window_std, batch, naive, spread, naive_std, max_std
            )
            locs.append(forecast.loc[:, 0])  # (B, T, C) standardised
            params.append(forecast.params[:, 0])  # (B, T, C, K)
            new_encoder += _encoder_outputs(own, self.rows)
            start += 3 * n_layers
        # (an ensemble's forecast: the mean of its members', as ForecastEnsemble combines them)
        loc = locs[0] if len(locs) == 1 else torch.stack(locs).mean(dim=0)
        params = params[0] if len(params) == 1 else torch.stack(params).mean(dim=0)
        history = module.history_length
        new_state = [values[:, -history:], observed[:, -history:], *new_encoder]
        scaled = torch.tensor(module.distribution_head.scaled, device=y.device)
        series_scale = scale[:, None, :c, None]
        params_scale = torch.where(scaled, series_scale, torch.ones_like(series_scale))
        outputs = [
            loc.to(torch.float64) * scale[:, None, :c] + mean[:, None, :c],
            params.to(torch.float64) * params_scale,
        ]
        if self.rate is not None:
            effect = None  # of the future-known covariates now observed, on the forecasts judged now
            if module.n_future:
                future = exog[:, None, : module.n_future].expand(-1, module.horizon, -1)
                effect = module.future_effect(future)
            levels, issued, n_issued = calibration
            advanced = torch.ones_like(n_issued, dtype=torch.bool)
            new_state += calibration_step(
                levels, issued, n_issued, x, loc, params, advanced, float(self.rate),
                module.distribution_head, effect,
            )  # fmt: skip
        return (*outputs, *new_state)


class QuantileFunction(nn.Module):
    """The distribution head's quantile function, on its own: ``(loc, params, z) -> quantiles``.

    Inputs: ``loc`` ``(B, T, C)`` and ``params`` ``(B, T, C, K)`` float64 as :class:`ForecasterStep`
    outputs them, and normal scores ``z`` ``(B, A, T, C)`` float64. Output: ``quantiles`` ``(B, A, T,
    C)``, the quantiles at probabilities ``Phi(z)``. Exported as a second graph in the same file, so
    the streamer reads intervals of any distribution family without knowing it.
    """

    def __init__(self, module: ForecastNet) -> None:
        super().__init__()
        self.head = module.distribution_head

    def forward(self, loc: torch.Tensor, params: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.head.quantile(loc[:, None], params[:, None], z)


class ClassifierStep(nn.Module):
    """One time point for every stream of a fitted :class:`~aaren_ts.AarenClassifier`.

    Inputs: ``x`` ``(B, C)`` float64 (original units, finite), then the state (:meth:`state_names`).
    Outputs: ``proba`` ``(B, n_classes)`` float32, then the new state in the same order. An ensemble's
    members are stepped in turn, each on its own state (its names prefixed ``member<k>.``; the count
    of time points seen is one for all), and its probabilities are the mean of theirs.
    """

    def __init__(
        self,
        module: ClassifierModule | ClassifierEnsemble,
        channel_mean: np.ndarray,
        channel_scale: np.ndarray,
    ) -> None:
        super().__init__()
        self.module = module
        self.members = nn.ModuleList(member_networks(module))
        self.register_buffer("channel_mean", torch.as_tensor(channel_mean, dtype=torch.float64))
        self.register_buffer("channel_scale", torch.as_tensor(channel_scale, dtype=torch.float64))

    def member_names(self, k: int) -> list[str]:
        """The names of member ``k``'s state (all but the count of time points seen)."""
        member = self.members[k]
        names = [f"encoder.{i}.{part}" for i in range(len(member.encoder.layers)) for part in ("m", "c", "a")]
        readout = {"last": ["readout.z"], "mean": ["readout.sum", "readout.count"]}
        names += readout.get(member.readout, ["readout.m", "readout.c", "readout.a"])
        names += ["context", *(["kernel_scores"] if member.kernels is not None else [])]
        return names if len(self.members) == 1 else [f"member{k}.{name}" for name in names]

    def state_names(self) -> list[str]:
        return ["seen", *(name for k in range(len(self.members)) for name in self.member_names(k))]

    def output_names(self) -> list[str]:
        return ["proba"]

    def forward(self, x: torch.Tensor, *state: torch.Tensor):
        seen, *rest = state
        new_state, probabilities = [], []
        for k, member in enumerate(self.members):
            own = [rest.pop(0) for _ in self.member_names(k)]
            proba, own = self._member_step(member, x, seen, own)
            probabilities.append(proba)
            new_state += own
        proba = probabilities[0] if len(probabilities) == 1 else torch.stack(probabilities).mean(dim=0)
        return (proba.to(torch.float32), seen + 1, *new_state)

    def _member_step(
        self, module: ClassifierModule, x: torch.Tensor, seen: torch.Tensor, state: list[torch.Tensor]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One network's class distribution (float64) after ``x`` and its new state, in its names' order."""
        n_layers = len(module.encoder.layers)
        encoder_flat, rest = state[: 3 * n_layers], state[3 * n_layers :]
        scores = rest.pop() if module.kernels is not None else None
        *readout, context = rest
        xs = ((x - self.channel_mean) / self.channel_scale).to(context.dtype)
        full = torch.cat([context, xs[:, None]], dim=1)  # (B, k, C)
        h = module.embed_window(full)[:, 0] + module.position_embedding(seen)  # (B, d_model)
        y, encoder = StackedEncoder.step(module.encoder, h, _encoder_state(encoder_flat, 1))
        readout = module.readout_step(y, tuple(readout))
        new_scores = []
        if scores is not None:
            scores = scores + module.kernel_step_scores(full, seen)[:, 0].to(scores.dtype)
            new_scores = [scores]
        else:
            scores = torch.zeros(x.shape[0], 0, dtype=torch.float64, device=x.device)
        logits = module.logits(module.step_features(readout, scores, seen + 1))
        proba = torch.softmax(logits.double(), dim=-1)
        return proba, [*_encoder_outputs(encoder, 1), *readout, full[:, 1:], *new_scores]


def _forecaster_step(
    engine: ForecastEngine, exog_columns: list[str]
) -> tuple[ForecasterStep, dict[str, np.ndarray], ModelSpec]:
    module: ForecastNet = engine.module
    calibrated = engine.calibration is not None
    step = ForecasterStep(module, engine.calibration_rate if calibrated else None)
    n, c = len(engine), module.n_channels
    rows = step.rows
    with engine.lock:
        encoder = [t.unflatten(0, (n, rows)) for t in flatten_state(engine.state)]
        tensors = [engine.history.values, engine.history.observed, *encoder]
        if calibrated:
            tensors += engine.calibration.tensors()
        state = {name: t.detach().cpu().numpy() for name, t in zip(step.state_names(), tensors, strict=True)}
        state["series_mean"] = engine.mean.copy()
        state["series_scale"] = engine.scale.copy()
        state["series_naive"] = engine.naive.copy()
        state["series_spread"] = engine.spread.copy()
        state["series_naive_std"] = engine.naive_std.copy()
        state["series_max_std"] = engine.max_std.copy()
        # the streams' current forecasts, as the step's outputs would give them (the network's own)
        state["output.loc"] = engine.predict(combined=False)
        state["output.params"] = engine.predict_params()
        if engine.theta is not None:  # the Theta method's streams: advanced and combined by the streamer
            state.update(state_entries(engine.theta, n))
            state[f"{STATE_PREFIX}weight"] = engine.theta_weight.copy()
    spec = ModelSpec(
        kind="forecaster",
        observation="y",
        covariates="X" if module.n_exog else None,
        exog_columns=list(exog_columns) if module.n_exog else [],
        n_future=module.n_future,
        constants=[
            "series_mean",
            "series_scale",
            "series_naive",
            "series_spread",
            "series_naive_std",
            "series_max_std",
        ],
        state=step.state_names(),
        outputs=step.output_names(),
        n_channels=c,
        horizon=module.horizon,
        calibrated=calibrated,
        single_series=engine.ids == [None],
        series_ids=[str(i) for i in engine.ids],
        coverages=list(CALIBRATION_COVERAGES) if calibrated else [],
        distribution=module.distribution_head.name,
        n_params=module.distribution_head.n_params,
        log_target=engine.log_target.tolist() if engine.log_target.any() else [],
    )
    return step, state, spec


def _classifier_step(
    module: ClassifierModule | ClassifierEnsemble,
    channel_mean: np.ndarray,
    channel_scale: np.ndarray,
    classes: list[Any],
) -> tuple[ClassifierStep, dict[str, np.ndarray], ModelSpec]:
    step = ClassifierStep(module, channel_mean, channel_scale)
    empty = module.init_state(1, "cpu")
    flat = [empty.seen]
    for member in empty.members if isinstance(empty, EnsembleState) else (empty,):
        flat += [t.unflatten(0, (1, 1)) for t in flatten_state(member.encoder)]
        flat += [*flatten_state(member.readout), member.context]
        flat += [member.kernel_scores] if module.kernels is not None else []
    state = {name: t.numpy() for name, t in zip(step.state_names(), flat, strict=True)}
    spec = ModelSpec(
        kind="classifier",
        observation="x",
        constants=[],
        state=step.state_names(),
        outputs=step.output_names(),
        n_channels=int(module.n_channels),
        classes=list(classes),
        channel_mean=np.asarray(channel_mean, dtype=np.float64).tolist(),
        channel_scale=np.asarray(channel_scale, dtype=np.float64).tolist(),
    )
    return step, state, spec


def _example_inputs(
    spec: ModelSpec, state: dict[str, np.ndarray], batch: int = 2
) -> tuple[torch.Tensor, ...]:
    """Inputs of ``batch`` streams with the state's shapes and dtypes (the first stream's values)."""

    def rows(a: np.ndarray) -> torch.Tensor:
        one = a[:1] if len(a) else np.ones((1, *a.shape[1:]), dtype=a.dtype)
        return torch.as_tensor(np.repeat(one, batch, axis=0))

    observation = torch.zeros(batch, spec.n_channels, dtype=torch.float64)
    covariates = [torch.zeros(batch, len(spec.exog_columns), dtype=torch.float64)] if spec.covariates else []
    return (observation, *covariates, *(rows(state[name]) for name in [*spec.constants, *spec.state]))


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Keep PyTorch's exporter from logging and warning about its own internals (the library is quiet)."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as err:
        raise ImportError(_EXTRA_HINT) from err


def _require_constant_state(module: torch.nn.Module) -> None:
    for member in member_networks(module):
        if not isinstance(member.encoder, AarenEncoder):
            raise ValueError(
                f"to_onnx: the state of a {type(member.encoder).__name__} (a KV cache) grows with every "
                "observation; only the Aaren backbone has a constant-size state to export"
            )


def export_forecaster(
    engine: ForecastEngine,
    path: str | os.PathLike,
    exog_columns: list[str] | tuple[str, ...] = (),
    signing_key: bytes | str | None = None,
) -> Path:
    """Write the streaming step of ``engine``'s network and its streams' state to the ONNX file ``path``.

    Parameters
    ----------
    engine : ForecastEngine
        The network and its streams (Aaren backbone).
    path : str or path-like
        The file to write.
    exog_columns : sequence of str
        Names of the covariates the network takes, in order (future-known ones first).
    signing_key : bytes or str, optional
        Sign the file with this key (:func:`~aaren_ts.onnx._format.sealed_bytes`).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        For a backbone without a constant-size state (the Transformer's KV cache).
    ImportError
        Without the ``onnx`` extra.
    """
    _require_onnx()
    _require_constant_state(engine.module)
    step, state, spec = _forecaster_step(engine, list(exog_columns))
    graphs = {"quantile_function": _quantile_graph(QuantileFunction(engine.module), spec)}
    if spec.n_future:
        graphs["future_effect"] = _future_effect_graph(FutureEffect(engine.module), spec)
    return _export(step, state, spec, path, graphs, signing_key)


def export_classifier(
    module: ClassifierModule | ClassifierEnsemble,
    path: str | os.PathLike,
    channel_mean: np.ndarray,
    channel_scale: np.ndarray,
    classes: list[Any],
    signing_key: bytes | str | None = None,
) -> Path:
    """Write the streaming step of a classifier network to the ONNX file ``path``.

    Parameters
    ----------
    module : ClassifierModule or ClassifierEnsemble
        The trained network or ensemble (Aaren backbone).
    path : str or path-like
        The file to write.
    channel_mean, channel_scale : ndarray of shape (n_channels,)
        The standardisation of the inputs, applied inside the graph.
    classes : list
        The class labels, in the order of the network's outputs.
    signing_key : bytes or str, optional
        Sign the file with this key (:func:`~aaren_ts.onnx._format.sealed_bytes`).

    Returns
    -------
    pathlib.Path
    """
    _require_onnx()
    _require_constant_state(module)
    step, state, spec = _classifier_step(module, channel_mean, channel_scale, classes)
    return _export(step, state, spec, path, signing_key=signing_key)


def _onnx_program(
    function: nn.Module, inputs: tuple[Any, ...], names: list[str], outputs: list[str], dynamic: list[Any]
) -> Any:
    """``function`` (a copy, on CPU, in eval mode: the caller's network stays where and as it is)
    exported to an ONNX ``ModelProto``; ``dynamic``: each input's dynamic axes."""
    function = copy.deepcopy(function).to("cpu").eval()
    with torch.no_grad(), _quiet_exporter():
        program = torch.onnx.export(
            function, inputs, None, input_names=names, output_names=outputs, dynamic_shapes=dynamic,
            dynamo=True, optimize=True, verbose=False,
        )  # fmt: skip
    return program.model_proto


def _graph(
    function: nn.Module, inputs: tuple[torch.Tensor, ...], names: list[str], output: str, dynamic: list[dict]
) -> bytes:
    """The serialised ONNX graph of ``function``, for the metadata of a file."""
    return _onnx_program(function, inputs, names, [output], dynamic).SerializeToString()


def _quantile_graph(function: QuantileFunction, spec: ModelSpec) -> bytes:
    """A head's quantile function as a graph (streams and scores: dynamic axes)."""
    t, c, k = spec.horizon, spec.n_channels, spec.n_params
    inputs = (
        torch.zeros(2, t, c, dtype=torch.float64),
        torch.ones(2, t, c, k, dtype=torch.float64),
        torch.zeros(2, 3, t, c, dtype=torch.float64),
    )
    streams, scores = torch.export.Dim("streams"), torch.export.Dim("scores")
    dynamic = [{0: streams}, {0: streams}, {0: streams, 1: scores}]
    return _graph(function, inputs, ["loc", "params", "z"], "quantiles", dynamic)


def _future_effect_graph(function: FutureEffect, spec: ModelSpec) -> bytes:
    """The future-known covariates' effect as a graph (streams: a dynamic axis)."""
    width = spec.n_channels + len(spec.exog_columns)
    inputs = (
        torch.zeros(2, spec.horizon, spec.n_future, dtype=torch.float64),
        torch.zeros(2, width, dtype=torch.float64),
        torch.ones(2, width, dtype=torch.float64),
    )
    streams = torch.export.Dim("streams")
    return _graph(function, inputs, ["future", "mean", "scale"], "effect", [{0: streams}] * 3)


def _export(
    step: nn.Module,
    state: dict[str, np.ndarray],
    spec: ModelSpec,
    path: str | os.PathLike,
    graphs: dict[str, bytes] | None = None,
    signing_key: bytes | str | None = None,
) -> Path:
    """Export ``step`` with its metadata to the file ``path`` (signed with ``signing_key``)."""
    inputs = _example_inputs(spec, state)
    names = [spec.observation, *([spec.covariates] if spec.covariates else []), *spec.constants, *spec.state]
    outputs = [*spec.outputs, *(f"new.{name}" for name in spec.state)]
    streams = torch.export.Dim("streams")
    # (the steps' forward takes its inputs after the first as *inputs: one nested entry)
    dynamic = [{0: streams}, ({0: streams},) * (len(inputs) - 1)]
    proto = _onnx_program(step, inputs, names, outputs, dynamic)
    write_metadata(proto, spec, state, graphs)
    path = Path(path)
    data = sealed_bytes(proto, signing_key)
    with atomic_write(path) as handle:
        handle.write(data)
    return path
