"""Render the Markdown that the benchmark scripts write as real docutils nodes.

The benchmark scripts write their results as GitHub-flavoured Markdown (``docs/_static/results/*.md``):
headings, short paragraphs, bullet lists and pipe tables. :func:`markdown_to_nodes` turns exactly that
subset into docutils nodes — tables into ``table`` nodes, headings into rubrics (they must not become
sections of the page that includes them), paragraphs and lists as such — so the numbers show as HTML
tables instead of a block of Markdown source. Cell and paragraph text is copied verbatim (smart
quotes are switched off for it); only
```code```, ``**strong**`` and ``*emphasis*`` are recognised inline, and nothing is read as
reStructuredText, so ``$VARS``, trailing underscores or asterisks in the files cannot break the build.

Anything outside that subset (for example a fenced code block) is kept: fenced blocks become literal
blocks, and any other line ends up in a paragraph as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from docutils import nodes

__all__ = ["markdown_to_nodes", "parse_inline", "split_row"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SEPARATOR_CELL = re.compile(r"^\s*(:?)-{1,}(:?)\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# `code` (any run of backticks), **strong**, *emphasis* (not touching spaces or word characters
# outside, so "cells/*.md" or "2 * 3" stay plain text).
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|\*\*(?P<strong>\S(?:.*?\S)?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^\s*](?:[^*]*?[^\s*])?)\*(?![\w*])"
)
# Cells that say "no number here"; they do not stop a column of numbers being right-aligned.
_NEUTRAL = {"–", "—", "-", "nan", "inf", "nan/inf", "n/a"}
# A body cell that is a number (optionally signed, with a unit %, or "mean ± std"): right-aligned.
_NUMBER = re.compile(r"^[-+−]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?\s*%?(\s*±\s*\d[\d.]*)?\s*%?$", re.IGNORECASE)


def parse_inline(text: str) -> list[nodes.Node]:
    """Text with Markdown inline code, strong and emphasis, as docutils inline nodes."""
    out: list[nodes.Node] = []
    pos = 0
    for match in _INLINE.finditer(text):
        if match.start() > pos:
            out.append(nodes.Text(_unescape(text[pos : match.start()])))
        if match.group("code") is not None:
            code = match.group("code")
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]  # CommonMark: one space of padding inside the backticks is dropped
            out.append(nodes.literal(code, code))
        elif match.group("strong") is not None:
            out.append(nodes.strong("", "", *parse_inline(match.group("strong"))))
        else:
            out.append(nodes.emphasis("", "", *parse_inline(match.group("em"))))
        pos = match.end()
    if pos < len(text):
        out.append(nodes.Text(_unescape(text[pos:])))
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\([\\`*_|#\-+.!\[\](){}])", r"\1", text)


def split_row(line: str) -> list[str]:
    """Cells of a pipe-table row (outer pipes optional, ``\\|`` is a literal pipe)."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells: list[str] = []
    current: list[str] = []
    in_code = False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    cells.append("".join(current).strip())
    return cells


def _is_separator(line: str) -> bool:
    if "-" not in line or "|" not in line:
        return False
    cells = split_row(line)
    return bool(cells) and all(_SEPARATOR_CELL.match(c) for c in cells)


def _alignment(cell: str) -> str | None:
    m = _SEPARATOR_CELL.match(cell)
    if m is None:
        return None
    left, right = m.group(1), m.group(2)
    if left and right:
        return "center"
    if right:
        return "right"
    if left:
        return "left"
    return None


def _table(header: list[str], separator: list[str], body: list[list[str]]) -> nodes.table:
    n_cols = max([len(header), len(separator)] + [len(r) for r in body])
    header = header + [""] * (n_cols - len(header))
    body = [r + [""] * (n_cols - len(r)) for r in body]
    aligns = [_alignment(c) for c in separator] + [None] * (n_cols - len(separator))
    for j in range(n_cols):
        values = [r[j] for r in body if r[j].strip() and r[j].strip().lower() not in _NEUTRAL]
        if aligns[j] is None and values and all(_NUMBER.match(v) for v in values):
            aligns[j] = "right"

    table = nodes.table(classes=["markdown-table"])
    group = nodes.tgroup(cols=n_cols)
    table += group
    for _ in range(n_cols):
        group += nodes.colspec(colwidth=1)

    def row(cells: list[str]) -> nodes.row:
        r = nodes.row()
        for j, text in enumerate(cells):
            entry = nodes.entry(classes=[f"align-{aligns[j]}"] if aligns[j] else [])
            if text:
                entry += nodes.paragraph("", "", *parse_inline(text))
            r += entry
        return r

    thead = nodes.thead()
    thead += row(header)
    group += thead
    tbody = nodes.tbody()
    for cells in body:
        tbody += row(cells)
    group += tbody
    return table


def _blocks(lines: list[str]) -> Iterator[tuple[str, object]]:
    """Yield ``(kind, data)`` for each block: heading, table, list, code, paragraph."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _FENCE.match(line):
            fence = _FENCE.match(line).group(1)
            j = i + 1
            while j < n and not lines[j].strip().startswith(fence):
                j += 1
            yield "code", "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        heading = _HEADING.match(line)
        if heading:
            yield "heading", (len(heading.group(1)), heading.group(2))
            i += 1
            continue
        if "|" in line and i + 1 < n and _is_separator(lines[i + 1]):
            header, separator = split_row(line), split_row(lines[i + 1])
            j = i + 2
            body = []
            while j < n and lines[j].strip() and "|" in lines[j]:
                body.append(split_row(lines[j]))
                j += 1
            yield "table", (header, separator, body)
            i = j
            continue
        if _BULLET.match(line):
            items: list[str] = []
            while i < n and lines[i].strip():
                bullet = _BULLET.match(lines[i])
                if bullet:
                    items.append(bullet.group(1).strip())
                elif items:  # continuation line of the previous item
                    items[-1] += " " + lines[i].strip()
                i += 1
            yield "list", items
            continue
        para: list[str] = []
        while i < n and lines[i].strip():
            nxt = lines[i]
            if para and (_HEADING.match(nxt) or _FENCE.match(nxt) or _BULLET.match(nxt)):
                break
            if para and "|" in nxt and i + 1 < n and _is_separator(lines[i + 1]):
                break
            para.append(nxt.strip())
            i += 1
        yield "paragraph", " ".join(para)


def markdown_to_nodes(text: str) -> list[nodes.Node]:
    """The block nodes for ``text`` (GitHub-flavoured Markdown, the subset the benchmarks write)."""
    out: list[nodes.Node] = []
    for kind, data in _blocks(text.splitlines()):
        if kind == "heading":
            level, title = data
            out.append(nodes.rubric("", "", *parse_inline(title), classes=[f"markdown-h{level}"]))
        elif kind == "table":
            out.append(_table(*data))
        elif kind == "list":
            bullets = nodes.bullet_list(bullet="-")
            for item in data:
                bullets += nodes.list_item("", nodes.paragraph("", "", *parse_inline(item)))
            out.append(bullets)
        elif kind == "code":
            out.append(nodes.literal_block(data, data))
        else:
            out.append(nodes.paragraph("", "", *parse_inline(data)))
    for node in out:
        # Sphinx's smart quotes would turn "--flag" into an en dash and quotes into curly ones; the
        # text must stay exactly as the benchmark wrote it.
        node["support_smartquotes"] = False
    return out
