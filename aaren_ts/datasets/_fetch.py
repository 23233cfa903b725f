"""Finding a dataset file in the data folder, downloading it when missing and allowed, verifying it."""

from __future__ import annotations

import os
from pathlib import Path

from ._download import download_file
from ._errors import DatasetNotFoundError
from ._home import describe_data_home, get_data_home
from ._integrity import verify_file
from ._registry import DataFile

__all__ = ["fetch_file", "not_found_message"]


def not_found_message(
    dataset: str, record: DataFile, data_home: str | os.PathLike[str] | None, published_at: str
) -> str:
    """The message of a :class:`DatasetNotFoundError`: which file, where we looked, where upstream has it."""
    path = get_data_home(data_home) / record.path
    return (
        f"{dataset}: the file '{record.path}' is not in the data folder {describe_data_home(data_home)}; "
        f"looked for '{path}'. Upstream publishes it at: {published_at}."
    )


def fetch_file(
    dataset: str,
    record: DataFile,
    published_at: str,
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    verify: bool = True,
) -> Path:
    """Return the path of a dataset file in the data folder, downloading and verifying it as needed.

    Parameters
    ----------
    dataset : str
        Dataset name, for messages.
    record : DataFile
        The file's registry record.
    published_at : str
        Where upstream publishes it (quoted when the file is missing).
    data_home : str or path-like, optional
        The data folder (see :func:`aaren_ts.datasets.get_data_home`).
    download_if_missing : bool, default=True
        Download the file when it is missing and the record has a download address.
    verify : bool, default=True
        Check size and sha256 against the record.

    Returns
    -------
    pathlib.Path
        The file.

    Raises
    ------
    DatasetNotFoundError
        If the file is missing and cannot be downloaded (not allowed, no address, or the download failed).
    DatasetIntegrityError
        If the file (or the download) does not match the record.
    """
    path = get_data_home(data_home) / record.path
    if not path.is_file():
        message = not_found_message(dataset, record, data_home, published_at)
        if record.url is None:
            raise DatasetNotFoundError(f"{message} It cannot be downloaded automatically; place it there.")
        if not download_if_missing:
            raise DatasetNotFoundError(
                f"{message} Pass download_if_missing=True to download it from {record.url}."
            )
        try:
            download_file(record.url, path, sha256=record.sha256)
        except OSError as error:
            raise DatasetNotFoundError(
                f"{message} Downloading it from {record.url} failed: {error}"
            ) from error
    if verify:
        verify_file(path, record, dataset)
    return path
