"""The ``linear_share`` step: the linear model of each window blended into the networks.

The blend itself (the forecast is the weighted mean of the networks' and the map's) is tested on the
modules in ``tests/nn/test_linear_blend.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from tests._params import TINY_NETWORK

TINY = {
    **TINY_NETWORK,
    "context_length": 12,
    "horizon": 6,
    "max_epochs": 1,
    "n_estimators": 2,
}


def _panel(n_series: int = 12, length: int = 150, seed: int = 0) -> pd.DataFrame:
    """Series each driven by the same linear recursion (a damped cycle of 9 steps) and noise: a linear
    map of the last 12 values forecasts them well, a network trained for one epoch does not."""
    rng = np.random.default_rng(seed)
    frames = {}
    a1, a2 = 2 * 0.97 * np.cos(2 * np.pi / 9), -(0.97**2)
    for k in range(n_series):
        values = list(rng.normal(size=2))
        for _ in range(length - 2):
            values.append(a1 * values[-1] + a2 * values[-2] + rng.normal(scale=0.3))
        frames[f"s{k}"] = pd.DataFrame({"y": 20.0 + k + np.array(values)}, index=np.arange(length))
    return pd.concat(frames, names=["series", "time"])


def _fit(y: pd.DataFrame, **params) -> AarenForecaster:
    return AarenForecaster(**{**TINY, **params}).fit(y)


def test_auto_blends_the_map_in_where_the_tails_favour_it(capsys):
    forecaster = _fit(_panel(), verbose=2)
    assert forecaster.linear_share_ > 0
    assert "A linear model's share of" in capsys.readouterr().out
    plain = _fit(_panel(), skip_steps=["linear_share"])
    assert plain.linear_share_ == 0.0
    assert not np.allclose(forecaster.predict_array(), plain.predict_array())


def test_auto_keeps_the_networks_alone_without_two_tails_to_judge():
    single = _panel(n_series=1).droplevel(0)
    assert _fit(single).linear_share_ == 0.0
    assert _fit(_panel(), validation_fraction=None).linear_share_ == 0.0


def test_the_blend_streams_saves_and_loads(tmp_path):
    y = _panel()
    head, rest = y.groupby(level=0).head(120), y.groupby(level=0).tail(30)
    forecaster = _fit(head)
    assert forecaster.linear_share_ > 0
    restored = AarenForecaster.load(forecaster.save(tmp_path / "blend"))
    assert restored.linear_share_ == forecaster.linear_share_
    np.testing.assert_array_equal(restored.predict_array(), forecaster.predict_array())
    whole = _fit(head)
    whole.partial_update(rest)
    for _, part in rest.groupby(level=1):  # one step at a time, every series together
        restored.partial_update(part)
    np.testing.assert_allclose(restored.predict_array(), whole.predict_array(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_the_removed_parameter_names_the_step_that_replaced_it(share):
    with pytest.raises(TypeError, match=r"linear_share=.* is no longer supported.*skip_steps"):
        AarenForecaster(linear_share=share)
