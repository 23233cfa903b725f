"""Load the C step of the online interval calibration (``_aci_step.c``), built when aaren_ts was installed.

The step moves the calibration of many forecasting streams by one observation in one pass (see the C
file's header). Located and loaded like every C kernel of the package
(:func:`aaren_ts.nn._native.load_library`): ``None`` where it was not built, does not load, or with
``AAREN_TS_NATIVE=0``; the calibration then runs through PyTorch operations.
"""

from __future__ import annotations

import ctypes
import functools

from aaren_ts.nn._native import load_library

__all__ = ["ACI_STEP_FAILURES", "load_aci_step"]

MODULE = "aaren_ts.engine._aci_step"  # the extension's name in setup.py
ABI = 1
ACI_STEP_FAILURES = {
    -1: "the calibration step could not allocate its scratch memory",
    -2: "the calibration step was given a state that does not fit its arguments",
}


@functools.cache
def load_aci_step() -> ctypes.CDLL | None:
    """The installed calibration step, loaded, with ``aaren_aci_step`` ready to call; ``None`` where it
    cannot be had."""
    lib = load_library(MODULE, "aaren_aci_step_abi", ABI, "step of the online interval calibration")
    if lib is None:
        return None
    ptr = ctypes.c_void_p
    lib.aaren_aci_step.restype = ctypes.c_int
    lib.aaren_aci_step.argtypes = [
        ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int, ptr, ptr, ptr, ptr,
        ptr, ptr, ptr, ptr, ptr, ptr, ctypes.c_float, ctypes.c_float, ctypes.c_int,
    ]  # fmt: skip
    return lib
