"""`llm-adapt layers`: every layer's output captured inside the served engine, against the fp32 gold."""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_adapt import rundir
from llm_adapt.cli_args import positive_float
from llm_adapt.cli_common import (
    add_accuracy_workload_options,
    add_endpoint_options,
    add_plan_options,
    help_formatter,
    show_result,
)
from llm_adapt.errors import UsageError
from llm_adapt.status import exit_code

EPILOG_LAYERS = """examples:
  llm-adapt layers default --prompts quick
  llm-adapt layers ./Llama-3.2-3B-Instruct --graph --accept-eager
  LLM_ADAPT_CAPTURE_DIR=/tmp/cap python -m vllm.entrypoints.openai.api_server --model ./m --enforce-eager &
  llm-adapt layers ./m --endpoint http://127.0.0.1:8000/v1 --capture-dir /tmp/cap
  llm-adapt layers ./m --msprobe-dump /data/msprobe_dump          # vLLM-Ascend's msprobe dump, no server
"""


def add_layers_parser(sub) -> None:
    p = sub.add_parser("layers", help="layer by layer inside the served engine (vLLM), against the fp32 gold",
                       description="Start vLLM (eager) with llm-adapt's capture plugin, send each prompt of the "
                                   "suite as one prefill, and compare the engine's own embedding, decoder-layer "
                                   "and final-norm outputs with the float32 gold: the same metrics, noise floor "
                                   "and localization as `llm-adapt compare`.",
                       epilog=EPILOG_LAYERS, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    p.add_argument("--reference", default="cpu:fp32", metavar="DEVICE:DTYPE", help="gold reference (default cpu:fp32)")
    add_accuracy_workload_options(p)
    p.add_argument("--local-factor", type=positive_float, default=2.0, metavar="X",
                   help="a layer is out of line above X times its floor's allowed ratio (default 2)")
    p.add_argument("--graph", action="store_true",
                   help="the deployment runs graph mode; capture still runs eager, so this needs --accept-eager")
    p.add_argument("--accept-eager", action="store_true",
                   help="judge a graph-mode deployment by an eager capture (the result and report say so)")
    add_plan_options(p)
    p.add_argument("--startup-timeout", type=positive_float, default=900.0, metavar="S", help="seconds to wait for readiness")
    add_endpoint_options(p)
    p.add_argument("--capture-dir", type=Path, metavar="DIR",
                   help="with --endpoint: the LLM_ADAPT_CAPTURE_DIR that server was started with (same machine)")
    p.add_argument("--msprobe-dump", type=Path, metavar="DIR",
                   help="read vLLM-Ascend's msprobe L0 tensor dump (the dump_path of the dump_config `inspect "
                        "--platform npu` prints) instead of starting vLLM; with --endpoint, send each prompt to it first")
    p.add_argument("--served-dtype", default=None, choices=["bf16", "fp16", "fp32"],
                   help="with --endpoint or --msprobe-dump: the dtype the server computes in (default bf16)")
    p.add_argument("--keep-capture", action="store_true", help="keep the engine's tensor records in the run directory")
    p.add_argument("--out", type=Path, metavar="DIR", help="write layers.json here (default: a new directory under runs/)")
    p.add_argument("--json", action="store_true", help="print the result JSON instead of the summary")
    p.set_defaults(handler=cmd_layers)


def check_args(args: argparse.Namespace) -> None:
    if args.msprobe_dump:
        if args.capture_dir:
            raise UsageError("--capture-dir is the vLLM capture plugin's; --msprobe-dump reads msprobe's dump instead")
        return
    if args.capture_dir and not args.endpoint:
        raise UsageError("--capture-dir goes with --endpoint (a server you started); without it llm-adapt starts one")
    if args.endpoint and not args.capture_dir:
        raise UsageError("--endpoint needs --capture-dir: the LLM_ADAPT_CAPTURE_DIR that server was started with")
    if args.served_dtype and not args.endpoint:
        raise UsageError("--served-dtype goes with --endpoint; a started engine computes in --dtype")


def cmd_layers(args: argparse.Namespace) -> int:
    from llm_adapt.accuracy.options import compare_options
    from llm_adapt.prompts import load_prompts

    check_args(args)
    from llm_adapt.accuracy.layers_served import capture_modes

    capture = capture_modes(args.graph, args.accept_eager)
    load_prompts(args.prompts)  # bad prompts fail before any model loads or engine starts
    opts = compare_options(args.reference, prompts=args.prompts, max_new_tokens=args.max_new_tokens,
                           local_factor=args.local_factor)
    if args.msprobe_dump:
        return _from_msprobe(args, opts, capture)
    if args.endpoint:
        return _against_endpoint(args, opts, capture)
    return _with_engine(args, opts, capture)


def _against_endpoint(args, opts, capture) -> int:
    from llm_adapt.cli_common import endpoint_from_args
    from llm_adapt.models.source import resolve_model
    from llm_adapt.rundir import open_run_dir

    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("layers")
    out = open_run_dir(args.out, source.name, "layers")
    return _measure(args, source, endpoint_from_args(args), args.capture_dir.resolve(), args.served_dtype or "bf16",
                    opts, capture, out)


def _from_msprobe(args, opts, capture) -> int:
    """An msprobe dump (vLLM-Ascend): the prompts' prefills in it against the gold cut to the prompts."""
    from llm_adapt.accuracy.msprobe_dump import MsprobeDump, run_msprobe_layers
    from llm_adapt.cli_common import endpoint_from_args
    from llm_adapt.models.source import resolve_model
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import open_run_dir

    if not args.endpoint:
        MsprobeDump(args.msprobe_dump)  # a bad dump fails before the gold is measured
    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("layers")
    out = open_run_dir(args.out, source.name, "layers")
    with progress_bar() as report:
        result = run_msprobe_layers(source, args.msprobe_dump.resolve(), opts, args.served_dtype or "bf16", capture,
                                    report, endpoint_from_args(args) if args.endpoint else None)
    show_result(result, args.json, print_layers, result.save(out / rundir.LAYERS))
    return exit_code(result.verdict["status"])


def _with_engine(args, opts, capture) -> int:
    from llm_adapt.accuracy.layers_served import capture_dir
    from llm_adapt.cli_common import command_run
    from llm_adapt.engines.vllm import require_vllm
    from llm_adapt.run.stages import engine_kept

    require_vllm()
    # run's serve stage with --layers: vLLM, eager (the capture needs it), the capture plugin on
    cfg, state = command_run(args, lambda platform: "layers", engine="vllm", graph=False, dummy=False, layers="on")
    with engine_kept(cfg, state) as server:
        return _measure(args, state.source, server.endpoint, capture_dir(cfg.out), state.inspect.plan.dtype, opts,
                        capture, cfg.out)


def _measure(args, source, endpoint, capture_dir: Path, served_dtype: str, opts, capture, out: Path) -> int:
    from llm_adapt.accuracy.layers_served import run_layers
    from llm_adapt.progress import progress_bar

    with progress_bar() as report:
        result = run_layers(source, endpoint, capture_dir, opts, served_dtype, capture, report,
                            keep_records=args.keep_capture)
    path = result.save(out / rundir.LAYERS)
    show_result(result, args.json, print_layers, path)
    return exit_code(result.verdict["status"])


def print_layers(result, console) -> None:
    """The terminal summary: mode, verdict, where to look first, the worst layers."""
    cap = result.capture
    console.print(f"layers inside the served engine: {result.prompts['captured']}/{result.prompts['count']} prompts, "
                  f"capture {cap['mode']}, deployment {cap['deploy_mode']}, floor {result.floor}")
    if cap.get("eager_for_graph"):
        console.print("[yellow]an eager capture stands in for a graph-mode deployment (--accept-eager)[/]")
    where = result.first_local_excess
    console.print(f"verdict: [bold]{result.verdict['status']}[/]"
                  + (f"; look first at [bold]{where['name']}[/] ({_ratio(where.get('ratio'))} its {where['basis']})" if where else ""))
    for reason in result.verdict.get("reasons", []):
        console.print(f"  - {reason}")


def _ratio(value) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) else "not comparable to"
