"""The templates' contract: one record with named fields, computed once per render (per language) from a run's
results. The templates read its fields by their own names, except the few they have always read by a short
name (SHORT_NAMES: `S`, `p`, `fs`, `rec`, ...), and call its methods, each in the report's language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypedDict

from llm_adapt.accuracy.result import AccuracyResult, Check, LayerRow, LocatedFault, PartRow, RunnerReport, Verdict
from llm_adapt.accuracy.verdict import allowance, target_basis
from llm_adapt.bench.modes import BenchResult
from llm_adapt.engines.troubleshoot import Diagnosis
from llm_adapt.judged.data import RunData
from llm_adapt.judged.verdict import overall_verdict
from llm_adapt.messages import FIRST_SCREEN as FIRST_WORDS
from llm_adapt.messages import (
    FLOOR_LABEL,
    SECTION_WORDS,
    basis_text,
    message,
    operator_name,
    probe_words,
    rendered_check,
    verdict_reasons,
)
from llm_adapt.report.findings import (
    Recommendation,
    findings,
    notes,
    part_name,
    recommendation,
    stage_status,
    troubleshooting,
)
from llm_adapt.report.first_screen import FirstScreen, first_screen, weights_clause
from llm_adapt.report.page import SECTION, SECTIONS
from llm_adapt.results import StageResult
from llm_adapt.run_status import RunVerdict, StageRecord

# A field the templates read by a short name: the short name -> the field's own.
SHORT_NAMES = {"S": "words", "p": "parts", "fs": "screen", "rec": "commands", "main": "main_target",
               "quants": "quant_targets", "trouble": "troubleshooting", "peak_rss": "peak_server"}


class PeakServer(TypedDict):
    """The highest server RSS (bytes), KV-cache use (a share) and device memory (bytes) over all benchmark runs."""
    rss: int | None
    kv: float | None
    device: int | None


# a language's words the templates read (messages/report.SECTION_WORDS, FIRST_SCREEN): a phrase, or a few by name
Words = dict[str, str | dict[str, str]]


@dataclass(frozen=True)
class ReportContext:
    """Everything the report's templates read (templates/report.md.j2 and its sections)."""

    lang: str  # the report's language, "en" or "zh"
    run: RunData  # the run's results as read (judged/data.py)
    parts: dict[str, StageResult]  # `p`: each result by name (rundir.RESULTS), the record its stage wrote
    bench: dict[str, BenchResult]  # the benchmark results by mode
    plots: dict[str, str]  # figure name -> its path relative to the report (plots.draw_all)
    page: bool  # the HTML page's Markdown: the page draws the first screen itself, above it
    words: Words  # `S`: the sections' words in the report's language (messages/report.SECTION_WORDS)
    first_words: Words  # the first screen's words (messages/report.FIRST_SCREEN)
    sections: tuple[str, ...]  # the report's sections in order (page.SECTIONS)
    verdict: RunVerdict  # the run's verdict: status, reasons, false_ready, judged (judged/verdict.overall_verdict)
    screen: FirstScreen  # `fs`: the first screen (report/first_screen.py)
    weights_clause: str | None  # what weights the figures were measured on, one clause (models/provenance.py)
    findings: list[str]  # up to four sentences a reader needs first, problems first
    notes: list[str]  # troubleshooting notes from what was seen in the run
    troubleshooting: Diagnosis  # `trouble`: the engine's warnings and seen causes, explained (engines/troubleshoot.py)
    main_target: RunnerReport | None  # `main`: the in-process target the verdict judges
    quant_targets: list[RunnerReport]  # `quants`: the emulated quantizations (informational)
    logit_rows: list[tuple[str, RunnerReport]]  # each distinct runner once, floors first, with its label
    stages: dict[str, StageRecord]  # status.json's stages but the report's own
    peak_server: PeakServer | None  # `peak_rss`: the highest server RSS, KV-cache use and device memory seen
    commands: Recommendation | None  # `rec`: the command this run verified and the others (findings.recommendation)

    def names(self) -> dict[str, Any]:
        """The names the templates see: every field (also under its short name) and every method."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update({short: values[name] for short, name in SHORT_NAMES.items()})
        values.update({name: getattr(self, name) for name in METHODS})
        return values

    def why(self, stage: str) -> str:
        """A stage's status with its reason, or that it was not part of this run."""
        body = self.run.stages.get(stage)
        if not body:
            return "not part of this run" if self.lang == "en" else "不属于本次运行"
        reason = message(body.get("reason") or "", self.lang)
        return stage_status(body, self.lang) + (f": {reason}" if reason else "")

    def part_name(self, part: str) -> str:
        return part_name(part, self.lang)

    def stage_reason(self, body: StageRecord) -> Any:
        return message(body.get("reason") or "", self.lang)

    def stage_status(self, body: StageRecord) -> str:
        return stage_status(body, self.lang)

    def check_in(self, check: Check) -> Check:
        return rendered_check(check, self.lang)

    def reasons_in(self, verdict: Verdict) -> list[str]:
        return verdict_reasons(verdict, self.lang)

    def basis_in(self, row: LayerRow | PartRow | LocatedFault) -> str:
        return basis_text(row, self.lang)

    def target_basis_in(self, target: RunnerReport) -> str:
        return target_basis(target).words(self.lang)

    def op_name(self, name: str) -> str:
        return operator_name(name, self.lang)

    def probe_in(self, text: str) -> str:
        return probe_words(text, self.lang)

    @staticmethod
    def has_value(rows: Sequence[Mapping[str, object]], key: str) -> bool:
        return has_value(rows, key)

    @staticmethod
    def allowed_of(row: LayerRow) -> float | None:
        return allowed_of(row)

    @staticmethod
    def has_allowance(rows: list[LayerRow]) -> bool:
        return any(allowed_of(r) is not None for r in rows)


METHODS = ("why", "part_name", "stage_reason", "stage_status", "check_in", "reasons_in", "basis_in", "target_basis_in",
           "op_name", "probe_in", "has_value", "allowed_of", "has_allowance")


def report_context(run: RunData, plots: dict[str, str], lang: str) -> ReportContext:
    """The record, computed once for a report in `lang` (its page variant: dataclasses.replace(page=True))."""
    verdict = overall_verdict(run)
    return ReportContext(
        lang=lang, run=run, parts=run.parts, bench=run.bench, plots=plots, page=False, words=SECTION_WORDS[lang],
        first_words=FIRST_WORDS[lang], sections=SECTIONS, verdict=verdict,
        screen=first_screen(run, verdict, lang, SECTION), weights_clause=weights_clause(run, lang),
        findings=findings(run, lang), notes=notes(run, lang), troubleshooting=troubleshooting(run, lang),
        main_target=run.main_target, quant_targets=run.quant_targets,
        logit_rows=logit_rows(run.accuracy, lang), stages={k: v for k, v in run.stages.items() if k != "report"},
        peak_server=peak_server(run), commands=recommendation(run))


def allowed_of(row: LayerRow) -> float | None:
    """The ratio to its floor a layer row may reach, as the verdict computes it (verdict.allowance); None for a
    row never compared with a floor. Pure."""
    return allowance(row) if "rel_spread" in row or "allowed" in row else None


def has_value(rows: Sequence[Mapping[str, object]], key: str) -> bool:
    """Whether any row has a value under `key` (a table leaves out a column none has). Pure."""
    return any(r.get(key) not in (None, "-", "n/a") for r in rows)


def logit_rows(acc: AccuracyResult | None, lang: str = "en") -> list[tuple[str, RunnerReport]]:
    """Each distinct runner once: floors first, then targets not already shown as a floor."""
    if not acc:
        return []
    rows = [(FLOOR_LABEL[lang].format(label=f.label), f) for f in acc.floors]
    shown = {f.label for f in acc.floors}
    return rows + [(t.label, t) for t in acc.targets if t.label not in shown]


def peak_server(run: RunData) -> PeakServer | None:
    """The highest server RSS and KV-cache usage seen over all benchmark runs."""
    samples = [r["server"] for b in run.bench.values() for r in b.runs if r.get("server")]
    rss = [s["rss_bytes_max"] for s in samples if s.get("rss_bytes_max")]
    kv = [s["kv_cache_usage_max"] for s in samples if s.get("kv_cache_usage_max") is not None]
    device = [s["device_memory_bytes_max"] for s in samples if s.get("device_memory_bytes_max")]
    if not rss and not kv:
        return None
    return {"rss": max(rss) if rss else None, "kv": max(kv) if kv else None, "device": max(device) if device else None}
