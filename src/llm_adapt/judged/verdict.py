"""The run's judgement as a whole: its verdict (the worst of its judged parts, never PASS with a stage incomplete, a
result unreadable or nothing judged), false-ready, the target that decides it, what stopped it, a differential
run's share and the head the engine never reads. Pure functions of RunData's records; run/, report/ and upstream/
read them here."""

from __future__ import annotations

from typing import Any, TypedDict

from llm_adapt.accuracy.result import EndpointAccuracyResult, Verdict
from llm_adapt.accuracy.setting_cause import SettingsResult
from llm_adapt.judged.data import RunData
from llm_adapt.messages import reason
from llm_adapt.probes.context import core_features
from llm_adapt.probes.run import ProbesResult
from llm_adapt.run_status import (
    INCOMPLETE,
    RunStatus,
    RunVerdict,
    StageStatus,
    interrupted_verdict,
    signal_words,
)
from llm_adapt.status import JUDGED, Status, worst

JUDGED_KEYS = ("served_verdict", "in_process_verdict", "task_verdict", "settings_verdict")  # the verdicts the run's verdict is made of


class FalseReady(TypedDict):
    """Whether the server answered (its first core feature) while its answers are wrong (endpoint FAIL)."""
    false_ready: bool
    answered: bool
    accuracy: Status | None  # the endpoint verdict's status
    evidence: str  # the first core feature's evidence, cut to 200 characters
    reasons: list[Any]  # the endpoint verdict's first three reasons
    source: str  # where the term comes from


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
        rows = run.probe_rows
        broken = run.core_broken
        if broken:
            parts.append((Status.FAIL, reason("core_broken", names=", ".join(broken))))
        errors = [n for n, r in rows.items() if r.get("status") == "error" and n not in broken]
        if errors:  # the server misbehaved (a timeout, a crash, a wrong answer to a request it accepted)
            parts.append((Status.WARN, reason("probes_misbehaving", names=", ".join(errors))))
    target = run.main_target
    if target:
        parts.append((target.verdict["status"], reason("in_process_verdict", label=target.label,
                                                       status=target.verdict["status"])))
    ep = run.endpoint_accuracy
    if ep and ep.verdict:
        parts.append((ep.verdict["status"], reason("served_verdict", status=ep.verdict["status"])))
    parts += settings_parts(run.settings)
    fr = false_ready(probes, ep, bool(run.status and run.status.dummy))
    other = run.other_served
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
