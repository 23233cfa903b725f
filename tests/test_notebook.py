"""Training progress in a Jupyter notebook: a notebook fitting the forecaster with ``verbose=1`` (one bar)
and the classifier with ``verbose=2`` (a line a stage and the epoch tables) runs through a real kernel
(nbclient + ipykernel) without an error, and its output holds no colour codes."""

from __future__ import annotations

import importlib.util
import re
import textwrap

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    """
    import torch
    from sktime.datasets import load_airline
    from sktime.utils._testing.panel import make_classification_problem

    from aaren_ts import AarenClassifier, AarenForecaster

    torch.set_num_threads(1)
    y = load_airline()
    X, labels = make_classification_problem(n_instances=20, n_timepoints=12, random_state=0)
    """,
    """
    tiny = AarenForecaster.get_test_params()[0]
    forecaster = AarenForecaster(**{**tiny, "n_estimators": AarenForecaster().n_estimators}, verbose=1)
    forecaster.fit(y, fh=[1, 2, 3])
    print("forecast of", len(forecaster.predict()), "steps")
    """,
    """
    params = {**AarenClassifier.get_test_params()[0], "validation_fraction": 0.2}
    classifier = AarenClassifier(**params, verbose=2).fit(X, labels)
    print("accuracy", classifier.score(X, labels))
    """,
]


def _outputs(notebook, output_type: str, name: str | None = None) -> str:
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output["output_type"] == output_type and (name is None or output.get("name") == name)
    )


def test_notebook_with_verbose_fits_runs_and_shows_progress(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(textwrap.dedent(source).strip()) for source in CELLS]
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on an exception in a cell

    errors = [o for c in notebook.cells for o in c.outputs if o["output_type"] == "error"]
    assert errors == []
    stdout, stderr = _outputs(notebook, "stream", "stdout"), _outputs(notebook, "stream", "stderr")
    assert "forecast of 3 steps" in stdout
    assert "accuracy" in stdout
    # verbose=1: one bar, no epoch table; verbose=2: the classifier's line a stage and its table
    assert stdout.count("train_loss") == 1
    assert "AarenClassifier.fit: network 1 of 1:" in stdout
    assert not re.search(r"AarenForecaster\.fit: .*: \d+ epochs?, [\d.]+ s", stdout + stderr)  # (no lines)
    assert "\x1b[" not in stdout + stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    if importlib.util.find_spec("ipywidgets") is None:  # the text bar, in the stderr stream
        assert "AarenForecaster.fit: done" in stderr and "epoch" in stderr
    else:  # the widget bar
        widgets = [
            o
            for c in notebook.cells
            for o in c.outputs
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        assert widgets
