"""The report's first screen: what a reviewer reads in ten seconds, at the top of report.md and above the
fold of the page. Title (model, platform, hardware, date, version), the verdict with one sentence of why,
what this run verified and what it only planned, the key figures each with where it came from, and the
checks that decided the verdict. Informational results (an emulated int8 experiment) stand apart, in
their own words. Pure functions of RunData; its words, in both languages, are the report's (messages/report.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llm_adapt.accuracy.flatness import is_flat
from llm_adapt.accuracy.result import Check as JudgedCheck
from llm_adapt.accuracy.result import LogitStats, Verdict
from llm_adapt.bench.modes import BenchResult, BenchRun
from llm_adapt.environment import EnvironmentResult
from llm_adapt.judged.data import RunData
from llm_adapt.messages import FIRST_SCREEN as WORDS
from llm_adapt.messages import FIRST_SCREEN_MODES as MODES
from llm_adapt.messages import LIST_SEP, message, probe_words, rendered_check, verdict_shown
from llm_adapt.probes.context import CORE_BASE
from llm_adapt.status import Status, listing_rank

MAX_CHECKS = 8


@dataclass(frozen=True)
class Figure:
    label: str
    value: str
    source: str  # where the figure came from: the run, its size, the section
    section: str  # the report section's name (page.SECTIONS)
    status: str | None = None


@dataclass(frozen=True)
class Check:
    where: str
    name: str
    value: str
    threshold: str
    status: str  # PASS / WARN / FAIL


@dataclass(frozen=True)
class FirstScreen:
    title: str
    facts: str
    status: Status
    why: str
    verified: list[str]
    planned: list[str]
    figures: list[Figure] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    informational: list[Check] = field(default_factory=list)
    cautions: list[str] = field(default_factory=list)  # what weakens the checks shown (flat logits)
    weights: str | None = None  # what the figures were measured on (models/provenance.py), one sentence
    shown: str = ""  # the verdict as the report writes it: the status, or "interrupted: not judged"


def first_screen(run: RunData, verdict: Verdict, lang: str = "en",
                 section_number: dict[str, int] | None = None) -> FirstScreen:
    """`verdict`: the run's overall_verdict (judged/verdict.py), judged once by the caller."""
    W, numbers = WORDS[lang], section_number or {}
    return FirstScreen(title=_title(run, W), facts=_facts(run, W), status=Status.of(verdict["status"]),
                       why=_why(run, verdict, lang), verified=_verified(run, W) + task_seen(run, lang),
                       planned=_planned(run, W, lang, numbers) + task_not_run(run, lang),
                       figures=key_figures(run, lang, numbers), checks=deciding_checks(run, lang),
                       informational=informational_checks(run, lang), cautions=cautions(run, lang),
                       weights=weights(run, lang), shown=verdict_shown(verdict["status"], lang))


def gold_sharpness(run: RunData) -> LogitStats | None:
    """How decisive the gold's logits were (metrics.logit_sharpness): from the in-process comparison's
    reference, else from the endpoint accuracy's gold."""
    if run.accuracy and run.accuracy.reference.logits.get("positions"):
        return run.accuracy.reference.logits
    return run.endpoint_accuracy.gold_logits if run.endpoint_accuracy else None


def cautions(run: RunData, lang: str = "en") -> list[str]:
    """What weakens the checks the first screen shows: a server answering as another model's id than the gold's,
    flat logits (accuracy.flatness)."""
    other = run.other_served
    out = [WORDS[lang]["other_served"].format(**other)] if other else []
    sharp = gold_sharpness(run)
    if not is_flat(sharp):
        return out
    entropy = sharp.get("entropy_ratio")
    return out + [WORDS[lang]["flat_logits"].format(decisive=f"{sharp['decisive_positions']:,}",
                                                    positions=f"{sharp['positions']:,}",
                                                    entropy=f"{entropy:.0%}" if isinstance(entropy, float) else "?")]


def _title(run: RunData, W: dict[str, str]) -> str:
    insp = run.inspect
    model = (insp.model.get("name") if insp else None) or (run.status.model if run.status else None) or "model"
    return W["title"].format(model=model, platform=(insp.platform.display if insp else None) or "?")


def _facts(run: RunData, W: dict[str, str]) -> str:
    env = run.environment
    if env is None:
        return W["facts"].format(hardware="?", date=W["no_date"], version=W["no_version"])
    return W["facts"].format(hardware=hardware(env, W), date=(env.collected_at or "")[:10] or W["no_date"],
                             version=env.llm_adapt or W["no_version"])


def weights(run: RunData, lang: str) -> str | None:
    """The first screen's line on what the figures were measured on ("Weights: measured on the Q4_1 GGUF ...,
    dequantized to fp32: the figures describe that conversion."); None without inspect.json."""
    clause = weights_clause(run, lang)
    return WORDS[lang]["weights"].format(what=clause) if clause else None


def weights_clause(run: RunData, lang: str) -> str | None:
    """What the run measured, as one clause in `lang` (models/provenance.describe), from inspect.json."""
    from llm_adapt.models.provenance import describe

    prov = run.inspect.measured if run.inspect else None
    return str(message(describe(prov), lang)) if prov else None


def hardware(env: EnvironmentResult, W: dict[str, str]) -> str:
    """The accelerators where there are any, else the CPU, as the environment recorded them."""
    devices = [a.get("name") or a.get("kind") for a in env.accelerators]
    if devices:
        names = sorted(set(devices))
        return ", ".join(f"{devices.count(n)} x {n}" for n in names)
    cpu = env.cpu
    return f"{cpu.get('model') or 'CPU'}, " + W["cores"].format(cores=cpu.get("cores", "?")) if cpu else "?"


def _why(run: RunData, verdict: Verdict, lang: str) -> str:
    """One sentence: the reasons against, or what was judged and passed."""
    if verdict["status"] != Status.PASS:
        return LIST_SEP[lang].join(str(message(r, lang)) for r in verdict["reasons"][:3])
    parts = [str(message(p, lang)) for p in verdict.get("judged", [])]
    if run.core_features:
        and_ = " and " if lang == "en" else "与"
        parts.append(WORDS[lang]["core_ok"].format(names=and_.join(probe_words(n, lang) for n in run.core_features)))
    return WORDS[lang]["why_pass"].format(parts=LIST_SEP[lang].join(parts))


def _engine_name(run: RunData) -> str:
    engine = run.serve.engine if run.serve else None
    if engine == "vllm":
        build = run.environment.builds.get("vllm") if run.environment else None
        version = build.get("version") if build else None
        return "vLLM" + (f" {version}" if version else "")
    return {"transformers": "transformers serve"}.get(engine, engine or "?")


def _verified(run: RunData, W: dict[str, str]) -> list[str]:
    out, serve, ep = [], run.serve, run.endpoint_accuracy
    platform = run.inspect.platform.display if run.inspect else "?"
    if serve:
        key = "served_dummy" if serve.dummy_weights else "served_here"
        out.append(W[key].format(engine=_engine_name(run), platform=platform, mode=serve.mode))
    elif ep and ep.endpoint:
        answering = W["answering_as"].format(model=ep.model) if ep.model else ""
        out.append(W["served_external"].format(url=ep.endpoint.get("base_url", "?")) + answering)
    if run.core_features == CORE_BASE:  # no chat template: said, as what the chat probes' n/a means
        out.append(W["base_model"])
    target = run.main_target
    if target:
        out.append(W["in_process"].format(label=target.label, reference=run.accuracy.settings.get("reference", "fp32")))
    return out or [W["served_none"]]


def task_seen(run: RunData, lang: str) -> list[str]:
    """Per task metric, what its items could see: "with N items, a drop smaller than D points would go unseen"
    (evaluation/power.py), or that they were enough."""
    rows = run.eval.paired if run.eval else []
    return [WORDS[lang]["task_seen"].format(line=message(r["seen"], lang)) for r in rows if r.get("seen")]


def task_not_run(run: RunData, lang: str) -> list[str]:
    """Tasks that did not run here, upstream's gate among them, each with why: eval.json's skipped lines, or
    the eval stage's reason where it did not run (the gate's dataset is not here)."""
    lines = list(run.eval.skipped) if run.eval else []
    stage = run.stages.get("eval") or {}
    if not run.eval and getattr(stage.get("reason"), "key", None) == "eval_opt_in":
        lines.append(stage["reason"])
    return [WORDS[lang]["task_not_run"].format(line=message(line, lang)) for line in lines]


def _planned(run: RunData, W: dict[str, str], lang: str, numbers: dict[str, int]) -> list[str]:
    insp = run.inspect
    if insp and not insp.platform.local:
        return [W["planned_other"].format(platform=insp.platform.display)]
    ran = {run.serve.mode if run.serve else None} | {  # a differential run's settings served their modes too
        "graph" if r.get("setting", {}).get("graph") else "eager"
        for r in (run.settings.rows if run.settings else []) if r.get("status")}
    modes = [m for m in (insp.plan.commands if insp else {}) if m not in ran]
    if not modes:
        return [W["nothing_planned"]]
    shown = [MODES.get(lang, MODES["en"]).get(m, m) for m in modes]
    key = "planned_modes" if len(shown) == 1 else "planned_modes_n"
    return [W[key].format(modes=W["and"].join(shown), section=numbers.get("deployment", "?"))]


def key_figures(run: RunData, lang: str = "en", numbers: dict[str, int] | None = None) -> list[Figure]:
    """Only figures this run measured, each with the run that measured it."""
    W, numbers = WORDS[lang], numbers or {}
    found = [_accuracy_figure(run, W, numbers), _latency_figure(run, W, numbers), _throughput_figure(run, W, numbers),
             _memory_figure(run, W, numbers)]
    return [f for f in found if f is not None]


def _accuracy_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    ep, acc = run.endpoint_accuracy, run.accuracy
    reference = (ep.reference if ep else None) or (acc.settings.get("reference") if acc else None) or "fp32"
    if ep and ep.verdict:
        ratio = next((c["value"] for c in ep.verdict["checks"] if c.get("key") == "served_kl_ratio"), None)
        kl = ep.sections["teacher_forced"].get("server", {}).get("kl_lb_mean")
        value = (W["kl_ratio"].format(ratio=ratio) if isinstance(ratio, (int, float))
                 else W["kl_abs"].format(kl=kl) if isinstance(kl, (int, float)) else ep.verdict["status"])
        prompts = len(ep.sections["greedy"].get("rows") or []) or "?"
        source = W["from_served"].format(prompts=prompts, reference=reference, floor=ep.floor or "-",
                                         section=numbers.get("accuracy", "?"))
        return Figure(W["served_accuracy"], value, source, "accuracy", ep.verdict["status"])
    target = run.main_target
    if not target:
        return None
    ratio = target.vs_floor["kl_ratio"] if target.vs_floor else None
    value = (W["kl_ratio"].format(ratio=ratio) if isinstance(ratio, (int, float))
             else W["kl_abs"].format(kl=target.logits["kl_mean"]))
    source = W["from_in_process"].format(prompts=acc.prompts.get("count", "?"), reference=reference,
                                         section=numbers.get("accuracy", "?"))
    return Figure(W["in_process_accuracy"], value, source, "accuracy", target.verdict["status"])


def _bench_run(run: RunData, mode: str) -> tuple[BenchResult, BenchRun] | None:
    bench = run.bench.get(mode)
    return (bench, bench.runs[0]) if bench and bench.runs else None


def _measured(value: object) -> bool:
    """A figure that was measured: a finite number (a metric of no samples is NaN)."""
    return isinstance(value, (int, float)) and math.isfinite(value)


def _client_bound(r: BenchRun) -> bool:
    return bool(r.get("server") and r["server"].get("cpu") and r["server"]["cpu"].get("client_bound"))


def _latency_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    found = _bench_run(run, "latency")
    if not found:
        return None
    bench, r = found
    m, settings = r.get("metrics") or {}, bench.settings
    if not _measured(m.get("median_ttft_ms")):
        return None
    source = W["from_latency"].format(n=r.get("sent", "?"), inp=settings.get("input_len", "?"),
                                      out=settings.get("output_len", "?"), section=numbers.get("performance", "?"))
    tpot = m.get("median_tpot_ms")  # fewer than two token events a request: no time between tokens was seen
    tpot_text = f"{tpot:.1f} ms" if _measured(tpot) and tpot > 0 else W["not_measured"]
    return Figure(W["single_stream"], f"{m['median_ttft_ms']:.0f} ms / {tpot_text}",
                  source + (W["client_bound"] if _client_bound(r) else ""), "performance")


def _throughput_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    found = _bench_run(run, "throughput")
    if not found:
        return None
    bench, r = found
    m, settings = r.get("metrics") or {}, bench.settings
    if not isinstance(m.get("output_throughput"), (int, float)):
        return None
    n = r.get("sent", "?")
    source = W["from_throughput"].format(n=n, inp=settings.get("input_len", "?"), out=settings.get("output_len", "?"),
                                         section=numbers.get("performance", "?"))
    return Figure(W["throughput"].format(c=n), f"{m['output_throughput']:.1f} tok/s",
                  source + (W["client_bound"] if _client_bound(r) else ""), "performance")


def _memory_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    rss = [r["server"].get("rss_bytes_max") for b in run.bench.values() for r in b.runs if r.get("server")]
    rss = [x for x in rss if x]
    if not rss:
        return None
    return Figure(W["memory"], f"{max(rss) / 1024**3:.2f} GiB",
                  W["from_memory"].format(section=numbers.get("resources", "?")), "resources")


HEADLINE = ("kl", "top1", "nonfinite", "greedy")  # a passing source shows these of its checks first
PER_SOURCE = 2  # passing checks shown per judged source; every failed or warned one is shown


def _rank(check: JudgedCheck) -> tuple[int, int]:
    key = str(check.get("key") or check.get("name") or "")
    headline = next((i for i, word in enumerate(HEADLINE) if word in key), len(HEADLINE))
    return listing_rank(check["status"]), headline


def _checks_of(verdict: Verdict | None, where: str, lang: str) -> list[Check]:
    """A judged verdict's out-of-line checks, and its headline passing ones; never an informational figure (a
    target that is its own floor: it decided nothing, and the report's accuracy section shows it)."""
    checks = [c for c in (verdict.get("checks", []) if verdict else []) if (c.get("args") or {}).get("why") != "own_floor"]
    ranked = sorted(checks, key=_rank)
    kept = [c for i, c in enumerate(ranked) if str(c["status"]).upper() != Status.PASS or i < PER_SOURCE]
    return [Check(where, str(c["name"]), str(c["value"]), str(c.get("threshold") or "-"), str(c["status"]).upper())
            for c in (rendered_check(c, lang) for c in kept)]


def deciding_checks(run: RunData, lang: str = "en") -> list[Check]:
    """The checks of the judged verdicts (the served model, the main in-process target, the core probes),
    out-of-line ones first; never an informational target's."""
    W = WORDS[lang]
    found = _checks_of(run.endpoint_accuracy.verdict if run.endpoint_accuracy else None, W["served"], lang)
    target = run.main_target
    if target:
        found += _checks_of(target.verdict, W["in_process_at"].format(label=target.label), lang)
    if run.core_features:
        core, broken = run.core_features, run.core_broken
        names = [probe_words(n, lang) for n in core]
        value = W["broken"] + ": " + W["and"].join(probe_words(n, lang) for n in broken) if broken else W["works"]
        found.append(Check(W["probes"], W["and"].join(names), value, "-", Status.FAIL if broken else Status.PASS))
    return sorted(found, key=lambda c: listing_rank(c.status))[:MAX_CHECKS]


def informational_checks(run: RunData, lang: str = "en") -> list[Check]:
    """Informational targets (accuracy.json's verdict "informational"): one row each, never judged."""
    acc = run.accuracy
    shown = acc.verdict.get("informational") if acc else None
    targets = [t for t in run.quant_targets if shown is None or t.label in shown]
    W = WORDS[lang]
    return [Check(W["in_process_at"].format(label=t.label), t.quant or "", f"KL {t.logits['kl_mean']:.2e}",
                  "-", t.verdict["status"]) for t in targets if t.verdict]
