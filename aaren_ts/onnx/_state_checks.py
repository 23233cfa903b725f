"""The checks :meth:`OnnxStreamer.load_state <aaren_ts.onnx.OnnxStreamer.load_state>` makes on a saved
state whose names, dtypes and shapes already fit: its values must be ones a stream of the exported model
can hold. numpy alone (the streamer runs without PyTorch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aaren_ts.statistical.partner import ETS_PREFIX, STATE_PREFIX, PartnerStreams, stream_arrays
from aaren_ts.utils.limits import MAX_STANDARDISED

__all__ = ["check_state_values"]


def check_state_values(streamer: Any, loaded: dict[str, np.ndarray], n_seen: int, path: str) -> None:
    """Refuse a state (of the right names, dtypes and shapes) whose values no stream of the export that
    ``streamer`` (the :class:`~aaren_ts.onnx.OnnxStreamer` loading it) serves can hold: ``ValueError``
    naming the array.

    The standardised state is finite and within :data:`~aaren_ts.utils.limits.MAX_STANDARDISED` (NaN
    only in the window history, before a series' first observation; ``-inf`` only in a
    log-normaliser ``*.m`` before any token); the forecaster's standardisation is this export's;
    every stream's counters agree with :attr:`n_seen`; the forecasts (and those the calibration
    keeps) are distributions (their quantiles finite and ordered); class probabilities sum to 1.
    """

    def refuse(name: str, problem: str) -> None:
        raise ValueError(
            f"{path}: {name} {problem}; no stream of this exported model has such a state, so the file "
            "was altered or damaged, or saved from another model (the streamer is unchanged)"
        )

    constants = set(streamer.spec.constants)
    for name, arr in loaded.items():
        if arr.dtype.kind != "f" or name.startswith(STATE_PREFIX):  # (the Theta streams: checked below)
            continue
        with np.errstate(invalid="ignore"):
            bounded = np.abs(arr) <= MAX_STANDARDISED
        if name == "history_values":
            fits = bounded | np.isnan(arr)
        elif name.endswith(".m"):
            fits = bounded | np.isneginf(arr)
        elif name.startswith("output.") or name in constants:
            fits = np.isfinite(arr)
        else:
            fits = bounded
        if not fits.all():
            refuse(name, f"holds NaN, infinite or out-of-range values (beyond {MAX_STANDARDISED:g})")
    if (
        "history_observed" in loaded
        and (loaded["history_observed"] & np.isnan(loaded["history_values"])).any()
    ):
        refuse("history_observed", "marks missing (NaN) values as observed")
    if streamer.kind == "classifier":
        _check_classifier_state(loaded, n_seen, refuse)
        return
    for name in constants & set(loaded):
        if not np.array_equal(loaded[name], streamer._initial[name]):
            refuse(name, "differs from this export's (the streams' standardisation is fixed at export)")
    if streamer.spec.calibrated:
        expected = streamer._initial["n_issued"] + n_seen
        if not np.array_equal(loaded["n_issued"], expected):
            refuse("n_issued", f"disagrees with the export's counts plus the {n_seen} steps seen since")
        issued = loaded["issued"].astype(np.float64)
        filled = np.arange(streamer.spec.horizon)[None, :] < loaded["n_issued"][:, None]  # (streams, slots)
        _check_distributions(streamer, issued[filled][..., 0], issued[filled][..., 1:], "issued", refuse)
    if "theta.weight" in loaded:
        _check_theta(streamer, loaded, n_seen, refuse)
    if not (loaded["series_scale"] > 0).all():
        refuse("series_scale", "holds a scale at or below zero")
    c = streamer.spec.n_channels
    mean, scale = loaded["series_mean"][:, None, :c], loaded["series_scale"][:, None, :c]
    with np.errstate(over="ignore", invalid="ignore"):
        standardised = {
            "output.loc": (loaded["output.loc"] - mean) / scale,
            "output.params": loaded["output.params"] / scale[..., None],
        }
    for name, values in standardised.items():
        if not (np.abs(values) <= MAX_STANDARDISED).all():
            refuse(name, f"lies beyond {MAX_STANDARDISED:g} standard deviations of its series")
    _check_distributions(streamer, loaded["output.loc"], loaded["output.params"], "output.params", refuse)


def _check_distributions(
    streamer: Any, loc: np.ndarray, params: np.ndarray, name: str, refuse: Callable[[str, str], None]
) -> None:
    """Refuse forecasts ``loc`` ``(B, T, C)``, ``params`` ``(B, T, C, K)`` whose quantiles (through
    the exported quantile function) at ``z = -1, 0, 1`` are not finite and ordered."""
    if len(loc) == 0:
        return
    z = np.broadcast_to(np.array([-1.0, 0.0, 1.0])[None, :, None, None], (len(loc), 3, *loc.shape[1:]))
    feed = {
        "loc": np.ascontiguousarray(loc, dtype=np.float64),
        "params": np.ascontiguousarray(params, dtype=np.float64),
        "z": np.ascontiguousarray(z, dtype=np.float64),
    }
    quantiles = streamer._graphs["quantile_function"].run(["quantiles"], feed)[0]
    if not (np.isfinite(quantiles).all() and (np.diff(quantiles, axis=1) > 0).all()):
        refuse(name, f"holds parameters of no {streamer.spec.distribution!r} distribution")


def _check_theta(
    streamer: Any, loaded: dict[str, np.ndarray], n_seen: int, refuse: Callable[[str, str], None]
) -> None:
    """The statistical partner's streams: values a stream can hold (:meth:`~aaren_ts.statistical.partner.
    PartnerStreams.from_arrays`), the export's own parameters and weights, and every stream
    :attr:`n_seen` steps (all observed: the streamer takes observed values only) past the export's."""
    initial = streamer._initial
    fixed = ["weight", "alpha", "season"]
    counters = ["clock", "count"]
    if f"{STATE_PREFIX}{ETS_PREFIX}alpha" in initial:
        fixed += [f"{ETS_PREFIX}{name}" for name in ("alpha", "beta", "gamma", "phi")]
        counters.append(f"{ETS_PREFIX}clock")
    for name in (f"{STATE_PREFIX}{field}" for field in fixed):
        if not np.array_equal(loaded[name], initial[name]):
            refuse(name, "differs from this export's (the partner's parameters are fixed at export)")
    for name in (f"{STATE_PREFIX}{field}" for field in counters):
        if not np.array_equal(loaded[name], initial[name] + n_seen):
            refuse(name, f"disagrees with the export's counts plus the {n_seen} steps seen since")
    arrays = stream_arrays(loaded)
    season = arrays["season"]
    try:
        PartnerStreams.from_arrays(arrays, len(arrays["alpha"]), season.shape[-1])
    except ValueError as err:
        refuse("theta", f"is no state of the statistical partner ({err})")


def _check_classifier_state(
    loaded: dict[str, np.ndarray], n_seen: int, refuse: Callable[[str, str], None]
) -> None:
    """Every stream has seen :attr:`n_seen` time points; the probabilities are a distribution."""
    if (loaded["seen"] != n_seen).any():
        refuse("seen", f"disagrees with the {n_seen} time points the state says every stream has seen")
    for name in [name for name in loaded if name.endswith("readout.count")]:  # (each member's)
        if (loaded[name] != n_seen).any():
            refuse(name, f"disagrees with the {n_seen} time points every stream has seen")
    proba = loaded["output.proba"].astype(np.float64)
    if n_seen and not ((proba >= 0).all() and np.allclose(proba.sum(axis=1), 1.0, atol=1e-4)):
        refuse("output.proba", "is not a probability distribution over the classes")
