"""The forecasting protocol: borders, training-only scaling, stride-1 windows, the sktime splitter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aaren_ts.datasets import (
    fit_scaler,
    get_split,
    iter_windows,
    n_windows,
    protocol_cv,
    sliding_windows,
    split_borders,
)


def _tslib_borders(n: int, L: int) -> dict[str, tuple[int, int]]:
    """Time-Series-Library's Dataset_Custom borders, written out independently."""
    num_train, num_test = int(n * 0.7), int(n * 0.2)
    num_val = n - num_train - num_test
    b1 = [0, num_train - L, n - num_test - L]
    b2 = [num_train, num_train + num_val, n]
    return dict(zip(("train", "val", "test"), zip(b1, b2, strict=True), strict=True))


def test_ett_borders() -> None:
    assert split_borders("ETTh1") == {"train": (0, 8640), "val": (8544, 11520), "test": (11424, 14400)}
    assert split_borders("ETTh2", 336)["test"] == (11520 - 336, 14400)
    assert split_borders("ETTm1", 96) == {
        "train": (0, 34560),
        "val": (34560 - 96, 46080),
        "test": (46080 - 96, 57600),
    }
    assert split_borders("ETTm2", 0)["val"] == (34560, 46080)


@pytest.mark.parametrize(("name", "n"), [("Weather", 52696), ("ECL", 26304), ("ILI", 966)])
@pytest.mark.parametrize("L", [36, 96, 512])
def test_ratio_borders_match_time_series_library(name: str, n: int, L: int) -> None:
    assert split_borders(name, L) == _tslib_borders(n, L)
    assert split_borders(name, L, n_rows=1000) == _tslib_borders(1000, L)


def test_border_errors() -> None:
    with pytest.raises(ValueError, match="input_length must be >= 0"):
        split_borders("ETTh1", -1)
    with pytest.raises(TypeError, match="input_length must be an int"):
        split_borders("ETTh1", 9.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="longer than the training part"):
        split_borders("ILI", 700)
    with pytest.raises(ValueError, match="at least 14400 rows"):
        split_borders("ETTh1", 96, n_rows=1000)
    with pytest.raises(ValueError, match=r"unknown forecasting dataset 'Traffic'.*ETTh1"):
        split_borders("Traffic")
    with pytest.raises(ValueError, match="split must be one of"):
        get_split(np.zeros((14400, 2)), "ETTh1", "validation")  # type: ignore[arg-type]


def test_get_split_and_training_only_scaler() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(14400, 3))
    frame = pd.DataFrame(values, columns=["a", "b", "OT"])
    test = get_split(frame, "ETTh1", "test")
    assert len(test) == 2976 and test.index[0] == 11424 and test.index[-1] == 14399
    np.testing.assert_array_equal(get_split(values, "ETTh1", "val", 48), values[8640 - 48 : 11520])
    scaler = fit_scaler(frame, "ETTh1")
    np.testing.assert_allclose(scaler.mean_, values[:8640].mean(axis=0))
    np.testing.assert_allclose(scaler.scale_, values[:8640].std(axis=0))
    changed = values.copy()
    changed[8640:] += 100.0  # validation and test rows do not move the scaler
    np.testing.assert_allclose(fit_scaler(changed, "ETTh1").mean_, scaler.mean_)
    changed[8639] += 100.0  # the last training row does
    assert not np.allclose(fit_scaler(changed, "ETTh1").mean_, scaler.mean_)


@settings(max_examples=40, deadline=None)
@given(
    n_steps=st.integers(2, 60),
    n_channels=st.integers(1, 4),
    L=st.integers(1, 20),
    T=st.integers(1, 20),
)
def test_windows_are_every_stride_one_pair(n_steps: int, n_channels: int, L: int, T: int) -> None:
    values = np.arange(n_steps * n_channels, dtype=np.float64).reshape(n_steps, n_channels)
    count = n_windows(n_steps, L, T)
    assert count == max(n_steps - L - T + 1, 0)
    if count == 0:
        with pytest.raises(ValueError, match="no window"):
            sliding_windows(values, L, T)
        return
    X, Y = sliding_windows(values, L, T)
    assert X.shape == (count, L, n_channels) and Y.shape == (count, T, n_channels)
    pairs = list(iter_windows(values, L, T))
    assert len(pairs) == count
    for i, (x, y) in enumerate(pairs):  # the last window ends at the last row: none dropped
        np.testing.assert_array_equal(x, values[i : i + L])
        np.testing.assert_array_equal(y, values[i + L : i + L + T])
        np.testing.assert_array_equal(X[i], x)
        np.testing.assert_array_equal(Y[i], y)
    np.testing.assert_array_equal(Y[-1][-1], values[-1])


def test_windows_views_and_copies() -> None:
    values = np.arange(40.0).reshape(20, 2)
    X, _Y = sliding_windows(pd.DataFrame(values), 5, 3)
    assert not X.flags.writeable  # strided views of one array, no copy
    Xc, _Yc = sliding_windows(values, 5, 3, copy=True)
    assert Xc.flags.c_contiguous and not np.shares_memory(Xc, values)
    np.testing.assert_array_equal(Xc, X)
    with pytest.raises(ValueError, match="2-D"):
        sliding_windows(values[:, 0], 5, 3)
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        n_windows(20, 5, 0)


def test_protocol_cv_yields_the_same_windows() -> None:
    index = pd.date_range("2016-07-01", periods=40, freq="h")
    y = pd.DataFrame(np.arange(80.0).reshape(40, 2), index=index, columns=["a", "OT"])
    L, T = 6, 4
    cv = protocol_cv(L, T)
    assert cv.get_n_splits(y) == n_windows(len(y), L, T) == 31
    X, Y = sliding_windows(y, L, T)
    for i, (train, test) in enumerate(cv.split(y)):
        np.testing.assert_array_equal(y.iloc[train].to_numpy(), X[i])
        np.testing.assert_array_equal(y.iloc[test].to_numpy(), Y[i])
