"""Writing a file so that a crash at any moment leaves either the old file or the new one.

:func:`atomic_write` writes to a temporary file in the destination's folder, flushes it to disk and
renames it onto the destination (``os.replace``, atomic on POSIX and Windows within one folder), then
flushes the folder's entry where the system allows it. A reader of the destination therefore never
sees a partly written file, and a writer that is killed (``kill -9``, power loss after the rename's
flush) leaves the previous file intact.

A writer killed before its rename leaves its temporary file behind: ``.<name>.<pid>.<random>.tmp``
beside the destination. The next :func:`atomic_write` to the same destination removes the temporaries
of writers that are no longer running (on POSIX, where a process id can be probed without side
effects), so at most the temporaries of live writers remain. A temporary of a live writer, even in
another process, is never touched. (On a folder shared between machines, a process id names a process
of this machine only; removing another machine's live temporary makes that writer's rename fail with an
error, never a broken destination.)

Standard library only: the torch-free :mod:`aaren_ts.onnx` uses it too.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "check_stored_members", "stale_temporaries", "temporaries"]

_SUFFIX = ".tmp"


def _temporary_name(target: Path) -> str:
    return f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}{_SUFFIX}"


def _pattern(target: Path) -> re.Pattern[str]:
    return re.compile(re.escape(f".{target.name}.") + r"(\d+)\.[0-9a-f]{16}" + re.escape(_SUFFIX))


def temporaries(target: str | os.PathLike) -> list[Path]:
    """The temporary files of writers (live or dead) to ``target``, in its folder."""
    target = Path(target)
    pattern = _pattern(target)
    try:
        entries = os.listdir(target.parent)
    except OSError:
        return []
    return sorted(target.parent / entry for entry in entries if pattern.fullmatch(entry))


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (POSIX; elsewhere every process counts as running)."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def stale_temporaries(target: str | os.PathLike) -> list[Path]:
    """The temporary files to ``target`` left by writers that are no longer running."""
    target = Path(target)
    pattern = _pattern(target)
    stale = []
    for path in temporaries(target):
        match = pattern.fullmatch(path.name)
        if match is not None and not _running(int(match.group(1))):
            stale.append(path)
    return stale


def _fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries (the rename) to disk, where the system supports it."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder; the rename is still atomic
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(target: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a binary file whose content replaces ``target`` atomically when the block ends.

    The file is a new temporary file in ``target``'s folder (so the final rename stays within one file
    system). When the block ends without an exception, the file is flushed and synced to disk, takes
    the permissions ``target`` had (or the process's default for a new file), and replaces ``target``;
    the folder is then synced. If the block (or any of these steps) raises, the temporary file is
    removed and ``target`` is left as it was.

    Parameters
    ----------
    target : str or path-like
        The file to write.

    Yields
    ------
    file object
        Open for writing bytes (seekable).
    """
    target = Path(target)
    for path in stale_temporaries(target):
        with contextlib.suppress(OSError):
            path.unlink()
    temporary = target.parent / _temporary_name(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(temporary, flags, 0o666)  # the process's umask applies, as for any new file
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            with contextlib.suppress(FileNotFoundError):
                mode = stat.S_IMODE(os.stat(target).st_mode)
                if hasattr(os, "fchmod"):
                    os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_folder(target.parent)


def check_stored_members(data: bytes, shown: str, what: str = "member") -> None:
    """Refuse a zip archive ``data`` (a ``torch.save`` payload, a ``numpy.savez`` file) whose members
    are compressed or declare more bytes than it holds: aaren_ts writes them uncompressed, and
    inflating a crafted member could turn kilobytes into gigabytes. Only the zip's directory is read;
    ``ValueError`` naming the file ``shown`` and the ``what`` refused."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as err:
        raise ValueError(f"{shown!r} is damaged or not written by aaren_ts (unreadable zip)") from err
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise ValueError(
                f"{shown!r}: {what} {info.filename!r} is compressed ({info.compress_size} bytes declared to "
                f"expand to {info.file_size}); aaren_ts writes it uncompressed, so this file was altered "
                "or written otherwise, and is refused unread"
            )
    if sum(info.file_size for info in infos) > len(data):
        raise ValueError(f"{shown!r}: its {what}s declare more bytes than it holds; refused unread")
