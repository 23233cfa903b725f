"""Saving fitted estimators without pickle.

A file holds the estimator's class name, its constructor parameters, the network's ``state_dict`` and a
few fitted attributes, all as tensors, numbers, strings, lists and dicts. It is read back with
``torch.load(weights_only=True)``, which refuses anything that would execute code, so loading a file
from an untrusted source cannot run code from it (unlike pickle).
"""

from __future__ import annotations

import io
import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aaren_ts._files import atomic_write

__all__ = [
    "FORMAT_VERSION",
    "PAYLOAD_ENTRY",
    "load_archive",
    "load_payload",
    "save_archive",
    "save_payload",
    "to_plain",
]

FORMAT_VERSION = 3  # 2: forecasts carry a spread (forecast intervals); 3: one ring of (mean, sd) pairs


def to_plain(value: Any) -> Any:
    """Convert numpy arrays/scalars (recursively, in dicts, lists and tuples) to tensors and Python
    scalars, so ``weights_only`` loading accepts them. String arrays become lists of str."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS":
            return [to_plain(v) for v in value.tolist()]
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def save_payload(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` (plain data and tensors, see :func:`save_archive`) to ``path``, atomically."""
    with atomic_write(path) as handle:
        torch.save(payload, handle)


def load_payload(
    path: str | os.PathLike, estimator: str, source: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Read a file written by :func:`save_payload`, refusing code execution and checking its kind.

    ``source`` is the file the user named, for the error messages (``path`` by default).

    Raises
    ------
    ValueError
        If the file holds another estimator or an unknown format version.
    """
    shown = os.fspath(path if source is None else source)
    payload = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("estimator") != estimator:
        found = payload.get("estimator") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{shown!r} does not hold a saved {estimator} (found {found!r})")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{shown!r} was saved in format version {payload.get('format_version')}; this aaren_ts "
            f"reads version {FORMAT_VERSION}: load it with the aaren_ts that saved it, or fit again"
        )
    return payload


#: Name of the weights-only payload inside a saved ``.zip`` archive.
PAYLOAD_ENTRY = "aaren_ts_payload.pt"


def save_archive(
    path: str | os.PathLike,
    estimator_cls: type,
    params: dict[str, Any],
    state_dict: dict[str, torch.Tensor],
    attributes: dict[str, Any],
) -> Path:
    """Write a fitted estimator to a ``.zip`` archive that sktime's ``load`` also reads.

    The archive holds the payload file (read back with ``weights_only`` loading) and the
    ``_metadata`` entry through which :func:`sktime.base.load` finds the class (a pickled reference to
    the class, which :func:`load_archive` never reads).

    Parameters
    ----------
    path : str or path-like
        Destination; ``".zip"`` is appended unless present, as sktime does.
    estimator_cls : type
        The estimator's class; its name is checked on load.
    params : dict
        Constructor parameters (``get_params(deep=False)``); values must be plain Python data.
    state_dict : dict
        The network's weights.
    attributes : dict
        Fitted attributes needed to predict (``classes_``, scaling statistics, stream state, ...).

    Returns
    -------
    pathlib.Path
        The file written.

    Notes
    -----
    The archive is written atomically (:func:`aaren_ts._files.atomic_write`): a process killed while
    saving leaves the previous file at ``path`` intact (or the new one, once renamed), never a broken
    one; the temporary file it was writing is removed by the next save to the same path.
    """
    target = Path(path)
    if target.suffix != ".zip":
        target = target.with_name(target.name + ".zip")
    payload = {
        "format_version": FORMAT_VERSION,
        "estimator": estimator_cls.__name__,
        "params": to_plain(params),
        "state_dict": {k: v.detach().cpu() for k, v in state_dict.items()},
        "attributes": to_plain(attributes),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    with atomic_write(target) as handle, zipfile.ZipFile(handle, "w") as archive:
        archive.writestr("_metadata", pickle.dumps(estimator_cls))
        archive.writestr(PAYLOAD_ENTRY, buffer.getbuffer())
    return target


def load_archive(path: str | os.PathLike, estimator_cls: type) -> dict[str, Any]:
    """Read the payload of an archive written by :func:`save_archive`, without unpickling anything.

    Raises
    ------
    FileNotFoundError
        If neither ``path`` nor ``path + ".zip"`` exists.
    ValueError
        If the file is not such an archive, or holds another estimator.
    """
    name = estimator_cls.__name__
    source = Path(path)
    if not source.exists() and source.suffix != ".zip":
        source = source.with_name(source.name + ".zip")
    if not source.exists():
        raise FileNotFoundError(f"no saved {name} at {os.fspath(path)!r}")
    not_ours = ValueError(f"{os.fspath(source)!r} is not a file written by {name}.save")
    if not zipfile.is_zipfile(source):
        raise not_ours
    with zipfile.ZipFile(source) as archive, tempfile.TemporaryDirectory() as tmp:
        if PAYLOAD_ENTRY not in archive.namelist():
            raise not_ours
        return load_payload(archive.extract(PAYLOAD_ENTRY, tmp), name, source)
