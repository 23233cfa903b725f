"""The errors the dataset loaders raise."""

from __future__ import annotations

__all__ = ["DatasetIntegrityError", "DatasetNotFoundError"]


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is not in the data folder and could not be downloaded.

    A subclass of :class:`FileNotFoundError`. The message names the file, the folder searched (and how
    that folder was chosen), and where upstream publishes the file.
    """


class DatasetIntegrityError(ValueError):
    """A dataset file is present but truncated, altered or not in the expected format.

    A subclass of :class:`ValueError`. The message names the file and what differs from the
    dataset card (size, sha256, number of rows or columns, header, timestamps).
    """
