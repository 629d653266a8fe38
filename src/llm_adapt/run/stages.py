"""One function per stage of `llm-adapt run`: each reads the config and the state, writes its typed
JSON result into the run directory, and leaves what later stages need in the state."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from llm_adapt import rundir
from llm_adapt.errors import AdaptError
from llm_adapt.messages import reason
from llm_adapt.run.config import RunConfig
from llm_adapt.run.state import RunState
from llm_adapt.status import OUT_OF_LINE, Status

if TYPE_CHECKING:
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.result import GraphModes
    from llm_adapt.engines.server import ManagedServer


def inspect(cfg: RunConfig, state: RunState) -> None:
    plan(cfg, state)
    save_plan(cfg, state)


def plan(cfg: RunConfig, state: RunState) -> None:
    """The model resolved and its deployment planned, in memory: a configuration error stops here,
    before a command has made its run directory."""
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    if state.source is None:
        state.source = resolve_model(cfg.model_arg, weights=not cfg.dummy, offline=cfg.offline)
    if state.inspect is None:  # `run` plans before it makes its directory, so its refusals leave nothing behind
        state.inspect = run_inspect(state.source, cfg.plan_options_for(state.source), cfg.platform)
    state.status.platform = state.inspect.plan.platform


def save_plan(cfg: RunConfig, state: RunState) -> None:
    state.inspect.save(cfg.out / rundir.INSPECT)


def compare_options(cfg: RunConfig, targets=(), quants=()) -> "CompareOptions":
    from llm_adapt.accuracy import options

    return options.compare_options(targets=targets, quants=quants, prompts=cfg.sizes.prompts,
                                   max_new_tokens=cfg.sizes.max_new_tokens, corpus_tokens=cfg.sizes.corpus_tokens)


def accuracy(cfg: RunConfig, state: RunState) -> None:
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.runner import default_target

    # in-process targets run on this machine; one the user named runs as named
    main = cfg.target or default_target()
    kept: list = []
    result = compare(state.source, compare_options(cfg, [main], cfg.sizes.quants), cfg.progress, keep_gold=kept)
    state.gold = kept[0] if kept else None
    result.save(cfg.out / rundir.ACCURACY)


def start_engine(cfg: RunConfig, state: RunState) -> None:
    """The engine of the plan, kept running in the state's slot until the measuring stages are done."""
    from llm_adapt.engines.session import choose_engine

    engine = choose_engine(cfg.engine)
    cfg.log(f"serve: starting {engine} (log: {cfg.out / rundir.ENGINE_LOG}) ...")
    capture = cfg.layers == "on" and engine == "vllm" and not cfg.graph
    state.engine.start(with_capture(cfg, state.inspect) if capture else state.inspect, engine, cfg.out,
                       **engine_options(cfg, "graph" if cfg.graph else "eager"))


def engine_options(cfg: RunConfig, mode: str) -> dict:
    """How the run starts its engine (started_engine's options), in `mode`."""
    return {"port": cfg.port, "mode": mode, "startup_timeout_s": cfg.startup_timeout_s, "dummy": cfg.dummy}


@contextlib.contextmanager
def engine_kept(cfg: RunConfig, state: RunState) -> Iterator["ManagedServer"]:
    """The serve stage for a command that measures one served model (probe, bench, eval, layers,
    serve): the engine of the planned deployment, started as `run` starts it, stopped on the way out."""
    with state.engine:
        start_engine(cfg, state)
        yield state.server


def with_capture(cfg: RunConfig, inspected):
    """The plan with the capture plugin switched on (its hooks stay idle until the layers stage)."""
    from llm_adapt.accuracy import layers_served

    return layers_served.with_capture(inspected, cfg.out)


def layers_blocked(cfg: RunConfig, state: RunState) -> str | None:
    """Why the layers stage cannot run here: it needs the vLLM engine this run started (a graph-mode
    one is restarted eager: the capture's hooks do not run inside a compiled graph)."""
    if state.server is None or state.server.spec.engine != "vllm":
        return reason("layers_engine")
    return None



def layers_not_wanted(cfg: RunConfig, state: RunState) -> str | None:
    """Why the layers stage is skipped: turned off, or (escalation) nothing out of line to localize.
    It escalates on the endpoint accuracy verdict the stage before wrote to disk."""
    if cfg.layers == "on":
        return None
    if cfg.layers == "off":
        return reason("no_escalate")
    verdict = endpoint_verdict(cfg.out)
    if verdict is None:
        return reason("no_verdict")
    if verdict not in OUT_OF_LINE:
        return reason("nothing_to_localize", verdict=verdict)
    return None


def endpoint_verdict(out: Path) -> str | None:
    from llm_adapt.accuracy.endpoint import EndpointAccuracyResult

    path = out / rundir.ENDPOINT_ACCURACY
    return EndpointAccuracyResult.load(path).verdict.get("status") if path.exists() else None


def eager_check_not_wanted(cfg: RunConfig, state: RunState) -> str | None:
    """Why the eager check is skipped. It is the first step of a graph-mode deployment's layers escalation,
    taken when endpoint accuracy was out of line (and with --layers too, then)."""
    if not cfg.graph:
        return reason("eager_not_graph")
    if "layers" in cfg.skip:
        return reason("eager_layers_skipped")
    if cfg.layers == "off":
        return reason("eager_no_escalate")
    verdict = endpoint_verdict(cfg.out)
    if verdict is None:
        return reason("eager_no_verdict")
    return None if verdict in OUT_OF_LINE else reason("eager_in_line", verdict=verdict)


def eager_check(cfg: RunConfig, state: RunState) -> None:
    """A graph-mode deployment out of line, served eager: the engine restarted eager, with the layer capture
    plugin the layers stage after this one uses (hooks do not run inside a compiled graph), and endpoint
    accuracy measured there on the same prompts and gold, into eager/. An eager engine that passes names
    graph mode as the likely cause (graph_modes, in layers.json)."""
    cfg.log(f"eager_check: endpoint accuracy {endpoint_verdict(cfg.out)}: restarting the engine eager with the "
            "layer capture plugin")
    try:
        state.engine.restart(with_capture(cfg, state.inspect), mode="eager")
    except Exception:  # no eager engine: the later stages still measure the deployment as planned
        with contextlib.suppress(Exception):
            _restore_graph(cfg, state)
        raise
    out = cfg.out / rundir.EAGER_CHECK
    out.mkdir(parents=True, exist_ok=True)
    check_endpoint(cfg, state, out)


def layers(cfg: RunConfig, state: RunState) -> None:
    """Every layer's output captured inside the served engine, against the gold of the accuracy stage.
    Escalated from a FAIL or WARN: the engine is restarted with the capture plugin first (it is not
    loaded on a run that did not ask, so the benchmarks measure the deployment as planned). A graph-mode
    deployment is captured eager (the eager check before this stage restarted it so, or this stage does),
    then served in graph mode again for the stages after this one."""
    from llm_adapt.accuracy.layers_served import capture_dir, capture_modes, run_layers
    from llm_adapt.engines.capture_plugin import ENV_DIR

    capture = capture_modes(graph=cfg.graph, accept_eager=True)  # a graph run's capture is said to be eager
    verdict = endpoint_verdict(cfg.out)
    if (cfg.graph or ENV_DIR not in state.server.spec.env) and verdict in OUT_OF_LINE:
        capture["escalated_from"] = f"endpoint accuracy {verdict}"
    if ENV_DIR not in state.server.spec.env:  # a graph-mode engine never carries the plugin
        cfg.log(f"layers: endpoint accuracy {verdict}: restarting the engine {'eager ' if cfg.graph else ''}"
                "with the layer capture plugin")
        state.engine.restart(with_capture(cfg, state.inspect), mode="eager")
    try:
        result = run_layers(state.source, state.server.endpoint, capture_dir(cfg.out), compare_options(cfg),
                            state.inspect.plan.dtype, capture, cfg.progress, gold=state.gold)
        result.modes = graph_modes(cfg.out) if cfg.graph else None
        result.save(cfg.out / rundir.LAYERS)
    except Exception:  # the later stages still measure the deployment as planned; this stage's error stands
        with contextlib.suppress(Exception):
            _restore_graph(cfg, state)
        raise
    _restore_graph(cfg, state)


def _restore_graph(cfg: RunConfig, state: RunState) -> None:
    """After a graph deployment's eager capture, the graph-mode engine again, where a later stage uses it."""
    if cfg.graph and state.engine_needed_later:
        cfg.log("restarting the graph-mode deployment for the stages after this one")
        state.engine.restart(state.inspect, mode="graph")


def graph_modes(out: Path) -> GraphModes | None:
    """The graph-mode deployment's endpoint accuracy beside the eager engine's (the eager check's, in eager/):
    both modes' figures, and graph mode as the likely cause when only the graph mode is out of line
    (accuracy/diagnosis.py). None where the eager check did not run."""
    from llm_adapt.accuracy.diagnosis import graph_cause, mode_figures
    from llm_adapt.accuracy.endpoint import EndpointAccuracyResult

    eager_path = out / rundir.EAGER_CHECK / rundir.ENDPOINT_ACCURACY
    if not eager_path.exists():
        return None
    graph, eager = EndpointAccuracyResult.load(out / rundir.ENDPOINT_ACCURACY), EndpointAccuracyResult.load(eager_path)
    figures = {"graph": mode_figures(graph.verdict, graph.sections), "eager": mode_figures(eager.verdict, eager.sections)}
    return {**figures, "eager_result": f"{rundir.EAGER_CHECK}/{rundir.ENDPOINT_ACCURACY}",
            "cause": graph_cause(figures["graph"], figures["eager"])}


def endpoint_of(cfg: RunConfig, state: RunState):
    return cfg.endpoint if cfg.endpoint is not None else state.server.endpoint


def probes(cfg: RunConfig, state: RunState) -> None:
    from llm_adapt.accuracy.flatness import is_flat
    from llm_adapt.probes.run import run_probes

    engine = state.server.spec.engine if state.server else None
    planned = engine == "vllm" and cfg.endpoint is None and state.inspect is not None  # started with the plan's flags
    facts = {"tool_calling": state.inspect.plan.tool_calling} if planned else {}
    if state.gold is not None:  # a random or untrained model's own choices are not the engine's
        facts["flat_logits"] = is_flat(state.gold.sharpness(compare_options(cfg).tie_margin))
    result = run_probes(endpoint_of(cfg, state), cfg.out, engine=engine, progress=cfg.progress, dummy=cfg.dummy,
                        facts=facts)
    if not result.complete:
        raise AdaptError("the server stopped answering during the probes; finished rows are in probes.json")


def check_endpoint(cfg: RunConfig, state: RunState, out: Path, in_flight: int | None = None, plan=None):
    """The served model against the gold (the accuracy stage's, where it ran) and the in-process floor at
    the plan's dtype, written into `out`; `in_flight` requests at once (None: the default); `plan`: the served
    deployment's, where it is not the run's (a differential setting: its block size and prefill budget)."""
    from dataclasses import replace

    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.options import served_floor

    plan = plan or state.inspect.plan
    options = replace(compare_options(cfg), block_size=plan.block_size, chunk_budget=chunk_budget(plan))
    if in_flight:
        options = replace(options, in_flight=in_flight)
    floor = served_floor(options.reference, plan.dtype)
    return compare_endpoint(state.source, endpoint_of(cfg, state), options, floor, out, cfg.progress, gold=state.gold)


def chunk_budget(plan) -> int:
    """The prefill budget a step the plan's engine runs with: its --max-num-batched-tokens, else the platform's
    default (what vLLM takes without the flag)."""
    from llm_adapt.platforms import get_platform

    given = plan.command("eager").get("--max-num-batched-tokens")
    return int(given) if given else get_platform(plan.platform).default_max_num_batched_tokens


def endpoint_accuracy(cfg: RunConfig, state: RunState) -> None:
    result = check_endpoint(cfg, state, cfg.out)
    missing = [n for n, s in result.sections.items() if s["status"] == "not run"]
    if missing:
        raise AdaptError(f"the server stopped answering; not run: {', '.join(missing)}")


def task_accuracy(cfg: RunConfig, state: RunState) -> None:
    """lm-evaluation-harness on the served model and on the fp32 gold, same items, paired."""
    from llm_adapt.evaluation.harness import Settings
    from llm_adapt.evaluation.stage import run_eval_stage

    result = run_eval_stage(state.source, endpoint_of(cfg, state), list(cfg.tasks), cfg.out,
                            settings=Settings(limit=cfg.eval_limit), say=cfg.log, gsm8k_data=cfg.gsm8k_data)
    if result.verdict["status"] == Status.SKIP:
        raise AdaptError("; ".join(result.verdict.get("skipped") or ["every task was skipped"]))


def bench(cfg: RunConfig, state: RunState) -> None:
    from llm_adapt.bench.modes import BenchOptions, Workload, run_bench, server_tokenizes, with_latency_level
    from llm_adapt.engines.preflight import resolve_model_name
    from llm_adapt.models.source import prompt_tokenizer_dir
    from llm_adapt.models.tokenizer import load_tokenizer

    s, endpoint = cfg.sizes, endpoint_of(cfg, state)
    model, _ = resolve_model_name(endpoint)
    tokenizer_dir, _ = prompt_tokenizer_dir(state.source)
    work = Workload(load_tokenizer(tokenizer_dir), as_ids=server_tokenizes(endpoint, model))
    pid = state.server.proc.pid if state.server else None
    levels = tuple(c for c in s.sweep if c != 1) or s.sweep  # 1 is the latency run, measured once
    plans = [BenchOptions(mode="latency", iterations=s.latency_iterations, input_len=s.input_len, output_len=s.output_len),
             BenchOptions(mode="throughput", num_prompts=s.throughput_prompts, input_len=s.input_len,
                          output_len=s.output_len),
             BenchOptions(mode="sweep", concurrencies=levels, num_prompts=s.sweep_prompts, input_len=s.input_len,
                          output_len=s.output_len, warmup=1)]
    results = {opts.mode: run_bench(endpoint, model, work, opts, cfg.out, pid=pid, progress=cfg.progress,
                                    name=rundir.bench(opts.mode)) for opts in plans}
    if 1 in s.sweep and 1 not in levels:
        results["sweep"] = with_latency_level(results["sweep"], results["latency"])
        results["sweep"].save(cfg.out / rundir.bench("sweep"))
    hardware_limit(cfg, state, results["latency"], results["sweep"])


def hardware_limit(cfg: RunConfig, state: RunState, latency, sweep=None) -> None:
    """Decode against the hardware's limits. On CPU the host's bandwidth and matmul rate are measured
    here; on a GPU the datasheet figures are used, labelled as published; elsewhere (Ascend: no
    citable figure) the section is left out rather than given an assumed number."""
    from llm_adapt.bench.hardware import HardwareResult, RooflineWorkload, batch_roofline, best_level, decode_roofline
    from llm_adapt.bench.hostload import Sampler
    from llm_adapt.platforms import get_platform

    plan = state.inspect.plan
    platform = get_platform(plan.platform)
    runs = latency.runs if latency else []
    tpot = runs[0]["metrics"].get("median_tpot_ms") if runs else None
    load = Sampler()
    limits = platform.hardware_limits() if platform.hardware_limits else None
    load.sample()
    if limits is None or not tpot or tpot != tpot:  # NaN: no TPOT measured
        return
    bandwidth, compute = limits
    s = cfg.sizes
    context = s.input_len + s.output_len / 2
    weights, kv = plan.weight_bytes_per_device, plan.kv_bytes_per_token
    roofline = decode_roofline(weights, kv, context, tpot, bandwidth["gb_per_s"])
    level = best_level(sweep.runs) if sweep else None
    params = (state.inspect.parameters or {}).get("from_config")
    batch = (batch_roofline(weights, kv, context, int(params / max(plan.tensor_parallel, 1)),
                            level.concurrency, level.output_tok_s, bandwidth["gb_per_s"], compute["tflops"])
             if level and params else None)
    # the host's own load matters where the host is the device: it was measured beside the run
    HardwareResult(platform=platform.name, bandwidth=bandwidth, decode=roofline, compute=compute, batch=batch,
                   workload=RooflineWorkload(input_len=s.input_len, output_len=s.output_len),
                   host_load=load.summary() if platform.host_memory else None).save(cfg.out / rundir.HARDWARE)


def adaptation(cfg: RunConfig, state: RunState) -> None:
    """The run against vLLM-Ascend's adapter workflow, from the results on disk (upstream/adaptation.py)."""
    from llm_adapt.upstream.adaptation import build

    build(cfg.out, state.source.path if state.source else None).save(cfg.out / rundir.ADAPTATION)


def report(cfg: RunConfig, state: RunState) -> None:
    if cfg.render_report is None:
        report_in_a_fresh_process(cfg, state)
        return
    for path in cfg.render_report(cfg.out, cfg.lang):
        cfg.log(f"report: {path}")


def report_in_a_fresh_process(cfg: RunConfig, state: RunState) -> None:
    """The report after a stop, drawn by `llm-adapt report` in a new interpreter: an interrupt that landed
    inside an import (numpy's, say) leaves that module half-initialised in this one, and the plots then
    fail with it (seen: "module 'numpy' has no attribute 'minimum'"). Its own session, so a second Ctrl-C
    at the terminal reaches only this process, which waits for the report."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "llm_adapt.cli", "report", str(cfg.out), "--lang", cfg.lang]
    done = subprocess.run(argv, capture_output=True, text=True, start_new_session=True, timeout=300)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit code {done.returncode}"]
        raise AdaptError(f"the report could not be drawn: {lines[-1]}")
    for path in done.stdout.splitlines():  # `report` prints one path a line
        cfg.log(f"report: {path}")
