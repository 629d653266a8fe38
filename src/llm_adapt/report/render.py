"""Render report.md and a self-contained report.html from a run directory's JSON files."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import replace
from pathlib import Path
from typing import Callable

import jinja2

from llm_adapt import rundir
from llm_adapt.cells import cell, gib, num, pct
from llm_adapt.errors import UsageError
from llm_adapt.judged.data import load_run
from llm_adapt.messages import message, messages
from llm_adapt.report.context import report_context
from llm_adapt.report.first_screen import FirstScreen
from llm_adapt.report.page import collapse_long_tables, header_html, nav_html, section_ids
from llm_adapt.report.plots import draw_all
from llm_adapt.results import write_text_atomic

LANGS = ("en", "zh")


def quoted(text: str, lang: str) -> str:
    """Words of a model or a server, marked as a quotation where the report's own words are not English. Pure."""
    return text if lang == "en" or text in ("", "-") else f"「{text}」"


def environment(lang: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.report", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(cell=cell, num=num, pct=pct, gib=gib, msg=lambda value: message(value, lang),
                       msgs=lambda values: messages(values, lang),
                       quoted=lambda text: quoted(text, lang))
    return env


def render_report(run_dir: Path, lang: str = "en", warn: Callable[[str], None] | None = None,
                  out: Path | None = None) -> list[Path]:
    """report.md and report.html of a run directory, written into it or into `out` (with their plots); `warn`
    hears of each result file that cannot be read (the report names it in its notes and judges without it)."""
    if lang not in LANGS:
        raise UsageError(f"--lang {lang!r}: use one of {', '.join(LANGS)}")
    run = load_run(run_dir)
    target = rundir.ensure_writable(Path(out) if out is not None else run.dir)  # refused in one line, before drawing
    for why in run.unreadable.values() if warn else ():
        warn(why)
    plots = draw_all(run, target)
    template = environment(lang).get_template("report.md.j2")
    ctx = report_context(run, plots, lang)  # once: the Markdown and the page read the same record
    markdown_text = renumbered(template.render(ctx.names()))
    md_path, html_path = target / rundir.report(lang, "md"), target / rundir.report(lang, "html")
    write_text_atomic(md_path, markdown_text)
    page_text = renumbered(template.render(replace(ctx, page=True).names()))
    write_text_atomic(html_path, to_html(page_text, target, lang, ctx.screen))
    return [md_path, html_path]


SUBSECTION = re.compile(r"^### (\d+)\.(\d+) ", re.M)


def renumbered(markdown_text: str) -> str:
    """Subsections numbered 1, 2, 3 within each section in the order they stand: a subsection a run does
    not have (no caveats, no int8 experiment) leaves no gap. Pure."""
    counters: dict[str, int] = {}

    def number(match: re.Match) -> str:
        section = match.group(1)
        counters[section] = counters.get(section, 0) + 1
        return f"### {section}.{counters[section]} "

    return SUBSECTION.sub(number, markdown_text)


CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def inert(markdown_text: str) -> str:
    """Escape every '<' outside code, so no text from a model, a prompt or a server becomes HTML.

    Markdown passes raw HTML through; code spans and blocks are escaped by Markdown itself."""
    parts = CODE.split(markdown_text)
    return "".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def to_html(markdown_text: str, run_dir: Path, lang: str, screen: FirstScreen | None = None) -> str:
    """One self-contained page: a verdict banner, key figures and the failed checks first, a sticky
    section index, then the Markdown converted with long tables folded and every plot embedded."""
    import markdown

    converter = markdown.Markdown(extensions=["tables", "fenced_code", "toc"])
    body = collapse_long_tables(converter.convert(inert(markdown_text)), lang)
    tokens = converter.toc_tokens

    def embed(match: re.Match) -> str:
        path = run_dir / html.unescape(match.group(1))
        if not path.is_file():
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = re.sub(r'src="(plots/[^"]+\.png)"', embed, body)
    page = environment(lang).get_template("page.html.j2")
    header = header_html(screen, lang, section_ids(tokens)) if screen is not None else ""
    title = html.escape(screen.title if screen is not None else _title(markdown_text))
    return page.render(body=body, lang=lang, title=title, header=header, nav=nav_html(tokens, lang))


def _title(markdown_text: str) -> str:
    first = markdown_text.splitlines()[0] if markdown_text else "llm-adapt report"
    return first.lstrip("# ").strip()
