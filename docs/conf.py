"""Sphinx configuration of the aaren_ts documentation.

Build with ``python -m sphinx -n -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra
installs what it needs): nitpicky (``-n``), so a cross-reference to a name that does not exist, or is
not documented here, fails the build. Besides the extensions that ship with Sphinx, numpydoc and the
pydata-sphinx-theme, two local modules in ``docs/_ext/`` are used: ``param_table`` (the generated
table of constructor parameters) and ``markdown_results`` (benchmark Markdown read by myst-parser
and placed in a page as rubrics and tables).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # so the package imports even when it is not installed
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))  # local extensions

from docutils import nodes  # noqa: E402
from docutils.parsers.rst import Directive  # noqa: E402
from docutils.statemachine import StringList  # noqa: E402
from markdown_results import markdown_to_nodes  # noqa: E402

import aaren_ts  # noqa: E402

project = "aaren_ts"
author = "aaren_ts developers"
copyright = "aaren_ts developers"
release = aaren_ts.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "param_table",
]

exclude_patterns = ["_build", "_ext", "scripts", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme = "pydata_sphinx_theme"  # the theme of scikit-learn and sktime
html_theme_options = {
    "logo": {"text": f"aaren_ts {release}"},
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The parameter table needs the width more than its page needs an outline of three headings.
    "secondary_sidebar_items": {"**": ["page-toc"], "user_guide/parameters": []},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
# Pages without sub-pages get no (empty) left sidebar, so wide tables have the room.
html_sidebars = {
    page: [] for page in ("index", "getting_started", "how_aaren_works", "results", "measured", "examples")
}
html_title = f"aaren_ts {release}"
html_show_sourcelink = False

# autodoc: document members in source order, never import-time side effects beyond the package.
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # signatures stay readable; types are in the numpydoc sections
# No "Bases:" line unless a directive asks for one (``:show-inheritance:``): most bases are private
# (``aaren_ts.engine._streams.Streams``) or ``object``. (The key is left out rather than set to False,
# which Sphinx reads as the flag being given.)
autodoc_default_options = {"members": True}
autosummary_generate = False  # tables only; the objects are documented on the API pages

# numpydoc: the estimators inherit dozens of sktime/sklearn methods; list only what is documented.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Every cross-reference must resolve: a name that was renamed, moved or made private fails the build.
nitpicky = True
# Except those into other packages' documentation. Intersphinx would resolve them, but the build runs
# without network access, so there is no inventory to check them against; they are ignored by
# package, never by pattern on aaren_ts. (The standard library's urllib is in the same position.)
_EXTERNAL = r"(torch|sktime|skbase|sklearn|skorch|numpy|pandas|onnxruntime|dask|urllib)(\..+)?"
nitpick_ignore_regex = [(r"py:.*", _EXTERNAL)]
suppress_warnings: list[str] = []


# A few library docstrings write fitted attributes such as ``horizon_`` bare inside a numpydoc type
# ("ndarray of shape (n_windows, horizon_, n_channels)"), where reStructuredText reads ``name_`` as
# a link target and fails the strict build. Escape trailing underscores of bare words in
# "of shape (...)" types only; the library text is otherwise rendered as written.
_BARE_UNDERSCORE = re.compile(r"(?<![`\\\w])([A-Za-z]\w*)_(?=[,)\s])")


def _escape_shape_targets(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        head, sep, shape = line.partition("of shape (")
        if sep:
            lines[i] = head + sep + _BARE_UNDERSCORE.sub(r"\1\\_", shape)


# The estimators' docstrings write a method of their own class as :meth:`predict`. That resolves on the
# class's method reference, where the class is the context, but not in an autosummary table of the
# API pages, which has no class context. Qualify such a reference with the documented class
# (``aaren_ts.AarenForecaster.predict``) when the class has that attribute; anything else is left as
# written (and fails the nitpicky build if it does not resolve).
_BARE_ROLE = re.compile(r":(meth|attr|obj):`([A-Za-z_]\w*)`")


def _qualify_own_members(app, what, name, obj, options, lines):
    if what not in ("method", "property", "attribute") or not name.startswith("aaren_ts."):
        return
    owner_path = name.rpartition(".")[0]
    module_path, _, owner_name = owner_path.rpartition(".")
    owner = getattr(sys.modules.get(module_path), owner_name, None)
    if not isinstance(owner, type):
        return

    def qualify(match: re.Match) -> str:
        role, target = match.groups()
        if not hasattr(owner, target):
            return match.group(0)
        return f":{role}:`~{owner_path}.{target}`"

    lines[:] = [_BARE_ROLE.sub(qualify, line) for line in lines]


# The inherited sktime/scikit-base methods on the estimators' pages carry sktime's docstrings, written
# for sktime's documentation: glossary terms (:term:`mtype`), labels of its pages (:ref:`...`),
# references to its own objects, bare ``classes_`` (a link target to reStructuredText) and a few
# indented continuation lines. After numpydoc has turned them into reStructuredText, their cross-
# references become plain text (a term in italics, any other in literal text) and the rest is made
# valid; the wording is sktime's. Docstrings of aaren_ts are never changed here.
_ROLE = re.compile(r":(?:py:)?(term|ref|doc|class|meth|func|obj|attr|mod|data|exc|const):`~?([^`]*)`")
_LITERAL = re.compile(r"(``.+?``)")
_BARE_TARGET = re.compile(r"(?<![`\\\w*])([A-Za-z][\w.]*)_(?![\w`])")


def _foreign_role(match: re.Match) -> str:
    role, text = match.groups()
    title, sep, _target = text.partition(" <")
    text = title if sep else text.rpartition(".")[2] if role != "term" else text
    return f"*{text}*" if role == "term" else f"``{text}``"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tame_foreign_docstrings(app, what, name, obj, options, lines):
    module = getattr(getattr(obj, "fget", obj), "__module__", None) or ""
    if what not in ("method", "property") or module.split(".")[0] not in ("sktime", "skbase", "sklearn"):
        return
    out: list[str] = []
    for line in lines:
        parts = _LITERAL.split(_ROLE.sub(_foreign_role, line))
        line = "".join(p if p.startswith("``") else _BARE_TARGET.sub(r"\1\\_", p) for p in parts)
        # A line indented deeper than the paragraph line above it, which itself continues a paragraph,
        # is an error to docutils ("Unexpected indentation"); a blank line makes it a block quote.
        if (
            line.strip()
            and len(out) >= 2
            and out[-1].strip()
            and out[-2].strip()
            and _indent(line) > _indent(out[-1]) == _indent(out[-2])
            and not out[-1].rstrip().endswith("::")
        ):
            out.append("")
        out.append(line)
    lines[:] = out


RESULTS = Path(__file__).resolve().parent / "_static" / "results"


def _markdown(directive: Directive, path: Path) -> list[nodes.Node]:
    """The nodes of a Markdown file (``markdown_results``); a warning of myst-parser fails the build."""
    try:
        return markdown_to_nodes(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise directive.error(f"{path.name}: {err}") from err


class ResultDirective(Directive):
    """``.. aaren-result:: NAME`` — a committed benchmark result, or a plain note that it is missing.

    ``NAME`` is a file in ``_static/results/`` (copied there by ``docs/scripts/collect_results.py``):
    a Markdown file is rendered (its pipe tables as tables, its headings, prose and lists as such; the
    text of every cell exactly as in the file), a PNG is shown as a figure. The directive's content is
    the command that regenerates the file; it is printed under the result either way.
    """

    required_arguments = 1
    has_content = True

    def run(self):
        name = self.arguments[0]
        command = " ".join(line.strip() for line in self.content if line.strip())
        path = RESULTS / name
        env = self.state.document.settings.env
        container = nodes.container(classes=["aaren-result"])
        lines: list[str] = []
        if path.is_file() and path.suffix == ".png":
            lines += [f".. image:: /_static/results/{name}", "   :width: 100%", ""]
        elif path.is_file() and path.suffix == ".md":
            env.note_dependency(str(path))
            container += _markdown(self, path)
        elif path.is_file():
            lines += [f".. literalinclude:: /_static/results/{name}", "   :language: none", ""]
        else:
            note = f"**Not yet produced.** ``{name}`` is not in ``docs/_static/results/``; nothing is shown."
            lines += [note, ""]
        if command:
            lines += [f"Regenerate: ``{command}`` then ``python docs/scripts/collect_results.py``.", ""]
        source = StringList(lines, source=f"aaren-result {name}")
        self.state.nested_parse(source, self.content_offset, container)
        return [container]


class MarkdownDirective(Directive):
    """``.. aaren-markdown:: PATH`` — a Markdown file (relative to this ``docs/`` folder) rendered like
    the results: pipe tables as tables, the text of every cell exactly as in the file."""

    required_arguments = 1

    def run(self):
        path = Path(__file__).resolve().parent / self.arguments[0]
        if not path.is_file():
            raise self.error(f"aaren-markdown: no file {self.arguments[0]!r} in docs/")
        self.state.document.settings.env.note_dependency(str(path))
        container = nodes.container(classes=["aaren-result"])
        container += _markdown(self, path)
        return [container]


def setup(app):
    # Run before numpydoc (priority 500) so it sees the escaped text.
    app.connect("autodoc-process-docstring", _escape_shape_targets, priority=400)
    app.connect("autodoc-process-docstring", _qualify_own_members, priority=600)
    # After numpydoc, so its See Also entries (written as :obj: references) are covered too.
    app.connect("autodoc-process-docstring", _tame_foreign_docstrings, priority=600)
    app.add_directive("aaren-result", ResultDirective)
    app.add_directive("aaren-markdown", MarkdownDirective)
    return {"parallel_read_safe": True}
