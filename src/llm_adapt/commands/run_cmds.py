"""`llm-adapt run`, `llm-adapt report` and `llm-adapt diff`."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from llm_adapt.cli_common import (
    add_accuracy_workload_options,
    add_endpoint_options,
    add_engine_options,
    add_plan_options,
    endpoint_from_args,
    help_formatter,
    plan_options_from,
)
from llm_adapt.errors import UsageError
from llm_adapt.run.identity import require_one_run
from llm_adapt.status import Status, exit_code

if TYPE_CHECKING:
    from llm_adapt.run.state import RunState

EPILOG_RUN = """examples:
  llm-adapt run default
  llm-adapt run ./Llama-3.2-3B-Instruct --platform cuda --out runs/llama3b --lang zh
  llm-adapt run ./Llama-3.2-3B-Instruct --platform npu
  llm-adapt run ./Llama-3.2-3B-Instruct --endpoint http://npu-host:8000/v1 --skip bench   # MODEL: the checkpoint that server serves
  llm-adapt run default --quick --max-new-tokens 16
  llm-adapt run default --out runs/x --resume
  llm-adapt run ./Qwen3-30B-A3B --settings eager,graph,tp2   # each setting served and judged against one gold
"""


EPILOG_REPORT = """examples:
  llm-adapt report runs/SmolLM2-135M-Instruct-cpu-20261130-120000
  llm-adapt report runs/x --lang zh
  llm-adapt report runs/x --out reports/x    # a run directory you cannot write into
"""


def add_run_parser(sub) -> None:
    p = sub.add_parser("run", help="the whole adaptation report in one command",
                       description="inspect -> accuracy (in-process) -> engine -> probes -> endpoint accuracy -> bench "
                                   "-> report. Each stage's JSON is on disk before the next starts.",
                       epilog=EPILOG_RUN, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", default="default", help="HF directory, .gguf file or 'default'")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--target", metavar="DEVICE:DTYPE", help="in-process accuracy target (default: this machine's device at bf16, emulated in fp32 on a CPU without native bf16)")
    p.add_argument("--quant", action="append", choices=["int8-tensor", "int8-channel"], metavar="QUANT",
                   help="also run the in-process target with emulated weight-only int8, repeatable: int8-tensor, "
                        "int8-channel (default: none); informational, not part of the verdict")
    p.add_argument("--out", type=Path, metavar="DIR", help="run directory (default runs/<model>-<platform>-<time>)")
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="report language (default en)")
    p.add_argument("--skip", action="append", choices=list(pipeline_skippable()), default=[], help="skip a stage (repeatable)")
    p.add_argument("--resume", action="store_true", help="with --out: keep the stages that finished in an earlier run")
    p.add_argument("--quick", action="store_true", help="small workloads (a smoke run)")
    add_accuracy_workload_options(p, quick=quick_sizes())
    p.add_argument("--tasks", type=task_list, default=None, metavar="LIST",
                   help="task accuracy through lm-eval on the served model and the gold, e.g. builtin-mc,builtin-arith "
                        "(default: gsm8k, vLLM-Ascend's e2e gate, where its dataset is in the local Hugging Face "
                        "datasets cache and the run is not --quick; else none)")
    p.add_argument("--eval-limit", type=int, metavar="N", help="items per task for --tasks (default: all)")
    p.add_argument("--gsm8k-data", type=Path, metavar="DIR",
                   help="gsm8k's dataset at a path, read instead of the hub's: train.jsonl and test.jsonl (AISBench's "
                        "layout) or a copy of openai/gsm8k (main/*.parquet); gsm8k then runs by default")
    p.add_argument("--layers", action="store_true",
                   help="capture every layer inside the started vLLM engine (eager) and compare with the gold; "
                        "without it this happens only when endpoint accuracy is FAIL or WARN (the engine is "
                        "restarted with the capture plugin)")
    p.add_argument("--no-escalate", action="store_true",
                   help="never capture inside the engine on a FAIL or WARN")
    p.add_argument("--settings", type=settings_list, metavar="LIST",
                   help="a differential run: serve the model in each deployment setting in turn (eager, graph, tpN, "
                        "epN; the scheduler's: chunkN, a prefill budget of N tokens a step, noprefix, the prefix "
                        "cache off, serial, one request at a time; or several joined by '+', e.g. "
                        "eager,graph,tp2,chunk64), each judged against the same gold and "
                        "floor; the first is the run's own deployment, and the report names the setting that moved "
                        "accuracy (instead of --tp, --ep and --graph)")
    p.add_argument("--stages", type=stage_list, default=("real",), metavar="LIST",
                   help="weight stages in order: real (default), dummy, or dummy,real: vLLM-Ascend's two-stage gate, a "
                        "dummy-weight smoke (start, first request, content-free probes) into OUT/dummy, then the real run")
    p.set_defaults(handler=cmd_run)


def stage_list(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not names or any(n not in ("dummy", "real") for n in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError("expected dummy, real or dummy,real")
    if names == ("real", "dummy"):
        raise argparse.ArgumentTypeError("the dummy stage comes first: dummy,real")
    return names


def settings_list(text: str):
    from llm_adapt.deploy_settings import parse_settings

    try:
        return parse_settings(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def task_list(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected task names separated by commas, e.g. builtin-mc,builtin-arith")
    return names


def quick_sizes() -> tuple[str, int]:
    """The prompt suite and greedy tokens --quick takes, for the help of --prompts and --max-new-tokens."""
    from llm_adapt.run.config import QUICK

    return QUICK.prompts, QUICK.max_new_tokens


def pipeline_skippable() -> tuple[str, ...]:
    from llm_adapt.run.table import SKIPPABLE

    return SKIPPABLE


def layers_mode(args: argparse.Namespace) -> str:
    if args.layers and args.no_escalate:
        raise UsageError("--layers and --no-escalate contradict each other; give one")
    return "on" if args.layers else "off" if args.no_escalate else "auto"


def cmd_run(args: argparse.Namespace) -> int:
    from dataclasses import asdict, replace

    from llm_adapt import rundir
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import detect_platform
    from llm_adapt.progress import progress_bar
    from llm_adapt.report.render import render_report
    from llm_adapt.run.config import QUICK, RunConfig, RunSizes
    from llm_adapt.run.pipeline import run_pipeline
    from llm_adapt.run.table import ENGINE_STAGE
    from llm_adapt.run_status import StageStatus
    from llm_adapt.rundir import open_run_dir

    if not args.endpoint and ENGINE_STAGE not in args.skip:  # this run starts the plan's engine here
        from llm_adapt.platforms import require_engine_host

        require_engine_host(args.platform, args.model)
    sizes = QUICK if args.quick else RunSizes()
    if args.prompts:
        from llm_adapt.prompts import load_prompts

        load_prompts(args.prompts)  # bad prompts fail before any work
        sizes = replace(sizes, prompts=args.prompts)
    if args.max_new_tokens:
        sizes = replace(sizes, max_new_tokens=args.max_new_tokens)
    if args.quant:
        sizes = replace(sizes, quants=tuple(dict.fromkeys(args.quant)))
    if args.resume and not (args.out and (args.out / rundir.STATUS).exists()):
        raise UsageError("--resume needs --out pointing at an earlier run directory (one with status.json)")
    require_one_run(args.out, args.model, json.loads(json.dumps(asdict(sizes))), args.resume)  # as status.json has it
    if args.tasks is None:
        from llm_adapt.evaluation.tasks import default_run_tasks

        args.tasks = default_run_tasks(args.quick, gsm8k_data=args.gsm8k_data)
    if args.tasks or args.gsm8k_data:
        from llm_adapt.evaluation.tasks import validate

        validate(list(args.tasks), args.gsm8k_data)  # unknown task names, missing data fail before any work
    endpoint = endpoint_from_args(args) if args.endpoint else None
    if endpoint is not None:
        from llm_adapt.engines.preflight import resolve_model_name

        resolve_model_name(endpoint)  # an unreachable endpoint fails before any work
    dummy = args.dummy or args.stages == ("dummy",)
    source = resolve_model(args.model, weights=not dummy, offline=args.offline)  # fail before making a run dir
    if not dummy:
        source.require_weights("run (use --dummy for a dummy-weight check)")
    settings = settings_of(args, endpoint)
    require_parallel(source, settings or [(args.tp, args.ep)], args.platform)  # refused before a run directory
    two_stage = args.stages == ("dummy", "real")
    if two_stage and endpoint is not None:
        raise UsageError("--stages dummy,real starts its own engines (dummy weights, then the checkpoint's); drop --endpoint")
    if endpoint is not None and not dummy:
        from llm_adapt.cli_common import require_served_gold

        require_served_gold(endpoint, source)  # a server of another model is refused before anything is measured
    if endpoint is not None:
        from llm_adapt.engines.preflight import require_answers

        require_answers(endpoint)  # and one that lists its model but answers no request
    cfg = RunConfig(out=Path(), model_arg=args.model, plan_options_for=lambda src: plan_options_from(args, src),
                    platform=args.platform, target=args.target, engine=args.engine, endpoint=endpoint,
                    graph=args.graph, settings=settings, startup_timeout_s=args.startup_timeout, sizes=sizes, lang=args.lang,
                    skip=frozenset(args.skip), resume=args.resume, dummy=dummy, offline=args.offline,
                    tasks=tuple(args.tasks), eval_limit=args.eval_limit, gsm8k_data=args.gsm8k_data,
                    layers=layers_mode(args), dummy_first=two_stage, log=lambda m: print(m, file=sys.stderr),
                    render_report=render_report)
    state = planned_run(cfg, source)  # what the plan knows is refused here, before the run directory exists
    out = open_run_dir(args.out, source.name, args.platform or detect_platform())
    print(f"run directory: {out}", file=sys.stderr)
    with progress_bar() as report, said_when_stopped(out, args):
        cfg = replace(cfg, out=out, progress=report)
        status = run_pipeline(cfg, state)
    print(f"report: {out / rundir.report(args.lang, 'md')}")
    verdict = status.verdict or {"status": Status.FAIL, "reasons": ["no verdict was recorded"]}
    why = "; ".join(verdict["reasons"][:3])
    print(f"verdict: {verdict['status']}" + (f" ({why})" if why else ""))
    return run_exit_code(verdict["status"], [s for s, b in status.stages.items() if b.get("status") == StageStatus.FAILED])


@contextmanager
def said_when_stopped(out: Path, args: argparse.Namespace):
    """A run stopped by Ctrl-C or SIGTERM ends, on the console as in status.json and the report, with the
    verdict "interrupted: not judged" and how to finish it; the stop then goes on (exit 130 or 143)."""
    try:
        yield
    except KeyboardInterrupt:
        # the words only, not the report's code: a signal inside a module's first import (numpy's, say) can leave
        # it half made, and importing it again then fails
        from llm_adapt.messages import verdict_shown

        print(f"verdict: {verdict_shown(Status.INTERRUPTED)} (finish it: llm-adapt run {args.model} --out {out} --resume)")
        raise


def planned_run(cfg, source) -> "RunState":
    """The run's state with its plan made in memory, and refused in one line (exit 2) where the plan already
    knows that the engine this run would start cannot serve the model: an architecture or model_type vLLM
    does not serve, a head size the platform's attention lacks."""
    from llm_adapt.cli_common import refuse_unservable, refuse_unsupported
    from llm_adapt.run import stages
    from llm_adapt.run.pipeline import new_status
    from llm_adapt.run.state import RunState
    from llm_adapt.run.table import ENGINE_STAGE

    starts_vllm = cfg.endpoint is None and ENGINE_STAGE not in cfg.skip and cfg.engine != "transformers"
    if starts_vllm:
        refuse_unsupported(source, cfg.platform)
    state = RunState(status=new_status(cfg), source=source)
    stages.plan(cfg, state)
    if starts_vllm:
        refuse_unservable(state.inspect, source)
    return state


def settings_of(args: argparse.Namespace, endpoint) -> tuple:
    """--settings, checked against the options it replaces; the first setting becomes the run's own
    deployment (args.tp, args.ep, args.graph)."""
    if not args.settings:
        return ()
    if args.tp or args.ep or args.graph:
        raise UsageError("--settings names each deployment (its first is the run's own); drop --tp, --ep and --graph")
    if endpoint is not None:
        raise UsageError("--settings starts an engine per setting; drop --endpoint")
    if args.engine == "transformers" or args.dummy:
        raise UsageError("--settings judges vLLM engines against the gold; drop --engine transformers and --dummy")
    first = args.settings[0]
    args.tp, args.ep, args.graph = (first.tp if first.tp > 1 else None), first.ep, first.graph
    return args.settings


def require_parallel(source, wanted, platform: str | None) -> None:
    """Every (tp, ep) the run will plan (a setting has .tp and .ep), checked against the model and this host
    before anything is made: one line and exit 2 (inspect/plan.parallel_problem)."""
    from llm_adapt.inspect.plan import cpu_rank_problem, parallel_problem
    from llm_adapt.models.spec import load_spec
    from llm_adapt.platforms import cpu_cores, detect_platform, get_platform

    pairs = [(w.tp, w.ep) if hasattr(w, "tp") else w for w in wanted]
    pairs = [(tp or 1, bool(ep)) for tp, ep in pairs if (tp or 1) > 1 or ep]
    if not pairs:
        return
    spec = load_spec(source.path)
    host = get_platform(platform or detect_platform()).host_memory
    for tp, ep in pairs:
        if problem := parallel_problem(spec, tp, ep) or (cpu_rank_problem(tp, cpu_cores()) if host else None):
            raise UsageError(problem)


def run_exit_code(verdict: str, failed_stages: list[str]) -> int:
    """0 for PASS and WARN (the report says what to look at), 1 for FAIL or a stage that failed, so a CI
    job gates on the same verdict the report shows. Pure."""
    return exit_code(verdict, failed=bool(failed_stages))


def add_report_parser(sub) -> None:
    p = sub.add_parser("report", help="re-render report.md / report.html from a run directory's JSON",
                       description="Render the adaptation report from the JSON results of a run, without rerunning anything.",
                       epilog=EPILOG_REPORT, formatter_class=help_formatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory (from run, or a command's --out)")
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="report language (default en)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write the report (and its plots) here instead of into RUN_DIR, e.g. for a read-only run directory")
    p.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from llm_adapt.report.render import render_report

    for path in render_report(args.run_dir, args.lang, warn=lambda line: print(f"warning: {line}", file=sys.stderr),
                              out=args.out):
        print(path)
    return 0


EPILOG_DIFF = """examples:
  llm-adapt diff runs/before-upgrade runs/after-upgrade
  llm-adapt diff runs/eager runs/graph --out runs/eager-vs-graph --json
"""


def add_diff_parser(sub) -> None:
    p = sub.add_parser("diff", help="compare two runs: deltas with uncertainty, changed features, a regression verdict",
                       description="Compare two run directories of the same model (a vLLM upgrade, eager against graph, "
                                   "two plans): each metric's delta with its standard error, features that changed "
                                   "status, and a regression verdict whose thresholds come from the runs' own spreads. "
                                   "Writes diff.json, diff.md and diff.html.",
                       epilog=EPILOG_DIFF, formatter_class=help_formatter)
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="the baseline run directory")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="the run to judge against it")
    p.add_argument("--out", type=Path, metavar="DIR", help="where to write diff.* (default: RUN_B)")
    p.add_argument("--json", action="store_true", help="print diff.json instead of the Markdown table")
    p.add_argument("--force", action="store_true",
                   help="compare runs of different models anyway (refused by default: their deltas mean nothing)")
    p.set_defaults(handler=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    """Exit code 0 for PASS or WARN, 1 for a FAIL regression verdict, so CI can gate on it; 2 for runs of
    different models."""
    from llm_adapt.report.diff import diff_markdown, diff_runs, write_diff
    from llm_adapt.run.identity import model_mismatch, run_model

    if args.run_a.resolve() == args.run_b.resolve():
        raise UsageError(f"{args.run_a} and {args.run_b} are the same run directory; diff compares two runs of one "
                         "model (a baseline, then the run to judge against it)")
    mismatch = model_mismatch(run_model(args.run_a), run_model(args.run_b))
    if mismatch and not args.force:
        raise UsageError(f"{args.run_a} and {args.run_b} measured different models ({mismatch}); diff compares two "
                         "runs of one model (pass --force to compare them anyway)")
    result = diff_runs(args.run_a, args.run_b)
    paths = write_diff(result, args.out or args.run_b)
    print(result.to_json() if args.json else diff_markdown(result))
    print(f"diff: {paths[1]}", file=sys.stderr)
    return exit_code(result.verdict["status"])
