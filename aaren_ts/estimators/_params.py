"""Declarative checks of constructor parameters: one table per estimator, checked at ``fit``.

Each estimator lists its parameters in a ``_parameter_constraints`` dict (as scikit-learn's estimators
do) mapping a name to a :class:`Constraint`; :func:`validate_params` checks every entry and raises one
``ValueError`` naming the parameter, what it must be and what it got. The parameters both estimators
share are in :data:`SHARED_CONSTRAINTS`, so a shared concept is checked in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "SHARED_CONSTRAINTS",
    "Constraint",
    "DistinctPositiveInts",
    "Each",
    "Either",
    "Flag",
    "Interval",
    "Optional",
    "Options",
    "PositiveInt",
    "Registered",
    "Size",
    "validate_params",
]


class Constraint:
    """What a parameter must be: :meth:`check` returns whether ``value`` is acceptable."""

    description = "valid"

    def check(self, value: Any) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.description


@dataclass(frozen=True)
class Interval(Constraint):
    """A real number (``integer=True``: an integer) between ``low`` and ``high`` (``None``: unbounded)."""

    low: float | None = None
    high: float | None = None
    closed: str = "both"  # "both", "left", "right" or "neither"
    integer: bool = False

    def check(self, value: Any) -> bool:
        kind = Integral if self.integer else Real
        if isinstance(value, bool) or not isinstance(value, kind) or np.isnan(float(value)):
            return False
        low_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        high_ok = self.high is None or (
            value <= self.high if self.closed in ("both", "right") else value < self.high
        )
        return low_ok and high_ok

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            left = "[" if self.closed in ("both", "left") else "("
            right = "]" if self.closed in ("both", "right") else ")"
            return f"{kind} in {left}{self.low}, {self.high}{right}"
        if self.low is not None:
            return f"{kind} {'>=' if self.closed in ('both', 'left') else '>'} {self.low}"
        return kind


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values (strings, ``None``, ...)."""

    values: tuple[Any, ...]

    def check(self, value: Any) -> bool:
        return any(value is v or (isinstance(value, str) and value == v) for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Optional(Constraint):
    """``None`` or what ``inner`` accepts."""

    inner: Constraint

    def check(self, value: Any) -> bool:
        return value is None or self.inner.check(value)

    def __str__(self) -> str:
        return f"None or {self.inner}"


@dataclass(frozen=True)
class Either(Constraint):
    """What ``first`` or ``second`` accepts."""

    first: Constraint
    second: Constraint

    def check(self, value: Any) -> bool:
        return self.first.check(value) or self.second.check(value)

    def __str__(self) -> str:
        return f"{self.first} or {self.second}"


@dataclass(frozen=True)
class Each(Constraint):
    """A non-empty list or tuple whose every entry ``inner`` accepts."""

    inner: Constraint

    def check(self, value: Any) -> bool:
        return isinstance(value, list | tuple) and len(value) > 0 and all(self.inner.check(v) for v in value)

    def __str__(self) -> str:
        return f"a non-empty list or tuple, each {self.inner}"


@dataclass(frozen=True)
class Flag(Constraint):
    """A boolean."""

    def check(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)

    def __str__(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class Names(Constraint):
    """A list or tuple of (column) names; a single string is refused, as it is easily a mistake."""

    def check(self, value: Any) -> bool:
        return isinstance(value, list | tuple)

    def __str__(self) -> str:
        return "a list or tuple of column names"


@dataclass(frozen=True, eq=False)
class Registered(Constraint):
    """The name of an entry of ``registry``, looked up when checked (later registrations count)."""

    registry: Mapping[str, Any]

    def check(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.registry

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(k) for k in sorted(self.registry))


@dataclass(frozen=True)
class _Anything(Constraint):
    """Checked elsewhere (``optimizer``, ``device``: their resolvers say what is wrong)."""

    def check(self, value: Any) -> bool:
        return True


class _RandomState(Constraint):
    """``None``, a non-negative integer or a ``numpy.random.RandomState`` (sklearn's convention)."""

    description = "None, a non-negative int or a numpy.random.RandomState"

    def check(self, value: Any) -> bool:
        if value is None or isinstance(value, np.random.RandomState):
            return True
        return isinstance(value, Integral) and not isinstance(value, bool) and value >= 0


class _Callbacks(Constraint):
    """``None`` or a list or tuple of skorch callbacks, each bare or as a ``(name, callback)`` pair."""

    description = "None or a list of skorch callbacks or (name, callback) pairs"

    def check(self, value: Any) -> bool:
        if value is None:
            return True
        if not isinstance(value, list | tuple):
            return False
        from skorch.callbacks import Callback

        def is_callback(item: Any) -> bool:
            return isinstance(item, Callback) or (isinstance(item, type) and issubclass(item, Callback))

        return all(
            is_callback(item)
            or (
                isinstance(item, tuple)
                and len(item) == 2
                and isinstance(item[0], str)
                and is_callback(item[1])
            )
            for item in value
        )


PositiveInt = Interval(1, None, integer=True)


def Size(most: int) -> Interval:
    """A positive integer of at most ``most``: a size that decides how much memory and time a network
    or a stream takes, bounded (far above any useful value) so that a parameter or a crafted file is
    refused before anything is built."""
    return Interval(1, most, integer=True)


_Fraction = Interval(0.0, 1.0, closed="left")


#: Parameters both estimators have, with one meaning and one check.
SHARED_CONSTRAINTS: dict[str, Constraint] = {
    "backbone": Options(("aaren", "transformer")),
    "d_model": Size(4096),
    "n_heads": Size(256),
    "n_layers": Size(64),
    "d_ff": Size(16384),
    "dropout": _Fraction,
    "optimizer": _Anything(),  # a name or a class: resolve_optimizer explains what is wrong
    "lr": Interval(0.0, None, closed="neither"),
    "weight_decay": Interval(0.0, None),
    "lr_schedule": Options(("cosine", "exponential", None)),
    "lr_decay": Interval(0.0, 1.0, closed="right"),
    "batch_size": PositiveInt,
    "max_epochs": PositiveInt,
    "n_estimators": Size(64),
    "validation_fraction": Optional(_Fraction),
    "patience": Optional(PositiveInt),
    "device": _Anything(),  # a name, a torch.device or an Accelerator: resolve_device explains what is wrong
    "random_state": _RandomState(),
    "verbose": Interval(0, None, integer=True),
    "callbacks": _Callbacks(),
    "num_threads": Optional(PositiveInt),
}


def validate_params(params: Mapping[str, Any], constraints: Mapping[str, Constraint], owner: str) -> None:
    """Check every parameter in ``constraints`` against ``params``.

    Parameters
    ----------
    params : mapping
        The estimator's parameters (``get_params(deep=False)``).
    constraints : mapping
        ``{name: Constraint}``; every name must be in ``params``.
    owner : str
        The estimator's class name, for the message.

    Raises
    ------
    ValueError
        For the first parameter that does not satisfy its constraint, naming it, what it must be and
        the value it got.
    """
    for name, constraint in constraints.items():
        value = params[name]
        if not constraint.check(value):
            raise ValueError(f"{owner}: {name} must be {constraint}, got {value!r}")


class DistinctPositiveInts(Constraint):
    """A non-empty list or tuple of distinct positive integers (the stem's dilations)."""

    description = "a non-empty tuple of distinct positive integers"

    def check(self, value: Any) -> bool:
        if not isinstance(value, list | tuple) or not value:
            return False
        ok = all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1 for v in value)
        return ok and len(set(value)) == len(value)
