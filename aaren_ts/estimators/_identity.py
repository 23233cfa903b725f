"""Series ids and column names as plain data for a saved model, and back, with their types.

A saved model names its series and columns as the data did: an id that was a ``Timestamp`` loads as
that ``Timestamp`` (a later update finds its stream), a tuple as that tuple (a MultiIndex's column
names as a MultiIndex). :func:`key_to_plain` writes ``str``, ``int``, ``float``, ``bool`` and ``None``
as they are, a tuple as a list, and a ``Timestamp`` or ``Period`` as a one-entry dict naming its type;
:func:`key_from_plain` reverses it. Anything else cannot be saved without pickle, and says so.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["key_from_plain", "key_to_plain", "names_from_plain"]


def key_to_plain(key: Hashable) -> Any:
    """``key`` (a series id or column name) as plain data; ``ValueError`` for a type it cannot keep."""
    if isinstance(key, np.generic):
        key = key.item()
    if key is None or isinstance(key, bool | int | float | str):
        return key
    if isinstance(key, tuple):
        return [key_to_plain(part) for part in key]
    if isinstance(key, pd.Timestamp):
        return {"timestamp": int(key.value), "tz": None if key.tz is None else str(key.tz)}
    if isinstance(key, pd.Period):
        return {"period": str(key), "freq": key.freqstr}
    raise ValueError(
        f"the series id or column name {key!r} ({type(key).__name__}) cannot be saved without pickle: "
        "use str, int, float, bool, tuples of them, Timestamp or Period ids, or "
        "serialization_format='pickle'"
    )


def key_from_plain(value: Any) -> Hashable:
    """The id or name that :func:`key_to_plain` gave ``value`` for."""
    if isinstance(value, list):
        return tuple(key_from_plain(part) for part in value)
    if isinstance(value, dict) and set(value) == {"timestamp", "tz"}:
        stamp = pd.Timestamp(int(value["timestamp"]))
        return stamp if value["tz"] is None else stamp.tz_localize("UTC").tz_convert(value["tz"])
    if isinstance(value, dict) and set(value) == {"period", "freq"}:
        return pd.Period(value["period"], freq=value["freq"])
    if isinstance(value, dict):
        raise ValueError(f"a saved series id or column name is not one aaren_ts writes: {value!r}")
    return value


def names_from_plain(values: list[Any]) -> pd.Index:
    """Column names as :func:`key_to_plain` saved them, as an index (tuples: a ``MultiIndex``)."""
    keys = [key_from_plain(v) for v in values]
    if keys and all(isinstance(k, tuple) for k in keys):
        return pd.MultiIndex.from_tuples(keys)
    return pd.Index(keys)
