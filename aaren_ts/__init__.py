"""aaren_ts: Aaren (attention as a recurrent neural network) for time series.

The estimators are imported lazily, so ``import aaren_ts.nn`` stays light (no sktime/skorch import).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
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


#: Modules that moved, by their former names. A fitted forecaster pickled before the move names its
#: partner streams' classes by these, so unpickling it imports them.
_MOVED = {
    "aaren_ts._theta": "aaren_ts.statistical.theta",
    "aaren_ts._ets": "aaren_ts.statistical.ets",
    "aaren_ts._partner": "aaren_ts.statistical.partner",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a former module name (:data:`_MOVED`) as a module whose attributes are those of the
    module in its new place (found on demand: nothing is imported until a former name is)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        new = importlib.import_module(_MOVED[module.__name__])
        module.__doc__ = f"Former name of ``{new.__name__}``, whose attributes it gives."
        module.__getattr__ = lambda name: getattr(new, name)  # type: ignore[method-assign]


# First, so that a former name never finds a stale copy of the old module elsewhere on the path.
if not any(type(finder).__name__ == "_MovedModules" for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
