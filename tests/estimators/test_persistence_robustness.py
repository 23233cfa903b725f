"""Saved models that a crash cannot destroy: ``save`` killed at random moments, failing writes.

The kill test runs a real subprocess that saves two models alternately over one path and kills it with
SIGKILL at random moments; the path must then load as one of the two models, and the temporaries of
killed writers must not accumulate (the next save removes them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from aaren_ts import AarenClassifier
from aaren_ts._files import stale_temporaries, temporaries

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and RLIMIT_FSIZE are POSIX")

#: big enough (about 2 MB saved) that a kill often lands while the archive is being written
MODEL = {
    "d_model": 192,
    "n_heads": 4,
    "n_layers": 2,
    "d_ff": 384,
    "max_epochs": 1,
    "batch_size": 16,
    "device": "cpu",
}
N_KILLS = 6


def _weights(est: AarenClassifier) -> dict[str, torch.Tensor]:
    return est.net_.module_.state_dict()


def _same_weights(a: AarenClassifier, b: AarenClassifier) -> bool:
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two fitted classifiers with different weights, and their saved files."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(16, 2, 12)), np.arange(16) % 2
    folder = tmp_path_factory.mktemp("sources")
    fitted = [AarenClassifier(**MODEL, random_state=seed).fit(X, y) for seed in (0, 1)]
    assert not _same_weights(*fitted)
    return fitted, [est.save(folder / f"model_{k}") for k, est in enumerate(fitted)]


_SAVER = textwrap.dedent(
    """
    import sys
    from aaren_ts import AarenClassifier

    a, b, target = sys.argv[1:4]
    models = [AarenClassifier.load(a), AarenClassifier.load(b)]
    models[0].save(target)
    print("ready", flush=True)
    k = 1
    while True:
        models[k % 2].save(target)
        k += 1
    """
)


def test_a_save_killed_at_random_moments_leaves_a_loadable_model(models, tmp_path):
    fitted, sources = models
    target = tmp_path / "model.zip"
    rng = np.random.default_rng(7)
    loaded_as = []
    for trial in range(N_KILLS):
        saver = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(sources[0]), str(sources[1]), str(target)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert saver.stdout.readline().strip() == "ready", saver.stderr.read()
            # its first save removed the temporary that the writer killed in the previous trial left
            assert stale_temporaries(target) == []
            assert {path.name.split(".")[3] for path in temporaries(target)} <= {str(saver.pid)}
            time.sleep(rng.uniform(0.0, 0.25))
        finally:
            saver.send_signal(signal.SIGKILL)
            saver.wait()
        assert saver.returncode == -signal.SIGKILL, f"trial {trial}: the saver ended before the kill"
        assert len(temporaries(target)) <= 1  # at most the one being written at the kill
        loaded = AarenClassifier.load(target)
        which = [k for k, est in enumerate(fitted) if _same_weights(loaded, est)]
        assert len(which) == 1, f"trial {trial}: the file holds neither model"
        loaded_as.append(which[0])
    # a later save in another process removes the killed writer's temporary
    fitted[0].save(target)
    assert temporaries(target) == []
    assert _same_weights(AarenClassifier.load(target), fitted[0])


def test_a_save_that_fails_midway_keeps_the_old_model(models, tmp_path):
    """A real write failure (the file-size limit, as a full disk would) leaves the old file and no
    temporary."""
    fitted, sources = models
    target = fitted[0].save(tmp_path / "model")
    script = textwrap.dedent(
        """
        import resource, signal, sys
        from aaren_ts import AarenClassifier

        model = AarenClassifier.load(sys.argv[1])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit raises OSError instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
        try:
            model.save(sys.argv[2])
        except OSError as err:
            print("failed:", err.strerror)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(sources[1]), str(target)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("failed: File too large"), result.stdout
    assert temporaries(target) == []
    assert _same_weights(AarenClassifier.load(target), fitted[0])


def test_a_save_removes_only_the_temporaries_of_writers_that_are_gone(models, tmp_path):
    fitted, _ = models
    target = tmp_path / "model.zip"
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(ended.stdout)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        try:
            dead = tmp_path / f".model.zip.{dead_pid}.{'0' * 16}.tmp"
            alive = tmp_path / f".model.zip.{live.pid}.{'1' * 16}.tmp"
            unrelated = tmp_path / f".other.zip.{dead_pid}.{'2' * 16}.tmp"
            for path in (dead, alive, unrelated):
                path.write_bytes(b"partial")
            assert stale_temporaries(target) == [dead]
            fitted[1].save(target)
            assert not dead.exists() and alive.exists() and unrelated.exists()
            assert temporaries(target) == [alive]
        finally:
            live.kill()
    assert _same_weights(AarenClassifier.load(target), fitted[1])


def test_a_save_keeps_the_permissions_of_the_file_it_replaces(models, tmp_path):
    fitted, _ = models
    target = fitted[0].save(tmp_path / "model")
    os.chmod(target, 0o640)
    fitted[1].save(target)
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)
    assert _same_weights(AarenClassifier.load(target), fitted[1])
