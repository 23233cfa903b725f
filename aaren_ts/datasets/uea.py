"""Loaders of the UEA multivariate classification archive (its ``.ts`` files, read by :mod:`._ts_format`).

Files are looked for, in order, in ``<data_home>/Multivariate_ts/<NAME>/<NAME>_TRAIN.ts`` (and ``_TEST.ts``),
then in the copies that ship with sktime (JapaneseVowels, BasicMotions), and otherwise downloaded into the
data folder through sktime's ``load_UCR_UEA_dataset`` (when ``download_if_missing``; announced on stderr).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._errors import DatasetIntegrityError, DatasetNotFoundError
from ._fetch import not_found_message
from ._home import get_data_home
from ._integrity import verify_file
from ._registry import ClassificationDataset, DataFile, _classification_info
from ._ts_format import TsFormatError, read_ts

__all__ = ["load_uea", "train_val_split"]

_SPLITS = {"train": "TRAIN", "test": "TEST"}
_OWN_TYPES = ("auto", "list")


def _bundled_folder() -> Path:
    import sktime.datasets

    return Path(sktime.datasets.__file__).parent / "data"


def _check_split(split: object) -> list[str]:
    if split is None:
        return ["train", "test"]
    if isinstance(split, str) and split.lower() in _SPLITS:
        return [split.lower()]
    raise ValueError(f"split must be 'train', 'test' or None (both), got {split!r}")


def _download(info: ClassificationDataset, data_home: str | os.PathLike[str] | None) -> None:
    from sktime.datasets import load_UCR_UEA_dataset

    target = get_data_home(data_home) / "Multivariate_ts"
    print(
        f"aaren_ts: downloading the UEA dataset {info.name} through sktime into {target / info.name}",
        file=sys.stderr,
    )
    target.mkdir(parents=True, exist_ok=True)
    load_UCR_UEA_dataset(info.name, extract_path=str(target), return_type="nested_univ")


def _locate(
    info: ClassificationDataset,
    records: list[DataFile],
    data_home: str | os.PathLike[str] | None,
    download_if_missing: bool,
) -> tuple[list[Path], bool]:
    """Paths of the requested files and whether they are in the data folder (False: sktime's copy)."""
    home = get_data_home(data_home)
    paths = [home / record.path for record in records]
    if all(path.is_file() for path in paths):
        return paths, True
    if info.bundled_with_sktime:
        bundled = [_bundled_folder() / Path(record.path).relative_to("Multivariate_ts") for record in records]
        if all(path.is_file() for path in bundled):
            return bundled, False
    missing = next(record for record, path in zip(records, paths, strict=True) if not path.is_file())
    message = not_found_message(info.name, missing, data_home, info.published_at)
    if not download_if_missing:
        raise DatasetNotFoundError(f"{message} Pass download_if_missing=True to download it through sktime.")
    try:
        _download(info, data_home)
    except Exception as error:  # sktime raises RuntimeError, OSError, URLError, ... when offline
        # sktime parses the files after downloading them; when its reader fails on a file that did
        # arrive, the files are there and this module's reader takes over
        if not all(path.is_file() for path in paths):
            raise DatasetNotFoundError(f"{message} Downloading it through sktime failed: {error}") from error
    if not all(path.is_file() for path in paths):
        raise DatasetNotFoundError(f"{message} The download through sktime did not produce it.")
    return paths, True


def _read(path: Path, info: ClassificationDataset) -> tuple[list[np.ndarray], np.ndarray]:
    try:
        _header, cases, y = read_ts(path)
    except TsFormatError as error:
        raise DatasetIntegrityError(
            f"{info.name} file '{path}' is not a readable .ts file: {error}"
        ) from error
    if len(y) != len(cases):
        raise DatasetIntegrityError(f"{info.name} file '{path}' has no class labels (@classLabel false)")
    return cases, y


def _cast_labels(y: np.ndarray, y_dtype: str) -> np.ndarray:
    if y_dtype == "str":
        return y
    try:
        values = y.astype(np.float64)
    except ValueError:
        raise ValueError(
            f"y_dtype={y_dtype!r} needs numeric class labels, but this dataset's are "
            f"{sorted(set(y.tolist()))[:5]}; use y_dtype='str'"
        ) from None
    if y_dtype == "float":
        return values
    if not np.array_equal(values, np.round(values)):
        raise ValueError("y_dtype='int' needs whole-number class labels; use 'float' or 'str'")
    return values.astype(np.int64)


def _check_shape(
    cases: list[np.ndarray], y: np.ndarray, info: ClassificationDataset, split: str, path: Path
) -> None:
    expected = info.n_train if split == "train" else info.n_test
    where = f"{info.name} file '{path}'"
    if len(cases) != expected:
        state = "truncated" if len(cases) < expected else "altered"
        raise DatasetIntegrityError(
            f"{where} is {state}: it has {len(cases)} cases, the upstream file {expected}. Download it "
            "again, or pass verify=False to read it anyway."
        )
    if cases[0].shape[0] != info.n_channels:
        raise DatasetIntegrityError(f"{where} has {cases[0].shape[0]} dimensions, expected {info.n_channels}")
    lengths = np.array([case.shape[1] for case in cases])
    low, high = (info.series_length,) * 2 if info.equal_length else info.series_length
    if lengths.min() < low or lengths.max() > high:
        raise DatasetIntegrityError(
            f"{where} has series of length {lengths.min()} to {lengths.max()}, expected {low} to {high}"
        )
    if len(np.unique(y)) > info.n_classes:
        raise DatasetIntegrityError(f"{where} has {len(np.unique(y))} classes, expected {info.n_classes}")


def _nested_univ(cases: list[np.ndarray]) -> pd.DataFrame:
    """sktime's nested_univ container: one column per dimension (dim_0, ...), a pd.Series per cell."""
    n_dims = cases[0].shape[0]
    return pd.DataFrame(
        {f"dim_{j}": pd.Series([pd.Series(case[j]) for case in cases]) for j in range(n_dims)}
    )


def _convert(cases: list[np.ndarray], return_type: str) -> Any:
    lengths = {case.shape[1] for case in cases}
    equal = len(lengths) == 1
    if return_type == "auto":
        return_type = "numpy3D" if equal else "nested_univ"
    if return_type == "list":
        return cases
    if return_type in ("numpy3D", "numpy3d", "np3D"):
        if not equal:
            raise ValueError(
                "return_type='numpy3D' needs equal-length series, but this dataset's lengths range from "
                f"{min(lengths)} to {max(lengths)}; use 'nested_univ', 'pd-multiindex', 'df-list' or 'list'"
            )
        return np.stack(cases)
    if return_type == "nested_univ":
        return _nested_univ(cases)
    from sktime.datatypes import convert_to

    return convert_to(np.stack(cases) if equal else _nested_univ(cases), to_type=return_type)


def load_uea(
    name: str,
    split: Literal["train", "test"] | None = None,
    *,
    data_home: str | os.PathLike[str] | None = None,
    return_type: str = "auto",
    download_if_missing: bool = True,
    verify: bool = True,
    y_dtype: str = "str",
) -> tuple[Any, np.ndarray]:
    """Load a UEA multivariate classification problem with the archive's TRAIN/TEST split.

    Parameters
    ----------
    name : str
        The archive's name, e.g. ``"JapaneseVowels"``, ``"UWaveGestureLibrary"``, ``"Heartbeat"``
        (case-insensitive; see ``list_datasets("classification")``).
    split : {"train", "test"} or None, default=None
        The archive's TRAIN or TEST file, or both (TRAIN cases first, then TEST, renumbered from 0).
    data_home : str or path-like, optional
        The data folder; default ``$AAREN_TS_DATA``, else ``~/aaren_ts_data``. Files are read from
        ``<data_home>/Multivariate_ts/<NAME>/<NAME>_TRAIN.ts``/``_TEST.ts`` when present; otherwise
        from sktime's bundled copy (JapaneseVowels, BasicMotions); otherwise downloaded there.
    return_type : str, default="auto"
        The container of ``X``: ``"auto"`` (``"numpy3D"`` for equal-length data, ``"nested_univ"``
        otherwise), any sktime Panel mtype (``"numpy3D"``, ``"nested_univ"``, ``"pd-multiindex"``,
        ``"df-list"``, ...), or ``"list"``: a list of arrays of shape (n_channels, length_i).
    download_if_missing : bool, default=True
        Download missing files through sktime's ``load_UCR_UEA_dataset`` (announced on stderr).
    verify : bool, default=True
        Check files in the data folder against the dataset card: size and sha256 where recorded
        (verified once per file version), and the number of cases, dimensions, lengths and classes.
    y_dtype : {"str", "int", "float"}, default="str"
        dtype of the labels: strings spelled as in the file (sktime's and aeon's readers lower-case
        them: ``"Standing"`` here is ``"standing"`` there), or numbers for numeric labels such as
        ``"1.0"`` (int64 or float64).

    Returns
    -------
    X : sktime Panel container or list
        The cases; numpy3D is (n_cases, n_channels, series_length).
    y : numpy.ndarray of shape (n_cases,)
        The class labels.

    Notes
    -----
    The files are read as the archive distributes them: ``#`` comments, the ``@`` header (keys in any
    case), ``:``-separated dimensions, ``?`` or ``NaN`` for a missing value (NaN in ``X``), LF or CRLF
    line ends, equal lengths (``@seriesLength``) or unequal ones (``@equalLength false``:
    JapaneseVowels, SpokenArabicDigits). With ``verify`` the header and the data must agree
    (``@dimensions``, ``@equalLength``, ``@seriesLength``) and match the dataset card.

    Raises
    ------
    ValueError
        If ``name``, ``split`` or ``return_type`` is invalid (unknown names list the known ones), or
        numpy3D is asked for unequal-length data.
    DatasetNotFoundError
        A :class:`FileNotFoundError`: a file is missing and could not be downloaded; the message says
        which file, where it looked and where upstream publishes it.
    DatasetIntegrityError
        A :class:`ValueError`: a file is truncated, altered or malformed.

    Examples
    --------
    >>> from aaren_ts.datasets import load_uea
    >>> X, y = load_uea("BasicMotions", split="train")
    >>> X.shape, len(y)
    ((40, 6, 100), 40)
    """
    info = _classification_info(name)
    splits = _check_split(split)
    if y_dtype not in ("str", "int", "float"):
        raise ValueError(f"y_dtype must be 'str', 'int' or 'float', got {y_dtype!r}")
    if not isinstance(return_type, str):
        raise TypeError(f"return_type must be a str, got {type(return_type).__name__}")
    if return_type not in _OWN_TYPES:
        from sktime.datatypes import MTYPE_LIST_PANEL

        if return_type not in (*MTYPE_LIST_PANEL, "numpy3d", "np3D"):
            raise ValueError(
                f"return_type must be 'auto', 'list' or an sktime Panel mtype {MTYPE_LIST_PANEL}, "
                f"got {return_type!r}"
            )
    if return_type in ("numpy3D", "numpy3d", "np3D") and not info.equal_length:
        low, high = info.series_length  # type: ignore[misc]
        raise ValueError(
            f"return_type='numpy3D' needs equal-length series, but {info.name}'s lengths range from "
            f"{low} to {high}; use 'nested_univ', 'pd-multiindex', 'df-list' or 'list'"
        )
    records = [info.train if part == "train" else info.test for part in splits]
    paths, in_home = _locate(info, records, data_home, download_if_missing)
    cases: list[np.ndarray] = []
    labels = []
    for part, record, path in zip(splits, records, paths, strict=True):
        if verify and in_home:
            verify_file(path, record, info.name)
        part_cases, part_labels = _read(path, info)
        if verify:
            _check_shape(part_cases, part_labels, info, part, path)
        cases.extend(part_cases)
        labels.append(part_labels)
    y = _cast_labels(np.concatenate(labels), y_dtype)
    return _convert(cases, return_type), y


def _take(X: Any, indices: np.ndarray) -> Any:
    if isinstance(X, np.ndarray):
        return X[indices]
    if isinstance(X, list):
        return [X[i] for i in indices]
    if isinstance(X, pd.DataFrame) and isinstance(X.index, pd.MultiIndex):
        instances = X.index.get_level_values(0).unique()
        chosen = instances[indices]
        return X.loc[X.index.get_level_values(0).isin(chosen)]
    if isinstance(X, pd.DataFrame):
        return X.iloc[indices]
    raise TypeError(
        "X must be a numpy array, a list, a nested_univ DataFrame or a pd-multiindex DataFrame, "
        f"got {type(X).__name__}"
    )


def _n_instances(X: Any) -> int:
    if isinstance(X, pd.DataFrame) and isinstance(X.index, pd.MultiIndex):
        return len(X.index.get_level_values(0).unique())
    return len(X)


def train_val_split(
    X: Any,
    y: np.ndarray,
    *,
    val_size: float | int = 0.2,
    random_state: int | None = 0,
    stratify: bool = True,
) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """Split the archive's TRAIN cases into training and validation cases (stratified, seeded).

    The protocol takes validation data (for early stopping or model selection) from TRAIN only, never
    from TEST: pass what ``load_uea(name, split="train")`` returns.

    Parameters
    ----------
    X : numpy.ndarray, list, or nested_univ / pd-multiindex DataFrame
        The TRAIN cases, in any container :func:`load_uea` returns.
    y : array-like of shape (n_cases,)
        Their labels.
    val_size : float or int, default=0.2
        Fraction (0 < val_size < 1) or number of validation cases.
    random_state : int or None, default=0
        Seed of the shuffle.
    stratify : bool, default=True
        Keep the class proportions in both parts.

    Returns
    -------
    X_train, X_val : same container as ``X``
    y_train, y_val : numpy.ndarray

    Raises
    ------
    ValueError
        If ``X`` and ``y`` differ in length, or a class is too small to stratify.

    Examples
    --------
    >>> from aaren_ts.datasets import load_uea, train_val_split
    >>> X, y = load_uea("BasicMotions", split="train")
    >>> X_tr, X_val, y_tr, y_val = train_val_split(X, y, val_size=0.25)
    >>> X_tr.shape[0], X_val.shape[0]
    (30, 10)
    """
    from sklearn.model_selection import train_test_split

    y = np.asarray(y)
    n = _n_instances(X)
    if n != len(y):
        raise ValueError(f"X has {n} cases but y has {len(y)} labels")
    train_idx, val_idx = train_test_split(
        np.arange(n),
        test_size=val_size,
        random_state=random_state,
        stratify=y if stratify else None,
    )
    train_idx, val_idx = np.sort(train_idx), np.sort(val_idx)
    return _take(X, train_idx), _take(X, val_idx), y[train_idx], y[val_idx]
