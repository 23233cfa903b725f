"""Downloading one file, with a progress bar, into place only when complete (and checksum-verified)."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import DatasetIntegrityError

__all__ = ["download_file"]


def download_file(
    url: str,
    destination: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    opener: Callable[..., Any] | None = None,
    chunk_size: int = 1 << 16,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Download ``url`` to ``destination``, announcing it and showing a tqdm progress bar.

    The bytes go to a temporary ``<destination>.*.part`` of this download's own first; the file is
    moved into place only when the download is complete and, if ``sha256`` is given, matches it (so
    processes downloading the same file at once do not collide). Parent folders are created.

    Parameters
    ----------
    url : str
        Address to download (any scheme ``urllib`` opens, ``file://`` included).
    destination : str or path-like
        Where the file ends up.
    sha256 : str, optional
        Expected hex sha256; a mismatch removes the partial file and raises.
    opener : callable, optional
        ``opener(url, timeout=...)`` returning a readable response with ``.headers``; defaults to
        :func:`urllib.request.urlopen` (tests pass a fake).
    chunk_size : int, default=65536
        Bytes read at a time.
    timeout : float, default=60
        Seconds to wait for the connection.
    progress : bool, default=True
        Show the progress bar (on stderr).

    Returns
    -------
    pathlib.Path
        ``destination``.

    Raises
    ------
    OSError
        If the download fails (no network, HTTP error); nothing is left at ``destination``.
    DatasetIntegrityError
        If the downloaded bytes do not match ``sha256``.
    """
    from tqdm.auto import tqdm

    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    # a temporary file of this download's own, moved into place when complete: processes that download
    # the same file at once (workers of a cluster starting together) never write into each other's
    fd, name = tempfile.mkstemp(prefix=destination.name + ".", suffix=".part", dir=destination.parent)
    os.close(fd)
    partial = Path(name)
    opener = urllib.request.urlopen if opener is None else opener
    print(f"aaren_ts: downloading {url} to {destination}", file=sys.stderr)
    digest = hashlib.sha256()
    try:
        with opener(url, timeout=timeout) as response, open(partial, "wb") as out:
            length = response.headers.get("Content-Length") if response.headers else None
            total = int(length) if length else None
            with tqdm(
                total=total, unit="B", unit_scale=True, desc=destination.name, disable=not progress
            ) as bar:
                while chunk := response.read(chunk_size):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
        if sha256 is not None and digest.hexdigest() != sha256:
            raise DatasetIntegrityError(
                f"the file downloaded from {url} has sha256 {digest.hexdigest()}, expected {sha256}; "
                "it was not kept"
            )
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    return destination
