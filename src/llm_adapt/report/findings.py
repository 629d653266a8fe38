"""The report's judgement: overall verdict, the findings that matter, notes and troubleshooting.
Pure functions of RunData's records."""

from __future__ import annotations

from typing import Any, TypedDict

from llm_adapt.accuracy.result import AccuracyResult, EndpointAccuracyResult, RunnerReport, Verdict
from llm_adapt.accuracy.setting_cause import SettingsResult
from llm_adapt.accuracy.verdict import target_basis
from llm_adapt.command import Command
from llm_adapt.engines.troubleshoot import Diagnosis, Seen, diagnose
from llm_adapt.messages import REPORT_NOTES, REPORT_TEXT, Reason, message, probe_words, reason
from llm_adapt.probes.context import core_broken, core_features  # the first screen reads them from here too
from llm_adapt.probes.run import ProbesResult
from llm_adapt.report.data import RunData
from llm_adapt.run_status import (
    INCOMPLETE,
    RunStatus,
    RunVerdict,
    StageRecord,
    StageStatus,
    interrupted_verdict,
    signal_words,
)
from llm_adapt.status import JUDGED, Status, worst

JUDGED_KEYS = ("served_verdict", "in_process_verdict", "task_verdict", "settings_verdict")  # the verdicts the run's verdict is made of


def main_target(acc: AccuracyResult | None) -> RunnerReport | None:
    if not acc or not acc.targets:
        return None
    return next((t for t in acc.targets if not t.quant), acc.targets[0])


def quant_targets(acc: AccuracyResult | None) -> list[RunnerReport]:
    return [t for t in acc.targets if t.quant] if acc else []


class FalseReady(TypedDict):
    """Whether the server answered (its first core feature) while its answers are wrong (endpoint FAIL)."""
    false_ready: bool
    answered: bool
    accuracy: Status | None  # the endpoint verdict's status
    evidence: str  # the first core feature's evidence, cut to 200 characters
    reasons: list[Any]  # the endpoint verdict's first three reasons
    source: str  # where the term comes from


class ModeCommandRef(TypedDict):
    mode: str
    command: str


class LabelledCommand(TypedDict):
    label: str
    command: str


class Recommendation(TypedDict):
    """The command this run started and verified (None: none was), and every other, labelled as not verified."""
    verified: ModeCommandRef | None
    unverified: list[LabelledCommand]


def false_ready(probes: ProbesResult | None, endpoint_accuracy: EndpointAccuracyResult | None,
                dummy: bool = False) -> FalseReady | None:
    """vLLM-Ascend's "false-ready": the server starts and answers (its chat completion returns 200 with
    text), but what it answers is wrong (served accuracy against the gold is FAIL). A failure, never a
    pass. None when it does not apply (dummy weights, no probes or no endpoint verdict). Pure."""
    verdict = endpoint_accuracy.verdict if endpoint_accuracy else None
    rows = {r["name"]: r for r in probes.rows} if probes else {}
    if dummy or not rows or not verdict:
        return None
    first = core_features(rows)[0]  # chat completion, or the completions API of a base model
    answered = rows.get(first, {}).get("status") == "supported"
    wrong = verdict.get("status") == Status.FAIL
    return {"false_ready": answered and wrong, "answered": answered, "accuracy": verdict.get("status"),
            "evidence": (rows.get(first, {}).get("evidence") or "")[:200],
            "reasons": list(verdict.get("reasons", []))[:3],
            "source": "vLLM-Ascend model-adapter skill, troubleshooting.md 'False-ready'; the Gemma4-E4B-it "
                      "adaptation report widens it to answers with HTTP 200 and wrong output"}


def other_served_model(ep: EndpointAccuracyResult | None) -> dict[str, str] | None:
    """{served, gold} where the server answered as another checkpoint's id than the gold's (same_model.py), else
    None. Pure."""
    from llm_adapt.engines.same_model import other_served_name

    if ep is None or not other_served_name(ep.model, ep.gold_model):
        return None
    return {"served": ep.model, "gold": ep.gold_model or "?"}


def _task_detail(ev: Verdict) -> Any:
    """The eval verdict's first two reasons, in parentheses ("" without any)."""
    shown = (ev.get("reasons") or [])[:2]
    if not shown:
        return ""
    return reason(f"task_detail_{len(shown)}", **{name: r for name, r in zip(("first", "second"), shown)})


def overall_verdict(run: RunData) -> RunVerdict:
    """Worst of: the engine started, core features work, the main in-process target, the endpoint;
    a server that answers wrongly is named false-ready. Never a PASS with a stage incomplete or a result
    file unreadable."""
    stopped = interrupted_by(run.status)
    if stopped:  # a run a signal stopped judges nothing, whatever finished before it
        return interrupted_verdict(stopped) | {"false_ready": False, "judged": []}
    parts: list[tuple[str, str]] = []
    stages = run.stages
    if stages.get("serve", {}).get("status") == StageStatus.FAILED:  # the one place the engine's cause is given
        cause = (stages["serve"].get("reason") or "").strip().splitlines()
        parts.append((Status.FAIL, reason("engine_not_started", cause=cause[0] if cause else "no cause recorded")))
    probes = run.probes
    if probes:
        rows = {r["name"]: r for r in probes.rows}
        broken = core_broken(rows)
        if broken:
            parts.append((Status.FAIL, reason("core_broken", names=", ".join(broken))))
        errors = [n for n, r in rows.items() if r.get("status") == "error" and n not in broken]
        if errors:  # the server misbehaved (a timeout, a crash, a wrong answer to a request it accepted)
            parts.append((Status.WARN, reason("probes_misbehaving", names=", ".join(errors))))
    target = main_target(run.accuracy)
    if target:
        parts.append((target.verdict["status"], reason("in_process_verdict", label=target.label,
                                                       status=target.verdict["status"])))
    ep = run.endpoint_accuracy
    if ep and ep.verdict:
        parts.append((ep.verdict["status"], reason("served_verdict", status=ep.verdict["status"])))
    parts += settings_parts(run.settings)
    fr = false_ready(probes, ep, bool(run.status and run.status.dummy))
    other = other_served_model(ep)
    if fr and fr["false_ready"]:  # a server of another model answering is not the gold's model served wrongly
        parts.insert(0, (Status.FAIL, reason("false_ready_other_model", **other) if other else reason("false_ready")))
    ev = run.eval.verdict if run.eval else {}
    if ev.get("status") in JUDGED:  # SKIP (no dataset offline) is said in the notes, not judged
        parts.append((ev["status"], reason("task_verdict", status=ev["status"], detail=_task_detail(ev))))
    incomplete = [s for s, body in stages.items() if body.get("status") in INCOMPLETE]
    said = {"served_verdict"} if fr and fr["false_ready"] else set()  # false-ready's own words say it already
    reasons = [p[1] for p in parts if p[0] != Status.PASS and p[1].key not in said]
    reasons += [reason("stage_incomplete", stage=s, status=stages[s]["status"]) for s in incomplete]
    # a result that is there but cannot be read (damaged, or another version's) was measured and is not judged here
    reasons += [reason("result_unreadable", name=name) for name in run.unreadable]
    judged = any(p[1].key in JUDGED_KEYS for p in parts)
    if not judged:  # no accuracy was judged (dummy weights, or the stages did not run): never a PASS
        reasons.append(reason("nothing_judged"))
    status = worst(p[0] for p in parts)
    if (incomplete or run.unreadable or not judged) and status == Status.PASS:
        status = Status.WARN
    if other and status != Status.PASS and not (fr and fr["false_ready"]):  # the likely cause, before the rest
        reasons.insert(0, reason("served_other_name", **other))
    head = head_caveat(run.inspect)
    served_wrong = ep is not None and ep.verdict and ep.verdict.get("status") in (Status.FAIL, Status.WARN)
    if head and served_wrong:  # a head the engine never reads: the place to look, not layer 0 nor false-ready alone
        reasons.insert(0, reason("head_not_read", caveat=head))
    return {"status": status, "reasons": reasons, "false_ready": bool(fr and fr["false_ready"] and not other),
            "judged": [p[1] for p in parts if p[1].key in JUDGED_KEYS]}


HEAD_CAVEATS = ("untied-head-ignored", "tied-head-ignored")  # inspect/caveats.py: a head vLLM's class does not load


def head_caveat(inspect: Any) -> Any:
    """inspect.json's words for a caveat that the engine's class serves another head than the checkpoint's, or
    None. Pure."""
    for caveat in (getattr(inspect, "caveats", None) or []):
        if caveat.get("id") in HEAD_CAVEATS:
            return caveat.get("text")
    return None


def interrupted_by(status: RunStatus | None) -> str | None:
    """What stopped an interrupted run ("Ctrl-C", "SIGTERM"), from status.json; None for a run that was not.
    A status.json written before `stopped_by` existed says so by a stage marked interrupted. Pure."""
    if status is None:
        return None
    if status.stopped_by:
        return signal_words(status.stopped_by)
    stages = status.stages.values()
    if not any(body.get("status") == StageStatus.INTERRUPTED for body in stages):
        return None
    return "SIGTERM" if any("SIGTERM" in str(body.get("reason") or "") for body in stages) else "Ctrl-C"


def settings_parts(settings: SettingsResult | None) -> list[tuple[str, Any]]:
    """A differential run's share of the verdict: the worst setting's status with the sentence that names
    the setting that moved accuracy (the first setting is the run's own, judged above already, counted here
    too where the others were clean and that names the path at fault); a setting the engine refused is WARN:
    the run cannot vouch for it."""
    if not settings or not settings.cause:
        return []
    rows = settings.rows
    statuses = [r["status"] for r in rows[1:] if r.get("status")]
    if statuses and settings.cause.get("status") == "cured":  # the run's own setting is out of line, another is
        statuses.append(rows[0]["status"])  # clean: the sentence that says which is the verdict's to give

    out = [(worst(statuses), reason("settings_verdict", summary=settings.cause["summary"]))] if statuses else []
    return out + [(Status.WARN, reason("setting_not_judged", label=r["label"], error=r.get("error") or "-"))
                  for r in rows[1:] if not r.get("status")]


def stage_status(body: StageRecord, lang: str) -> str:
    """A stage's status word (status.json) in the report's language."""
    return REPORT_NOTES[lang].get("statuses", {}).get(body.get("status"), body.get("status") or "")


def part_name(part: str, lang: str) -> str:
    """A layer part's name (accuracy/sublayer.py) in the report's language."""
    return REPORT_TEXT[lang]["parts"].get(part, part)


def _located(where: dict, T: dict) -> str:
    """'layer 7' or 'layer 7 (its MLP)' where the part pass named a part."""
    part = where.get("part")
    return T["in_part"].format(name=where["name"], part=T["parts"].get(part, part)) if part else where["name"]


def findings(run: RunData, lang: str = "en") -> list[str]:
    """Up to five sentences a reader needs first, each built from a measurement; problems first."""
    T = REPORT_TEXT[lang]
    out: list[tuple[int, str]] = []
    insp, serve, ep, acc = run.inspect, run.serve, run.endpoint_accuracy, run.accuracy
    if insp:
        sup = insp.support
        out.append((3, T["support"].format(arch=insp.architecture, support=sup["vllm"],
                                           registry=message(sup["registry"], lang),
                                           strategy=sup["strategy"].lower() if lang == "en" else
                                           message(sup["strategy"], lang))))
    if serve and serve.engine_facts.get("kv_cache_tokens") is not None:
        logged, predicted = serve.engine_facts["kv_cache_tokens"], serve.predicted.kv_cache_tokens
        engine = {"vllm": "vLLM", "transformers": "transformers serve"}.get(serve.engine, serve.engine)
        same = T["same"] if logged == predicted else T["predicted"].format(predicted=predicted)
        out.append((2, T["started"].format(engine=engine, seconds=serve.startup_seconds, logged=logged, same=same)))
    if ep and ep.sections["teacher_forced"].get("status") == "done":
        s, f = ep.sections["teacher_forced"]["server"], ep.sections["teacher_forced"].get("floor")
        greedy, div = ep.sections["greedy"], ""
        if greedy.get("status") == "done":
            rows = greedy["rows"]
            div = T["div"].format(exact=sum(r["exact"] for r in rows), n=len(rows),
                                  ties=sum(r["divergence"] == "near-tie" for r in rows),
                                  genuine=sum(r["divergence"] == "genuine" for r in rows))
        floor = T["floor"].format(label=ep.floor, kl=f["kl_lb_mean"]) if f else ""
        out.append((1 if ep.verdict["status"] != Status.PASS else 2,
                    T["served"].format(kl=s["kl_lb_mean"], floor=floor, top1=s["same_top1"], div=div)))
    target = main_target(acc)
    if target:
        where = target.first_local_excess
        basis = T["floor_basis"] if target.floor else target_basis(target).words(lang)
        loc = T["loc"].format(name=_located(where, T)) if where else T["noloc"].format(basis=basis)
        out.append((1 if target.verdict["status"] != Status.PASS else 3,
                    T["inproc"].format(label=target.label, rel=target.layers[-1]["rel_l2"],
                                       kl=target.logits["kl_mean"], loc=loc)))
    for q in quant_targets(acc):
        ratio = next((c["value"] for c in q.verdict["checks"] if c.get("key") in ("kl_ratio", "kl_absolute")), None)
        ratio_text = T["ratio"].format(ratio=ratio, floor=q.floor) if isinstance(ratio, (int, float)) else ""
        where = T["where"].format(name=_located(q.first_local_excess, T)) if q.first_local_excess else ""
        out.append((2, T["quant"].format(quant=q.quant, kl=q.logits["kl_mean"], ratio=ratio_text, where=where,
                                         status=q.verdict["status"])))
    out += [(1, text) for text in _stop_findings(run, T)]
    thr = run.bench.get("throughput")
    m = thr.runs[0]["metrics"] if thr and thr.runs else {}
    if all(isinstance(m.get(k), (int, float)) for k in ("output_throughput", "median_ttft_ms", "median_tpot_ms")):
        out.append((3, T["tput"].format(n=thr.runs[0]["sent"], tps=m["output_throughput"], ttft=m["median_ttft_ms"],
                                        tpot=m["median_tpot_ms"])))
    return [text for _, text in sorted(out, key=lambda x: x[0])][:4]


def _stop_findings(run: RunData, T: dict[str, str]) -> list[str]:
    """"Answers end early/late" wherever a stop divergence was genuine; skipped prompts."""
    out = []
    ep, target = run.endpoint_accuracy, main_target(run.accuracy)
    sources = []
    if ep and ep.sections["greedy"].get("status") == "done":
        sources.append(("served", ep.sections["greedy"]["rows"]))
    if target:
        sources.append((target.label, target.greedy))
    for where, rows in sources:
        early = sum(1 for r in rows if r.get("stop") == "early" and r.get("divergence") == "genuine")
        late = sum(1 for r in rows if r.get("stop") == "late" and r.get("divergence") == "genuine")
        if early or late:
            out.append(T["stops"].format(early=early, late=late, n=len(rows), where=where))
    skipped = (ep.verdict.get("skipped_prompts") if ep and ep.verdict else None) or []
    if skipped:
        out.append(T["skipped"].format(n=len(skipped), ids=", ".join(skipped)))
    return out


def recommendation(run: RunData) -> Recommendation | None:
    """The command this run started and verified, and every other command labelled as not verified.

    Verified: the plan's command for the mode vLLM was started in, with the served model judged
    against the gold (not with dummy weights). A tune recommendation is faster, not verified for
    accuracy unless its own check says so."""
    insp = run.inspect
    if not insp:
        return None
    commands = insp.plan.commands
    serve, ep = run.serve, run.endpoint_accuracy
    served_ok = serve and serve.engine == "vllm" and not serve.dummy_weights and ep and ep.verdict
    verified = {"mode": serve.mode, "command": commands[serve.mode]} if served_ok and serve.mode in commands else None
    unverified = [{"label": mode, "command": cmd} for mode, cmd in commands.items()
                  if not verified or mode != verified["mode"]]
    tuned = run.tune.recommendation if run.tune else None
    if tuned and tuned.get("significant"):
        label = "tune" + ("" if tuned.get("accuracy_verified") else ": faster, accuracy not checked")
        unverified.insert(0, {"label": label, "command": tuned["command"]})
    return {"verified": verified, "unverified": unverified}


def notes(run: RunData, lang: str = "en") -> list[str]:
    """Troubleshooting derived from what was seen in this run, in the report's language (evidence
    quoted from servers stays as the server wrote it)."""
    N = REPORT_NOTES[lang]
    out: list[str] = []
    stages = run.stages
    engine_failed = stages.get("serve", {}).get("status") == StageStatus.FAILED
    blocked = [n for n, b in stages.items() if engine_failed and b.get("status") == StageStatus.NOT_RUN and _no_endpoint(b)]
    if engine_failed:  # the cause is in the summary's verdict: say it once, there
        out.append(N["engine_failed"].format(blocked=N["blocked"].format(names=", ".join(blocked)) if blocked else ""))
    said = set(blocked) | ({"serve"} if engine_failed else set())
    for name, body in stages.items():
        if body.get("status") in INCOMPLETE and name not in said:
            shown = N.get("statuses", {}).get(body["status"], body["status"])
            out.append(N["stage"].format(name=name, status=shown, reason=message(body.get("reason") or "", lang) or N["interrupted"]))
    serve = run.serve
    open_host = bool(serve) and serve.host in ("0.0.0.0", "::")
    remote_code = bool(serve) and Command.from_argv(serve.argv).has("--trust-remote-code")
    for warning in run.inspect.plan.warnings if run.inspect else []:
        if not _said_by_serve(getattr(warning, "key", None), open_host, remote_code):
            out.append(N["plan"].format(warning=message(warning, lang)))
    for row in run.probes.rows if run.probes else []:
        if row["status"] != "supported":
            out.append(N["feature"].format(name=probe_words(row["name"], lang), status=probe_words(row["status"], lang),
                                           evidence=message(row["evidence"], lang)))
    out += _endpoint_notes(run.endpoint_accuracy, N, lang)
    if serve:
        if open_host:
            out.append(N["open"])
        if remote_code:
            out.append(N["remote_code"])
    for name, bench in run.bench.items():
        for r in bench.runs:
            acc = r.get("token_accounting") or {}
            if acc and not acc.get("fixed_length_honoured", True):
                out.append(N["fixed_length"].format(name=name, label=r["label"], n=acc["wrong_length"]))
            if r["metrics"].get("failed"):
                out.append(N["bench_failed"].format(name=name, label=r["label"], n=r["metrics"]["failed"],
                                                    errors=r["metrics"]["errors"]))
            for c in r["server_metrics"].get("comparison") or [] if r.get("server_metrics") else []:
                if not c["agree"]:
                    out.append(N["disagree"].format(name=name, label=r["label"], metric=c["metric"].upper(),
                                                    client=c["client_mean_ms"], server=c["server_mean_ms"]))
    for name, why in run.unreadable.items():
        out.append(N["unreadable"].format(name=name, why=why))
    for name, stage_status in run.outside.items():
        out.append(N["outside_run"].format(name=name, status=stage_status))
    return out


def troubleshooting(run: RunData, lang: str = "en") -> Diagnosis:
    """The engine's warnings (serve.json) and the causes seen elsewhere in the run (a failed or refused start,
    a feature's error) explained by engines/troubleshoot.py's table: symptom, cause and fix for each match;
    the warnings it does not explain. Pure."""
    serve, stages = run.serve, run.stages
    seen = [Seen(a.cause, "refused_start") for a in (serve.attempts if serve else [])
            if a.outcome != "started" and a.cause]
    if stages.get("serve", {}).get("status") == StageStatus.FAILED and stages["serve"].get("reason"):
        seen.append(Seen(stages["serve"]["reason"], "start_failure"))
    seen += [Seen(str(r.get("evidence") or ""), "probe", r["name"]) for r in (run.probes.rows if run.probes else [])
             if r.get("status") in ("error", "unsupported")]
    platform = (run.inspect.plan.platform if run.inspect else None) or (run.status.platform if run.status else None)
    return diagnose((serve.engine_facts.get("warnings") if serve else None) or [], seen, platform, lang)


def _no_endpoint(stage: StageRecord) -> bool:
    """A stage left out for want of an endpoint: by its reason's key, or by its words in a status.json
    written before stage reasons kept their keys."""
    why = stage.get("reason")
    if isinstance(why, Reason):
        return why.key == "no_endpoint"
    return str(why or "").startswith("no endpoint")


def _said_by_serve(key: str | None, open_host: bool, remote_code: bool) -> bool:
    """A plan warning (by its message key) that the serve stage's own note repeats from what ran (said
    once, by serve)."""
    return (remote_code and key == "remote_code_set") or (open_host and key == "open_host")


def _endpoint_notes(ep: EndpointAccuracyResult | None, N: dict[str, str], lang: str = "en") -> list[str]:
    if not ep:
        return []
    out = []
    for name, sec in ep.sections.items():
        if sec.get("status") in ("unsupported", "not run"):
            out.append(N["section"].format(name=N.get("sections", {}).get(name, name),
                                           status=probe_words(sec["status"], lang),
                                           reason=message(sec.get("reason") or "", lang)))
    tok = ep.sections["tokenization"]
    for mm in tok.get("mismatches", []) if tok.get("status") == "done" else []:
        out.append(N["tokens"].format(id=mm["id"], server=mm["server_tokens"], ours=mm["ours_tokens"]))
    return out
