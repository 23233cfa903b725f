"""Keep freed memory in the process: glibc's allocator thresholds for a training process.

During training, torch frees an activation buffer after every step and asks for one of the same size
on the next. With glibc's defaults a buffer of more than a few hundred KiB is mapped from the system
for each request and handed back when freed, so every step touches fresh pages, and the page faults
cost time (about a tenth of a classifier's training on CPU). Larger thresholds keep the freed memory
in the process for the next request; it returns to the system when the process ends.

These are settings of the whole process, so the library never sets them: the ``aaren-ts`` command,
which owns its process, does (:func:`keep_freed_memory`), and a user's script may call it or set the
``MALLOC_*`` environment variables of the same names before Python starts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["ALLOCATOR_ENVIRONMENT", "keep_freed_memory"]

#: The thresholds, by the name of the environment variable that sets each when Python starts: keep up
#: to 1 GiB of freed memory at the heap's top, map only blocks of 32 MiB or more (glibc's largest mmap
#: threshold) from the system, and grow the heap 256 MiB at a time.
ALLOCATOR_ENVIRONMENT = {
    "MALLOC_TRIM_THRESHOLD_": 2**30,
    "MALLOC_MMAP_THRESHOLD_": 32 * 2**20,
    "MALLOC_TOP_PAD_": 256 * 2**20,
}
#: Each variable's mallopt parameter (glibc's malloc.h: M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_TOP_PAD).
_MALLOPT_PARAMETER = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_TOP_PAD_": -2}


def keep_freed_memory() -> bool:
    """Raise glibc's allocator thresholds (:data:`ALLOCATOR_ENVIRONMENT`) for this process.

    Each threshold whose environment variable the user has set is left as the user set it. Nothing
    happens outside Linux or with another C library.

    Returns
    -------
    bool
        Whether glibc accepted every threshold it was given (``False`` where there is no glibc).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # (musl and other C libraries have no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    accepted = True
    for name, value in ALLOCATOR_ENVIRONMENT.items():
        if name not in os.environ:
            accepted &= bool(mallopt(_MALLOPT_PARAMETER[name], value))
    return accepted
