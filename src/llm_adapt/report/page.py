"""What the HTML page shows above the report: a verdict banner, key-figure cards that link to their
sections, and the failed and warned checks first. Pure functions of RunData."""

from __future__ import annotations

import html
import re
from typing import Any

from llm_adapt.messages import PAGE_LABELS, in_lang, message, probe_words, rendered_check
from llm_adapt.report.data import RunData
from llm_adapt.report.findings import main_target, overall_verdict

# The report's sections in order (templates/sections/<name>.md.j2); a section's number is its place here.
SECTIONS = ("summary", "model", "environment", "strategy", "deployment", "functional", "features", "adaptation",
            "accuracy", "performance", "resources", "notes", "conclusion")
SECTION = {name: i + 1 for i, name in enumerate(SECTIONS)}


def key_figures(run: RunData, lang: str = "en") -> list[dict[str, Any]]:
    """Cards: (label, value, status or None, section number); only figures this run measured."""
    L, cards = PAGE_LABELS[lang], []
    accuracy = _accuracy_card(run)
    if accuracy:
        cards.append({"label": L["accuracy"], **accuracy, "section": SECTION["accuracy"]})
    thr = (run.bench.get("throughput") or {}).get("runs") or []
    m = thr[0]["metrics"] if thr else {}
    if isinstance(m.get("output_throughput"), (int, float)):
        cards.append({"label": L["throughput"], "value": f"{m['output_throughput']:.1f} tok/s", "status": None,
                      "section": SECTION["performance"]})
    if isinstance(m.get("median_ttft_ms"), (int, float)) and isinstance(m.get("median_tpot_ms"), (int, float)):
        cards.append({"label": L["latency"], "value": f"{m['median_ttft_ms']:.0f} ms / {m['median_tpot_ms']:.1f} ms",
                      "status": None, "section": SECTION["performance"]})
    rss = [r["server"].get("rss_bytes_max") for b in run.bench.values() for r in b.get("runs", []) if r.get("server")]
    rss = [x for x in rss if x]
    if rss:
        cards.append({"label": L["memory"], "value": f"{max(rss) / 1024**3:.2f} GiB", "status": None,
                      "section": SECTION["resources"]})
    probes = run.get("probes")
    if probes and probes.get("rows"):
        rows = probes["rows"]
        ok = sum(1 for r in rows if r["status"] == "supported")
        cards.append({"label": L["features"], "value": f"{ok} / {len(rows)}", "status": None,
                      "section": SECTION["features"]})
    return cards


def _accuracy_card(run: RunData) -> dict[str, Any] | None:
    ep = run.get("endpoint_accuracy")
    if ep and ep.get("verdict"):
        ratio = next((c["value"] for c in ep["verdict"]["checks"]
                      if c.get("key") == "served_kl_ratio" or c["name"] == "top-k KL / noise floor"), None)
        value = f"KL {ratio:.2f}x" if isinstance(ratio, (int, float)) else ep["verdict"]["status"]
        return {"value": value, "status": ep["verdict"]["status"]}
    target = main_target(run.get("accuracy"))
    if target:
        return {"value": f"KL {target['logits']['kl_mean']:.2e}", "status": target["verdict"]["status"]}
    return None


def problems(run: RunData, lang: str = "en") -> list[dict[str, str]]:
    """Every failed or warned check of the run, failures first: where, what, value, status (in `lang`)."""
    out, words = [], PAGE_LABELS[lang]
    acc = run.get("accuracy") or {}
    for t in acc.get("targets", []):
        for c in (rendered_check(c, lang) for c in (t.get("verdict") or {}).get("checks", [])):
            out.append({"where": f"{words['in_process']} {t['label']}", "what": c["name"], "value": str(c["value"]),
                        "status": c["status"]})
    ep = run.get("endpoint_accuracy") or {}
    for c in (rendered_check(c, lang) for c in (ep.get("verdict") or {}).get("checks", [])):
        out.append({"where": words["served"], "what": c["name"], "value": str(c["value"]), "status": c["status"]})
    for row in (run.get("probes") or {}).get("rows", []):
        if row["status"] == "error":
            evidence = in_lang(str(row.get("evidence", "")), row.get("evidence_key"), lang)
            out.append({"where": words["probe"], "what": probe_words(row["name"], lang), "value": evidence[:160],
                        "status": "fail"})
    kept = [p for p in out if p["status"] in ("warn", "fail")]
    return sorted(kept, key=lambda p: p["status"] != "fail")


def header_html(run: RunData, lang: str, section_ids: dict[int, str]) -> str:
    """Banner, cards and the failed/warned checks, as HTML (every text escaped)."""
    verdict = overall_verdict(run)
    status = verdict["status"]
    reasons = "".join(f"<li>{html.escape(message(r, lang))}</li>" for r in verdict.get("reasons", [])[:6])
    cards = "".join(_card(c, section_ids) for c in key_figures(run, lang))
    issues = problems(run, lang)
    listing = ""
    if issues:
        rows = "".join(f'<tr class="{p["status"]}"><td>{p["status"].upper()}</td><td>{html.escape(p["where"])}</td>'
                       f'<td>{html.escape(p["what"])}</td><td>{html.escape(p["value"])}</td></tr>' for p in issues)
        listing = f'<section class="issues"><h2>{PAGE_LABELS[lang]["issues"]}</h2><table>{rows}</table></section>'
    return (f'<div class="banner {status.lower()}" id="verdict"><span class="status">{status}</span>'
            f'<ul>{reasons}</ul></div><div class="cards">{cards}</div>{listing}')


def _card(card: dict[str, Any], section_ids: dict[int, str]) -> str:
    target = section_ids.get(card["section"], "")
    status = f' {card["status"].lower()}' if card.get("status") else ""
    return (f'<a class="card{status}" href="#{target}"><span class="label">{html.escape(card["label"])}</span>'
            f'<span class="value">{html.escape(card["value"])}</span></a>')


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
