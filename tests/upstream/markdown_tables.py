"""Whether every table in a Markdown text renders as one: read with a real Markdown parser (markdown-it-py,
GitHub's table rule), each table's header, delimiter and rows must have the same number of cells, no line
shaped like a table row or a table's delimiter row may be left outside a table (the parser renders such a
block as text: a header glued to the heading above it leaves its delimiter row behind), and a table stands
after a blank line (Python-Markdown, which draws the HTML page, starts a table only there)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_PIPE = re.compile(r"(?<!\\)\|")
# a table's delimiter row: cells of dashes with optional alignment colons, at least one pipe
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def cells(line: str) -> int:
    """Cells in one table line, as GitHub's rule splits it: on unescaped pipes (inside code spans too),
    the leading and trailing pipe optional."""
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") and not text.endswith("\\|") else text
    return len(_PIPE.split(text))


def table_problems(text: str) -> list[str]:
    """One line per table that would not render as written; [] when all do."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    lines = text.splitlines()
    in_table, in_code, problems = set(), set(), []
    for token in tokens:
        if token.map is None:
            continue
        start, end = token.map
        if token.type == "table_open":
            in_table.update(range(start, end))
            counts = [cells(lines[i]) for i in range(start, end) if lines[i].strip()]
            if len(set(counts)) != 1:
                problems.append(f"line {start + 1}: a table whose header, delimiter and rows have {counts} cells")
            if start > 0 and lines[start - 1].strip():
                problems.append(f"line {start + 1}: a table right under a line of text (no blank line before it)")
        elif token.type in ("fence", "code_block", "html_block"):
            in_code.update(range(start, end))
    for i, line in enumerate(lines):
        if i in in_table or i in in_code:
            continue
        if line.lstrip().startswith("|") or ("|" in line and _DELIMITER.match(line)):
            problems.append(f"line {i + 1}: not rendered as a table: {line.strip()[:80]}")
    return problems
