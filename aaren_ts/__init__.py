"""aaren_ts: Aaren (attention as a recurrent neural network) for time series.

The estimators are imported lazily, so ``import aaren_ts.nn`` stays light (no sktime/skorch import).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "AarenClassifier": "aaren_ts.estimators.classifier",
    "AarenForecaster": "aaren_ts.estimators.forecaster",
    "NotFittedError": "aaren_ts.estimators._base",
    "NonPositiveValueWarning": "aaren_ts.utils.log_target",
}

__all__ = [
    "AarenClassifier",
    "AarenForecaster",
    "NonPositiveValueWarning",
    "NotFittedError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aaren_ts' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
