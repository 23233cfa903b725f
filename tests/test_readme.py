"""The README stays a front page: short, no wall-of-text table cells, links that resolve, the set-up
commands that CI runs, and two examples that run as written (in a fresh interpreter, as a user would).

The measurements belong in the docs (``docs/measured.rst``, ``docs/results.rst``), not here.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: README headings whose section holds one runnable Python example each.
EXAMPLE_HEADINGS = ("Forecast", "Classify")
MAX_WORDS = 1200
MAX_CELL_CHARS = 300

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _sections(text: str) -> dict[str, str]:
    """The text under each ``## `` heading, up to the next one."""
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def _outside_fences(text: str) -> str:
    return _FENCE.sub("", text)


def readme_example(heading: str) -> str:
    """The one fenced ``python`` block in the README section ``heading``."""
    section = _sections(_text()).get(heading)
    assert section is not None, f"README has no '## {heading}' section"
    blocks = _blocks(section, "python")
    assert len(blocks) == 1, f"README section '## {heading}' has {len(blocks)} python blocks, expected 1"
    return blocks[0]


def _table_cells(text: str) -> list[str]:
    cells = []
    for line in _outside_fences(text).splitlines():
        if line.lstrip().startswith("|"):
            row = line.strip().strip("|")
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", row)]
    return cells


def _rst_section_ids(path: Path) -> set[str]:
    """The ids docutils gives the section titles of an .rst file (what a ``#fragment`` can name)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    ids = set()
    for title, under in itertools.pairwise(lines):
        title = title.strip()
        if title and re.fullmatch(r"([=\-~^\"'*+#])\1+", under) and len(under) >= len(title):
            ids.add(re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-"))
    return ids


def test_readme_is_short() -> None:
    words = len(_text().split())
    assert words <= MAX_WORDS, (
        f"README.md has {words} words (at most {MAX_WORDS}): move details to CONTRIBUTING.md or the docs"
    )


def test_readme_table_cells_are_short() -> None:
    cells = _table_cells(_text())
    assert cells, "README.md has no table (the highlights)"
    longest = max(cells, key=len)
    assert len(longest) <= MAX_CELL_CHARS, (
        f"a README table cell has {len(longest)} characters (at most {MAX_CELL_CHARS}); put the details "
        f"in docs/measured.rst and keep the headline: {longest[:120]}..."
    )


def test_readme_has_exactly_the_two_examples() -> None:
    examples = [readme_example(h) for h in EXAMPLE_HEADINGS]
    assert _blocks(_text(), "python") == examples, "every python block of the README must be a tested example"


def test_readme_relative_links_resolve() -> None:
    targets = _LINK.findall(_outside_fences(_text()))
    assert any(t.endswith(".png") for t in targets), "README.md shows no picture"
    for target in targets:
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        resolved = ROOT / path
        assert path and resolved.exists(), f"README links to {target!r}, which is not in the repository"
        if fragment and resolved.suffix == ".rst":
            assert fragment in _rst_section_ids(resolved), f"{path} has no section with the id {fragment!r}"


def test_readme_commands_are_the_ones_ci_and_the_docs_run() -> None:
    commands = [line for block in _blocks(_text(), "bash") for line in block.splitlines() if line.strip()]
    main = 'python -m pip install "torch==2.13.0" -e ".[plot]" && aaren-ts classify'
    tests = 'python -m pip install "torch==2.13.0" -e ".[test,docs]" && python -m pytest -n 2'
    assert commands == [main, tests]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python -m pip install --quiet "torch==2.13.0" -e ".[test,docs]"' in ci
    runs_tests = re.search(r"^python -m pytest -n 2\b", ci, re.MULTILINE)
    assert runs_tests, ".ci/run no longer runs the README's test command"
    getting_started = (ROOT / "docs" / "getting_started.rst").read_text(encoding="utf-8")
    assert main in getting_started and tests in getting_started


@pytest.mark.slow
@pytest.mark.parametrize("heading", EXAMPLE_HEADINGS)
def test_readme_example_runs(heading: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example(heading), encoding="utf-8")
    env = dict(os.environ)
    # this checkout's package, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(OMP_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONWARNINGS="ignore::DeprecationWarning")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    name = f"README '## {heading}'"
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert "FutureWarning" not in proc.stderr, f"{name} lets a FutureWarning through:\n{proc.stderr[-3000:]}"
    if heading == "Classify":
        accuracy = float(re.search(r"accuracy: ([\d.]+)", proc.stdout).group(1))
        assert accuracy > 0.9, f"the README's classifier scored {accuracy} on JapaneseVowels"
    else:
        assert "1960-12" in proc.stdout, proc.stdout  # the forecast of the airline's last year
