"""The package's code says what things do; the evidence for its defaults lives in the documentation.

Measured figures, seed lists and dates age with every change of a default, so ``aaren_ts/`` may hold
only the few that state facts about data (a data set's time span the loader checks, a published
constant a metric needs); what was measured, tried and kept or not belongs on the design-note pages
(``docs/design_notes/``) and the results page.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "aaren_ts"

#: A measured figure, a seed list or a date: the pattern a reviewer greps for.
FIGURE = re.compile(
    r"seeds? [0-9]|CPU s|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]+\.[0-9]+ ?%|(MAPE|OWA|sMAPE|MSE) [0-9]"
)
#: Lines of the package that may match it (facts about data, published constants).
MAX_FIGURE_LINES = 10


def _figure_lines() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if FIGURE.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    return found


def test_the_package_carries_no_measurements() -> None:
    found = _figure_lines()
    assert len(found) <= MAX_FIGURE_LINES, (
        f"{len(found)} lines of aaren_ts/ carry a measured figure, seed list or date (at most "
        f"{MAX_FIGURE_LINES}, for facts about data); move the evidence to docs/design_notes/:\n"
        + "\n".join(found)
    )


def test_the_pattern_finds_what_it_is_meant_to_find() -> None:
    measured = ("seeds 0, 1, 2", "seed 0", "61 CPU s", "on 2026-11-28", "93.96 %", "MAPE 19.33", "OWA 0.430")
    for text in measured:
        assert FIGURE.search(text), text
    for text in ("float64", "the 95 % interval", "step 12", "seasonal period 24"):
        assert not FIGURE.search(text), text


#: The longest module and estimator class the package allows (lines, docstrings included).
MAX_MODULE_LINES, MAX_ESTIMATOR_LINES = 600, 500


def test_no_module_is_longer_than_the_bar() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by what they do): {long}"


def test_the_estimator_classes_stay_short() -> None:
    import ast

    classes = (
        ("estimators/forecaster.py", "AarenForecaster"),
        ("estimators/classifier.py", "AarenClassifier"),
    )
    for module, name in classes:
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines = node.end_lineno - first + 1
        assert lines <= MAX_ESTIMATOR_LINES, f"{name} is {lines} lines (at most {MAX_ESTIMATOR_LINES})"
