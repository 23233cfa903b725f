"""What an exported ONNX file says about itself: its model spec and initial state, in its metadata.

Written by the exporter (with PyTorch) and read by :class:`~aaren_ts.onnx.OnnxStreamer` (without): this
module needs numpy and the standard library only. Metadata entries are added to the ONNX model:
``aaren_ts.spec``, a JSON :class:`ModelSpec`, ``aaren_ts.state``, the initial state as a base64-encoded
``.npz`` archive (no pickled objects; read with ``allow_pickle=False``), for a forecaster
``aaren_ts.quantile_function``, its distribution head's quantile function as a second serialised ONNX
graph (base64), with future-known covariates ``aaren_ts.future_effect``, their effect on the forecasts
as a third (:class:`~aaren_ts.engine.covariates.FutureEffect`), and ``aaren_ts.sha256``, the integrity
checksum of the whole file; a file exported with a ``signing_key`` also ``aaren_ts.hmac_sha256``, its
signature.

**The checksum** is the SHA-256 of the file's bytes with the checksum's own 64 hexadecimal digits
written as zeros. The exporter serialises the model with 64 zeros in that entry, hashes the bytes and
writes the digest over the zeros (same length, so nothing else moves); the streamer reads the file,
finds that one entry in the bytes, zeroes it, hashes and compares before ONNX Runtime parses anything.
It covers the graph and its weights, the spec and the initial state alike (the weights are most of the
file, and a flipped bit in them would change the answers silently), and needs no ONNX or protobuf
parser: an ``aaren_ts.onnx`` deployment has ONNX Runtime and numpy only.

**The signature** (:mod:`aaren_ts.utils.signing`) is the HMAC-SHA256, under the user's key, of the
file's bytes with both the signature's and the checksum's digits written as zeros. The exporter writes
the signature first, then the checksum over the signed bytes; the streamer given the key checks the
checksum, then the signature, before ONNX Runtime parses anything.

**Format versions.** 1: no checksum. 2: the checksum; the classifier's spec carries its channels'
standardisation (the streamer refuses values that would overflow, :mod:`aaren_ts.utils.limits`). 3: a
forecaster's step outputs its distribution head's parameters (``loc``, ``params``) and the file carries
the head's quantile function. 4: the future-known covariates' effect is a graph of the file (format 3
carried its coefficients in the state). Files of an older format are refused with a request to export
again: without the checksum a damaged file cannot be told from a good one, and the spec lacks what the
input checks and the intervals need (exporting again from the saved estimator takes seconds).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from aaren_ts.utils.signing import check_signature, signature

__all__ = [
    "FORMAT_VERSION",
    "ModelSpec",
    "check_interface",
    "read_metadata",
    "sealed_bytes",
    "verify_checksum",
    "verify_signature",
    "write_metadata",
]

FORMAT_VERSION = 4
SPEC_KEY = "aaren_ts.spec"
STATE_KEY = "aaren_ts.state"
#: The forecaster's functions exported as graphs of their own, by name (metadata key ``aaren_ts.<name>``).
GRAPH_NAMES = ("quantile_function", "future_effect")
CHECKSUM_KEY = "aaren_ts.sha256"
SIGNATURE_KEY = "aaren_ts.hmac_sha256"
_UNSEALED = "0" * 64
#: What an export's signature covers besides its bytes (:func:`aaren_ts.utils.signing.signature`).
_SIGNATURE_PURPOSE = "aaren_ts ONNX export"


@dataclass
class ModelSpec:
    """The step's interface.

    Attributes
    ----------
    kind : {"forecaster", "classifier"}
        Which estimator was exported.
    observation : str
        Name of the graph input holding each stream's new observation ``(n_streams, n_channels)``.
    covariates : str or None
        Name of the graph input holding the forecaster's covariates at the same step
        ``(n_streams, n_exog)`` (None without covariates).
    exog_columns : list of str
        The covariates, in the order of that input's columns (future-known ones first).
    n_future : int
        How many of them are known for the future (``predict`` then needs their future values).
    constants : list of str
        Per-stream inputs the step reads but never changes (the forecaster's standardisation).
    state : list of str
        Per-stream state inputs, in order; the graph outputs their new values as ``new.<name>``.
    outputs : list of str
        The step's results, before the new state (``loc`` and ``scale``; ``proba``).
    n_channels : int
        Channels of an observation.
    horizon : int
        Steps the forecaster forecasts (0 for the classifier).
    calibrated : bool
        Whether the forecaster's intervals are calibrated online (the state holds ``levels``).
    single_series : bool
        Whether the forecaster was fitted on one series (then the streamer's arrays have no stream axis).
    series_ids : list of str
        The forecaster's series, as text, in stream order.
    classes : list
        The classifier's class labels, in the order of ``proba``'s columns.
    coverages : list of float
        The nominal coverages whose working levels ``levels`` tracks.
    distribution : str
        The forecaster's distribution head (its registered name).
    n_params : int
        The head's parameters per horizon step and channel (the last axis of ``params``).
    channel_mean, channel_scale : list of float
        The classifier's per-channel standardisation (the graph holds it too; the streamer reads it to
        refuse values that would overflow).
    log_target : list of list of bool
        The forecaster's channels forecast on the log scale, one list of ``n_channels`` per series
        (:attr:`~aaren_ts.engine.ForecastEngine.log_target`): the streamer takes the logarithm of their
        observations and maps the step's outputs back. Empty: none.
    """

    kind: str
    observation: str
    constants: list[str]
    state: list[str]
    outputs: list[str]
    n_channels: int
    horizon: int = 0
    calibrated: bool = False
    single_series: bool = False
    series_ids: list[str] = field(default_factory=list)
    classes: list[Any] = field(default_factory=list)
    coverages: list[float] = field(default_factory=list)
    covariates: str | None = None
    exog_columns: list[str] = field(default_factory=list)
    n_future: int = 0
    distribution: str = ""
    n_params: int = 0
    channel_mean: list[float] = field(default_factory=list)
    channel_scale: list[float] = field(default_factory=list)
    log_target: list[list[bool]] = field(default_factory=list)
    format_version: int = FORMAT_VERSION


def write_metadata(
    model: Any, spec: ModelSpec, state: dict[str, np.ndarray], graphs: dict[str, bytes] | None = None
) -> None:
    """Add ``spec``, ``state`` and a forecaster's serialised graphs (:data:`GRAPH_NAMES`) to the
    metadata of the ONNX ``model`` (a ``ModelProto``); write the file with :func:`sealed_bytes`."""
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    entries = {
        SPEC_KEY: json.dumps(asdict(spec)),
        STATE_KEY: base64.b64encode(buffer.getvalue()).decode("ascii"),
    }
    for name, graph in (graphs or {}).items():
        if name not in GRAPH_NAMES:
            raise ValueError(f"unknown graph {name!r}; the format carries {GRAPH_NAMES}")
        entries[f"aaren_ts.{name}"] = base64.b64encode(graph).decode("ascii")
    for key, value in entries.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def _checksum_entry(digest: str, name: str = CHECKSUM_KEY) -> bytes:
    """The serialised metadata entry ``name = digest`` (a protobuf ``StringStringEntryProto``: field 1,
    the key, then field 2, the value, each a tag byte, a length byte and the bytes)."""
    key = name.encode("ascii")
    return b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(digest)]) + digest.encode("ascii")


def sealed_bytes(model: Any, signing_key: bytes | str | None = None) -> bytes:
    """The bytes of the ONNX ``model`` (a ``ModelProto`` with the aaren_ts metadata) with its checksum
    entry added, and its signature under ``signing_key`` where given: what the exported file holds.

    Raises
    ------
    ValueError
        If the model already has a checksum or signature entry.
    """
    names = [CHECKSUM_KEY] if signing_key is None else [SIGNATURE_KEY, CHECKSUM_KEY]
    if any(entry.key in (CHECKSUM_KEY, SIGNATURE_KEY) for entry in model.metadata_props):
        raise ValueError(f"the model already holds a {CHECKSUM_KEY} or {SIGNATURE_KEY} entry")
    for name in names:
        entry = model.metadata_props.add()
        entry.key, entry.value = name, _UNSEALED
    try:
        data = model.SerializeToString()
    finally:
        del model.metadata_props[-len(names) :]
    for name in names:  # the entries' bytes are unique in any real model; checked anyway
        if data.count(_checksum_entry(_UNSEALED, name)) != 1:
            raise ValueError(f"cannot place the {name} entry: its bytes occur elsewhere in the model")
    if signing_key is not None:
        signed = signature(signing_key, _SIGNATURE_PURPOSE, [data])
        data = data.replace(_checksum_entry(_UNSEALED, SIGNATURE_KEY), _checksum_entry(signed, SIGNATURE_KEY))
    unsealed = _checksum_entry(_UNSEALED)
    return data.replace(unsealed, _checksum_entry(hashlib.sha256(data).hexdigest()))


def _digest_at(data: bytes, name: str, source: str) -> int | None:
    """Where the 64 digits of the one metadata entry ``name`` begin in ``data`` (``None``: no entry)."""
    key = _checksum_entry(_UNSEALED, name)[: -len(_UNSEALED)]
    start = data.find(key)
    if start < 0:
        return None
    if data.find(key, start + 1) >= 0:
        raise ValueError(f"{source} is damaged or was altered: it holds more than one {name} entry")
    return start + len(key)


def _zeroed(data: bytes, begin: int) -> bytes:
    """``data`` with the 64 digits at ``begin`` written as zeros."""
    return data[:begin] + _UNSEALED.encode("ascii") + data[begin + len(_UNSEALED) :]


def verify_signature(data: bytes, signing_key: bytes | str, source: str) -> None:
    """Check the signature of an exported file's bytes ``data`` under ``signing_key`` (see the
    module's docstring); the checksum is checked first (:func:`verify_checksum`).

    Raises
    ------
    ValueError
        If the file is unsigned, or its signature does not match (altered after export, or signed
        with another key).
    """
    at = _digest_at(data, SIGNATURE_KEY, source)
    written = None if at is None else data[at : at + len(_UNSEALED)]
    checksum_at = _digest_at(data, CHECKSUM_KEY, source)
    content = data if at is None else _zeroed(data, at)
    if checksum_at is not None:
        content = _zeroed(content, checksum_at)
    check_signature(signing_key, _SIGNATURE_PURPOSE, [content], written, source)


def verify_checksum(data: bytes, source: str) -> bool:
    """Check the checksum of an exported file's bytes ``data`` (see the module's docstring).

    Returns
    -------
    bool
        ``True`` if the file holds a checksum and it matches; ``False`` if it holds none (a file of
        format 1, a foreign ONNX file, or one whose checksum entry was damaged).

    Raises
    ------
    ValueError
        If the checksum does not match the bytes (the file was damaged or altered after export), or
        the file holds the entry more than once.
    """
    begin = _digest_at(data, CHECKSUM_KEY, source)
    if begin is None:
        return False
    written = data[begin : begin + len(_UNSEALED)]
    actual = hashlib.sha256(_zeroed(data, begin))
    if written != actual.hexdigest().encode("ascii"):
        raise ValueError(
            f"{source} is damaged or was altered after export: its content does not match the SHA-256 "
            f"checksum it was exported with ({written.decode('ascii', 'replace')[:16]}..., content "
            f"{actual.hexdigest()[:16]}...); export it again with to_onnx, or restore a good copy"
        )
    return True


def read_metadata(metadata: dict[str, str]) -> tuple[ModelSpec, dict[str, np.ndarray], dict[str, bytes]]:
    """The spec, initial state and serialised graphs (by name, :data:`GRAPH_NAMES`) from an exported
    model's custom metadata (a ``dict``).

    Raises
    ------
    ValueError
        If the metadata is not an aaren_ts export, is of a newer format than this version reads or of
        format 1 (no checksum), or cannot be read.
    """
    if SPEC_KEY not in metadata or STATE_KEY not in metadata:
        raise ValueError("this ONNX file was not written by aaren_ts's to_onnx (no aaren_ts metadata)")
    try:
        raw = json.loads(metadata[SPEC_KEY])
        version = raw.get("format_version", 0)
    except (ValueError, AttributeError) as err:
        raise ValueError(f"this ONNX file's {SPEC_KEY} entry is not a readable spec: {err}") from err
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(
            f"this ONNX file has aaren_ts export format {version}; this version of aaren_ts "
            f"reads up to {FORMAT_VERSION}: upgrade aaren_ts"
        )
    if version < FORMAT_VERSION:
        raise ValueError(
            f"this ONNX file has aaren_ts export format {version}, which this version of aaren_ts no longer "
            f"serves (it reads format {FORMAT_VERSION}: with an integrity checksum, and the forecast "
            "distribution's quantile function and the covariates' effect as graphs): export it again "
            "with to_onnx (e.g. from the estimator saved with save)"
        )
    try:
        spec = ModelSpec(**raw)
        with np.load(io.BytesIO(base64.b64decode(metadata[STATE_KEY])), allow_pickle=False) as archive:
            state = {name: archive[name] for name in archive.files}
        graphs = {
            name: base64.b64decode(metadata[f"aaren_ts.{name}"])
            for name in GRAPH_NAMES
            if f"aaren_ts.{name}" in metadata
        }
    except (TypeError, ValueError, OSError, EOFError, KeyError) as err:
        raise ValueError(f"this ONNX file's aaren_ts metadata cannot be read: {err}") from err
    if spec.kind == "forecaster" and "quantile_function" not in graphs:
        raise ValueError(
            "this ONNX file's aaren_ts metadata lacks its forecast distribution's quantile function"
        )
    if spec.kind == "forecaster" and spec.n_future and "future_effect" not in graphs:
        raise ValueError("this ONNX file's aaren_ts metadata lacks its future-known covariates' effect")
    return spec, state, graphs


#: ONNX Runtime's names of the tensor types the exported steps use.
_ONNX_TYPES = {
    "tensor(double)": np.dtype(np.float64),
    "tensor(float)": np.dtype(np.float32),
    "tensor(int64)": np.dtype(np.int64),
    "tensor(int32)": np.dtype(np.int32),
    "tensor(bool)": np.dtype(np.bool_),
}


def _expected_interface(
    spec: ModelSpec, state: dict[str, np.ndarray]
) -> tuple[dict[str, tuple[np.dtype, tuple[int, ...]]], dict[str, tuple[np.dtype, tuple[int, ...]]]]:
    """The graph inputs and outputs that ``spec`` and ``state`` describe: ``{name: (dtype, per-stream
    shape)}`` each, in order; raise ``ValueError`` where the spec and the state disagree."""
    if spec.kind not in ("forecaster", "classifier"):
        raise ValueError(f"its spec names an unknown kind of model, {spec.kind!r}")
    if not isinstance(spec.n_channels, int) or spec.n_channels < 1:
        raise ValueError(f"its spec gives {spec.n_channels!r} channels")
    missing = [name for name in [*spec.constants, *spec.state] if name not in state]
    if missing:
        raise ValueError(f"its spec names state arrays that its initial state lacks: {missing}")
    inputs = {spec.observation: (np.dtype(np.float64), (spec.n_channels,))}
    if spec.covariates:
        inputs[spec.covariates] = (np.dtype(np.float64), (len(spec.exog_columns),))
    for name in [*spec.constants, *spec.state]:
        array = state[name]
        if array.ndim < 1:
            raise ValueError(f"its initial state's {name!r} has no stream axis")
        inputs[name] = (array.dtype, array.shape[1:])
    rows = {len(state[name]) for name in [*spec.constants, *spec.state]}
    if len(rows) != 1:
        raise ValueError(f"its initial state's arrays disagree on the number of streams ({sorted(rows)})")
    n_streams = rows.pop()
    if spec.kind == "forecaster":
        wanted = ["loc", "params"]
        shapes = {
            "loc": (spec.horizon, spec.n_channels),
            "params": (spec.horizon, spec.n_channels, spec.n_params),
        }
        width = spec.n_channels + len(spec.exog_columns)
        for name in spec.constants:
            # the standardisation covers the channels and covariates, the fallback the channels
            per_channel = name in ("series_naive", "series_spread", "series_naive_std", "series_max_std")
            want = (spec.n_channels,) if per_channel else (width,)
            if state[name].shape[1:] != want:
                raise ValueError(
                    f"its initial state's {name!r} has per-stream shape {state[name].shape[1:]}, its spec "
                    f"{want[0]} channels{'' if per_channel else ' and covariates'}"
                )
        for name in wanted:
            array = state.get(f"output.{name}")
            if array is None or array.shape != (n_streams, *shapes[name]):
                found = None if array is None else array.shape
                raise ValueError(
                    f"its initial state's output.{name} has shape {found}; its spec says "
                    f"{(n_streams, *shapes[name])}"
                )
        log_target = np.asarray(spec.log_target)
        if spec.log_target and (log_target.shape != (n_streams, spec.n_channels) or log_target.dtype != bool):
            raise ValueError(
                f"its spec's log_target has shape {log_target.shape} ({log_target.dtype}), not "
                f"{(n_streams, spec.n_channels)} bool"
            )
        if (spec.single_series and n_streams != 1) or len(spec.series_ids) != n_streams:
            raise ValueError(
                f"its spec lists {len(spec.series_ids)} series; its initial state holds {n_streams} streams"
            )
        if spec.calibrated and len(spec.coverages) != state.get("levels", np.empty((0, 0))).shape[1]:
            raise ValueError("its spec's coverages and its initial state's levels disagree")
        if spec.n_future > len(spec.exog_columns):
            raise ValueError(
                f"its spec has {spec.n_future} future-known covariates among {len(spec.exog_columns)}"
            )
    else:
        wanted = ["proba"]
        shapes = {"proba": (len(spec.classes),)}
        mean, scale = np.asarray(spec.channel_mean), np.asarray(spec.channel_scale)
        if mean.shape != (spec.n_channels,) or scale.shape != (spec.n_channels,):
            raise ValueError(
                f"its spec's channel standardisation has {mean.size} means and {scale.size} scales for "
                f"{spec.n_channels} channels"
            )
        if not (np.isfinite(mean).all() and np.isfinite(scale).all() and (scale > 0).all()):
            raise ValueError("its spec's channel standardisation is not finite and positive")
    if list(spec.outputs) != wanted:
        raise ValueError(f"its spec names the outputs {spec.outputs}; a {spec.kind}'s are {wanted}")
    dtype = np.dtype(np.float64) if spec.kind == "forecaster" else np.dtype(np.float32)
    outputs = {name: (dtype, shapes[name]) for name in wanted}
    outputs.update((f"new.{name}", inputs[name]) for name in spec.state)
    return inputs, outputs


def check_interface(
    spec: ModelSpec,
    state: dict[str, np.ndarray],
    inputs: list[tuple[str, str, list[Any]]],
    outputs: list[tuple[str, str, list[Any]]],
) -> None:
    """Check that the graph's ``inputs`` and ``outputs`` (each ``(name, ONNX type, shape)``, as ONNX
    Runtime lists them) are those the metadata's ``spec`` and ``state`` describe: the same names, the
    same dtypes, the stream axis first and dynamic, the same sizes on every other axis.

    Raises
    ------
    ValueError
        Naming the first disagreement.
    """
    expected_inputs, expected_outputs = _expected_interface(spec, state)
    for what, expected, graph in (
        ("inputs", expected_inputs, inputs),
        ("outputs", expected_outputs, outputs),
    ):
        names = [name for name, _, _ in graph]
        if sorted(names) != sorted(expected):
            missing = [name for name in expected if name not in names]
            unexpected = [name for name in names if name not in expected]
            raise ValueError(
                f"its metadata and its graph disagree on the {what}: the graph lacks {missing} and has "
                f"{unexpected} besides"
            )
        for name, kind, shape in graph:
            dtype, per_stream = expected[name]
            if _ONNX_TYPES.get(kind) != dtype:
                raise ValueError(f"its graph's {name!r} is a {kind}; its metadata says {dtype}")
            if len(shape) != 1 + len(per_stream) or isinstance(shape[0], int):
                raise ValueError(
                    f"its graph's {name!r} has shape {shape}; its metadata says (streams, "
                    f"{', '.join(map(str, per_stream))}) with a dynamic stream axis"
                )
            for axis, (size, want) in enumerate(zip(shape[1:], per_stream, strict=True), start=1):
                if isinstance(size, int) and size != want:
                    raise ValueError(
                        f"its graph's {name!r} has {size} entries on axis {axis}; its metadata says {want}"
                    )
