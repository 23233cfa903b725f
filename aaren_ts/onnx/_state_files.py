"""The files :meth:`OnnxStreamer.save_state <aaren_ts.onnx.OnnxStreamer.save_state>` writes and
:meth:`~aaren_ts.onnx.OnnxStreamer.load_state` reads: the streams' arrays and their step count in an
uncompressed ``.npz`` file (nothing pickled), optionally signed with a key
(:mod:`aaren_ts.utils.signing`).

:func:`write_state` writes one atomically; :func:`read_state` checks the file's members before
inflating anything, its signature where a key is given, and its step count, and returns the arrays.
Whether the arrays fit a given model is the streamer's check.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from aaren_ts.utils.files import atomic_write, check_stored_members
from aaren_ts.utils.signing import check_signature, key_bytes, signature

__all__ = ["MAX_COUNT", "npz_path", "read_state", "write_state"]

#: The most steps a saved state may count (every count below is exact in float64).
MAX_COUNT = 2**53
_COUNT = "__n_seen__"
_SIGNATURE = "__signature__"
_PURPOSE = "aaren_ts streamer state"


def npz_path(path: str | os.PathLike) -> Path:
    """``path`` with the ``".npz"`` suffix :func:`numpy.savez` gives a path without it."""
    target = Path(path)
    return target if target.suffix == ".npz" else target.with_name(target.name + ".npz")


def _signed_parts(arrays: dict[str, np.ndarray], n_seen: int) -> Iterator[bytes]:
    """What a state's signature covers: the step count, then each array's name, dtype, shape and
    bytes, in the order of the names."""
    yield str(int(n_seen)).encode("ascii")
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        yield f"{name}|{array.dtype.str}|{array.shape}".encode()
        yield array.tobytes()


def write_state(
    path: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    n_seen: int,
    signing_key: bytes | str | None = None,
) -> Path:
    """Write ``arrays`` and the step count ``n_seen`` to ``path`` (``.npz`` appended where missing),
    atomically, signed with ``signing_key`` where given; returns the file written."""
    extra = {_COUNT: np.asarray(n_seen)}
    if signing_key is not None:
        extra[_SIGNATURE] = np.asarray(
            signature(key_bytes(signing_key), _PURPOSE, _signed_parts(arrays, n_seen))
        )
    target = npz_path(path)
    with atomic_write(target) as handle:
        np.savez(handle, **arrays, **extra)
    return target


def read_state(
    path: str | os.PathLike, signing_key: bytes | str | None = None
) -> tuple[dict[str, np.ndarray], int]:
    """The arrays and step count of a file written by :func:`write_state` (``.npz`` appended to a path
    without it).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        If the file holds compressed members, cannot be read as an ``.npz`` file without pickle,
        has no valid step count, or (with ``signing_key``) is unsigned or its signature does not
        match.
    """
    path = npz_path(path)
    if signing_key is not None:
        key_bytes(signing_key)
    data = path.read_bytes()
    try:
        check_stored_members(data, path.name, "the state's array")
    except ValueError as err:
        raise ValueError(f"{path} is not a readable state saved by save_state: {err}") from None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            loaded = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, TypeError, zipfile.BadZipFile) as err:
        raise ValueError(f"{path} is not a readable state saved by save_state (damaged?): {err}") from err
    count = loaded.pop(_COUNT, np.asarray(-1))
    written = loaded.pop(_SIGNATURE, None)
    if count.shape != () or count.dtype.kind not in "iu" or not 0 <= int(count) <= MAX_COUNT:
        raise ValueError(
            f"{path}: its step count {_COUNT} is {count!r}, not a count of steps (altered or damaged?)"
        )
    if signing_key is not None:
        if written is not None and (written.shape != () or written.dtype.kind != "U"):
            raise ValueError(f"{path}: its signature is not a signature (altered?); refused")
        text = None if written is None else str(written)
        check_signature(signing_key, _PURPOSE, _signed_parts(loaded, int(count)), text, os.fspath(path))
    return loaded, int(count)
