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
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aaren_ts.utils.files import atomic_write, check_stored_members
from aaren_ts.utils.signing import SIGNATURE_LENGTH, check_signature, signature

__all__ = [
    "FORMAT_VERSION",
    "PAYLOAD_ENTRY",
    "SIGNATURE_ENTRY",
    "load_archive",
    "load_payload",
    "save_archive",
    "save_payload",
    "to_plain",
]

FORMAT_VERSION = 4  # 2: forecast spreads; 3: one ring of (mean, sd) pairs; 4: distribution heads


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


def _payload_from_bytes(data: bytes, estimator: str, shown: str) -> dict[str, Any]:
    """The checked payload in ``data`` (see :func:`load_payload`)."""
    check_stored_members(data, shown, "the payload's record")
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except RuntimeError as err:  # torch's reader: a record missing, of the wrong size, ...
        raise ValueError(f"{shown!r} is damaged or not written by aaren_ts: {err}") from err
    if not isinstance(payload, dict) or payload.get("estimator") != estimator:
        found = payload.get("estimator") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{shown!r} does not hold a saved {estimator} (found {found!r})")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{shown!r} was saved in format version {payload.get('format_version')}; this aaren_ts "
            f"reads version {FORMAT_VERSION}: load it with the aaren_ts that saved it, or fit again"
        )
    return payload


def load_payload(
    path: str | os.PathLike, estimator: str, source: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Read a file written by :func:`save_payload`, refusing code execution and checking its kind.

    ``source`` is the file the user named, for the error messages (``path`` by default).

    Raises
    ------
    ValueError
        If the file holds another estimator or an unknown format version, or is damaged, or holds
        compressed records (see :func:`load_archive`).
    """
    shown = os.fspath(path if source is None else source)
    return _payload_from_bytes(Path(path).read_bytes(), estimator, shown)


#: Name of the weights-only payload inside a saved ``.zip`` archive.
PAYLOAD_ENTRY = "aaren_ts_payload.pt"
#: Name of the entry holding a signed archive's signature (:mod:`aaren_ts.utils.signing`).
SIGNATURE_ENTRY = "aaren_ts_signature"
#: The entries of a saved archive (``_metadata`` is sktime's; :func:`load_archive` never reads it).
_MEMBERS = frozenset({"_metadata", PAYLOAD_ENTRY, SIGNATURE_ENTRY})


def _purpose(estimator_cls: type) -> str:
    """What an archive's signature covers besides its payload: the kind of file and its estimator."""
    return f"aaren_ts archive of {estimator_cls.__name__}"


def save_archive(
    path: str | os.PathLike,
    estimator_cls: type,
    params: dict[str, Any],
    state_dict: dict[str, torch.Tensor],
    attributes: dict[str, Any],
    signing_key: bytes | str | None = None,
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
    signing_key : bytes or str, optional
        Sign the payload with this key (HMAC-SHA256, :mod:`aaren_ts.utils.signing`), in an entry of
        its own.

    Returns
    -------
    pathlib.Path
        The file written.

    Notes
    -----
    The archive is written atomically (:func:`aaren_ts.utils.files.atomic_write`): a process killed while
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
    signed = (
        None if signing_key is None else signature(signing_key, _purpose(estimator_cls), [buffer.getvalue()])
    )
    with atomic_write(target) as handle, zipfile.ZipFile(handle, "w") as archive:
        archive.writestr("_metadata", pickle.dumps(estimator_cls))
        archive.writestr(PAYLOAD_ENTRY, buffer.getbuffer())
        if signed is not None:
            archive.writestr(SIGNATURE_ENTRY, signed)
    return target


def _payload_entry(archive: zipfile.ZipFile, size: int, shown: str, name: str) -> zipfile.ZipInfo:
    """The payload's entry of ``archive`` (a file of ``size`` bytes), after checking the member list.

    An archive written by :func:`save_archive` holds exactly ``_metadata`` and the payload, stored
    uncompressed; anything else is refused before any member is read. A stored payload is at most
    as large as the file, so reading it takes no more memory than the file's size.
    """
    infos = archive.infolist()
    names = [info.filename for info in infos]
    unexpected = sorted(set(names) - _MEMBERS)
    if PAYLOAD_ENTRY not in names:
        raise ValueError(f"{shown!r} is not a file written by {name}.save (no {PAYLOAD_ENTRY!r} entry)")
    if unexpected or len(names) != len(set(names)):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(
            f"{shown!r} is not a file written by {name}.save: unexpected entries {unexpected}, "
            f"duplicated entries {duplicated}; refused unread"
        )
    info = archive.getinfo(PAYLOAD_ENTRY)
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
        raise ValueError(
            f"{shown!r}: its payload is compressed ({info.compress_size} bytes declared to expand to "
            f"{info.file_size}); {name}.save stores it uncompressed, so this file was altered (or "
            "re-packed by another tool) and is refused unread: save the model again with aaren_ts"
        )
    if info.header_offset + info.compress_size > size:
        raise ValueError(f"{shown!r} is truncated: its payload extends past the end of the file")
    return info


def _written_signature(archive: zipfile.ZipFile, shown: str) -> bytes | None:
    """The signature entry's bytes (``None``: the archive is not signed), its size checked first."""
    if SIGNATURE_ENTRY not in archive.namelist():
        return None
    info = archive.getinfo(SIGNATURE_ENTRY)
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != SIGNATURE_LENGTH:
        raise ValueError(f"{shown!r}: its signature entry is not a signature (altered?); refused unread")
    return archive.read(info)


def load_archive(
    path: str | os.PathLike, estimator_cls: type, signing_key: bytes | str | None = None
) -> dict[str, Any]:
    """Read the payload of an archive written by :func:`save_archive`, without unpickling anything.

    The archive's member list and the payload's declared sizes are checked before anything is read
    (:func:`_payload_entry`), the payload is read into memory (its CRC-32 checked), and the records
    inside it are checked in turn before ``torch.load`` reads them: a crafted archive cannot make
    loading inflate more data than the file holds, and nothing is extracted to disk. With
    ``signing_key`` the payload's signature is checked first (an unsigned archive is refused).

    Raises
    ------
    FileNotFoundError
        If neither ``path`` nor ``path + ".zip"`` exists.
    ValueError
        If the file is not such an archive, holds another estimator, is damaged, declares more data
        than it holds, or (with ``signing_key``) is unsigned or its signature does not match.
    """
    name = estimator_cls.__name__
    source = Path(path)
    if not source.exists() and source.suffix != ".zip":
        source = source.with_name(source.name + ".zip")
    if not source.exists():
        raise FileNotFoundError(f"no saved {name} at {os.fspath(path)!r}")
    shown = os.fspath(source)
    if not zipfile.is_zipfile(source):
        raise ValueError(f"{shown!r} is not a file written by {name}.save")
    try:
        with zipfile.ZipFile(source) as archive:
            info = _payload_entry(archive, source.stat().st_size, shown, name)
            written = _written_signature(archive, shown)
            data = archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as err:
        raise ValueError(f"{shown!r} is damaged: {err}") from err
    if signing_key is not None:
        check_signature(signing_key, _purpose(estimator_cls), [data], written, repr(shown))
    return _payload_from_bytes(data, name, shown)
