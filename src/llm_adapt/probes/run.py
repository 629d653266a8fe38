"""Run the feature probes against an endpoint, saving the table after every row."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, ClassVar

import httpx

from llm_adapt import rundir
from llm_adapt.engines.endpoint import Endpoint, EndpointRecord
from llm_adapt.engines.preflight import resolve_model_name
from llm_adapt.messages import reason
from llm_adapt.probes.context import (
    ERROR,
    NO_CHAT_TEMPLATE,
    NOT_APPLICABLE,
    NOT_JUDGED,
    NOT_RUN,
    UNSUPPORTED,
    Outcome,
    ProbeRow,
    ServerFacts,
    Timer,
    make_context,
    snippet,
)
from llm_adapt.probes.features import CHAT_TEMPLATE_MISSING, PROBES
from llm_adapt.results import StageResult


class ProbesResult(StageResult):
    KIND: ClassVar[str] = "probes"
    FILE: ClassVar[str | None] = rundir.PROBES

    endpoint: EndpointRecord
    model: str
    engine: str | None = None
    rows: list[ProbeRow]
    summary: dict[str, int]
    complete: bool


# Probes whose verdict reads the model's words: meaningless with random (dummy) weights.
JUDGE_CONTENT = ("Chinese prompt answered in Chinese",)
# ... and, where the gold's logits are flat (a random or untrained model: `facts["flat_logits"]`), the rows
# whose failure is the model's own choice (to answer in Chinese, to call a tool): not judged, not unsupported.
MODEL_CHOICE = ("Chinese prompt answered in Chinese", "tool calling (tool_choice auto)")


def run_probes(endpoint: Endpoint, out: Path | None = None, engine: str | None = None,
               only: list[str] | None = None, progress: Callable[[str, int, int], None] | None = None,
               dummy: bool = False, facts: ServerFacts | None = None) -> ProbesResult:
    """`facts`: what the run knows of the server beyond its answers (its plan's "tool_calling", whether the
    gold's logits are flat: "flat_logits")."""
    model, _ = resolve_model_name(endpoint)
    ctx = make_context(endpoint, model)
    ctx.facts.update(facts or {})
    names = [n for n in PROBES if not only or n in only]
    rows: list[ProbeRow] = []
    stopped: str | None = None
    for i, name in enumerate(names):
        if progress:
            progress("probes", i, len(names))
        if stopped:
            rows.append(_row(name, Outcome(NOT_RUN, stopped), None))
            continue
        if dummy and name in JUDGE_CONTENT:
            rows.append(_row(name, Outcome(NOT_APPLICABLE, reason("pe_dummy")), None))
            continue
        outcome, ms = _run_one(PROBES[name], ctx)
        rows.append(_row(name, model_choice(name, outcome, bool(ctx.facts.get("flat_logits"))), ms))
        if outcome.status == ERROR and not _alive(ctx):
            stopped = reason("pe_stopped_during", name=name)
        result = _result(endpoint, model, engine, rows, complete=False)
        if out is not None:
            result.save(out / rundir.PROBES)
    if progress:
        progress("probes", len(names), len(names))
    result = _result(endpoint, model, engine, rows, complete=stopped is None)
    if out is not None:
        result.save(out / rundir.PROBES)
    return result


def _run_one(probe, ctx) -> tuple[Outcome, float | None]:
    import openai

    timer = Timer()
    try:
        with timer:
            outcome = probe(ctx)
    except openai.BadRequestError as exc:
        outcome = refused(ctx, exc.message or "")
    except openai.APIStatusError as exc:
        status = ERROR if exc.status_code >= 500 else UNSUPPORTED
        outcome = Outcome(status, reason("pe_http", code=exc.status_code, body=snippet(exc.message)))
    except (openai.APITimeoutError, httpx.TimeoutException) as exc:
        outcome = timed_out(ctx, exc)
    except (openai.APIConnectionError, httpx.HTTPError) as exc:
        outcome = Outcome(ERROR, reason("pe_connection", text=snippet(exc)))
    except Exception as exc:  # a probe's own failure is a row, never the end of the run
        outcome = Outcome(ERROR, reason("pe_exception", error=type(exc).__name__, text=snippet(exc)))
    return outcome, getattr(timer, "ms", None)


def refused(ctx, message: str) -> Outcome:
    """A request the server answered with HTTP 400: for want of a chat template (a base model), the chat row
    is not applicable and the probes after it ask through the completions API (`facts["no_chat_template"]`);
    else the feature is unsupported, with the server's words."""
    if CHAT_TEMPLATE_MISSING.search(message):
        ctx.facts["no_chat_template"] = True
        return Outcome(NOT_APPLICABLE, reason(NO_CHAT_TEMPLATE))
    return Outcome(UNSUPPORTED, reason("pe_http", code=400, body=snippet(message)))


def model_choice(name: str, outcome: Outcome, flat: bool) -> Outcome:
    """A row whose failure was the model's own choice (MODEL_CHOICE) on a model with flat logits: not judged,
    with the evidence kept. Pure."""
    if flat and name in MODEL_CHOICE and outcome.status == UNSUPPORTED:
        return Outcome(NOT_JUDGED, reason("pe_model_output", evidence=outcome.evidence), outcome.detail)
    return outcome


def timed_out(ctx, exc: Exception) -> Outcome:
    """No answer within the probe timeout. A server that still answers /health was too slow here to
    judge the feature (a large model on a few cores), which is not a fault: not run, with the
    reason. One that does not answer is an error."""
    if _alive(ctx):
        return Outcome(NOT_RUN, reason("pe_timeout_healthy", timeout=f"{ctx.timeout_s:.0f}"))
    return Outcome(ERROR, reason("pe_timeout_dead", text=snippet(exc)))


def _alive(ctx) -> bool:
    try:
        return ctx.get("/health").status_code == 200
    except httpx.HTTPError:
        return False


def _row(name: str, outcome: Outcome, ms: float | None) -> ProbeRow:
    return {"name": name, "status": outcome.status, "evidence": outcome.evidence,
            "latency_ms": ms, "detail": outcome.detail}


def _result(endpoint, model, engine, rows, complete) -> ProbesResult:
    summary: dict[str, int] = {}
    for row in rows:
        summary[row["status"]] = summary.get(row["status"], 0) + 1
    return ProbesResult(endpoint=endpoint.redacted(), model=model, engine=engine, rows=rows, summary=summary,
                        complete=complete)
