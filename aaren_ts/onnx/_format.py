"""What an exported ONNX file says about itself: its model spec and initial state, in its metadata.

Written by the exporter (with PyTorch) and read by :class:`~aaren_ts.onnx.OnnxStreamer` (without):
this module needs numpy and the standard library only. Two metadata entries are added to the ONNX
model: ``aaren_ts.spec``, a JSON :class:`ModelSpec`, and ``aaren_ts.state``, the initial state as a
base64-encoded ``.npz`` archive (no pickled objects; read with ``allow_pickle=False``).
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["FORMAT_VERSION", "ModelSpec", "read_metadata", "write_metadata"]

FORMAT_VERSION = 2  # 2: forecast distributions of any head (loc, params) and their quantile graph
SPEC_KEY = "aaren_ts.spec"
STATE_KEY = "aaren_ts.state"
QUANTILE_KEY = "aaren_ts.quantile_function"


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
    format_version: int = FORMAT_VERSION


def write_metadata(
    model: Any, spec: ModelSpec, state: dict[str, np.ndarray], quantile_function: bytes | None = None
) -> None:
    """Add ``spec``, ``state`` and a forecaster's serialised quantile graph to the metadata of the ONNX
    ``model`` (a ``ModelProto``)."""
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    entries = {
        SPEC_KEY: json.dumps(asdict(spec)),
        STATE_KEY: base64.b64encode(buffer.getvalue()).decode("ascii"),
    }
    if quantile_function is not None:
        entries[QUANTILE_KEY] = base64.b64encode(quantile_function).decode("ascii")
    for key, value in entries.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def read_metadata(metadata: dict[str, str]) -> tuple[ModelSpec, dict[str, np.ndarray], bytes | None]:
    """The spec, the initial state and the forecaster's quantile graph (serialised ONNX, or ``None``)
    from an exported model's custom metadata (a ``dict``).

    Raises
    ------
    ValueError
        If the metadata is not an aaren_ts export, or of another format than this version reads.
    """
    if SPEC_KEY not in metadata or STATE_KEY not in metadata:
        raise ValueError("this ONNX file was not written by aaren_ts's to_onnx (no aaren_ts metadata)")
    raw = json.loads(metadata[SPEC_KEY])
    if raw.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"this ONNX file has aaren_ts export format {raw['format_version']}; this version of aaren_ts "
            f"reads up to {FORMAT_VERSION}: upgrade aaren_ts"
        )
    if raw.get("format_version", 0) < FORMAT_VERSION:
        raise ValueError(
            f"this ONNX file has aaren_ts export format {raw.get('format_version', 0)}, which this version "
            f"of aaren_ts no longer serves (it reads format {FORMAT_VERSION}): export the model again "
            "with to_onnx"
        )
    spec = ModelSpec(**raw)
    with np.load(io.BytesIO(base64.b64decode(metadata[STATE_KEY])), allow_pickle=False) as archive:
        state = {name: archive[name] for name in archive.files}
    quantile = metadata.get(QUANTILE_KEY)
    return spec, state, None if quantile is None else base64.b64decode(quantile)
