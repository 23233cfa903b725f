"""Render the Markdown that the benchmark scripts write as docutils nodes, through myst-parser.

The benchmark scripts write their results as GitHub-flavoured Markdown (``docs/_static/results/*.md``):
headings, short paragraphs, bullet lists and pipe tables. myst-parser's docutils parser reads it;
:func:`markdown_to_nodes` then adapts the result to a place in the middle of a page: headings become
rubrics (they must not become sections of the page that includes them), tables get the
``markdown-table`` class of ``_static/custom.css`` with columns of numbers right-aligned, and smart
quotes are switched off, so every cell shows the text of the file.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.utils import new_document
from markdown_it import MarkdownIt
from myst_parser.parsers.docutils_ import Parser

__all__ = ["markdown_to_nodes"]

# Cells that say "no number here"; they do not stop a column of numbers being right-aligned.
_NEUTRAL = {"–", "—", "-", "nan", "inf", "nan/inf", "n/a", ""}
# A body cell that is a number (optionally signed, with a unit %, or "mean ± std"): right-aligned.
_NUMBER = re.compile(r"^[-+−]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?\s*%?(\s*±\s*\d[\d.]*)?\s*%?$", re.IGNORECASE)
# myst-parser's classes for the alignments written in a table's separator row (":--", ":-:", "--:")
_MYST_ALIGN = {"text-left": "align-left", "text-center": "align-center", "text-right": "align-right"}


def _parse(text: str) -> nodes.document:
    """myst-parser's document for ``text``; ``ValueError`` with its messages if it warned."""
    parser = Parser()
    settings = get_default_settings(parser)
    settings.report_level = 2
    settings.warning_stream = io.StringIO()
    # headings become rubrics of their own level (below), so a file may start at any level
    settings.myst_suppress_warnings = ["myst.header"]
    document = new_document("<benchmark markdown>", settings)
    parser.parse(text, document)
    messages = settings.warning_stream.getvalue().strip()
    if messages:
        raise ValueError(f"myst-parser warned about the Markdown: {messages}")
    return document


def _flatten(children: list[nodes.Node], levels: Iterator[int]) -> list[nodes.Node]:
    """The nodes of ``children`` with every section replaced by a rubric and its contents.

    ``levels`` gives the Markdown level (1 for ``#``) of each heading in document order: myst-parser
    numbers its sections from the first heading's level, which would lose it.
    """
    out: list[nodes.Node] = []
    for child in children:
        if isinstance(child, nodes.section):
            title = child.next_node(nodes.title)
            level = next(levels)
            out.append(nodes.rubric("", "", *title.children, classes=[f"markdown-h{level}"]))
            out += _flatten([c for c in child.children if c is not title], levels)
        else:
            out.append(child)
    return out


def _align_columns(table: nodes.table) -> None:
    """Mark each column's cells with the separator row's alignment, or right-align columns of numbers."""
    rows = [list(row.findall(nodes.entry)) for row in table.findall(nodes.row)]
    body = [
        list(row.findall(nodes.entry))
        for row in table.findall(nodes.row)
        if isinstance(row.parent, nodes.tbody)
    ]
    for j in range(max((len(r) for r in rows), default=0)):
        column = [r[j] for r in rows if j < len(r)]
        given = {_MYST_ALIGN[c] for e in column for c in e["classes"] if c in _MYST_ALIGN}
        values = [r[j].astext().strip() for r in body if j < len(r)]
        values = [v for v in values if v.lower() not in _NEUTRAL]
        if given:
            align = given.pop()
        elif values and all(_NUMBER.match(v) for v in values):
            align = "align-right"
        else:
            continue
        for entry in column:
            entry["classes"] = [c for c in entry["classes"] if c not in _MYST_ALIGN] + [align]


def markdown_to_nodes(text: str) -> list[nodes.Node]:
    """Docutils nodes for ``text``: headings as rubrics, tables as ``markdown-table`` tables.

    Parameters
    ----------
    text : str
        GitHub-flavoured Markdown, as the benchmark scripts write it.

    Returns
    -------
    list of docutils nodes
        The top-level nodes, ready to be placed in a page (each with smart quotes switched off).

    Raises
    ------
    ValueError
        If myst-parser warned about the Markdown (the build reports it as an error).
    """
    levels = (int(t.tag[1:]) for t in MarkdownIt("commonmark").parse(text) if t.type == "heading_open")
    out = _flatten(list(_parse(text).children), levels)
    for node in out:
        for table in node.findall(nodes.table):
            table["classes"] += ["markdown-table"]
            _align_columns(table)
        node["support_smartquotes"] = False
    return out
