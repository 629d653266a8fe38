"""`llm-adapt serve`, `probe` and `mock-server`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from llm_adapt import rundir
from llm_adapt.cli_args import positive_int
from llm_adapt.cli_common import (
    add_endpoint_options,
    add_engine_options,
    add_plan_options,
    command_run,
    engine_or_endpoint,
    help_formatter,
    show_result,
)
from llm_adapt.errors import AdaptError, UsageError

EPILOG_SERVE = """examples:
  llm-adapt serve default
  llm-adapt serve ./Llama-3.1-8B-Instruct --platform npu --graph --port 8000
  llm-adapt serve default --engine transformers
  llm-adapt serve ./Qwen3-30B-A3B --tp 2 --graph       # two tensor-parallel ranks, torch.compile on CPU
"""


EPILOG_PROBE = """examples:
  llm-adapt probe --endpoint http://127.0.0.1:8000/v1
  llm-adapt probe default                      # starts vLLM, probes it, stops it
  llm-adapt probe --endpoint http://npu-host:8000/v1 --model Llama-3.2-3B-Instruct --api-key $KEY --only streaming
"""


EPILOG_MOCK = """examples:
  llm-adapt mock-server --port 8100 --ttft-ms 10 --itl-ms 5
  llm-adapt mock-server --error-rate 0.05
"""


def add_serve_parser(sub) -> None:
    p = sub.add_parser("serve", help="start vLLM (or transformers serve) from the plan and keep it running",
                       description="Start the engine with inspect's plan on 127.0.0.1, wait for readiness, record "
                                   "start-up time and the engine's KV-cache figures beside the prediction, and "
                                   "stop the whole process group on Ctrl-C or SIGTERM.",
                       epilog=EPILOG_SERVE, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--out", type=Path, metavar="DIR", help="run directory for serve.json and engine.log")
    p.set_defaults(handler=cmd_serve)


def add_probe_parser(sub) -> None:
    p = sub.add_parser("probe", help="measure the feature-support matrix of an endpoint",
                       description="Probe an OpenAI-compatible server feature by feature; each row is measured, "
                                   "with its evidence.", epilog=EPILOG_PROBE, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="start this model's engine first (instead of --endpoint)")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--only", action="append", metavar="NAME", help="run only this probe (repeatable)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write probes.json here (default: not kept, only the table is printed)")
    p.add_argument("--json", action="store_true", help="print the result JSON")
    p.set_defaults(handler=cmd_probe)


def cmd_serve(args: argparse.Namespace) -> int:
    from llm_adapt.run.stages import engine_kept

    cfg, state = command_run(args, lambda platform: f"serve-{platform}")
    with engine_kept(cfg, state) as server:
        started = state.started
        facts = started.engine_facts
        print(f"ready in {started.startup_seconds:.1f} s: {server.endpoint.base_url}  model: {server.endpoint.model}")
        if facts.get("kv_cache_tokens") is not None:
            ranks = facts.get("kv_space_gib_by_rank") or []
            per_rank = f" ({len(ranks)} ranks, {', '.join(f'{g:g}' for g in ranks)} GiB each logged)" if len(ranks) > 1 else ""
            print(f"KV cache: {facts['kv_cache_tokens']:,} tokens logged, {started.predicted.kv_cache_tokens:,} "
                  f"predicted{per_rank}")
        print("Ctrl-C stops the server.", file=sys.stderr)
        while server.alive():
            time.sleep(1)
        raise AdaptError(f"{server.spec.engine} exited on its own (code {server.proc.returncode}); see {server.log_path}")


def cmd_probe(args: argparse.Namespace) -> int:

    from llm_adapt.probes.run import run_probes
    from llm_adapt.probes.summary import print_probes
    from llm_adapt.progress import progress_bar

    if bool(args.endpoint) == bool(args.model):
        raise UsageError("give either MODEL (an engine is started) or --endpoint URL, not both or neither")
    if args.endpoint:
        from llm_adapt.cli_common import endpoint_from_args
        from llm_adapt.engines.preflight import require_answers

        require_answers(endpoint_from_args(args))  # a server that answers no request: one line, nothing written
    with engine_or_endpoint(args) as target:
        out = target.out
        with progress_bar() as report:
            result = run_probes(target.endpoint, out, engine=target.engine, only=args.only, progress=report,
                                dummy=bool(getattr(args, "dummy", False) and args.model),
                                facts={"tool_calling": target.tool_calling} if target.tool_calling else None)
    show_result(result, args.json, print_probes, out / rundir.PROBES, kept=args.out is not None)
    return probe_exit_code(result.complete, {r["name"]: r for r in result.rows})


def probe_exit_code(complete: bool, rows: dict[str, dict]) -> int:
    """1 when the server stopped answering or a core feature probed does not work (chat and streaming, or a
    base model's completions: probes.context.core_features), as the run's verdict fails it; 0 otherwise (an
    unsupported optional feature is a finding, not a failure). rows: probe name -> its row. Pure."""
    from llm_adapt.probes.context import core_broken

    broken = [n for n in core_broken(rows) if n in rows]  # --only may leave the core rows out
    return 0 if complete and not broken else 1


def add_mock_server_parser(sub) -> None:
    p = sub.add_parser("mock-server", help="a mock OpenAI streaming server for calibration and tests",
                       description="Serve a mock OpenAI-compatible streaming API with configurable TTFT, "
                                   "inter-token delay, output length and error rate, at zero model cost.",
                       epilog=EPILOG_MOCK, formatter_class=help_formatter)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=positive_int, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--ttft-ms", type=float, default=0.0, metavar="MS", help="delay before the first token (default 0)")
    p.add_argument("--itl-ms", type=float, default=0.0, metavar="MS", help="delay between tokens (default 0)")
    p.add_argument("--output-len", type=positive_int, help="fixed output tokens (default: max_tokens)")
    p.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with HTTP 500 (default 0)")
    p.add_argument("--fault", choices=["malformed", "truncate", "stall", "reset"], help="break some streams this way")
    p.add_argument("--fault-rate", type=float, default=1.0, help="share of streams broken by --fault (default 1)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the errors and faults drawn (default 0)")
    p.add_argument("--model", default="mock", help="served model name")
    p.set_defaults(handler=cmd_mock_server)


def cmd_mock_server(args: argparse.Namespace) -> int:
    from llm_adapt.engines.mock_server import MockConfig, serve

    if not 0 <= args.error_rate <= 1 or not 0 <= args.fault_rate <= 1 or args.ttft_ms < 0 or args.itl_ms < 0:
        raise UsageError("--error-rate and --fault-rate must be in [0, 1]; --ttft-ms and --itl-ms must be 0 or more")
    print(f"mock server on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    serve(MockConfig(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, output_len=args.output_len, error_rate=args.error_rate,
                     fault=args.fault, fault_rate=args.fault_rate if args.fault else 0.0, seed=args.seed,
                     model=args.model), args.host, args.port)
    return 0
