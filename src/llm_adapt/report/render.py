"""Render report.md and a self-contained report.html from a run directory's JSON files."""

from __future__ import annotations

import base64
import html
import math
import re
from pathlib import Path
from typing import Callable

import jinja2

from llm_adapt.accuracy.verdict import target_basis
from llm_adapt.errors import UsageError
from llm_adapt.report.data import RunData, load_run
from llm_adapt.report.findings import (findings, main_target, notes, overall_verdict, part_name, quant_targets,
                                      recommendation, stage_status, troubleshooting)
from llm_adapt.report.first_screen import WORDS as FIRST_WORDS, first_screen
from llm_adapt.report.page import SECTION, SECTIONS, collapse_long_tables, header_html, nav_html, section_ids
from llm_adapt.report.plots import draw_all
from llm_adapt.results import write_text_atomic
from llm_adapt.messages import (FLOOR_LABEL, SECTION_WORDS, basis_text, message, messages, operator_name, probe_words,
                                rendered_check, verdict_reasons)
from llm_adapt import rundir

LANGS = ("en", "zh")


def cell(value) -> str:
    """Text safe inside a Markdown table cell and, once converted, inside HTML: model output stays inert."""
    text = str(value if value is not None else "-").replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def quoted(text: str, lang: str) -> str:
    """Words of a model or a server, marked as a quotation where the report's own words are not English. Pure."""
    return text if lang == "en" or text in ("", "-") else f"「{text}」"


def num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return f"{value:,}"
    value = float(value)
    if value != 0 and (abs(value) < 10 ** -digits or abs(value) >= 1e6):
        return f"{value:.{digits}e}"
    return f"{value:.{digits}f}"


def pct(value, digits: int = 2) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value * 100:.{digits}f}%"


def gib(value) -> str:
    return "-" if value is None else f"{value / 1024**3:.2f} GiB"


def environment(lang: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.report", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(cell=cell, num=num, pct=pct, gib=gib, msg=lambda value: message(value, lang),
                       msgs=lambda values: messages(values, lang),
                       quoted=lambda text: quoted(text, lang))
    return env


def context(run: RunData, plots: dict[str, str], lang: str, page: bool = False) -> dict:
    """Everything the templates read; `page`: the HTML page's Markdown, whose first screen (title, verdict,
    figures, deciding checks) the page draws itself above it."""
    return {"S": SECTION_WORDS[lang], "run": run, "p": run.parts, "bench": run.bench, "plots": plots, "verdict": overall_verdict(run),
            "fs": first_screen(run, lang, SECTION), "first_words": FIRST_WORDS[lang], "page": page,
            "findings": findings(run, lang), "notes": notes(run, lang), "trouble": troubleshooting(run, lang),
            "main": main_target(run.get("accuracy")),
            "quants": quant_targets(run.get("accuracy")), "logit_rows": logit_rows(run.get("accuracy"), lang),
            "stages": {k: v for k, v in ((run.get("status") or {}).get("stages", {})).items() if k != "report"},
            "peak_rss": peak_server(run), "rec": recommendation(run), "sections": SECTIONS,
            "why": lambda stage: _why(run, stage, lang), "part_name": lambda part: part_name(part, lang),
            "stage_reason": lambda body: message(body.get("reason") or "", lang),
            "stage_status": lambda body: stage_status(body, lang),
            "check_in": lambda check: rendered_check(check, lang),
            "reasons_in": lambda verdict: verdict_reasons(verdict, lang),
            "basis_in": lambda row: basis_text(row, lang),
            "target_basis_in": lambda target: target_basis(target).words(lang),
            "op_name": lambda name: operator_name(name, lang),
            "probe_in": lambda text: probe_words(text, lang), "has_value": has_value}


def has_value(rows: list[dict], key: str) -> bool:
    """Whether any row has a value under `key` (a table leaves out a column none has). Pure."""
    return any(r.get(key) not in (None, "-", "n/a") for r in rows)


def logit_rows(acc: dict | None, lang: str = "en") -> list[tuple[str, dict]]:
    """Each distinct runner once: floors first, then targets not already shown as a floor."""
    if not acc:
        return []
    rows = [(FLOOR_LABEL[lang].format(label=f["label"]), f) for f in acc.get("floors", [])]
    shown = {f["label"] for f in acc.get("floors", [])}
    return rows + [(t["label"], t) for t in acc.get("targets", []) if t["label"] not in shown]


def peak_server(run: RunData) -> dict | None:
    """The highest server RSS and KV-cache usage seen over all benchmark runs."""
    samples = [r["server"] for b in run.bench.values() for r in b.get("runs", []) if r.get("server")]
    rss = [s["rss_bytes_max"] for s in samples if s.get("rss_bytes_max")]
    kv = [s["kv_cache_usage_max"] for s in samples if s.get("kv_cache_usage_max") is not None]
    device = [s["device_memory_bytes_max"] for s in samples if s.get("device_memory_bytes_max")]
    if not rss and not kv:
        return None
    return {"rss": max(rss) if rss else None, "kv": max(kv) if kv else None, "device": max(device) if device else None}


def _why(run: RunData, stage: str, lang: str = "en") -> str:
    body = ((run.get("status") or {}).get("stages") or {}).get(stage)
    if not body:
        return "not part of this run" if lang == "en" else "不属于本次运行"
    reason = message(body.get("reason") or "", lang)
    return stage_status(body, lang) + (f": {reason}" if reason else "")


def render_report(run_dir: Path, lang: str = "en", warn: Callable[[str], None] | None = None) -> list[Path]:
    """report.md and report.html of a run directory; `warn` hears of each result file that cannot be read
    (the report names it in its notes and judges without it)."""
    if lang not in LANGS:
        raise UsageError(f"--lang {lang!r}: use one of {', '.join(LANGS)}")
    run = load_run(run_dir)
    for why in run.unreadable.values() if warn else ():
        warn(why)
    plots = draw_all(run)
    template = environment(lang).get_template("report.md.j2")
    markdown_text = renumbered(template.render(**context(run, plots, lang)))
    md_path, html_path = run.dir / rundir.report(lang, "md"), run.dir / rundir.report(lang, "html")
    write_text_atomic(md_path, markdown_text)
    page_text = renumbered(template.render(**context(run, plots, lang, page=True)))
    write_text_atomic(html_path, to_html(page_text, run.dir, lang, run))
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


def to_html(markdown_text: str, run_dir: Path, lang: str, run: RunData | None = None) -> str:
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
    screen = first_screen(run, lang, SECTION) if run is not None else None
    header = header_html(screen, lang, section_ids(tokens)) if screen is not None else ""
    title = html.escape(screen.title if screen is not None else _title(markdown_text))
    return page.render(body=body, lang=lang, title=title, header=header, nav=nav_html(tokens, lang))


def _title(markdown_text: str) -> str:
    first = markdown_text.splitlines()[0] if markdown_text else "llm-adapt report"
    return first.lstrip("# ").strip()
