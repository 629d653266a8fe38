"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from llm_adapt.cli_args import fraction, memory_gib, positive_float, positive_int
from llm_adapt.errors import UsageError
from llm_adapt.platforms import PLATFORMS

if TYPE_CHECKING:
    from llm_adapt.engines.endpoint import Endpoint
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.state import RunState


def help_formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=36)


def add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--platform", choices=list(PLATFORMS), help="target platform (default: detected)")
    p.add_argument("--device-memory", type=memory_gib, metavar="GIB", help="memory per device, e.g. 64 or 64GiB")
    p.add_argument("--devices", type=positive_int, metavar="N", help="devices per node (default: those present, else 8)")
    p.add_argument("--tp", type=positive_int, metavar="N",
                   help="tensor-parallel ranks (--tensor-parallel-size): the attention heads and KV heads must divide "
                        "by N; on CPU one rank per core group (default: 1 on CPU, the fewest that fit elsewhere)")
    p.add_argument("--ep", action="store_true",
                   help="expert parallelism (--enable-expert-parallel) over the --tp ranks; MoE models only")
    p.add_argument("--nodes", type=positive_int, metavar="N",
                   help="nodes: the layout uses at most N, and N > 1 adds multi-node commands, data parallel and Ray "
                        "(default: as many as needed)")
    p.add_argument("--dtype", default="auto", choices=["auto", "bf16", "fp16", "fp32"],
                   help="serving dtype (default auto: bf16, or fp32 on a CPU without native bf16)")
    p.add_argument("--kv-dtype", choices=["bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2"],
                   help="KV-cache dtype (default: the serving dtype)")
    p.add_argument("--max-model-len", type=positive_int, metavar="N", help="context length (default: longest that fits)")
    p.add_argument("--max-num-seqs", type=positive_int, metavar="N", help="concurrent sequences (default 16 on CPU, 256 elsewhere)")
    p.add_argument("--max-num-batched-tokens", type=positive_int, metavar="N", help="tokens per scheduler step")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=0.9, metavar="F", help="fraction of device memory (default 0.9)")
    p.add_argument("--kv-cache-space", type=positive_int, metavar="GIB", help="CPU: VLLM_CPU_KVCACHE_SPACE in GiB (default: up to 4)")
    p.add_argument("--host", default="127.0.0.1", help="address the server binds (default 127.0.0.1)")
    p.add_argument("--port", type=positive_int, help="server port (inspect's commands: 8000; started servers: a free port)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model's own Python code to run")
    p.add_argument("--offline", action="store_true", help="hub ids: use the local cache only, never the network")


def add_accuracy_workload_options(p: argparse.ArgumentParser, quick: tuple[str, int] | None = None) -> None:
    """--prompts and --max-new-tokens, with the one default compare, layers and run share
    (accuracy/defaults.py); `quick`: the suite and tokens a command's --quick takes instead (run)."""
    from llm_adapt.accuracy import defaults

    prompts_also = f"; the {quick[0]!r} suite with --quick" if quick else ""
    tokens_also = f"; {quick[1]} with --quick" if quick else ""
    p.add_argument("--prompts", default=None if quick else defaults.PROMPTS, metavar="SUITE|FILE",
                   help=f"accuracy prompts: a shipped suite (default, quick) or a JSONL file (default: the "
                        f"{defaults.PROMPTS!r} suite{prompts_also})")
    p.add_argument("--max-new-tokens", type=positive_int, default=None if quick else defaults.MAX_NEW_TOKENS,
                   metavar="N", help=f"greedy tokens of the gold per prompt, on which each target is judged "
                                     f"(default {defaults.MAX_NEW_TOKENS}{tokens_also})")


def add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=["vllm", "transformers"], help="engine to start (default: vllm when installed)")
    p.add_argument("--graph", action="store_true", help="start in graph mode (CUDA graphs / ACLGraph / torch.compile); default eager")
    p.add_argument("--startup-timeout", type=positive_float, default=900.0, metavar="S", help="seconds to wait for readiness")
    p.add_argument("--dummy", action="store_true",
                   help="vLLM with random weights (--load-format dummy): check architecture, kernels and memory before weights exist")


def add_endpoint_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", metavar="URL", help="an OpenAI-compatible server someone else started")
    p.add_argument("--model", dest="served_model", metavar="NAME", help="model name on the endpoint (default: the one it serves)")
    p.add_argument("--api-key", metavar="KEY", help="API key (default: $OPENAI_API_KEY)")


def endpoint_from_args(args: argparse.Namespace):
    from llm_adapt.engines.endpoint import endpoint_from_url

    return endpoint_from_url(args.endpoint, args.served_model, args.api_key)


def require_served_gold(endpoint, source, timeout_s: float | None = None) -> str:
    """Before an endpoint is judged against `source`'s gold: the server answers, and what it serves is that
    model (engines/same_model.py); one line and exit 2 otherwise. The served model's name."""
    from llm_adapt.engines.preflight import precheck_timeout, resolve_model_name
    from llm_adapt.engines.same_model import require_same_model

    wait = precheck_timeout(timeout_s)
    model, info = resolve_model_name(endpoint, wait)
    require_same_model(endpoint, model, info.get("listed"), source, wait)
    return model


def command_run(args: argparse.Namespace, label: Callable[[str], str], out: Path | None = None,
                **fields) -> tuple["RunConfig", "RunState"]:
    """A measuring command's share of `run`: MODEL resolved and planned by run's own stages (a
    configuration error stops before any directory exists), its run directory (`out`, else --out, else
    one named by `label` of the platform) with inspect.json, and run's config from the same flags.
    `fields` override it."""
    from dataclasses import replace

    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import require_engine_host
    from llm_adapt.run import stages
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.pipeline import new_status
    from llm_adapt.run.state import RunState
    from llm_adapt.rundir import open_run_dir

    require_engine_host(args.platform, args.model)  # an engine of a platform this host lacks: refused first
    cfg = RunConfig(out=Path(), model_arg=args.model, plan_options_for=lambda src: plan_options_from(args, src),
                    platform=args.platform, engine=getattr(args, "engine", None), graph=getattr(args, "graph", False),
                    port=args.port, startup_timeout_s=args.startup_timeout,
                    dummy=getattr(args, "dummy", False),  # only the commands that start engines have --dummy
                    offline=args.offline, log=lambda line: print(line, file=sys.stderr))
    cfg = replace(cfg, **fields)
    state = RunState(status=new_status(cfg), source=resolve_model(args.model, weights=not cfg.dummy, offline=args.offline))
    refuse_unsupported(state.source, args.platform)
    stages.plan(cfg, state)
    if cfg.engine != "transformers":
        refuse_unservable(state.inspect, state.source)
    if not cfg.dummy:
        state.source.require_weights("starting an engine")
    cfg = replace(cfg, out=out or open_run_dir(args.out, state.source.name, label(state.inspect.plan.platform)))
    stages.save_plan(cfg, state)
    return cfg, state


def refuse_unsupported(source, platform: str | None) -> None:
    """No engine to start for an architecture vLLM does not serve: the plan's verdict in one line, before the
    plan sizes memory (a memory refusal would send the user to free memory for a model no engine serves)."""
    from llm_adapt.inspect.stage import architecture_support
    from llm_adapt.inspect.summary import unsupported_verdict
    from llm_adapt.inspect.support import UNSUPPORTED
    from llm_adapt.models.spec import load_config, load_spec, unknown_model_type

    spec = load_spec(source.path)
    if problem := unknown_model_type(load_config(source.path)):
        raise UsageError(f"{source.given}: {problem}")
    support = architecture_support(spec, platform)
    if support.vllm == UNSUPPORTED:
        verdict = unsupported_verdict(spec.architecture, support.registry)
        raise UsageError(f"{source.given}: {verdict.removeprefix('verdict: ')}")


def refuse_unservable(inspected, source) -> None:
    """No engine to start where the plan already knows it cannot serve the model (a head size the platform's
    attention lacks, say): the caveat in one line, exit 2, before an engine or a directory is made."""
    from llm_adapt.inspect.caveats import start_blockers

    if blockers := start_blockers(inspected.caveats, inspected.plan.platform):
        raise UsageError(f"{source.given}: {blockers[0]['text']}; no engine is started (inspect shows the plan; "
                         "judge a server that serves it with --endpoint)")


@dataclass
class Target:
    endpoint: "Endpoint"
    engine: str | None  # None: an external endpoint
    out: Path
    pid: int | None = None
    model_dir: Path | None = None
    tool_calling: dict | None = None  # the plan's tool calling, where the engine was started with the plan's flags


@contextmanager
def engine_or_endpoint(args: argparse.Namespace):
    """Yield a Target: an external --endpoint, or an engine started for MODEL by run's serve stage
    (stopped on the way out). Its results go to --out, or to a scratch directory gone on the way out."""
    from llm_adapt.rundir import kept_or_scratch

    if args.endpoint:
        endpoint = endpoint_from_args(args)
        with kept_or_scratch(args.out) as out:
            yield Target(endpoint, None, out)
        return
    from llm_adapt.run.stages import engine_kept

    with kept_or_scratch(args.out) as out:
        cfg, state = command_run(args, lambda platform: "", out=out)
        with engine_kept(cfg, state) as server:
            planned = state.inspect.plan.tool_calling if server.spec.engine == "vllm" else None
            yield Target(server.endpoint, server.spec.engine, cfg.out, server.proc.pid, state.source.path, planned)


def plan_options_from(args: argparse.Namespace, source) -> "PlanOptions":
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.platforms import default_serving_dtype, detect_platform

    dtype, note = (default_serving_dtype(args.platform or detect_platform()) if args.dtype == "auto"
                   else (args.dtype, None))

    return PlanOptions(
        model_path=str(source.path), served_model_name=source.name, dtype=dtype, dtype_note=note, kv_dtype=args.kv_dtype,
        max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, gpu_memory_utilization=args.gpu_memory_utilization,
        device_memory_gib=args.device_memory, devices_per_node=args.devices, max_nodes=args.nodes,
        kv_cache_space_gib=args.kv_cache_space, host=args.host, port=args.port or 8000,
        trust_remote_code=args.trust_remote_code, tensor_parallel=getattr(args, "tp", None),
        expert_parallel=getattr(args, "ep", False),
    )


def show_result(result, as_json: bool, summary, path: Path, kept: bool = True) -> None:
    """--json prints the result itself; otherwise the terminal summary and where the result lies (`kept`:
    written to the user's --out, else gone with its scratch directory)."""
    if as_json:
        print(result.to_json())
        return
    from rich.console import Console

    summary(result, Console())
    print(f"result: {path}" if kept else f"result not kept: pass --out DIR to keep {path.name}")
