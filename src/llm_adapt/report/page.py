"""What the HTML page shows above the report: the first screen (report/first_screen.py) drawn as a title,
a verdict banner, figure cards that link to their sections and the deciding checks; the section index;
long tables folded. Pure functions."""

from __future__ import annotations

import html
import re
from typing import Any

from llm_adapt.messages import PAGE_LABELS
from llm_adapt.report.first_screen import WORDS as FIRST_WORDS
from llm_adapt.report.first_screen import Check, Figure, FirstScreen

# The report's sections in order (templates/sections/<name>.md.j2); a section's number is its place here.
SECTIONS = ("summary", "model", "environment", "strategy", "deployment", "functional", "features", "adaptation",
            "accuracy", "performance", "resources", "notes", "conclusion")
SECTION = {name: i + 1 for i, name in enumerate(SECTIONS)}


def header_html(screen: FirstScreen, lang: str, section_ids: dict[int, str]) -> str:
    """The first screen above the report: title, verdict banner with its why, what was verified and what
    only planned, figure cards with their provenance, the deciding checks and, apart, the informational
    results. Every text escaped."""
    W, e = FIRST_WORDS[lang], _with_code
    status = screen.status
    cards = "".join(_card(f, section_ids) for f in screen.figures)
    scope = (f'<ul class="scope"><li><strong>{e(W["verified"])}</strong>: {e(W["sep"].join(screen.verified))}</li>'
             f'<li><strong>{e(W["planned"])}</strong>: {e(W["sep"].join(screen.planned))}</li>'
             + "".join(f'<li class="caution"><strong>{e(W["caution"])}</strong>: {e(c)}</li>' for c in screen.cautions)
             + '</ul>')
    return (f'<header class="first-screen"><h1>{e(screen.title)}</h1><p class="facts">{e(screen.facts)}</p>'
            + (f'<p class="weights">{e(screen.weights)}</p>' if screen.weights else "") +
            f'<div class="banner {status.lower()}" id="verdict"><span class="status">{e(screen.shown or status)}</span>'
            f'<span class="why">{e(screen.why)}</span></div>{scope}<div class="cards">{cards}</div>'
            f'{_checks_table(W["deciding"], screen.checks, "deciding")}{_informational(W, screen)}</header>')


def _with_code(text: str) -> str:
    """Escaped, with the Markdown's `code` spans (a file name, a command) drawn as code, as the Markdown shows them."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _checks_table(title: str, checks: list[Check], css: str) -> str:
    if not checks:
        return ""
    e = html.escape
    rows = "".join(f'<tr class="{c.status.lower()}"><td>{c.status}</td><td>{e(c.where)}</td><td>{e(c.name)}</td>'
                   f'<td>{e(c.value)}</td><td>{e(c.threshold)}</td></tr>' for c in checks)
    return f'<section class="{css}"><h2>{e(title)}</h2><table>{rows}</table></section>'


def _informational(W: dict[str, str], screen: FirstScreen) -> str:
    """Informational rows in their own folded block, never beside the deciding checks."""
    if not screen.informational:
        return ""
    rows = "".join(f'<tr><td>{html.escape(c.status)}</td><td>{html.escape(c.where)}</td><td>{html.escape(c.name)}</td>'
                   f'<td>{html.escape(c.value)}</td></tr>' for c in screen.informational)
    return (f'<details class="informational"><summary>{html.escape(W["informational"])}</summary>'
            f'<table>{rows}</table></details>')


def _card(figure: Figure, section_ids: dict[int, str]) -> str:
    target = section_ids.get(SECTION.get(figure.section, 0), "")
    status = f' {figure.status.lower()}' if figure.status else ""
    e = html.escape
    return (f'<a class="card{status}" href="#{target}"><span class="label">{e(figure.label)}</span>'
            f'<span class="value">{e(figure.value)}</span><span class="source">{e(figure.source)}</span></a>')


def section_ids(toc_tokens: list[dict[str, Any]]) -> dict[int, str]:
    """Report section number -> the heading id the Markdown toc extension gave it."""
    out = {}
    for token in toc_tokens:
        for item in [token, *token.get("children", [])]:
            match = re.match(r"(\d+)\.\s", item["name"])
            if match and item["level"] == 2:
                out[int(match.group(1))] = item["id"]
    return out


def nav_html(toc_tokens: list[dict[str, Any]], lang: str) -> str:
    items = "".join(f'<li><a href="#{t["id"]}">{html.escape(html.unescape(t["name"]))}</a></li>'
                    for token in toc_tokens for t in [token, *token.get("children", [])] if t["level"] == 2)
    return f'<nav class="index"><strong>{PAGE_LABELS[lang]["index"]}</strong><ul>{items}</ul></nav>'


TABLE = re.compile(r"<table>.*?</table>", re.S)


def collapse_long_tables(body: str, lang: str, keep_rows: int = 12) -> str:
    """Tables longer than `keep_rows` open on demand, so the page reads top to bottom."""
    def fold(match: re.Match) -> str:
        table = match.group(0)
        rows = table.count("<tr>") - 1
        if rows <= keep_rows:
            return table
        return f'<details><summary>{rows} {PAGE_LABELS[lang]["rows"]}</summary>{table}</details>'

    return TABLE.sub(fold, body)
