"""The part of sktime's private forecaster state that a saved forecaster must carry, in one place.

sktime's ``BaseForecaster`` keeps what ``predict`` needs to shape its output (the horizon given to
``fit``, the input's mtype, the univariate name, the metadata of ``y``) in private attributes that its
``fit`` sets. A forecaster rebuilt by ``load`` has not run ``fit``, so it sets them itself: there is no
public way to do so. This is the only module that touches them;
``tests/estimators/test_sktime_contract.py`` pins the attributes it relies on, so a release of
sktime that renames them fails loudly there instead of silently here.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import pandas as pd
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

__all__ = [
    "SKTIME_ATTRIBUTES",
    "empty_data_slots",
    "plain_metadata",
    "restore_sktime_state",
    "sktime_state",
]

#: The private attributes of sktime's BaseForecaster that the forecaster sets.
SKTIME_ATTRIBUTES = (
    "_y",
    "_X",
    "_fh",
    "_y_mtype_last_seen",
    "_converter_store_y",
    "_y_metadata",
    "_is_vectorized",
)


def empty_data_slots(forecaster: BaseForecaster) -> None:
    """Give ``forecaster`` sktime's data slots ``_y`` and ``_X``, empty.

    ``BaseForecaster.__init__`` creates them only when ``remember_data`` is on at construction; sktime's
    conformance suite (``test__y_remember_data``) turns the config on *after* construction and then
    expects them to be ``None``. The forecaster keeps no data in them unless a user turns
    ``remember_data`` on.
    """
    forecaster._y = None
    forecaster._X = None


def plain_metadata(meta: Any) -> Any:
    """sktime's metadata (and index level names, series ids) reduced to plain data."""
    if isinstance(meta, dict):
        return {str(k): plain_metadata(v) for k, v in meta.items()}
    if isinstance(meta, list | tuple | pd.Index):
        return [plain_metadata(v) for v in meta]
    if isinstance(meta, enum.Enum):
        return meta.name
    if isinstance(meta, bool | int | float | str | type(None)):
        return meta
    if isinstance(meta, np.generic):
        return meta.item()
    return str(meta)


def _metadata_from_plain(meta: dict[str, Any]) -> dict[str, Any]:
    """Undo :func:`plain_metadata` where sktime expects enums (the ``feature_kind`` entries)."""
    meta = dict(meta)
    if "feature_kind" in meta:
        try:
            from sktime.datatypes._dtypekind import DtypeKind

            meta["feature_kind"] = [DtypeKind[k] if isinstance(k, str) else k for k in meta["feature_kind"]]
        except (ImportError, KeyError):
            pass
    return meta


def sktime_state(forecaster: BaseForecaster, cutoff: pd.Index) -> dict[str, Any]:
    """What of sktime's state a saved ``forecaster`` must carry, as plain data."""
    fh = forecaster._fh
    return {
        "fh": None if fh is None else [int(s) for s in fh.to_relative(cutoff).to_numpy()],
        "y_mtype": str(forecaster._y_mtype_last_seen),
        "y_name": plain_metadata(getattr(forecaster, "_converter_store_y", {}).get("name")),
        "y_metadata": plain_metadata(getattr(forecaster, "_y_metadata", {})),
    }


def restore_sktime_state(forecaster: BaseForecaster, attributes: dict[str, Any], cutoff: pd.Index) -> None:
    """Set sktime's state of a loaded ``forecaster`` from :func:`sktime_state`'s output."""
    forecaster._set_cutoff(cutoff)
    if attributes["fh"] is not None:
        forecaster._fh = ForecastingHorizon(attributes["fh"], is_relative=True, freq=cutoff)
    forecaster._y_mtype_last_seen = attributes["y_mtype"]
    if attributes["y_name"] is not None:  # the name sktime gives a univariate forecast
        forecaster._converter_store_y = {"name": attributes["y_name"]}
    forecaster._y_metadata = _metadata_from_plain(attributes["y_metadata"])
    forecaster._is_vectorized = False
