"""One fit across processes through Hugging Face Accelerate, launched with ``accelerate launch``.

Each test starts 2 real processes (gloo on CPU; NCCL on 2 GPUs where there are), each training on its
share of the batches; the saved model then loads, predicts and streams in this single process, and
its validation loss is within a few percent of the single-process fit with the same global batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("accelerate", reason='the "distributed" extra (accelerate) is not installed')

from aaren_ts import AarenClassifier, AarenForecaster

sys.path.insert(0, str(Path(__file__).parent))
from accelerate_fit import classification_data, fit, forecasting_data

SCRIPT = Path(__file__).with_name("accelerate_fit.py")
GLOBAL_BATCH = 16


def _launch(kind: str, out: Path, processes: int, gpu: bool = False) -> dict:
    """``accelerate launch`` the fit on ``processes`` processes, each with a share of the global batch."""
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(processes),
    ]
    cmd += [
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "0",
    ]
    cmd += [str(SCRIPT), kind, str(out), str(GLOBAL_BATCH // processes)] + (["--gpu"] if gpu else [])
    env = dict(os.environ)
    if not gpu:
        # CPU processes on a machine with GPUs: Accelerate's barrier would still name a CUDA device per
        # rank (and fail with "invalid device ordinal" past the first), so the GPUs are hidden
        env["CUDA_VISIBLE_DEVICES"] = ""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))


def _check(kind: str, report: dict, out: Path) -> None:
    assert report["processes"] == 2
    single, _ = fit(kind, GLOBAL_BATCH, None)
    expected = float(np.min(single.net_.history[:, "valid_loss"]))
    got = float(np.min(report["valid_loss"]))
    assert abs(got - expected) <= 0.05 * expected, (got, expected)
    # the saved model is an ordinary one: it loads, predicts and streams in one process
    if kind == "classifier":
        clf = AarenClassifier.load(out)
        assert clf.device == "auto"
        X, y = classification_data()
        assert (clf.predict(X) == y).mean() > 0.8
        clf.partial_update(X[:3, :, :10]).partial_update(X[:3, :, 10:])
        np.testing.assert_allclose(clf.predict_proba(), clf.predict_proba(X[:3]), atol=1e-5)
    else:
        forecaster = AarenForecaster.load(out)
        assert forecaster.device == "auto"
        first = forecaster.predict_array()
        last = forecasting_data().groupby(level=0).tail(1).to_numpy()
        forecaster.partial_update_array(last)
        assert first.shape == (16, 6, 1) and np.isfinite(forecaster.predict_array()).all()


@pytest.mark.parametrize("kind", ["classifier", "forecaster"])
@pytest.mark.slow
def test_two_processes_on_cpu_train_one_model(kind, tmp_path):
    out = tmp_path / kind
    _check(kind, _launch(kind, out, processes=2), out)


@pytest.mark.cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices (NCCL data parallelism)")
@pytest.mark.parametrize("kind", ["classifier", "forecaster"])
def test_two_processes_on_gpus_train_one_model(kind, tmp_path):
    out = tmp_path / kind
    _check(kind, _launch(kind, out, processes=2, gpu=True), out)
