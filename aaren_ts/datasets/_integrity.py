"""Checking that a dataset file is the upstream file: size and sha256, verified once per file version.

Hashing a 10 MB file costs tens of milliseconds; doing it on every load is wasteful, so a successful
verification is remembered, keyed by the file's absolute path, size and modification time, in memory and
in a small JSON file in the user's cache folder (``$XDG_CACHE_HOME/aaren_ts`` or ``~/.cache/aaren_ts``).
A file that changes (new size or mtime) is hashed again. When the cache folder is not writable, only the
in-memory record is kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ._errors import DatasetIntegrityError
from ._registry import DataFile

__all__ = ["sha256_of", "verify_file"]

_CACHE_FILE = "verified_files.json"
_memory: dict[str, tuple[int, int, str]] = {}


def sha256_of(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks.

    Parameters
    ----------
    path : str or path-like
        The file.
    chunk_size : int, default=1 MiB
        Bytes read at a time.

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aaren_ts" / _CACHE_FILE


def _read_cache() -> dict[str, list]:
    try:
        with open(_cache_path(), encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(key: str, record: tuple[int, int, str]) -> None:
    path = _cache_path()
    try:
        data = _read_cache()
        data[key] = list(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:  # a read-only home: the in-memory record still spares re-hashing in this process
        pass


def _is_recorded(key: str, record: tuple[int, int, str]) -> bool:
    if _memory.get(key) == record:
        return True
    stored = _read_cache().get(key)
    if stored is not None and tuple(stored) == record:
        _memory[key] = record
        return True
    return False


def verify_file(path: str | os.PathLike[str], expected: DataFile, dataset: str) -> bool:
    """Check a file against its registry record (size, then sha256); remember a success.

    Parameters
    ----------
    path : str or path-like
        The file to check.
    expected : DataFile
        Its record. A record without size or sha256 is not checked here (the loader then checks the
        parsed shape).
    dataset : str
        The dataset's name, for messages.

    Returns
    -------
    bool
        True if the file was checked against a recorded sha256 (now or earlier), False if the record
        has no sha256.

    Raises
    ------
    DatasetIntegrityError
        If the file is shorter than recorded (truncated), or its size or sha256 differ (altered).
    """
    path = Path(path)
    stat = path.stat()
    where = f"{dataset} file '{path}'"
    if expected.size is not None and stat.st_size != expected.size:
        state = "truncated" if stat.st_size < expected.size else "altered"
        raise DatasetIntegrityError(
            f"{where} is {state}: it has {stat.st_size} bytes, the upstream file {expected.size}. "
            "Download it again (delete it and load with download_if_missing=True, or fetch it by hand), "
            "or pass verify=False to read it anyway."
        )
    if expected.sha256 is None:
        return False
    key = str(path.resolve())
    record = (stat.st_size, stat.st_mtime_ns, expected.sha256)
    if _is_recorded(key, record):
        return True
    actual = sha256_of(path)
    if actual != expected.sha256:
        raise DatasetIntegrityError(
            f"{where} is altered: its sha256 is {actual}, the upstream file's is {expected.sha256} "
            f"(same size, {stat.st_size} bytes, different content). Download it again, or pass "
            "verify=False to read it anyway."
        )
    _memory[key] = record
    _write_cache(key, record)
    return True
