"""The table of every constructor parameter of the estimators, generated from the classes themselves.

Names and defaults come from ``inspect.signature(cls.__init__)``, descriptions from the ``Parameters``
section of the class docstring (numpydoc's parser), so the table follows the code at every build: a
renamed or added parameter shows up as it is, and one without a docstring entry is reported (a Sphinx
warning, which fails the strict build, and a failing test in ``tests/test_docs_build.py``).

Parameters that both estimators take are listed once, first, with the classifier's description (the
forecaster's where the classifier has none); then the parameters of each estimator alone.

In the documentation: ``.. aaren-parameter-table::`` (registered by :func:`setup`). From Python:
:func:`parameter_tables_rst` returns the reStructuredText, :func:`parameter_problems` the issues.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ESTIMATORS",
    "ParameterRow",
    "collect_parameters",
    "docstring_parameters",
    "one_line",
    "parameter_problems",
    "parameter_tables_rst",
    "signature_parameters",
]

#: The estimators of the table, in column order, as ``module:ClassName`` (imported when needed).
ESTIMATORS = ("aaren_ts:AarenClassifier", "aaren_ts:AarenForecaster")

ABSENT = "—"
_MISSING_DESCRIPTION = "*(no description in the docstring)*"


@dataclass(frozen=True)
class ParameterRow:
    """One parameter: its name, group, default on each estimator (``None``: not a parameter of it)
    and one-line description (``""`` when no docstring documents it)."""

    name: str
    group: str  # "shared" or the name of the one class that has it
    defaults: tuple[str | None, ...]
    description: str


def _classes(classes: Any = None) -> tuple[type, ...]:
    if classes is not None:
        return tuple(classes)
    out = []
    for spec in ESTIMATORS:
        module, _, name = spec.partition(":")
        out.append(getattr(importlib.import_module(module), name))
    return tuple(out)


def _format_default(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "(required)"
    if inspect.isclass(value) or inspect.isfunction(value):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def signature_parameters(cls: type) -> dict[str, str]:
    """Constructor parameter names of ``cls`` in signature order, with their defaults as ``repr``."""
    params = inspect.signature(cls.__init__).parameters
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return {
        name: _format_default(p.default)
        for i, (name, p) in enumerate(params.items())
        if not (i == 0 and name in ("self", "cls")) and p.kind not in kinds
    }


def docstring_parameters(cls: type) -> dict[str, list[str]]:
    """The ``Parameters`` section of the class docstring: name to description lines.

    An entry naming several parameters (``a, b : int``) gives each of them the same description.
    """
    from numpydoc.docscrape import NumpyDocString

    doc = NumpyDocString(inspect.getdoc(cls) or "")
    out: dict[str, list[str]] = {}
    for param in doc["Parameters"]:
        for name in re.split(r"\s*,\s*", param.name.strip()):
            name = name.lstrip("*").strip()
            if name:
                out[name] = list(param.desc)
    return out


def _split_sentences(text: str) -> list[str]:
    # Protect ``literals`` and `roles` so a period inside one never ends a sentence.
    spans: list[str] = []

    def hide(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    hidden = re.sub(r"``.+?``|`[^`]+`", hide, text)
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'\x00*])", hidden)
    return [re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], p) for p in parts]


def one_line(desc: list[str]) -> str:
    """The first sentence of the first paragraph of a numpydoc description (reStructuredText)."""
    paragraph: list[str] = []
    for line in desc:
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    text = " ".join(paragraph)
    return _split_sentences(text)[0].strip() if text else ""


_BARE_MEMBER_ROLE = re.compile(r":(meth|attr):`([A-Za-z_]\w*)`")


def qualify_members(text: str, cls: type) -> str:
    """``text`` with each :meth:`name` or :attr:`name` of an attribute of ``cls`` qualified by the
    class's public path (:meth:`~aaren_ts.AarenClassifier.name`): in the class docstring such a
    reference resolves against the class, in the table (no class context) only when qualified."""
    package = sys.modules.get(cls.__module__.partition(".")[0])
    if getattr(package, cls.__name__, None) is cls:
        path = f"{cls.__module__.partition('.')[0]}.{cls.__name__}"
    else:
        path = f"{cls.__module__}.{cls.__qualname__}"

    def qualify(match: re.Match[str]) -> str:
        role, name = match.groups()
        return f":{role}:`~{path}.{name}`" if hasattr(cls, name) else match.group(0)

    return _BARE_MEMBER_ROLE.sub(qualify, text)


def collect_parameters(classes: Any = None) -> list[ParameterRow]:
    """Every constructor parameter of the estimators: shared ones (in the first estimator's order),
    then those of each estimator alone (in its own order)."""
    classes = _classes(classes)
    signatures = [signature_parameters(c) for c in classes]
    docs = [docstring_parameters(c) for c in classes]

    def description(name: str) -> str:
        for cls, doc in zip(classes, docs, strict=True):  # first estimator with a non-empty entry
            line = one_line(doc.get(name, []))
            if line:
                return qualify_members(line, cls)
        return ""

    def row(name: str, group: str) -> ParameterRow:
        defaults = tuple(sig.get(name) for sig in signatures)
        return ParameterRow(name, group, defaults, description(name))

    rows: list[ParameterRow] = []
    shared = [n for n in signatures[0] if all(n in sig for sig in signatures[1:])]
    rows += [row(n, "shared") for n in shared]
    for cls, sig in zip(classes, signatures, strict=True):
        rows += [row(n, cls.__name__) for n in sig if n not in shared]
    return rows


def parameter_problems(classes: Any = None) -> list[str]:
    """What keeps the table from being complete: parameters without a docstring description, and
    docstring entries that name no parameter of the signature."""
    classes = _classes(classes)
    problems: list[str] = []
    for row in collect_parameters(classes):
        if not row.description:
            owners = [c.__name__ for c, d in zip(classes, row.defaults, strict=True) if d is not None]
            problems.append(
                f"parameter {row.name!r} of {' and '.join(owners)} has no description in the "
                "class docstring's Parameters section"
            )
    for cls in classes:
        names = set(signature_parameters(cls))
        for name in docstring_parameters(cls):
            if name not in names:
                problems.append(
                    f"{cls.__name__}'s docstring documents {name!r}, which is not a parameter of "
                    f"{cls.__name__}.__init__"
                )
    return problems


def _list_table(rows: list[ParameterRow], classes: tuple[type, ...]) -> list[str]:
    if not rows:
        return ["None at present.", ""]
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 20 14 14 52", "   :class: parameter-table"]
    lines.append("")
    lines += ["   * - parameter"] + [f"     - default on :class:`~aaren_ts.{c.__name__}`" for c in classes]
    lines += ["     - description"]
    for row in rows:
        lines.append(f"   * - ``{row.name}``")
        for default in row.defaults:
            lines.append(f"     - ``{default}``" if default is not None else f"     - {ABSENT}")
        lines.append(f"     - {row.description or _MISSING_DESCRIPTION}")
    return [*lines, ""]


def parameter_tables_rst(classes: Any = None, underline: str = "-") -> str:
    """reStructuredText for the three tables (shared, first estimator only, second only), each under
    its own heading underlined with ``underline``."""
    classes = _classes(classes)
    rows = collect_parameters(classes)
    sections = [("shared", "Shared parameters")] + [(c.__name__, f"{c.__name__} only") for c in classes]
    lines: list[str] = []
    for group, title in sections:
        lines += [title, underline * len(title), ""]
        if group == "shared":
            lines += [
                "Taken by every estimator; the description is the classifier's (the forecaster's where "
                "the classifier's docstring has none), and the defaults may differ.",
                "",
            ]
        lines += _list_table([r for r in rows if r.group == group], classes)
    return "\n".join(lines)


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    logger = logging.getLogger(__name__)

    class ParameterTableDirective(SphinxDirective):
        """``.. aaren-parameter-table::`` — the generated parameter tables, with their headings."""

        has_content = False

        def run(self) -> list[Any]:
            try:
                classes = _classes()
            except Exception as exc:  # a broken import is reported, not a crash of the whole build
                where = self.get_location()
                logger.warning("parameter table: cannot import the estimators: %r", exc, location=where)
                return [nodes.paragraph("", f"(The parameter table could not be generated: {exc!r}.)")]
            for cls in classes:
                self.env.note_dependency(inspect.getfile(cls))
            for problem in parameter_problems(classes):
                logger.warning("parameter table: %s", problem, location=self.get_location())
            text = parameter_tables_rst(classes)
            container = nodes.section()  # a throwaway parent; its children are returned
            content = StringList(text.splitlines(), source="aaren-parameter-table")
            nested_parse_with_titles(self.state, content, container, self.content_offset)
            return container.children

    app.add_directive("aaren-parameter-table", ParameterTableDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
