"""The report's first screen: what a reviewer reads in ten seconds, at the top of report.md and above the
fold of the page. Title (model, platform, hardware, date, version), the verdict with one sentence of why,
what this run verified and what it only planned, the key figures each with where it came from, and the
checks that decided the verdict. Informational results (an emulated int8 experiment) stand apart, in
their own words. Pure functions of RunData; its words, in both languages, are the report's (messages/report.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_adapt.messages import FIRST_SCREEN as WORDS, FIRST_SCREEN_MODES as MODES, LIST_SEP, message, probe_words, rendered_check
from llm_adapt.report.data import RunData
from llm_adapt.report.findings import CORE_FEATURES, main_target, overall_verdict, quant_targets

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
    status: str
    why: str
    verified: list[str]
    planned: list[str]
    figures: list[Figure] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    informational: list[Check] = field(default_factory=list)


def first_screen(run: RunData, lang: str = "en", section_number: dict[str, int] | None = None) -> FirstScreen:
    W, numbers = WORDS[lang], section_number or {}
    verdict = overall_verdict(run)
    return FirstScreen(title=_title(run, W), facts=_facts(run, W), status=verdict["status"],
                       why=_why(run, verdict, lang), verified=_verified(run, W), planned=_planned(run, W, lang, numbers),
                       figures=key_figures(run, lang, numbers), checks=deciding_checks(run, lang),
                       informational=informational_checks(run, lang))


def _title(run: RunData, W: dict[str, str]) -> str:
    insp = run.get("inspect") or {}
    model = (insp.get("model") or {}).get("name") or (run.get("status") or {}).get("model") or "model"
    return W["title"].format(model=model, platform=(insp.get("platform") or {}).get("display") or "?")


def _facts(run: RunData, W: dict[str, str]) -> str:
    env = run.get("environment") or {}
    return W["facts"].format(hardware=hardware(env, W), date=(env.get("collected_at") or "")[:10] or W["no_date"],
                             version=env.get("llm_adapt") or W["no_version"])


def hardware(env: dict[str, Any], W: dict[str, str]) -> str:
    """The accelerators where there are any, else the CPU, as the environment recorded them."""
    devices = [a.get("name") or a.get("kind") for a in env.get("accelerators") or []]
    if devices:
        names = sorted(set(devices))
        return ", ".join(f"{devices.count(n)} x {n}" for n in names)
    cpu = env.get("cpu") or {}
    return f"{cpu.get('model') or 'CPU'}, " + W["cores"].format(cores=cpu.get("cores", "?")) if cpu else "?"


def _why(run: RunData, verdict: dict[str, Any], lang: str) -> str:
    """One sentence: the reasons against, or what was judged and passed."""
    if verdict["status"] != "PASS":
        return LIST_SEP[lang].join(str(message(r, lang)) for r in verdict["reasons"][:3])
    parts = [str(message(p, lang)) for p in verdict.get("judged", [])]
    if (run.get("probes") or {}).get("rows"):
        parts.append(WORDS[lang]["core_ok"])
    return WORDS[lang]["why_pass"].format(parts=LIST_SEP[lang].join(parts))


def _engine_name(run: RunData) -> str:
    serve = run.get("serve") or {}
    builds = (run.get("environment") or {}).get("builds") or {}
    if serve.get("engine") == "vllm":
        version = (builds.get("vllm") or {}).get("version")
        return "vLLM" + (f" {version}" if version else "")
    return {"transformers": "transformers serve"}.get(serve.get("engine"), serve.get("engine") or "?")


def _verified(run: RunData, W: dict[str, str]) -> list[str]:
    out, serve = [], run.get("serve")
    platform = ((run.get("inspect") or {}).get("platform") or {}).get("display", "?")
    ep = run.get("endpoint_accuracy") or {}
    if serve:
        key = "served_dummy" if serve.get("dummy_weights") else "served_here"
        out.append(W[key].format(engine=_engine_name(run), platform=platform, mode=serve.get("mode", "?")))
    elif ep.get("endpoint"):
        out.append(W["served_external"].format(url=(ep.get("endpoint") or {}).get("base_url", "?")))
    target = main_target(run.get("accuracy"))
    if target:
        reference = ((run.get("accuracy") or {}).get("settings") or {}).get("reference", "fp32")
        out.append(W["in_process"].format(label=target["label"], reference=reference))
    return out or [W["served_none"]]


def _planned(run: RunData, W: dict[str, str], lang: str, numbers: dict[str, int]) -> list[str]:
    insp = run.get("inspect") or {}
    platform = insp.get("platform") or {}
    if platform and not platform.get("local", True):
        return [W["planned_other"].format(platform=platform.get("display", "?"))]
    ran = (run.get("serve") or {}).get("mode")
    modes = [m for m in ((insp.get("plan") or {}).get("commands") or {}) if m != ran]
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
    ep, acc = run.get("endpoint_accuracy") or {}, run.get("accuracy") or {}
    reference = ep.get("reference") or (acc.get("settings") or {}).get("reference") or "fp32"
    if ep.get("verdict"):
        ratio = next((c["value"] for c in ep["verdict"]["checks"] if c.get("key") == "served_kl_ratio"), None)
        kl = ((ep.get("sections") or {}).get("teacher_forced") or {}).get("server", {}).get("kl_lb_mean")
        value = (W["kl_ratio"].format(ratio=ratio) if isinstance(ratio, (int, float))
                 else W["kl_abs"].format(kl=kl) if isinstance(kl, (int, float)) else ep["verdict"]["status"])
        prompts = len(((ep.get("sections") or {}).get("greedy") or {}).get("rows") or []) or "?"
        source = W["from_served"].format(prompts=prompts, reference=reference, floor=ep.get("floor") or "-",
                                         section=numbers.get("accuracy", "?"))
        return Figure(W["served_accuracy"], value, source, "accuracy", ep["verdict"]["status"])
    target = main_target(acc)
    if not target:
        return None
    ratio = (target.get("vs_floor") or {}).get("kl_ratio")
    value = (W["kl_ratio"].format(ratio=ratio) if isinstance(ratio, (int, float))
             else W["kl_abs"].format(kl=target["logits"]["kl_mean"]))
    source = W["from_in_process"].format(prompts=(acc.get("prompts") or {}).get("count", "?"), reference=reference,
                                         section=numbers.get("accuracy", "?"))
    return Figure(W["in_process_accuracy"], value, source, "accuracy", target["verdict"]["status"])


def _bench_run(run: RunData, mode: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    bench = run.bench.get(mode) or {}
    runs = bench.get("runs") or []
    return (bench, runs[0]) if runs else None


def _client_bound(r: dict[str, Any]) -> bool:
    return bool(((r.get("server") or {}).get("cpu") or {}).get("client_bound"))


def _latency_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    found = _bench_run(run, "latency")
    if not found:
        return None
    bench, r = found
    m, settings = r.get("metrics") or {}, bench.get("settings") or {}
    if not all(isinstance(m.get(k), (int, float)) for k in ("median_ttft_ms", "median_tpot_ms")):
        return None
    source = W["from_latency"].format(n=r.get("sent", "?"), inp=settings.get("input_len", "?"),
                                      out=settings.get("output_len", "?"), section=numbers.get("performance", "?"))
    return Figure(W["single_stream"], f"{m['median_ttft_ms']:.0f} ms / {m['median_tpot_ms']:.1f} ms",
                  source + (W["client_bound"] if _client_bound(r) else ""), "performance")


def _throughput_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    found = _bench_run(run, "throughput")
    if not found:
        return None
    bench, r = found
    m, settings = r.get("metrics") or {}, bench.get("settings") or {}
    if not isinstance(m.get("output_throughput"), (int, float)):
        return None
    n = r.get("sent", "?")
    source = W["from_throughput"].format(n=n, inp=settings.get("input_len", "?"), out=settings.get("output_len", "?"),
                                         section=numbers.get("performance", "?"))
    return Figure(W["throughput"].format(c=n), f"{m['output_throughput']:.1f} tok/s",
                  source + (W["client_bound"] if _client_bound(r) else ""), "performance")


def _memory_figure(run: RunData, W: dict[str, str], numbers: dict[str, int]) -> Figure | None:
    rss = [r["server"].get("rss_bytes_max") for b in run.bench.values() for r in b.get("runs", []) if r.get("server")]
    rss = [x for x in rss if x]
    if not rss:
        return None
    return Figure(W["memory"], f"{max(rss) / 1024**3:.2f} GiB",
                  W["from_memory"].format(section=numbers.get("resources", "?")), "resources")


ORDER = {"FAIL": 0, "WARN": 1, "PASS": 2}
HEADLINE = ("kl", "top1", "nonfinite", "greedy")  # a passing source shows these of its checks first
PER_SOURCE = 2  # passing checks shown per judged source; every failed or warned one is shown


def _rank(check: dict[str, Any]) -> tuple[int, int]:
    key = str(check.get("key") or check.get("name") or "")
    headline = next((i for i, word in enumerate(HEADLINE) if word in key), len(HEADLINE))
    return ORDER.get(str(check["status"]).upper(), 3), headline


def _checks_of(verdict: dict[str, Any] | None, where: str, lang: str) -> list[Check]:
    """A judged verdict's out-of-line checks, and its headline passing ones."""
    ranked = sorted((verdict or {}).get("checks", []), key=_rank)
    kept = [c for i, c in enumerate(ranked) if str(c["status"]).upper() != "PASS" or i < PER_SOURCE]
    return [Check(where, str(c["name"]), str(c["value"]), str(c.get("threshold") or "-"), str(c["status"]).upper())
            for c in (rendered_check(c, lang) for c in kept)]


def deciding_checks(run: RunData, lang: str = "en") -> list[Check]:
    """The checks of the judged verdicts (the served model, the main in-process target, the core probes),
    out-of-line ones first; never an informational target's."""
    W = WORDS[lang]
    found = _checks_of((run.get("endpoint_accuracy") or {}).get("verdict"), W["served"], lang)
    target = main_target(run.get("accuracy"))
    if target:
        found += _checks_of(target.get("verdict"), W["in_process_at"].format(label=target["label"]), lang)
    rows = {r["name"]: r for r in (run.get("probes") or {}).get("rows", [])}
    if rows:
        broken = [n for n in CORE_FEATURES if rows.get(n, {}).get("status") != "supported"]
        names = [probe_words(n, lang) for n in CORE_FEATURES]
        value = W["broken"] + ": " + W["and"].join(probe_words(n, lang) for n in broken) if broken else W["works"]
        found.append(Check(W["probes"], W["and"].join(names), value, "-", "FAIL" if broken else "PASS"))
    return sorted(found, key=lambda c: ORDER.get(c.status, 3))[:MAX_CHECKS]


def informational_checks(run: RunData, lang: str = "en") -> list[Check]:
    """Informational targets (accuracy.json's verdict "informational"): one row each, never judged."""
    acc = run.get("accuracy") or {}
    shown = (acc.get("verdict") or {}).get("informational")
    targets = [t for t in quant_targets(acc) if shown is None or t["label"] in shown]
    W = WORDS[lang]
    return [Check(W["in_process_at"].format(label=t["label"]), t.get("quant") or "", f"KL {t['logits']['kl_mean']:.2e}",
                  "-", t["verdict"]["status"]) for t in targets if t.get("verdict")]
