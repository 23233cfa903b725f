"""Modules that moved keep their former names for unpickling (``aaren_ts._MOVED``).

A fitted forecaster pickled before the statistical partners moved into ``aaren_ts.statistical`` names
their classes by the former top-level modules (``aaren_ts._theta``, ``aaren_ts._ets``,
``aaren_ts._partner``); it must still unpickle, with the classes in their new place.
"""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

import aaren_ts
from aaren_ts.statistical.partner import PartnerStreams
from aaren_ts.statistical.theta import ThetaStreams


@pytest.mark.parametrize(("former", "new"), sorted(aaren_ts._MOVED.items()))
def test_a_former_name_gives_the_new_modules_attributes(former: str, new: str) -> None:
    old_module, new_module = importlib.import_module(former), importlib.import_module(new)
    public = [name for name in vars(new_module) if not name.startswith("__")]
    assert public
    assert all(getattr(old_module, name) is getattr(new_module, name) for name in public)
    with pytest.raises(AttributeError):
        old_module.no_such_name  # noqa: B018


def test_an_object_pickled_under_the_former_names_unpickles() -> None:
    streams = PartnerStreams(ThetaStreams.empty(np.array([0.3, 0.7]), np.zeros((2, 4))), None)
    streams.update(np.array([1.0, 2.0]), np.array([0, 1]))
    data = pickle.dumps(streams, protocol=0)
    for former, new in aaren_ts._MOVED.items():
        data = data.replace(f"c{new}\n".encode(), f"c{former}\n".encode())
    assert b"caaren_ts._partner\n" in data and b"caaren_ts._theta\n" in data
    assert b"statistical" not in data
    loaded = pickle.loads(data)
    assert type(loaded) is PartnerStreams and type(loaded.theta) is ThetaStreams
    for name, value in streams.arrays().items():
        np.testing.assert_array_equal(loaded.arrays()[name], value)


def test_other_private_names_are_not_made_up() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("aaren_ts._no_such_module")
