"""The report's words on the judged run: the findings that matter, the notes, the troubleshooting and the
recommended command. The verdict itself is judged/verdict.py's. Pure functions of RunData's records."""

from __future__ import annotations

from typing import TypedDict

from llm_adapt.accuracy.result import EndpointAccuracyResult
from llm_adapt.accuracy.verdict import target_basis
from llm_adapt.command import Command
from llm_adapt.engines.troubleshoot import Diagnosis, Seen, diagnose
from llm_adapt.judged.data import RunData
from llm_adapt.messages import REPORT_NOTES, REPORT_TEXT, Reason, message, probe_words
from llm_adapt.run_status import (
    INCOMPLETE,
    StageRecord,
    StageStatus,
)
from llm_adapt.status import Status


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
    insp, serve, ep = run.inspect, run.serve, run.endpoint_accuracy
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
    target = run.main_target
    if target:
        where = target.first_local_excess
        basis = T["floor_basis"] if target.floor else target_basis(target).words(lang)
        loc = T["loc"].format(name=_located(where, T)) if where else T["noloc"].format(basis=basis)
        out.append((1 if target.verdict["status"] != Status.PASS else 3,
                    T["inproc"].format(label=target.label, rel=target.layers[-1]["rel_l2"],
                                       kl=target.logits["kl_mean"], loc=loc)))
    for q in run.quant_targets:
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
    ep, target = run.endpoint_accuracy, run.main_target
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
