"""Sphinx configuration of the aaren_ts documentation.

Build with ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra
installs what it needs). Besides the extensions that ship with Sphinx, numpydoc and the
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
autodoc_default_options = {"members": True, "show-inheritance": False}
autosummary_generate = False  # tables only; the objects are documented on the API pages

# numpydoc: the estimators inherit dozens of sktime/sklearn methods; list only what is documented.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

nitpicky = False
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
    app.add_directive("aaren-result", ResultDirective)
    app.add_directive("aaren-markdown", MarkdownDirective)
    return {"parallel_read_safe": True}
