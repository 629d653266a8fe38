"""The eval stage: lm-eval on the endpoint and on the gold, paired per item, judged, written to eval.json.

Call from the pipeline:
    run_eval_stage(source, endpoint, ["builtin-mc", "builtin-arith"], out, settings=Settings(limit=100))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.accuracy.result import Verdict
from llm_adapt.engines.endpoint import Endpoint, EndpointRecord
from llm_adapt.evaluation.baseline import Baseline
from llm_adapt.evaluation.harness import (
    AUTO,
    PILOT_ITEMS,
    Settings,
    aggregates,
    evaluate,
    gold_backend,
    gold_response_cache,
    per_item,
    served_backend,
    stderrs,
)
from llm_adapt.evaluation.judge import BaselineRow, PairedRow, baseline_rows, paired_rows, verdict
from llm_adapt.evaluation.power import DETECT_POINTS
from llm_adapt.evaluation.rules import AISBENCH_THRESHOLD
from llm_adapt.evaluation.stats import DEFAULT_RTOL
from llm_adapt.evaluation.tasks import check_known, load, task_manager
from llm_adapt.results import StageResult

EVAL_FILE = rundir.EVAL


@with_config(ConfigDict(extra="allow"))
class EvalSettings(TypedDict, total=False):
    """What the eval ran with: harness.Settings, the tolerance, the drop to detect, AISBench's threshold."""

    limit: int | str | None
    num_fewshot: int | None
    num_concurrent: int
    batch_size: int
    served_batch_size: int
    seed: int
    rtol: float
    detect: float
    threshold: float


@with_config(ConfigDict(extra="allow"))
class TaskScore(TypedDict, total=False):
    """One task metric's aggregate on each side, as the harness reports it, with what upstream's e2e config
    needs to rerun it (the served side's stderr, the few-shot count, whether the chat template was applied)."""

    task: str
    metric: str
    served: float | None
    gold: float | None
    served_stderr: float | None
    num_fewshot: int | None
    chat: bool | None


@with_config(ConfigDict(extra="allow"))
class AisbenchRun(TypedDict, total=False):
    """--backend aisbench: what its nightly form needs (upstream/formats.nightly_config)."""

    dataset_conf: str
    request_conf: str
    data: str  # "given" (a local copy) or where AISBench's own copy is
    max_out_len: int
    batch_size: int
    generation_kwargs: dict[str, float | int | bool | str | None]
    accuracy: dict[str, float | None]  # served, gold: points
    failed_requests: list[int]
    version: str
    threshold: float


class EvalResult(StageResult):
    KIND: ClassVar[str] = "eval"
    FILE: ClassVar[str | None] = rundir.EVAL

    model: str  # the gold's model name
    backend: str = "lm-eval"  # lm-eval | aisbench: the harness that ran both sides
    endpoint: EndpointRecord
    settings: EvalSettings
    scores: list[TaskScore]  # per task and metric: served and gold aggregate as lm-eval reports them
    paired: list[PairedRow]
    baseline: list[BaselineRow]  # per published metric
    skipped: list[str]  # one line per task that could not run here
    seconds: dict[str, float]  # wall time per side and group
    verdict: Verdict  # status, reasons, skipped
    aisbench: AisbenchRun | None = None


def run_eval_stage(source, endpoint: Endpoint, tasks: list[str], out: Path, settings: Settings | None = None,
                   baseline: Baseline | None = None, say: Callable[[str], None] = print,
                   gold_cache: dict | None = None, detect: float = DETECT_POINTS,
                   threshold: float = AISBENCH_THRESHOLD, gsm8k_data: Path | None = None) -> EvalResult:
    """`source`: the gold's ModelSpec (local weights); `endpoint`: the served model (its name resolved).
    `gold_cache`: a dict kept by the caller to reuse the gold's lm-eval results for several endpoints.
    `gsm8k_data`: a folder with gsm8k's files, read instead of the hub's dataset (tasks.gsm8k_files)."""
    from llm_adapt.engines.preflight import resolve_model_name

    settings = settings or Settings()
    tm = task_manager(out, tasks, gsm8k_data)
    check_known(tasks, tm)
    model_name, _ = resolve_model_name(endpoint)
    if baseline and baseline.num_fewshot is not None and settings.num_fewshot is None:
        settings = Settings(**{**settings.__dict__, "num_fewshot": baseline.num_fewshot})
    rtol = baseline.rtol if baseline else DEFAULT_RTOL
    loaded = [load(t, tm) for t in tasks]
    skipped = [t.skip for t in loaded if t.skip]
    for line in skipped:
        say(f"skip: {line}")
    cache = {} if gold_cache is None else gold_cache

    def measure(at: Settings):
        return _measure(source, endpoint, model_name, loaded, tm, at, rtol, baseline, detect, threshold, say, cache)

    if settings.limit == AUTO:
        settings, (scores, pairs, published, seconds) = _sized(settings, measure, say)
    else:
        scores, pairs, published, seconds = measure(settings)
    result = EvalResult(model=source.name, endpoint=endpoint.redacted() | {"model": model_name},
                        settings={**settings.__dict__, "rtol": rtol, "detect": detect, "threshold": threshold},
                        scores=scores, paired=pairs, baseline=published, skipped=skipped, seconds=seconds,
                        verdict=verdict(pairs, published, skipped))
    result.save(out / EVAL_FILE)
    return result


def _measure(source, endpoint, model_name, loaded, tm, settings, rtol, baseline, detect, threshold, say, cache):
    """Both sides of every loaded task at `settings`, paired and judged: (scores, paired, baseline rows, seconds)."""
    available = {t.name: t.items for t in loaded if t.items is not None}
    scores, pairs, published, seconds = [], [], [], {}
    for generative in (False, True):
        names = [t.name for t in loaded if not t.skip and t.generative == generative]
        if not names:
            continue
        group = "generative" if generative else "loglikelihood"
        served, gold = _both_sides(source, endpoint, model_name, names, tm, generative, settings, seconds, group, say,
                                   cache)
        for task in served["samples"]:
            s_items, g_items = per_item(served["samples"][task]), per_item(gold["samples"].get(task, []))
            s_scores, g_scores = aggregates(served, task), aggregates(gold, task)
            # with what upstream's e2e config needs to rerun it: the served side's stderr, the few-shot count
            # lm-eval used and whether the chat template was applied (tests/e2e/models in vLLM-Ascend)
            errors, shots = stderrs(served, task), served.get("n-shot", {}).get(task)
            scores += [{"task": task, "metric": m, "served": v, "gold": g_scores.get(m), "served_stderr": errors.get(m),
                        "num_fewshot": shots, "chat": generative} for m, v in s_scores.items()]
            pairs += paired_rows(task, s_items, g_items, rtol, detect, threshold, available.get(task))
            published += baseline_rows(task, s_scores, baseline)
    return scores, pairs, published, seconds


def items_needed(pairs: list[dict], pilot: int) -> int | None:
    """The items the paired test needs for the drop to detect, from the discordance the pilot measured (the
    most any metric needs, capped at what its task holds); None when the pilot's items already suffice."""
    needed = [min(r["sizing"]["paired_needed"], r["sizing"]["available"] or r["sizing"]["paired_needed"])
              for r in pairs if r.get("sizing")]
    most = max(needed, default=0)
    return most if most > pilot else None


def _sized(settings: Settings, measure, say):
    """--limit auto: a pilot of the first PILOT_ITEMS items measures the discordance; then, where the paired
    test needs more for the drop to detect, the first that many (the gold's answers to the pilot's items come
    from its response cache; the served side answers them again)."""
    pilot = replace(settings, limit=PILOT_ITEMS)
    measured = measure(pilot)
    n = items_needed(measured[1], PILOT_ITEMS)
    if n is None:
        return pilot, measured
    say(f"the pilot's {PILOT_ITEMS} items: the paired test needs {n} to see the drop; running {n}")
    sized = replace(settings, limit=n)
    return sized, measure(sized)


def _both_sides(source, endpoint, model_name, names, tm, generative, settings, seconds, group, say, cache):
    say(f"{group} tasks {', '.join(names)}: served model through {endpoint.base_url} ...")
    t0 = time.perf_counter()
    backend = served_backend(endpoint, model_name, str(source.path), generative, settings)
    served = evaluate(backend, names, tm, generative, settings, endpoint.api_key)
    seconds[f"served_{group}"] = round(time.perf_counter() - t0, 1)
    key = (str(source.path), tuple(names), settings)
    if key not in cache:
        say(f"{group} tasks: gold in process (fp32) ...")
        t0 = time.perf_counter()
        cache[key] = evaluate(gold_backend(str(source.path), settings), names, tm, generative, settings,
                              response_cache=gold_response_cache(str(source.path)))
        seconds[f"gold_{group}"] = round(time.perf_counter() - t0, 1)
    gold = cache[key]
    return served, gold
