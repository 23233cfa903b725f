"""Load the fused C steps (``_fused_step.c``, ``_aci_step.c``), built when aaren_ts was installed.

The fused step runs a whole :class:`~aaren_ts.nn.AarenEncoder` token step in one C call; the ACI step
moves the online interval calibration of many forecasting streams by one observation in one pass (see
the C files' headers). It is compiled by the package's build (``setup.py``: an optional extension, portable
flags) and installed beside this module; here it is only located and loaded with ctypes. No compiler
runs at import or predict time, and no shared object is loaded from anywhere but the installed
package. Where it was not built (no C compiler at install time, or Windows), when it does not load,
or with ``AAREN_TS_NATIVE=0`` in the environment, :func:`load_fused_step` returns ``None`` and the
encoder uses its PyTorch step (same results, slower). Except for that deliberate opt-out, the fallback
is announced once per process with a :class:`FusedStepFallbackWarning` naming the cause.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import logging
import os
import warnings
from pathlib import Path

__all__ = ["AarenLayer", "FusedStepFallbackWarning", "fused_step_available", "load_fused_step"]

logger = logging.getLogger(__name__)

MODULE = "aaren_ts.nn._fused_step"  # the extension's name in setup.py
ABI = 3
_fallback_warned = False  # the fallback warning is given once per process


class FusedStepFallbackWarning(RuntimeWarning):
    """The fused C step could not be had; the encoder steps through PyTorch operations instead."""


def _fall_back(cause: str) -> None:
    """Log and, the first time in this process, warn that the fused step is unavailable and why."""
    global _fallback_warned
    message = (
        f"aaren_ts: the fused C inference step is unavailable ({cause}); AarenEncoder.step and the "
        "forecasters' interval calibration use PyTorch operations instead: the same results, just "
        "slower. Set AAREN_TS_NATIVE=0 to opt out of the fused step (and of this warning)."
    )
    logger.info(message)
    if not _fallback_warned:
        _fallback_warned = True
        warnings.warn(message, FusedStepFallbackWarning, stacklevel=3)


class AarenLayer(ctypes.Structure):
    """Pointers to one layer's weights, mirroring ``aaren_layer`` in ``_fused_step.c``."""

    _fields_ = [
        (name, ctypes.c_void_p)
        for name in (
            "ln1_w", "ln1_b", "w_sv", "b_sv", "w_out", "b_out",
            "ln2_w", "ln2_b", "w_1", "b_1", "w_2", "b_2",
        )
    ] + [("ln1_eps", ctypes.c_double), ("ln2_eps", ctypes.c_double)]  # fmt: skip


def library_path() -> Path | None:
    """Where the installed build of the fused step is, or ``None`` if it was not built.

    Found as the package's extension module (in an ordinary and in an editable install alike),
    without importing it: it is a plain C library, loaded with ctypes.
    """
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return None
    return Path(spec.origin)


@functools.cache
def load_fused_step() -> ctypes.CDLL | None:
    """The installed fused step, loaded; ``None`` where it cannot be had.

    Returns
    -------
    ctypes.CDLL or None
        The library with ``aaren_encoder_step`` and ``aaren_aci_step`` ready to call, or ``None`` (not
        built at install time, a library that does not load or was built for another version, or
        ``AAREN_TS_NATIVE=0``).
    """
    if os.environ.get("AAREN_TS_NATIVE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None  # a deliberate opt-out: no warning
    path = library_path()
    if path is None:
        _fall_back(
            "it was not built when aaren_ts was installed: no C compiler then, or a platform it is not "
            "built for; reinstall aaren_ts where a C compiler is available to get it"
        )
        return None
    try:
        lib = ctypes.CDLL(str(path))  # releases the GIL while the step runs
    except OSError as err:
        _fall_back(f"{path} does not load: {err}")
        return None
    try:
        abi = lib.aaren_fused_step_abi()
    except AttributeError:
        abi = None
    if abi != ABI:
        _fall_back(f"{path} was built for another version of aaren_ts; reinstall aaren_ts")
        return None
    ptr = ctypes.c_void_p
    ptrs = ctypes.POINTER(ctypes.c_void_p)
    lib.aaren_encoder_step.restype = ctypes.c_int
    lib.aaren_encoder_step.argtypes = [
        ctypes.c_int, ctypes.POINTER(AarenLayer), ptr, ptr, ctypes.c_double,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ptr, ptr,
        ptrs, ptrs, ptrs, ptrs, ptrs, ptrs,
    ]  # fmt: skip
    lib.aaren_aci_step.restype = ctypes.c_int
    lib.aaren_aci_step.argtypes = [
        ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int, ptr, ptr, ptr, ptr, ptr, ptr, ptr,
        ptr, ptr, ptr, ctypes.c_float, ctypes.c_float, ctypes.c_int,
    ]  # fmt: skip
    return lib


def fused_step_available() -> bool:
    """Whether :class:`~aaren_ts.nn.AarenEncoder` steps through the compiled fused kernel on CPU."""
    return load_fused_step() is not None
