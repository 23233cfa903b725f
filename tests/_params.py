"""Estimator settings the tests share: networks small enough to train in a fraction of a second.

A test module starts from these and names what it changes, ``{**TINY_FORECASTER, "max_epochs": 2}``,
so the settings every test relies on are written once.
"""

from __future__ import annotations

from typing import Any

#: The smallest encoder both estimators accept, on the CPU and seeded.
TINY_NETWORK: dict[str, Any] = {
    "d_model": 8,
    "n_heads": 2,
    "n_layers": 1,
    "d_ff": 16,
    "device": "cpu",
    "random_state": 0,
}

#: A forecaster of one network (the ensemble's own tests: ``test_forecaster_ensemble.py``) that
#: trains one epoch on short windows and forecasts three steps.
TINY_FORECASTER: dict[str, Any] = {
    **TINY_NETWORK,
    "n_estimators": 1,
    "context_length": 6,
    "max_epochs": 1,
    "horizon": 3,
}
