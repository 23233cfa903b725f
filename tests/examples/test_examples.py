"""Every example runs top to bottom in its reduced setting, as the notebook a reader opens, so none can
silently stop working.

Each script is read by jupytext into a notebook and executed cell by cell in a fresh Jupyter kernel
(nbclient and ipykernel, as a user's notebook runs) with ``AAREN_TS_EXAMPLES_QUICK=1``,
``MPLBACKEND=Agg`` and a temporary output folder; the test checks that no cell fails, that the expected
plots were written and that no FutureWarning (sktime's notices) reaches the output. The scripts also
run as plain Python (the same code, cell after cell). ``AAREN_TS_DATA`` is passed through: with the
real files the examples use them, without them they fall back to data sets that ship with sktime.
"""

from __future__ import annotations

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


def test_examples_open_as_notebooks() -> None:
    jupytext = pytest.importorskip("jupytext", reason="jupytext (the docs extra) opens the examples")
    nbformat = pytest.importorskip("nbformat")
    for name in CASES:
        notebook = jupytext.read(EXAMPLES / name)
        nbformat.validate(notebook)
        kinds = [cell.cell_type for cell in notebook.cells]
        assert kinds.count("code") >= 2 and "markdown" in kinds, f"{name}: {kinds}"


def _stream(notebook, name: str) -> str:
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output["output_type"] == "stream" and output.get("name") == name
    )


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs_as_a_notebook(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jupytext = pytest.importorskip("jupytext", reason="jupytext (the docs extra) opens the examples")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    for name, value in {
        "AAREN_TS_EXAMPLES_QUICK": "1",
        "AAREN_TS_EXAMPLES_OUTPUT": str(tmp_path),
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
    }.items():
        monkeypatch.setenv(name, value)  # (the kernel inherits this process's environment)
    notebook = jupytext.read(EXAMPLES / script)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, where a cell fails
    stdout, stderr = _stream(notebook, "stdout"), _stream(notebook, "stderr")
    assert "reduced setting" in stdout
    assert "FutureWarning" not in stderr, f"{script} lets a FutureWarning through:\n{stderr[-3000:]}"
    for name in CASES[script]:
        assert (tmp_path / name).is_file(), f"{script} did not write {name}"
