"""The adaptation report's table of sample inputs and outputs, as upstream's reports show them: for the dummy
stage, the real-weight stage and the feature checks, each input beside the answer it got (and the fp32
reference's answer where one was computed). Every answer is quoted beside the request that produced it, as
the run recorded them: the chat check's request is kept in probes.json beside its answer (an older
probes.json: the chat check's fixed request, probes/features.py), a greedy transcript's prompt is found by
its id in the run's prompt suite. Pure given the run's records.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_adapt.accuracy.result import EndpointAccuracyResult
from llm_adapt.judged.data import RunData
from llm_adapt.probes.context import ProbeDetail, ProbeRow, SentRequest

CHAT = "chat completion"
FEATURES = ("legacy completions", "Chinese prompt answered in Chinese")


@dataclass(frozen=True)
class Sample:
    stage: str  # "dummy" | "real" | "feature"
    check: str  # the probe, or the prompt's id in the suite
    request: SentRequest
    answer: str
    reference: str | None = None  # the fp32 reference's greedy answer, where the run computed one
    status: str | None = None  # a feature check's verdict on its answer (supported, unsupported, ...)

    @property
    def prompt(self) -> str:
        """The text a reader sees as the input: the last user message, or the plain prompt."""
        messages = self.request.get("messages") or []
        users = [m.get("content", "") for m in messages if m.get("role") == "user"]
        return users[-1] if users else str(self.request.get("prompt", ""))


def detail(row: ProbeRow) -> ProbeDetail:
    """A probe row's detail: what it sent and got (none where the probe recorded nothing)."""
    return row.get("detail") or {}


def chat_request(row: ProbeRow) -> SentRequest:
    """The chat check's request as recorded beside its answer, else the probe's fixed one."""
    from llm_adapt.probes.features import CHAT_MAX_TOKENS, HELLO

    recorded = detail(row).get("request")
    return recorded or {"messages": HELLO, "max_tokens": CHAT_MAX_TOKENS, "temperature": 0}


def _probe(run: RunData | None, name: str) -> ProbeRow | None:
    rows = run.probes.rows if run and run.probes else []
    return next((r for r in rows if r.get("name") == name and detail(r).get("text")), None)


def samples(run: RunData, dummy: RunData | None) -> list[Sample]:
    """The rows: the dummy stage's chat answer, the real stage's chat answer and greedy transcripts, then the
    feature checks whose request was recorded. `dummy`: the dummy stage's results, where the run had one."""
    out = []
    for stage, stage_run in (("dummy", dummy), ("real", run)):
        row = _probe(stage_run, CHAT)
        if row:
            out.append(Sample(stage, CHAT, chat_request(row), row["detail"]["text"]))
    out += greedy_samples(run.endpoint_accuracy) if run.endpoint_accuracy else []
    for name in FEATURES:
        row = _probe(run, name)
        if row and detail(row).get("request"):
            out.append(Sample("feature", name, row["detail"]["request"], row["detail"]["text"],
                              status=row.get("status")))
    return out


def greedy_samples(ep: EndpointAccuracyResult) -> list[Sample]:
    """The served greedy transcripts beside the fp32 reference's, each with its prompt from the suite it
    was run with (none where the suite cannot be read again: a user's file since moved)."""
    from llm_adapt.errors import UsageError
    from llm_adapt.prompts import load_prompts

    rows = ep.sections["greedy"].get("rows") or []
    suite = ep.settings.get("prompts")
    try:
        prompts = {p.id: p for p in load_prompts(suite)} if suite and rows else {}
    except UsageError:
        return []
    tokens = ep.settings.get("max_new_tokens")
    out = []
    for row in rows:
        prompt = prompts.get(row.get("id"))
        if prompt is None or row.get("target_text") is None:
            continue
        request = ({"messages": prompt.as_messages()} if prompt.messages else {"prompt": prompt.text}) | {
            "max_tokens": tokens, "temperature": 0}
        out.append(Sample("real", row["id"], request, row["target_text"], row.get("ref_text")))
    return out
