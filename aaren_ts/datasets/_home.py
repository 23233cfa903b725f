"""Where the dataset files live: the data folder (``data_home``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_HOME_ENV", "describe_data_home", "get_data_home"]

#: Environment variable naming the data folder when no ``data_home`` argument is given.
DATA_HOME_ENV = "AAREN_TS_DATA"

_DEFAULT_FOLDER = "aaren_ts_data"


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Return the folder the loaders read dataset files from (and download them into).

    The folder is, in order: the ``data_home`` argument; else the environment variable
    ``AAREN_TS_DATA``; else ``~/aaren_ts_data``. The folder is not created here (only a download
    creates it), so reading from a read-only folder works.

    Parameters
    ----------
    data_home : str or path-like, optional
        The data folder. ``~`` is expanded.

    Returns
    -------
    pathlib.Path
        The data folder, with ``~`` expanded.

    Examples
    --------
    >>> from aaren_ts.datasets import get_data_home
    >>> get_data_home("/tmp/my_data").as_posix()
    '/tmp/my_data'
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(DATA_HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / _DEFAULT_FOLDER


def describe_data_home(data_home: str | os.PathLike[str] | None = None) -> str:
    """Say which data folder is used and why, for error messages.

    Parameters
    ----------
    data_home : str or path-like, optional
        The ``data_home`` argument given to a loader.

    Returns
    -------
    str
        For example ``"'/data' (from the environment variable AAREN_TS_DATA)"``.
    """
    folder = get_data_home(data_home)
    if data_home is not None:
        why = "the data_home argument"
    elif os.environ.get(DATA_HOME_ENV):
        why = f"the environment variable {DATA_HOME_ENV}"
    else:
        why = f"the default; set data_home= or the environment variable {DATA_HOME_ENV} to change it"
    return f"'{folder}' (from {why})"
