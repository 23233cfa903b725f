"""Constructor parameters that were folded into others or removed, translated with a ``FutureWarning``.

An estimator's ``__init__``, decorated by :func:`accepts_removed_parameters`, takes them beside its own
(its signature, which scikit-learn and sktime read, lists only the current ones) and sets the current
parameters that express the same setting (:func:`translate_removed`: ``early_stopping=False`` is
``patience=None``). A setting the current parameters cannot express raises ``TypeError`` naming the
parameter and what replaced it, as an unknown keyword would. Archives saved before the change load
through the same translation (their defaults map to today's).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["accepts_removed_parameters", "translate_removed"]

#: What became of each removed parameter, per estimator: a function from (its value, the current
#: parameters) to the current parameters it sets, raising ``_Unsupported`` where none can.
_Rule = Callable[[Any, dict[str, Any]], dict[str, Any]]


class _Unsupported(Exception):
    """The removed parameter's value has no equivalent today."""


def _skip(step: str, value: Any, neutral: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``value`` is the step's neutral choice: skip the step; ``"auto"``: nothing to change."""
    if value == "auto":
        return {}
    if value in neutral:
        return {"skip_steps": [*(params.get("skip_steps") or []), step]}
    raise _Unsupported


def _fixed(value: Any, kept: Any) -> dict[str, Any]:
    if value == kept or value is kept:
        return {}
    raise _Unsupported


def _early_stopping(patience_default: int) -> _Rule:
    def rule(value: Any, params: dict[str, Any]) -> dict[str, Any]:
        if not value:
            return {"patience": None}
        return {} if params.get("patience") is not None else {"patience": patience_default}

    return rule


def _calibration_rate(value: Any, params: dict[str, Any]) -> dict[str, Any]:
    return {} if params.get("interval_calibration") is None else {"interval_calibration": float(value)}


def _accelerator(value: Any, params: dict[str, Any]) -> dict[str, Any]:
    return {} if value is None else {"device": value}


def _segment_length(value: Any, params: dict[str, Any]) -> dict[str, Any]:
    context = params.get("context_length")
    if value is None or (context is not None and value == 2 * context):
        return {}
    raise _Unsupported


_FORECASTER: dict[str, tuple[str, _Rule]] = {
    "early_stopping": ("patience=None turns early stopping off", _early_stopping(5)),
    "calibration_rate": ("interval_calibration takes the rate", _calibration_rate),
    "accelerator": ("device takes the Accelerator", _accelerator),
    "fine_tune_epochs": (
        "update_epochs also sets the fine-tuning of fit after pretrain",
        lambda value, params: {"update_epochs": int(value)},
    ),
    "initial_forecast": (
        "the start is chosen on the validation tails; "
        'skip_steps=["initial_forecast"] starts from the naive forecast',
        lambda value, params: _skip("initial_forecast", value, ("naive",), params),
    ),
    "linear_share": (
        'the share is chosen on the validation tails; skip_steps=["linear_share"] keeps the networks alone',
        lambda value, params: _skip("linear_share", value, (None, 0, 0.0), params),
    ),
    "channel_embedding": (
        "every channel has its learned embedding",
        lambda value, params: _fixed(value, True),
    ),
    "average_best_epochs": (
        "training ends with the mean of the three best epochs' weights",
        lambda value, params: _fixed(value, 3),
    ),
    "normalization": (
        "every channel is standardised by its training statistics",
        lambda value, params: _fixed(value, "standard"),
    ),
    "segment_length": ("training segments are two context_length long", _segment_length),
}

_CLASSIFIER: dict[str, tuple[str, _Rule]] = {
    "early_stopping": ("a patience turns early stopping on, None off", _early_stopping(30)),
    "accelerator": ("device takes the Accelerator", _accelerator),
}

_RULES: dict[str, dict[str, tuple[str, _Rule]]] = {
    "AarenForecaster": _FORECASTER,
    "AarenClassifier": _CLASSIFIER,
}


def translate_removed(
    estimator_class: type, removed: dict[str, Any], params: dict[str, Any], warn: bool = True
) -> dict[str, Any]:
    """The current parameters that express the removed ones in ``removed``.

    Parameters
    ----------
    estimator_class : type
        The estimator's class (or a subclass of it).
    removed : dict
        The keyword arguments ``__init__`` did not name.
    params : dict
        The current parameters as given (read for settings a translation depends on).
    warn : bool, default=True
        Issue a ``FutureWarning`` per removed parameter (loading an archive does not).

    Returns
    -------
    dict
        Current parameter names and the values to set.

    Raises
    ------
    TypeError
        For a name that never was a parameter, or a removed parameter's value that has no
        equivalent, naming what replaced it.
    """
    owner = estimator_class.__name__
    rules = next((_RULES[c.__name__] for c in estimator_class.__mro__ if c.__name__ in _RULES), {})
    updates: dict[str, Any] = {}
    for name, value in removed.items():
        if name not in rules:
            raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {name!r}")
        replacement, rule = rules[name]
        try:
            updates.update(rule(value, {**params, **updates}))
        except _Unsupported:
            raise TypeError(f"{owner}: {name}={value!r} is no longer supported: {replacement}") from None
        if warn:
            warnings.warn(
                f"{owner}: {name} is deprecated and will be removed in a later release: {replacement}",
                FutureWarning,
                stacklevel=3,  # the call of the estimator's __init__
            )
    return updates


def accepts_removed_parameters(init: Callable[..., None]) -> Callable[..., None]:
    """Decorate an estimator's ``__init__`` so that it also takes its removed parameters: the keywords
    it does not name are translated (:func:`translate_removed`) after it ran, and the current
    parameters they map to are set. The decorated function shows ``init``'s signature, and keeps it
    as ``deprecated_original``, where scikit-learn and sktime look for an estimator's parameters."""
    names = set(inspect.signature(init).parameters)

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        removed = {name: kwargs.pop(name) for name in list(kwargs) if name not in names}
        init(self, *args, **kwargs)
        if removed:
            params = {name: getattr(self, name) for name in names if name != "self"}
            for name, value in translate_removed(type(self), removed, params).items():
                setattr(self, name, value)

    wrapper.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
    wrapper.deprecated_original = init  # type: ignore[attr-defined]
    return wrapper
