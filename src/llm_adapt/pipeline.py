"""`llm-adapt run`: inspect -> accuracy -> engine -> probes -> endpoint accuracy -> bench -> report.

Every stage writes its JSON the moment it finishes, and status.json says what ran, failed or was
skipped and why; the report is rendered from those files alone. `--resume` skips finished stages.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from llm_adapt.errors import AdaptError
from llm_adapt.results import StageResult

STAGES = ("inspect", "accuracy", "serve", "probes", "endpoint_accuracy", "bench", "report")
SKIPPABLE = ("accuracy", "serve", "probes", "endpoint_accuracy", "bench")


@dataclass(frozen=True)
class RunSizes:
    """How much each measuring stage does; `make run` must finish in about 15 minutes on 2 cores."""

    prompts: str = "default"
    max_new_tokens: int = 48
    latency_iterations: int = 5
    input_len: int = 128
    output_len: int = 64
    throughput_prompts: int = 16
    sweep: tuple[int, ...] = (1, 2, 4)
    sweep_prompts: int = 8
    quants: tuple[str, ...] = ("int8-tensor", "int8-channel")


QUICK = RunSizes(prompts="quick", max_new_tokens=12, latency_iterations=3, input_len=64, output_len=16,
                 throughput_prompts=6, sweep=(1, 2), sweep_prompts=4, quants=("int8-tensor",))


class RunStatus(StageResult):
    KIND: ClassVar[str] = "status"

    model: str
    platform: str
    stages: dict[str, dict[str, Any]]
    workload: dict[str, Any]
    finished: bool = False
    dummy: bool = False


@dataclass
class RunContext:
    out: Path
    model_arg: str
    plan_options_for: Callable  # (source) -> PlanOptions
    platform: str | None
    target: str | None
    engine: str | None
    endpoint: Any  # an external Endpoint, or None
    graph: bool
    startup_timeout_s: float
    workload: RunSizes
    lang: str
    skip: set[str]
    resume: bool
    progress: Callable[[str, int, int], None]
    log: Callable[[str], None]
    dummy: bool = False  # random weights: serve, probes and bench only
    offline: bool = False
    source: Any = None
    inspect: Any = None
    gold: list = field(default_factory=list)
    server: Any = None
    status: RunStatus | None = None


def run_pipeline(ctx: RunContext) -> RunStatus:
    from llm_adapt.environment import collect

    ctx.status = _load_or_new_status(ctx)
    collect().save(ctx.out / "environment.json")
    with contextlib.ExitStack() as engine_scope:
        for stage in STAGES[:-1]:
            if stage == "serve":
                _serve(ctx, engine_scope)
                continue
            _run_stage(ctx, stage, STAGE_FUNCS[stage])
        engine_scope.close()  # stop the engine before the report: nothing of ours outlives its use
    _run_stage(ctx, "report", _report)
    ctx.status.finished = True
    ctx.status.save(ctx.out / "status.json")
    return ctx.status


def _load_or_new_status(ctx: RunContext) -> RunStatus:
    path = ctx.out / "status.json"
    if ctx.resume and path.exists():
        return RunStatus.load(path)
    from dataclasses import asdict

    return RunStatus(model=ctx.model_arg, platform=ctx.platform or "", workload=asdict(ctx.workload),
                     stages={s: {"status": "pending"} for s in STAGES}, dummy=ctx.dummy)


def _mark(ctx: RunContext, stage: str, status: str, **extra) -> None:
    ctx.status.stages[stage] = {"status": status, **extra}
    ctx.status.save(ctx.out / "status.json")


def _run_stage(ctx: RunContext, stage: str, func: Callable[[RunContext], None]) -> None:
    if stage in ctx.skip:
        return _mark(ctx, stage, "skipped", reason="--skip " + stage)
    if ctx.dummy and stage in ("accuracy", "endpoint_accuracy"):
        return _mark(ctx, stage, "not applicable", reason="dummy-weight verification: the weights are random")
    previous = ctx.status.stages.get(stage, {})
    if ctx.resume and previous.get("status") == "done" and stage not in ("inspect", "report"):
        ctx.log(f"{stage}: done in an earlier run, kept")
        return
    blocked = _blocked_by(ctx, stage)
    if blocked:
        return _mark(ctx, stage, "not run", reason=blocked)
    started = time.monotonic()
    _mark(ctx, stage, "running")
    try:
        func(ctx)
    except KeyboardInterrupt:
        _mark(ctx, stage, "interrupted", seconds=round(time.monotonic() - started, 1))
        raise
    except AdaptError as exc:
        _mark(ctx, stage, "failed", reason=str(exc), seconds=round(time.monotonic() - started, 1))
        ctx.log(f"{stage}: failed: {exc}")
        if stage == "inspect":
            raise
        return
    except Exception as exc:  # a bug in one stage must not lose the others
        _mark(ctx, stage, "failed", reason=f"{type(exc).__name__}: {exc}", seconds=round(time.monotonic() - started, 1),
              trace=traceback.format_exc(limit=6))
        ctx.log(f"{stage}: failed: {type(exc).__name__}: {exc}")
        if stage == "inspect":  # nothing else can run without the model and its plan
            raise AdaptError(f"inspect failed ({type(exc).__name__}: {exc}); see {ctx.out / 'status.json'}") from None
        return
    _mark(ctx, stage, "done", seconds=round(time.monotonic() - started, 1))
    ctx.log(f"{stage}: done in {time.monotonic() - started:.1f} s")


def _blocked_by(ctx: RunContext, stage: str) -> str | None:
    if stage in ("probes", "endpoint_accuracy", "bench") and ctx.server is None and ctx.endpoint is None:
        serve = ctx.status.stages.get("serve", {})
        return f"no endpoint: the engine {serve.get('status', 'did not start')}" + (
            f" ({serve['reason']})" if serve.get("reason") else "")
    return None


# ---- stages ---------------------------------------------------------------------------------

def _inspect(ctx: RunContext) -> None:
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    ctx.source = resolve_model(ctx.model_arg, weights=not ctx.dummy, offline=ctx.offline)
    ctx.inspect = run_inspect(ctx.source, ctx.plan_options_for(ctx.source), ctx.platform)
    ctx.status.platform = ctx.inspect.platform["name"]
    ctx.inspect.save(ctx.out / "inspect.json")


def _compare_options(ctx: RunContext, targets=()):
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec

    return CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=tuple(targets), prompts=ctx.workload.prompts,
                          max_new_tokens=ctx.workload.max_new_tokens)


def _accuracy(ctx: RunContext) -> None:
    from dataclasses import replace

    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.runner import parse_runner
    from llm_adapt.platforms import detect_platform

    main = parse_runner(ctx.target or f"{detect_platform()}:bf16")  # in-process targets run on this machine
    targets = [main] + [replace(main, quant=q) for q in ctx.workload.quants]
    result = compare(ctx.source, _compare_options(ctx, targets), ctx.progress, keep_gold=ctx.gold)
    result.save(ctx.out / "accuracy.json")


def _serve(ctx: RunContext, scope: contextlib.ExitStack) -> None:
    if ctx.endpoint is not None:
        return _mark(ctx, "serve", "skipped", reason=f"external endpoint {ctx.endpoint.base_url}")

    def start(ctx: RunContext) -> None:
        from llm_adapt.engines.session import choose_engine, started_engine

        engine = choose_engine(ctx.engine)
        ctx.log(f"serve: starting {engine} ...")
        server, _ = scope.enter_context(started_engine(ctx.inspect, engine, ctx.out, mode="graph" if ctx.graph else "eager",
                                                       startup_timeout_s=ctx.startup_timeout_s, dummy=ctx.dummy))
        ctx.server = server

    if ctx.resume and ctx.status.stages.get("serve", {}).get("status") == "done":
        ctx.status.stages["serve"] = {"status": "pending"}  # a resumed run needs its engine again
    _run_stage(ctx, "serve", start)


def _endpoint(ctx: RunContext):
    return ctx.endpoint if ctx.endpoint is not None else ctx.server.endpoint


def _probes(ctx: RunContext) -> None:
    from llm_adapt.probes.run import run_probes

    engine = ctx.server.spec.engine if ctx.server else None
    result = run_probes(_endpoint(ctx), ctx.out, engine=engine, progress=ctx.progress, dummy=ctx.dummy)
    if not result.complete:
        raise AdaptError("the server stopped answering during the probes; finished rows are in probes.json")


def _endpoint_accuracy(ctx: RunContext) -> None:
    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.runner import RunnerSpec

    dtype = ctx.inspect.plan["dtype"]
    floor = None if dtype == "fp32" else RunnerSpec("cpu", dtype)
    result = compare_endpoint(ctx.source, _endpoint(ctx), _compare_options(ctx), floor, ctx.out, ctx.progress,
                              gold=ctx.gold[0] if ctx.gold else None)
    missing = [n for n, s in result.sections.items() if s["status"] == "not run"]
    if missing:
        raise AdaptError(f"the server stopped answering; not run: {', '.join(missing)}")


def _bench(ctx: RunContext) -> None:
    from transformers import AutoTokenizer

    from llm_adapt.bench.modes import BenchOptions, Workload as BenchWork, run_bench, server_tokenizes
    from llm_adapt.engines.preflight import resolve_model_name

    w, endpoint = ctx.workload, _endpoint(ctx)
    model, _ = resolve_model_name(endpoint)
    tokenizer_dir = ctx.source.path if ctx.source.has_tokenizer else _default_tokenizer_dir()
    work = BenchWork(AutoTokenizer.from_pretrained(tokenizer_dir), as_ids=server_tokenizes(endpoint, model))
    pid = ctx.server.proc.pid if ctx.server else None
    plans = [BenchOptions(mode="latency", iterations=w.latency_iterations, input_len=w.input_len, output_len=w.output_len),
             BenchOptions(mode="throughput", num_prompts=w.throughput_prompts, input_len=w.input_len, output_len=w.output_len),
             BenchOptions(mode="sweep", concurrencies=w.sweep, num_prompts=w.sweep_prompts, input_len=w.input_len,
                          output_len=w.output_len, warmup=1)]
    for opts in plans:
        run_bench(endpoint, model, work, opts, ctx.out, pid=pid, progress=ctx.progress, name=f"bench-{opts.mode}.json")


def _default_tokenizer_dir():
    from llm_adapt.models.source import resolve_model

    return resolve_model("default").path


def _report(ctx: RunContext) -> None:
    from llm_adapt.report.render import render_report

    for path in render_report(ctx.out, ctx.lang):
        ctx.log(f"report: {path}")


STAGE_FUNCS: dict[str, Callable[[RunContext], None]] = {
    "inspect": _inspect, "accuracy": _accuracy, "probes": _probes, "endpoint_accuracy": _endpoint_accuracy,
    "bench": _bench,
}
