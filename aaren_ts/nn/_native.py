"""Build and load the fused C step (``_fused_step.c``) on first use.

The fused step runs a whole :class:`~aaren_ts.nn.AarenEncoder` token step in one C call (see the C
file's header). It is compiled with the system C compiler the first time it is needed, like
``torch.compile``'s CPU backend does, and cached under ``$AAREN_TS_CACHE_DIR`` (default
``$XDG_CACHE_HOME/aaren_ts`` or ``~/.cache/aaren_ts``), keyed by the source, the compiler and the
processor, so a cached build is never used on a machine it was not built for. Everything here is
optional: without a compiler, when the build fails, or with ``AAREN_TS_NATIVE=0`` in the environment,
:func:`load_fused_step` returns ``None`` and the encoder uses its PyTorch step (same results, slower).
Except for that deliberate opt-out, the fallback is announced once per process with a
:class:`FusedStepFallbackWarning` naming the cause.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

__all__ = ["AarenLayer", "FusedStepFallbackWarning", "fused_step_available", "load_fused_step"]

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("_fused_step.c")
ABI = 1
_FLAGS = ("-O3", "-fPIC", "-shared", "-std=gnu11")
_FLAG_SETS = (("-march=native",), ())  # tuned for this processor first, portable otherwise
_fallback_warned = False  # the fallback warning is given once per process


class FusedStepFallbackWarning(RuntimeWarning):
    """The fused C step could not be had; the encoder steps through PyTorch operations instead."""


def _fall_back(cause: str) -> None:
    """Log and, the first time in this process, warn that the fused step is unavailable and why."""
    global _fallback_warned
    message = (
        f"aaren_ts: the fused C inference step is unavailable ({cause}); AarenEncoder.step uses "
        "PyTorch operations instead: the same results, just slower. Set AAREN_TS_NATIVE=0 to opt out "
        "of the fused step (and of this warning)."
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


def _compiler() -> str | None:
    for candidate in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if candidate:
            path = shutil.which(candidate.split()[0])
            if path:
                return path
    return None


def _cache_dir() -> Path:
    configured = os.environ.get("AAREN_TS_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "aaren_ts"


def _processor_id() -> str:
    """What a ``-march=native`` build depends on: the machine and, on Linux, the CPU's feature flags."""
    parts = [platform.machine(), platform.system()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features", "model name")):
                    parts.append(line.strip())
                if len(parts) > 5:
                    break
    except OSError:
        parts.append(platform.processor())
    return "\n".join(parts)


def _build(compiler: str, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    for extra in _FLAG_SETS:
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        cmd = [compiler, *_FLAGS, *extra, str(SOURCE), "-o", tmp, "-lm"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as err:
            proc = None
            logger.info("fused step: %s failed: %s", " ".join(cmd), err)
        if proc is not None and proc.returncode == 0:
            os.replace(tmp, target)  # atomic: concurrent builders each publish a complete file
            return True
        if proc is not None:
            logger.info("fused step: %s failed:\n%s", " ".join(cmd), proc.stderr[-2000:])
        Path(tmp).unlink(missing_ok=True)
    return False


@functools.cache
def load_fused_step() -> ctypes.CDLL | None:
    """The compiled fused step, building it on first use; ``None`` where it cannot be had.

    Returns
    -------
    ctypes.CDLL or None
        The library with ``aaren_encoder_step`` ready to call, or ``None`` (no C compiler, a failed
        build, a platform without ``ctypes`` shared libraries, or ``AAREN_TS_NATIVE=0``).
    """
    if os.environ.get("AAREN_TS_NATIVE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None  # a deliberate opt-out: no warning
    if sys.platform == "win32":
        _fall_back("not built on Windows")
        return None
    compiler = _compiler()
    if compiler is None:
        _fall_back("no C compiler found; set CC to one")
        return None
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as err:
        _fall_back(f"the C compiler {compiler} does not run: {err}")
        return None
    key = hashlib.sha256()
    for part in (SOURCE.read_bytes(), compiler.encode(), version.encode(), _processor_id().encode()):
        key.update(part)
        key.update(b"\0")
    key.update(repr((_FLAGS, _FLAG_SETS)).encode())
    target = _cache_dir() / f"fused_step-{key.hexdigest()[:16]}.so"
    try:
        if not target.is_file() and not _build(compiler, target):
            _fall_back(f"compiling it with {compiler} failed; {__name__} logs the compiler's messages")
            return None
        lib = ctypes.CDLL(str(target))  # releases the GIL while the step runs
    except OSError as err:  # unwritable cache, or a library that does not load
        _fall_back(f"cannot build or load {target}: {err}")
        return None
    if lib.aaren_fused_step_abi() != ABI:
        _fall_back(f"{target} was built for another version of aaren_ts")
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
