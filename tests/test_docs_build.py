"""The documentation builds without a single warning (Sphinx's strict mode)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.slow
def test_docs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
    pytest.importorskip("numpydoc", reason="numpydoc is not installed (pip install -e '.[docs]')")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q"]
    cmd += ["-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"strict Sphinx build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "how_aaren_works.html").is_file()
