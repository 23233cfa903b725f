"""A pd-multiindex panel is read in the order of its time level, whatever the order of its rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenClassifier
from tests._params import TINY_NETWORK


def _frame(n: int = 12, length: int = 15, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    values = rng.normal(size=(n, length)) + np.linspace(0, 2, length) * y[:, None]
    index = pd.MultiIndex.from_product([range(n), range(length)], names=["instance", "time"])
    return pd.DataFrame({"x": values.ravel()}, index=index), y


@pytest.fixture(scope="module")
def fitted() -> AarenClassifier:
    X, y = _frame()
    return AarenClassifier(**TINY_NETWORK, max_epochs=2, n_random_features=840).fit(X, y)


def test_shuffled_rows_give_the_same_probabilities(fitted) -> None:
    X, _ = _frame(seed=1)
    shuffled = X.sample(frac=1.0, random_state=0)
    assert not shuffled.index.equals(X.index)
    first_seen = shuffled.index.get_level_values(0).unique()  # the instances' order: as they appear
    np.testing.assert_array_equal(fitted.predict_proba(shuffled), fitted.predict_proba(X)[first_seen])


def test_a_repeated_time_point_is_refused_naming_the_instance(fitted) -> None:
    X, _ = _frame(seed=1)
    repeated = pd.concat([X, X.loc[[(3, 7)]]])
    with pytest.raises(ValueError, match=r"instance 3 has more than one row at time point 7"):
        fitted.predict_proba(repeated)
