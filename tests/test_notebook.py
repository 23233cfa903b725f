"""Training progress in a Jupyter notebook: a notebook fitting both estimators with ``verbose=1`` runs
through a real kernel (nbclient + ipykernel) without an error, and its output holds no colour codes."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from aaren_ts import AarenForecaster

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
    classifier = AarenClassifier(**params, verbose=1).fit(X, labels)
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
    # both fits' epoch tables (one per network of the forecaster's ensemble, each announced), and
    # again where the forecaster said it trains again (its network on the log scale beat the naive
    # forecast nowhere). A single series gives loss="auto" no two tails to judge other losses on:
    # every network trains once, on the squared error, without a verdict
    retries = stdout.count("Training again on the series' own scale")
    assert "networks change the typical series' tail error" not in stdout
    n_networks = AarenForecaster().n_estimators
    assert stdout.count(f"Training network {n_networks} of {n_networks}") == 1 + retries
    assert stdout.count("train_loss") == 1 + n_networks * (1 + retries)
    assert "\x1b[" not in stdout + stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    if importlib.util.find_spec("ipywidgets") is None:  # the text bar, in the stderr stream
        assert "it/s" in stderr
    else:  # the widget bar
        widgets = [
            o
            for c in notebook.cells
            for o in c.outputs
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        assert widgets
