"""A reader of the ``.ts`` files of the UEA & UCR time series classification archive.

The format, as the archive distributes it (``<NAME>_TRAIN.ts`` and ``<NAME>_TEST.ts``):

- any number of comment lines starting with ``#`` (free text, sometimes UTF-8 punctuation, sometimes
  Markdown), and blank lines; before ``@data``, ``%`` (ARFF's comment mark) starts a comment too;
- header lines ``@key value``, keys case-insensitive (``@problemName``, ``@timeStamps``, ``@missing``,
  ``@univariate``, ``@dimensions``, ``@equalLength``, ``@seriesLength``, ``@classLabel true <labels>``
  or ``@classLabel false``; regression files have ``@targetLabel true``), closed by ``@data``;
- one case per line: the dimensions separated by ``:``, each a comma-separated list of values, then
  the class label; ``?`` or ``NaN`` marks a missing value;
- unequal-length problems (``@equalLength false``, no ``@seriesLength``) give each case its own
  length, the same for all its dimensions;
- line ends are LF or CRLF.

Unlike the readers of sktime and aeon, this one keeps the class labels as the file spells them (both
lower-case every data line) and parses each line with numpy: on a file shaped like FaceDetection's
(144 dimensions of 62 points a case) it takes about a quarter of the time of sktime's reader.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["TsFormatError", "TsHeader", "read_ts"]

_BOOLEAN_KEYS = {
    "timestamps": "timestamps",
    "missing": "missing",
    "univariate": "univariate",
    "equallength": "equal_length",
}


class TsFormatError(ValueError):
    """A ``.ts`` file that does not follow the format (the message gives the file and line)."""


@dataclass(frozen=True)
class TsHeader:
    """The header of a ``.ts`` file; a key the file does not give is None.

    Attributes
    ----------
    problem_name : str or None
        ``@problemName``.
    timestamps, missing, univariate, equal_length : bool or None
        The boolean keys (``@timeStamps``, ``@missing``, ``@univariate``, ``@equalLength``).
    dimensions : int or None
        ``@dimensions``.
    series_length : int or None
        ``@seriesLength``.
    class_labels : tuple of str or None
        The labels listed by ``@classLabel true``, as spelled in the file; None when the file has no
        class labels (``@classLabel false``, or a ``@targetLabel`` regression file).
    target_label : bool
        ``@targetLabel true``: each case ends with a numeric target instead of a class label.
    """

    problem_name: str | None = None
    timestamps: bool | None = None
    missing: bool | None = None
    univariate: bool | None = None
    dimensions: int | None = None
    equal_length: bool | None = None
    series_length: int | None = None
    class_labels: tuple[str, ...] | None = None
    target_label: bool = False

    @property
    def has_target(self) -> bool:
        """Whether each data line ends with a label or target."""
        return self.class_labels is not None or self.target_label


def _boolean(value: str, key: str, where: str) -> bool:
    word = value.strip().lower()
    if word not in ("true", "false"):
        raise TsFormatError(f"{where}: @{key} must be true or false, got {value!r}")
    return word == "true"


def _integer(value: str, key: str, where: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise TsFormatError(f"{where}: @{key} must be an integer, got {value!r}") from None
    if number < 1:
        raise TsFormatError(f"{where}: @{key} must be positive, got {number}")
    return number


def _parse_header_line(line: str, fields: dict[str, object], where: str) -> None:
    key, _, value = line[1:].partition(" ")
    key = key.strip().lower()
    value = " ".join(value.split())  # runs of spaces or tabs count as one
    if key == "problemname":
        fields["problem_name"] = value or None
    elif key in _BOOLEAN_KEYS:
        fields[_BOOLEAN_KEYS[key]] = _boolean(value, key, where)
    elif key in ("dimensions", "dimension"):
        fields["dimensions"] = _integer(value, key, where)
    elif key == "serieslength":
        fields["series_length"] = _integer(value, key, where)
    elif key == "classlabel":
        flag, _, labels = value.partition(" ")
        if _boolean(flag, key, where):
            if not labels:
                raise TsFormatError(f"{where}: @classLabel true must list the class labels")
            fields["class_labels"] = tuple(labels.split(" "))
        else:
            fields["class_labels"] = None
    elif key == "targetlabel":
        fields["target_label"] = _boolean(value, key, where)
    # other keys (none in the archive today) are ignored, as the archive's own readers do


def _parse_case(line: str, header: TsHeader, where: str) -> tuple[np.ndarray, str | None]:
    fields = line.split(":")
    label = fields.pop().strip() if header.has_target else None
    if header.has_target and not label:
        raise TsFormatError(f"{where}: the case has no class label after its last ':'")
    counts = [field.count(",") + 1 for field in fields]
    if any(not field.strip() for field in fields):
        empty = next(i for i, field in enumerate(fields) if not field.strip())
        raise TsFormatError(f"{where}: dimension {empty} is empty")
    if len(set(counts)) != 1:
        raise TsFormatError(
            f"{where}: the dimensions of one case differ in length ({min(counts)} to {max(counts)} values)"
        )
    text = ",".join(fields).replace("?", "nan")  # numpy reads NaN and nan itself
    try:
        values = np.array(text.split(","), dtype=np.float64)
    except ValueError as error:
        raise TsFormatError(f"{where}: a value is not a number ({error})") from None
    return values.reshape(len(fields), counts[0]), label


def _check_header(header: TsHeader, where: str) -> None:
    if header.timestamps:
        raise TsFormatError(
            f"{where}: @timeStamps true is not supported (no problem of the classification archive "
            "has time stamps)"
        )


def _check_cases(header: TsHeader, cases: list[np.ndarray], path: str) -> None:
    if not cases:
        raise TsFormatError(f"{path}: the file has no cases after @data")
    n_dims = {case.shape[0] for case in cases}
    if len(n_dims) != 1:
        raise TsFormatError(f"{path}: the cases have different numbers of dimensions: {sorted(n_dims)}")
    (n_dim,) = n_dims
    if header.dimensions is not None and n_dim != header.dimensions:
        raise TsFormatError(f"{path}: @dimensions is {header.dimensions} but the cases have {n_dim}")
    if header.univariate and n_dim != 1:
        raise TsFormatError(f"{path}: @univariate is true but the cases have {n_dim} dimensions")
    lengths = {case.shape[1] for case in cases}
    if header.equal_length and len(lengths) != 1:
        raise TsFormatError(
            f"{path}: @equalLength is true but the series lengths range from {min(lengths)} to {max(lengths)}"
        )
    if header.equal_length and header.series_length is not None and lengths != {header.series_length}:
        raise TsFormatError(
            f"{path}: @seriesLength is {header.series_length} but the series have {lengths.pop()} values"
        )


def read_ts(path: str | os.PathLike[str]) -> tuple[TsHeader, list[np.ndarray], np.ndarray]:
    """Read a ``.ts`` file of the classification archive.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    header : TsHeader
        The header's keys.
    cases : list of numpy.ndarray
        One float64 array of shape (n_dimensions, length) per case; missing values are NaN.
    y : numpy.ndarray of shape (n_cases,)
        The class labels as strings spelled as in the file (the targets, as strings, of a
        ``@targetLabel`` file; empty when the file has no labels).

    Raises
    ------
    TsFormatError
        A :class:`ValueError` naming the file and line, when the file breaks the format: a header key
        with a bad value, data before ``@data``, a case with a different number of dimensions, a value
        that is not a number, lengths that contradict ``@equalLength``/``@seriesLength``/``@dimensions``.
    OSError
        If the file cannot be read.
    """
    name = str(path)
    fields: dict[str, object] = {}
    header: TsHeader | None = None
    cases: list[np.ndarray] = []
    labels: list[str] = []
    with Path(path).open(encoding="utf-8-sig", errors="replace", newline=None) as file:
        for number, raw in enumerate(file, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{name}, line {number}"
            if header is None:
                if line.startswith("%"):  # ARFF-style comment, in some files the archive's tools ship
                    continue
                if not line.startswith("@"):
                    raise TsFormatError(f"{where}: data before the @data line")
                if line.lower().split()[0] == "@data":
                    if line.lower() != "@data":
                        raise TsFormatError(f"{where}: @data takes no value")
                    header = TsHeader(**fields)  # type: ignore[arg-type]
                    _check_header(header, where)
                else:
                    _parse_header_line(line, fields, where)
                continue
            if line.startswith("@"):
                raise TsFormatError(f"{where}: a header line after @data")
            values, label = _parse_case(line, header, where)
            cases.append(values)
            if label is not None:
                labels.append(label)
    if header is None:
        raise TsFormatError(f"{name}: no @data line (an empty, truncated or non-.ts file)")
    _check_cases(header, cases, name)
    return header, cases, np.asarray(labels, dtype=str)
