"""``load_uea`` on the ten UEA problems of the paper, each written as a small file in the archive's layout.

Only JapaneseVowels and UWaveGestureLibrary (and BasicMotions) are on the test machine; the others are
too large to ship. Each is written here with a few cases in the layout the archive distributes: ``#``
comment lines, the ``@`` header (``@problemName``, ``@timeStamps``, ``@missing``, ``@univariate``,
``@dimensions``, ``@equalLength``, ``@seriesLength`` when equal, ``@classLabel true <labels>``,
``@data``), the problem's real number of dimensions and series length (or unequal lengths),
``:``-separated dimensions, the label last, LF or CRLF line ends, and ``?`` or ``NaN`` for missing
values.

Which label vocabulary each problem uses: JapaneseVowels (``1`` ... ``9``), UWaveGestureLibrary
(``1.0`` ... ``8.0``) and BasicMotions (words, capitalised) are checked against the real files;
SelfRegulationSCP1's ``negativity``/``positivity`` is what users report reading from the archive.
The vocabularies of the other problems are written in the styles those files show (integers,
``1.0``-style numbers, words); the reader does not depend on which.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import DatasetIntegrityError, load_uea
from aaren_ts.datasets._ts_format import TsFormatError, read_ts


@dataclass(frozen=True)
class Layout:
    """How one problem's files look: dimensions, length (or range), labels, line ends."""

    name: str
    n_dims: int
    length: int | tuple[int, int]
    labels: tuple[str, ...]
    crlf: bool = False
    comment: str = "A problem of the UEA multivariate archive."


LAYOUTS = [
    Layout("EthanolConcentration", 3, 1751, ("E35", "E38", "E40", "E45")),
    Layout("FaceDetection", 144, 62, ("0", "1")),
    Layout("Handwriting", 3, 152, tuple(f"{k}.0" for k in range(1, 27))),
    Layout("Heartbeat", 61, 405, ("normal", "abnormal")),
    Layout(
        "JapaneseVowels",
        12,
        (7, 29),
        tuple(str(k) for k in range(1, 10)),
        comment="9 Japanese-male speakers were recorded saying the vowels 'a' and 'e'.",
    ),
    Layout("PEMS-SF", 963, 144, tuple(f"{k}.0" for k in range(1, 8))),
    Layout("SelfRegulationSCP1", 6, 896, ("negativity", "positivity")),
    Layout("SelfRegulationSCP2", 7, 1152, ("negativity", "positivity")),
    Layout("SpokenArabicDigits", 13, (4, 93), tuple(str(k) for k in range(1, 11))),
    Layout(
        "UWaveGestureLibrary",
        3,
        315,
        tuple(f"{k}.0" for k in range(1, 9)),
        crlf=True,
        comment="A set of eight simple gestures generated from accelerometers. We have  ",
    ),
]


def _header(layout: Layout, missing: bool) -> list[str]:
    equal = isinstance(layout.length, int)
    lines = [
        f"#{layout.comment}",
        "#",
        "#Données, “quoted” – UTF-8 punctuation as in some of the archive's comments",
        f"@problemName {layout.name}",
        "@timeStamps false",
        f"@missing {'true' if missing else 'false'}",
        "@univariate false",
        f"@dimensions {layout.n_dims}",
        f"@equalLength {'true' if equal else 'false'}",
    ]
    if equal:
        lines.append(f"@seriesLength {layout.length}")
    lines += [f"@classLabel true {' '.join(layout.labels)}", "@data"]
    return lines


def _cases(layout: Layout, n_cases: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if isinstance(layout.length, int):
        lengths = [layout.length] * n_cases
    else:
        low, high = layout.length
        lengths = [low, high, *rng.integers(low, high + 1, size=n_cases - 2)][:n_cases]
    return [np.round(rng.normal(size=(layout.n_dims, n)), 6) for n in lengths]


def _write(
    home: Path, layout: Layout, split: str, cases: list[np.ndarray], labels: list[str], missing_at=()
) -> Path:
    """Write cases in the archive's layout; ``missing_at`` = (case, dim, t, token) written as token."""
    holes = {(c, d, t): token for c, d, t, token in missing_at}
    rows = []
    for i, (case, label) in enumerate(zip(cases, labels, strict=True)):
        dims = []
        for d, series in enumerate(case):
            values = [holes.get((i, d, t), repr(float(v))) for t, v in enumerate(series)]
            dims.append(",".join(values))
        rows.append(":".join(dims) + f":{label}")
    path = home / "Multivariate_ts" / layout.name / f"{layout.name}_{split}.ts"
    path.parent.mkdir(parents=True, exist_ok=True)
    newline = "\r\n" if layout.crlf else "\n"
    text = newline.join(_header(layout, bool(missing_at)) + rows) + newline
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_each_problem_of_the_paper_in_its_upstream_layout(tmp_path: Path, layout: Layout) -> None:
    n_train, n_test = 4, 3
    train = _cases(layout, n_train, seed=0)
    test = _cases(layout, n_test, seed=1)
    train_labels = [layout.labels[i % len(layout.labels)] for i in range(n_train)]
    test_labels = [layout.labels[-1 - i % len(layout.labels)] for i in range(n_test)]
    holes = [(0, 0, 0, "?"), (1, layout.n_dims - 1, 2, "NaN"), (2, 0, 3, "?")]
    _write(tmp_path, layout, "TRAIN", train, train_labels, missing_at=holes)
    _write(tmp_path, layout, "TEST", test, test_labels)

    X, y = load_uea(
        layout.name, data_home=tmp_path, verify=False, download_if_missing=False, return_type="list"
    )
    assert list(y) == train_labels + test_labels  # spelled as in the file
    expected = [case.copy() for case in train + test]
    for c, d, t, _token in holes:
        expected[c][d, t] = np.nan
    assert len(X) == n_train + n_test
    for got, want in zip(X, expected, strict=True):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)  # NaN where the file has ? or NaN

    X_auto, _ = load_uea(layout.name, "test", data_home=tmp_path, verify=False, download_if_missing=False)
    if isinstance(layout.length, int):
        assert isinstance(X_auto, np.ndarray) and X_auto.shape == (n_test, layout.n_dims, layout.length)
        np.testing.assert_array_equal(X_auto, np.stack(test))
    else:
        assert isinstance(X_auto, pd.DataFrame) and X_auto.shape == (n_test, layout.n_dims)
        assert [len(X_auto.iloc[i, 0]) for i in range(n_test)] == [case.shape[1] for case in test]
        with pytest.raises(ValueError, match="equal-length"):
            load_uea(layout.name, data_home=tmp_path, verify=False, return_type="numpy3D")


def test_unequal_lengths_in_every_container(tmp_path: Path) -> None:
    layout = LAYOUTS[8]  # SpokenArabicDigits: 4 to 93 steps
    cases = _cases(layout, 5, seed=2)
    labels = ["1", "10", "2", "10", "3"]
    _write(tmp_path, layout, "TRAIN", cases, labels)
    kw = {"data_home": tmp_path, "verify": False, "download_if_missing": False}
    nested, y = load_uea(layout.name, "train", return_type="nested_univ", **kw)
    assert list(nested.columns) == [f"dim_{j}" for j in range(13)]
    np.testing.assert_array_equal(nested.iloc[1, 12].to_numpy(), cases[1][12])
    multi, _ = load_uea(layout.name, "train", return_type="pd-multiindex", **kw)
    assert multi.shape == (sum(case.shape[1] for case in cases), 13)
    assert y.tolist() == labels
    _, y_int = load_uea(layout.name, "train", y_dtype="int", **kw)
    assert y_int.tolist() == [1, 10, 2, 10, 3] and y_int.dtype == np.int64


def test_numeric_labels_as_numbers(tmp_path: Path) -> None:
    layout = LAYOUTS[5]  # PEMS-SF, labels 1.0 ... 7.0
    _write(tmp_path, layout, "TEST", _cases(layout, 2, seed=3), ["7.0", "1.0"])
    kw = {"data_home": tmp_path, "verify": False, "download_if_missing": False}
    _, y_int = load_uea("PEMS-SF", "test", y_dtype="int", **kw)
    _, y_float = load_uea("PEMS-SF", "test", y_dtype="float", **kw)
    assert y_int.tolist() == [7, 1] and y_float.tolist() == [7.0, 1.0]
    layout = LAYOUTS[3]  # Heartbeat: words
    _write(tmp_path, layout, "TEST", _cases(layout, 2, seed=3), ["normal", "abnormal"])
    with pytest.raises(ValueError, match=r"numeric class labels.*'abnormal', 'normal'"):
        load_uea("Heartbeat", "test", y_dtype="int", **kw)
    with pytest.raises(ValueError, match="y_dtype must be"):
        load_uea("Heartbeat", "test", y_dtype="category", **kw)


def _file(tmp_path: Path, text: str, name: str = "x.ts") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


_HEAD = "@problemName X\n@timeStamps false\n@missing false\n@univariate false\n@dimensions 2\n"


def test_header_spellings_comments_and_whitespace(tmp_path: Path) -> None:
    text = (
        "\ufeff% an ARFF-style comment\n#a comment\n\n"
        "@problemname X\n@timestamps   false\n@MISSING true\n@univariate\tfalse\n@dimensions 2\n"
        "@equallength true\n@serieslength 3\n@classlabel true  a  B\n@data\n"
        "1,2,3:4,5,6:a\n\n  1.5e-3,?,NaN : -1,nan,0 :B  \n# a comment after the data\n"
    )
    header, cases, y = read_ts(_file(tmp_path, text))
    assert header.class_labels == ("a", "B") and header.missing and header.series_length == 3
    assert y.tolist() == ["a", "B"]
    np.testing.assert_array_equal(cases[1], [[1.5e-3, np.nan, np.nan], [-1, np.nan, 0]])


def test_a_regression_file_with_target_values(tmp_path: Path) -> None:
    text = "@problemName R\n@timeStamps false\n@univariate true\n@targetLabel true\n@data\n"
    text += "1,2,3:0.25\n4,5:-1.5\n"
    header, cases, y = read_ts(_file(tmp_path, text))
    assert header.target_label and header.class_labels is None
    assert [case.shape for case in cases] == [(1, 3), (1, 2)] and y.tolist() == ["0.25", "-1.5"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("@equalLength true\n@classLabel true a\n@data\n1,2:3,4:a\n1,2,3:4,5,6:a\n", "@equalLength is true"),
        ("@equalLength true\n@seriesLength 3\n@classLabel true a\n@data\n1,2:3,4:a\n", "@seriesLength is 3"),
        ("@classLabel true a\n@data\n1,2:3,4:5,6:a\n", "@dimensions is 2 but the cases have 3"),
        ("@classLabel true a\n@data\n1,2:3,4:a\n1,2:a\n", "different numbers of dimensions"),
        ("@classLabel true a\n@data\n1,2:3:a\n", "dimensions of one case differ in length"),
        ("@classLabel true a\n@data\n1,x:3,4:a\n", "line 8: a value is not a number"),
        ("@classLabel true a\n@data\n1,2:3,4:\n", "no class label"),
        ("@classLabel true a\n@data\n1,2::a\n", "dimension 1 is empty"),
        ("@classLabel true\n@data\n1,2:3,4:a\n", "must list the class labels"),
        ("@classLabel maybe a\n@data\n", "must be true or false"),
        ("@classLabel true a\n@data\n@dimensions 2\n1,2:3,4:a\n", "a header line after @data"),
        ("@classLabel true a\n1,2:3,4:a\n", "data before the @data line"),
        ("@classLabel true a\n", "no @data line"),
        ("@classLabel true a\n@data\n", "no cases after @data"),
        ("@classLabel true a\n@data extra\n", "@data takes no value"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path: Path, body: str, message: str) -> None:
    path = _file(tmp_path, _HEAD + body)
    with pytest.raises(TsFormatError, match=message) as info:
        read_ts(path)
    assert str(path) in str(info.value)


def test_time_stamps_are_refused(tmp_path: Path) -> None:
    text = (
        "@problemName X\n@timeStamps true\n@univariate true\n@classLabel true a\n@data\n(0,1.0),(1,2.0):a\n"
    )
    with pytest.raises(TsFormatError, match="@timeStamps true is not supported"):
        read_ts(_file(tmp_path, text))


def test_a_malformed_file_in_the_data_folder(tmp_path: Path) -> None:
    layout = LAYOUTS[1]  # FaceDetection
    path = _write(tmp_path, layout, "TRAIN", _cases(layout, 2, seed=4), ["0", "1"])
    path.write_text(path.read_text().replace("@seriesLength 62", "@seriesLength 63"))
    with pytest.raises(DatasetIntegrityError, match=r"FaceDetection file .* @seriesLength is 63"):
        load_uea("FaceDetection", "train", data_home=tmp_path, verify=False)


@pytest.mark.data
@pytest.mark.parametrize("name", ["JapaneseVowels", "UWaveGestureLibrary", "BasicMotions"])
def test_real_files_read_as_sktime_reads_them(shared_data_home: Path, name: str) -> None:
    from sktime.datasets import load_from_tsfile

    for split in ("TRAIN", "TEST"):
        path = shared_data_home / "Multivariate_ts" / name / f"{name}_{split}.ts"
        _header, cases, y = read_ts(path)
        X, y_sktime = load_from_tsfile(str(path), return_data_type="nested_univ")
        assert np.char.lower(y).tolist() == list(y_sktime)  # sktime lower-cases the labels
        for i, case in enumerate(cases):
            for j in range(X.shape[1]):
                np.testing.assert_array_equal(case[j], X.iloc[i, j].to_numpy())


def test_a_download_that_sktime_cannot_parse_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aaren_ts.datasets import uea as uea_module

    layout = LAYOUTS[1]  # FaceDetection

    def download_then_fail(info: object, data_home: object) -> None:  # sktime parses after downloading
        for split in ("TRAIN", "TEST"):
            _write(
                tmp_path, layout, split, _cases(layout, 2, seed=5), ["0", "1"], missing_at=[(0, 0, 0, "?")]
            )
        raise OSError("sktime's reader failed on the file it downloaded")

    monkeypatch.setattr(uea_module, "_download", download_then_fail)
    X, y = load_uea("FaceDetection", data_home=tmp_path, verify=False)
    assert X.shape == (4, 144, 62) and np.isnan(X[0, 0, 0]) and y.tolist() == ["0", "1", "0", "1"]
