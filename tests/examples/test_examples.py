"""Every example runs top to bottom in its reduced setting, so none can silently stop working.

Each script runs in a fresh interpreter (as a user would run it) with ``AAREN_TS_EXAMPLES_QUICK=1``,
``MPLBACKEND=Agg`` and a temporary output folder; the test checks the exit status, that the expected
plots were written and that no FutureWarning (sktime's notices) reaches the output.
``AAREN_TS_DATA`` is passed through: with the real files the examples use them, without them they
fall back to data sets that ship with sktime.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: script -> files it must write into the output folder
CASES = {
    "classify_japanese_vowels.py": ["classify_streaming_accuracy.png"],
    "forecast_etth1.py": ["forecast_vs_truth.png", "streaming_cost.png"],
    "model_selection.py": ["model_selection_benchmark.csv"],
    "serve_onnx.py": ["serve_onnx.png", "airline.onnx"],
}


def test_every_example_is_tested() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(CASES), "add new examples to CASES"


def test_examples_are_percent_format() -> None:
    for name in CASES:
        text = (EXAMPLES / name).read_text()
        assert "# %%" in text and "formats: py:percent" in text, f"{name} is not a jupytext percent script"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        AAREN_TS_EXAMPLES_QUICK="1",
        AAREN_TS_EXAMPLES_OUTPUT=str(tmp_path),
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        cwd=EXAMPLES,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert "reduced setting" in proc.stdout
    assert "FutureWarning" not in proc.stderr, (
        f"{script} lets a FutureWarning through:\n{proc.stderr[-3000:]}"
    )
    for name in CASES[script]:
        assert (tmp_path / name).is_file(), f"{script} did not write {name}"
