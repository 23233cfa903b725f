"""glibc's allocator thresholds (``aaren_ts.jobs._allocator``): freed buffers are reused, not faulted
in again.

Each case runs in a fresh interpreter (the thresholds are settings of the whole process) that
allocates and frees a 16 MiB buffer twenty times and counts its minor page faults.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="the thresholds are glibc's (Linux only)",
)

_SCRIPT = """
import resource, sys
import numpy as np
if sys.argv[1] == "tune":
    from aaren_ts.jobs._allocator import keep_freed_memory
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
np.ones(2**21)
before = faults()
for _ in range(20):
    buffer = np.ones(2**21)  # 16 MiB
    del buffer
print(faults() - before)
"""


def _faults(mode: str, **environment: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | environment
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, env=env, check=True
    )
    return int(done.stdout.strip())


def test_freed_buffers_are_reused_after_tuning() -> None:
    untuned, tuned = _faults("plain"), _faults("tune")
    assert untuned >= 20  # every new buffer is mapped afresh and faulted in
    assert tuned < 5


def test_a_threshold_the_user_set_is_kept() -> None:
    # the user's small mmap threshold stays: the 16 MiB buffers are still mapped afresh each time
    assert _faults("tune", MALLOC_MMAP_THRESHOLD_="131072") >= 20


def test_the_command_tunes_its_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from aaren_ts import cli

    called = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: called.append(True) or True)
    with pytest.raises(SystemExit):  # (help exits after the thresholds are set, before any job)
        cli.main(["classify", "--help"])
    assert called == [True]
