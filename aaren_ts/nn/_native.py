"""Load the package's optional C kernels, built when aaren_ts was installed.

Each kernel is a plain C shared library (no Python C API) compiled by the package's build
(``setup.py``: optional extensions, portable flags) and installed beside its Python module; here it is
only located and loaded with ctypes. No compiler runs at import or predict time, and no shared object
is loaded from anywhere but the installed package. Where a kernel was not built (no C compiler at
install time, or Windows), when it does not load, or with ``AAREN_TS_NATIVE=0`` in the environment,
:func:`load_library` returns ``None`` and the caller uses its PyTorch path (same results, slower).
Except for that deliberate opt-out, each fallback is announced once per process with a
:class:`FusedStepFallbackWarning` naming the cause.

This module's own kernel, ``_fused_step.c``, runs a whole :class:`~aaren_ts.nn.AarenEncoder` token
step in one C call (:func:`load_fused_step`).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import logging
import os
import warnings
from pathlib import Path

__all__ = [
    "AarenLayer",
    "FusedStepFallbackWarning",
    "fused_step_available",
    "load_fused_step",
    "load_library",
]

logger = logging.getLogger(__name__)

MODULE = "aaren_ts.nn._fused_step"  # the extension's name in setup.py
ABI = 4
_fallback_warned: set[str] = set()  # the kernels whose fallback was announced in this process


class FusedStepFallbackWarning(RuntimeWarning):
    """A C kernel could not be had; its computation runs through PyTorch operations instead."""


def _fall_back(kernel: str, cause: str) -> None:
    """Log and, the first time in this process, warn that ``kernel`` is unavailable and why."""
    message = (
        f"aaren_ts: the C {kernel} is unavailable ({cause}); it runs through PyTorch operations "
        "instead: the same results, just slower. Set AAREN_TS_NATIVE=0 to opt out of the C kernels "
        "(and of this warning)."
    )
    logger.info(message)
    if kernel not in _fallback_warned:
        _fallback_warned.add(kernel)
        warnings.warn(message, FusedStepFallbackWarning, stacklevel=4)


class AarenLayer(ctypes.Structure):
    """Pointers to one layer's weights, mirroring ``aaren_layer`` in ``_fused_step.c``."""

    _fields_ = [
        (name, ctypes.c_void_p)
        for name in (
            "ln1_w", "ln1_b", "w_sv", "b_sv", "w_out", "b_out",
            "ln2_w", "ln2_b", "w_1", "b_1", "w_2", "b_2",
        )
    ] + [("ln1_eps", ctypes.c_double), ("ln2_eps", ctypes.c_double)]  # fmt: skip


def library_path(module: str = MODULE) -> Path | None:
    """Where the installed build of the extension ``module`` is, or ``None`` if it was not built.

    Found as the package's extension module (in an ordinary and in an editable install alike),
    without importing it: it is a plain C library, loaded with ctypes.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return None
    return Path(spec.origin)


def load_library(module: str, abi_function: str, abi: int, kernel: str) -> ctypes.CDLL | None:
    """The installed C library of the extension ``module``, loaded; ``None`` where it cannot be had.

    Parameters
    ----------
    module : str
        The extension's name in ``setup.py``.
    abi_function : str
        The library's function returning the interface version it was built with.
    abi : int
        The interface version the caller's declarations describe.
    kernel : str
        What the kernel is, for the fallback warning.

    Returns
    -------
    ctypes.CDLL or None
        ``None`` when not built at install time, when the library does not load or was built for
        another version, or with ``AAREN_TS_NATIVE=0``.
    """
    if os.environ.get("AAREN_TS_NATIVE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None  # a deliberate opt-out: no warning
    path = library_path(module)
    if path is None:
        _fall_back(
            kernel,
            "it was not built when aaren_ts was installed: no C compiler then, or a platform it is not "
            "built for; reinstall aaren_ts where a C compiler is available to get it",
        )
        return None
    try:
        lib = ctypes.CDLL(str(path))  # releases the GIL while a kernel runs
    except OSError as err:
        _fall_back(kernel, f"{path} does not load: {err}")
        return None
    try:
        built_for = getattr(lib, abi_function)()
    except AttributeError:
        built_for = None
    if built_for != abi:
        _fall_back(kernel, f"{path} was built for another version of aaren_ts; reinstall aaren_ts")
        return None
    return lib


@functools.cache
def load_fused_step() -> ctypes.CDLL | None:
    """The installed fused encoder step, loaded; ``None`` where it cannot be had (see :func:`load_library`).

    Returns
    -------
    ctypes.CDLL or None
        The library with ``aaren_encoder_step`` ready to call.
    """
    lib = load_library(MODULE, "aaren_fused_step_abi", ABI, "fused inference step of AarenEncoder")
    if lib is None:
        return None
    ptr = ctypes.c_void_p
    ptrs = ctypes.POINTER(ctypes.c_void_p)
    lib.aaren_encoder_step.restype = ctypes.c_int
    lib.aaren_encoder_step.argtypes = [
        ctypes.c_int, ctypes.POINTER(AarenLayer), ptr, ptr, ctypes.c_double,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ptr, ptr,
        ptrs, ptrs, ptrs, ptrs, ptrs, ptrs,
    ]  # fmt: skip
    return lib


def fused_step_available() -> bool:
    """Whether :class:`~aaren_ts.nn.AarenEncoder` steps through the compiled fused kernel on CPU."""
    return load_fused_step() is not None
