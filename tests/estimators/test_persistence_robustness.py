"""Saved models that a crash cannot destroy and archives that cannot blow up: ``save`` killed at random
moments, failing writes, zip bombs and other crafted archives.

The kill test runs a real subprocess that saves two models alternately over one path and kills it with
SIGKILL at random moments; the path must then load as one of the two models, and the temporaries of
killed writers must not accumulate (the next save removes them).
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from aaren_ts import AarenClassifier, AarenForecaster
from aaren_ts.estimators._persistence import PAYLOAD_ENTRY
from aaren_ts.utils.files import stale_temporaries, temporaries

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and RLIMIT_FSIZE are POSIX")

#: big enough (about 2 MB saved) that a kill often lands while the archive is being written
MODEL = {
    "d_model": 192,
    "n_heads": 4,
    "n_layers": 2,
    "d_ff": 384,
    "max_epochs": 1,
    "batch_size": 16,
    "n_estimators": 1,
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


@pytest.mark.slow
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


# ------------------------------------------------------------------------ crafted archives
def _rebuild(source, target, entries: dict[str, bytes | None], compress: int = zipfile.ZIP_STORED) -> None:
    """Copy the archive ``source`` to ``target``, replacing (or, with None, dropping) ``entries``; the
    payload entry is written with ``compress``."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in src.namelist():
            data = entries.get(name, src.read(name))
            kind = compress if name == PAYLOAD_ENTRY else zipfile.ZIP_STORED
            if data is not None:
                dst.writestr(name, data, compress_type=kind)
        for name, data in entries.items():
            if name not in src.namelist() and data is not None:
                dst.writestr(name, data)


def _payload(source) -> dict:
    with zipfile.ZipFile(source) as archive:
        return torch.load(io.BytesIO(archive.read(PAYLOAD_ENTRY)), weights_only=True)


def _torch_bytes(obj, records: int = zipfile.ZIP_STORED) -> bytes:
    """``torch.save(obj)``'s bytes, its records re-packed with the compression ``records``."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), compress_type=records)
    return out.getvalue()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small fitted classifier's saved file (under 200 kB: few random kernels, as the ridge maps'
    float64 coefficients hardly deflate)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(16, 2, 12)), np.arange(16) % 2
    est = AarenClassifier(
        d_model=8,
        n_heads=2,
        n_layers=1,
        d_ff=16,
        max_epochs=1,
        n_estimators=1,
        n_random_features=840,
        random_state=0,
    )
    return est.fit(X, y).save(tmp_path_factory.mktemp("tiny") / "tiny")


@pytest.fixture
def quiet_tmp(tmp_path, monkeypatch):
    """An empty folder as the temporary folder of this process, to prove nothing is extracted."""
    folder = tmp_path / "system_tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _refused_unread(path, match: str, quiet_tmp) -> None:
    """``load`` refuses ``path`` with ``match``, extracting nothing and allocating little."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            AarenClassifier.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, f"{peak / 1e6:.0f} MB allocated to refuse {path.name}"
    assert list(quiet_tmp.iterdir()) == []


def test_a_zip_bomb_payload_is_refused_before_anything_is_inflated(tiny, tmp_path, quiet_tmp):
    payload = _payload(tiny)
    payload["attributes"]["padding"] = torch.zeros(50_000_000)  # 200 MB of zeros
    bomb = tmp_path / "bomb.zip"
    _rebuild(tiny, bomb, {PAYLOAD_ENTRY: _torch_bytes(payload)}, compress=zipfile.ZIP_DEFLATED)
    del payload
    assert os.path.getsize(bomb) < 1_000_000
    _refused_unread(bomb, r"payload is compressed \(\d+ bytes declared to expand to 2\d{8}\)", quiet_tmp)


def test_a_zip_bomb_inside_the_payload_is_refused_before_torch_inflates_it(tiny, tmp_path, quiet_tmp):
    """The payload stored as ``save`` stores it, but the tensor records inside it deflated: torch.load
    would inflate them (200 MB from a file of about 200 KB)."""
    payload = _payload(tiny)
    payload["attributes"]["padding"] = torch.zeros(50_000_000)
    nested = tmp_path / "nested.zip"
    _rebuild(tiny, nested, {PAYLOAD_ENTRY: _torch_bytes(payload, zipfile.ZIP_DEFLATED)})
    del payload
    assert os.path.getsize(nested) < 1_000_000
    _refused_unread(nested, r"record .* is compressed .* refused unread", quiet_tmp)


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"../outside.txt": b"x"}, r"unexpected entries \['../outside.txt'\]"),
        ({"_metadata": None, "extra": b"x"}, r"unexpected entries \['extra'\]"),
        ({PAYLOAD_ENTRY: None}, "no 'aaren_ts_payload.pt' entry"),
    ],
    ids=["path-traversal", "extra-member", "no-payload"],
)
def test_an_archive_with_other_members_is_refused_unread(models, tmp_path, quiet_tmp, entries, match):
    _, sources = models
    crafted = tmp_path / "crafted.zip"
    _rebuild(sources[0], crafted, entries)
    _refused_unread(crafted, match, quiet_tmp)


def test_a_duplicated_payload_entry_is_refused(models, tmp_path, quiet_tmp):
    _, sources = models
    crafted = tmp_path / "twice.zip"
    shutil.copy(sources[0], crafted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        with zipfile.ZipFile(crafted, "a") as archive:
            archive.writestr(PAYLOAD_ENTRY, b"second")
    _refused_unread(crafted, r"duplicated entries \['aaren_ts_payload.pt'\]", quiet_tmp)


def test_a_damaged_archive_is_refused_with_a_clear_error(models, tmp_path, quiet_tmp):
    fitted, sources = models
    data = bytearray(sources[0].read_bytes())
    with zipfile.ZipFile(sources[0]) as archive:
        info = archive.getinfo(PAYLOAD_ENTRY)
    flipped = tmp_path / "flipped.zip"
    middle = info.header_offset + 30 + len(PAYLOAD_ENTRY) + info.compress_size // 2
    data[middle] ^= 0x10  # a tensor byte: torch.load would read it silently
    flipped.write_bytes(bytes(data))
    _refused_unread(flipped, r"flipped.zip' is damaged: Bad CRC-32", quiet_tmp)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(sources[0].read_bytes()[: len(data) // 2])
    with pytest.raises(ValueError, match=r"truncated\.zip' is not a file written by AarenClassifier\.save"):
        AarenClassifier.load(truncated)
    assert _same_weights(AarenClassifier.load(sources[0]), fitted[0])  # the source itself is intact


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda a: a.update(channel_scale=-a["channel_scale"]), "channel standardisation"),
        (lambda a: a.update(channel_scale=a["channel_scale"] * 0), "channel standardisation"),
        (lambda a: a.update(channel_mean=a["channel_mean"] * float("nan")), "channel standardisation"),
        (lambda a: a.update(channel_scale=a["channel_scale"][:1]), "channel standardisation"),
        (lambda a: a.update(classes=torch.zeros_like(a["classes"])), "distinct labels"),
    ],
    ids=["negative-scale", "zero-scale", "nan-mean", "short-scale", "repeated-classes"],
)
def test_a_classifier_archive_with_values_a_model_cannot_hold_is_refused(tiny, tmp_path, edit, match):
    payload = _payload(tiny)
    edit(payload["attributes"])
    crafted = tmp_path / "crafted.zip"
    _rebuild(tiny, crafted, {PAYLOAD_ENTRY: _torch_bytes(payload)})
    with pytest.raises(ValueError, match=match):
        AarenClassifier.load(crafted)


@pytest.fixture(scope="module")
def tiny_forecaster(tmp_path_factory):
    """A small forecaster fitted on its series' own scale (values in the thousands), saved."""
    rng = np.random.default_rng(0)
    y = pd.DataFrame({"y": 5000 + 50 * rng.normal(size=80).cumsum()})
    est = AarenForecaster(
        d_model=8, n_heads=2, n_layers=1, d_ff=16, n_estimators=1, context_length=8, max_epochs=1,
        horizon=3, target_transform=None, random_state=0,
    )  # fmt: skip
    return est.fit(y, fh=[1, 2, 3]).save(tmp_path_factory.mktemp("tiny_forecaster") / "tiny")


def test_a_forecaster_archive_switched_to_the_log_scale_is_refused(tiny_forecaster, tmp_path):
    """Its streams hold values in the thousands: through the exponential they would forecast inf."""
    payload = _payload(tiny_forecaster)
    assert not payload["attributes"]["log_target"].any()
    payload["attributes"]["log_target"] = torch.ones_like(payload["attributes"]["log_target"])
    crafted = tmp_path / "crafted.zip"
    _rebuild(tiny_forecaster, crafted, {PAYLOAD_ENTRY: _torch_bytes(payload)})
    with pytest.raises(ValueError, match="forecast non-finite values in the series' units"):
        AarenForecaster.load(crafted)
    assert np.isfinite(AarenForecaster.load(tiny_forecaster).predict().to_numpy()).all()
