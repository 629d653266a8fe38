"""The `llm-adapt` command. Each subcommand is thin: parse, call one library function, print.

Heavy libraries (torch, transformers, vLLM) are imported inside the handlers, so `--help`
and bad-input errors are instant.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llm_adapt import __version__
from llm_adapt.cli_args import OneLineParser, fraction, memory_gib, positive_float, positive_int
from llm_adapt.errors import AdaptError, UsageError

EPILOG_INSPECT = """examples:
  llm-adapt inspect default
  llm-adapt inspect ./Llama-3.1-8B-Instruct --platform npu --device-memory 64 --devices 8
  llm-adapt inspect model.gguf --platform cuda --device-memory 24 --json
"""

EPILOG_COMPARE = """examples:
  llm-adapt compare default --target cpu:bf16 --quant int8-tensor --quant int8-channel
  llm-adapt compare ./Llama-3.2-3B-Instruct --reference cpu:fp32 --target npu:bf16 --baseline cpu:bf16
  llm-adapt compare ./orig --target cpu:fp32 --target-model ./converted --prompts my_prompts.jsonl
"""

EPILOG_SERVE = """examples:
  llm-adapt serve default
  llm-adapt serve ./Llama-3.1-8B-Instruct --platform npu --mode graph --port 8000
  llm-adapt serve default --engine transformers
"""

EPILOG_PROBE = """examples:
  llm-adapt probe --endpoint http://127.0.0.1:8000/v1
  llm-adapt probe default                      # starts vLLM, probes it, stops it
  llm-adapt probe --endpoint http://npu-host:8000 --model llama --api-key $KEY --only streaming
"""

EPILOG_BENCH = """examples:
  llm-adapt bench --endpoint http://127.0.0.1:8000/v1 --mode serve --request-rate 4 --num-prompts 64
  llm-adapt bench default --mode latency --input-len 128 --output-len 64 --iterations 10
  llm-adapt bench default --mode sweep --concurrencies 1,2,4,8 --slo ttft=500,tpot=100
  llm-adapt bench --endpoint http://127.0.0.1:8000 --mode throughput --dataset sharegpt.json
"""

EPILOG_MOCK = """examples:
  llm-adapt mock-server --port 8100 --ttft-ms 10 --itl-ms 5
  llm-adapt mock-server --error-rate 0.05
"""

EPILOG_RUN = """examples:
  llm-adapt run default
  llm-adapt run ./Llama-3.2-3B-Instruct --platform cuda --out runs/llama3b --lang zh
  llm-adapt run default --endpoint http://npu-host:8000/v1 --model llama --skip bench
  llm-adapt run default --out runs/x --resume
"""

EPILOG_REPORT = """examples:
  llm-adapt report runs/SmolLM2-135M-Instruct-cpu-20261130-120000
  llm-adapt report runs/x --lang zh
"""

EPILOG_TUNE = """examples:
  llm-adapt tune default --budget 10
  llm-adapt tune ./Llama-3.1-8B-Instruct --platform cuda --objective latency --budget 30
  llm-adapt tune default --objective goodput --slo ttft=500,tpot=100 --out runs/x   # the run's report gains a tuning section
"""

EPILOG_MODELS = """examples:
  llm-adapt models
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-adapt", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"llm-adapt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    _add_models(sub)
    _add_inspect(sub)
    _add_compare(sub)
    _add_serve(sub)
    _add_probe(sub)
    _add_bench(sub)
    _add_mock_server(sub)
    _add_run(sub)
    _add_report(sub)
    _add_tune(sub)
    return parser


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=36)


def _add_models(sub) -> None:
    p = sub.add_parser("models", help="list the default model and the converted-model cache",
                       description="List the bundled default model and the models converted so far.",
                       epilog=EPILOG_MODELS, formatter_class=_formatter)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_models)


def add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--platform", choices=["cpu", "cuda", "npu"], help="target platform (default: detected)")
    p.add_argument("--device-memory", type=memory_gib, metavar="GIB", help="memory per device, e.g. 64 or 64GiB")
    p.add_argument("--devices", type=positive_int, metavar="N", help="devices per node (default: those present, else 8)")
    p.add_argument("--nodes", type=positive_int, metavar="N", help="at most this many nodes (default: as many as needed)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"], help="serving dtype (default bf16)")
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


def _add_inspect(sub) -> None:
    p = sub.add_parser("inspect", help="architecture support, operators, memory/KV math and the deployment plan",
                       description="Check a model against vLLM and plan its deployment on a platform.",
                       epilog=EPILOG_INSPECT, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--out", type=Path, metavar="DIR", help="also write inspect.json into DIR")
    p.add_argument("--tuned", type=Path, metavar="TUNE_JSON", help="add the recommendation of an earlier `llm-adapt tune`")
    p.set_defaults(handler=cmd_inspect)


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="accuracy against the float32 gold reference, layer by layer",
                       description="Compare target runners with the gold reference: every layer (full and local "
                                   "error), logits (KL, same top-1, perplexity), greedy tokens (near-tie vs genuine "
                                   "divergences) and int8 weights, each judged against a measured noise floor.",
                       epilog=EPILOG_COMPARE, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    p.add_argument("--reference", default="cpu:fp32", metavar="DEVICE:DTYPE", help="gold reference (default cpu:fp32)")
    p.add_argument("--target", action="append", metavar="DEVICE:DTYPE",
                   help="runner under test, repeatable (default: the detected platform at bf16)")
    p.add_argument("--target-model", type=Path, metavar="PATH", help="another checkpoint of the same architecture for the targets")
    p.add_argument("--quant", action="append", choices=["int8-tensor", "int8-channel"],
                   help="also test each target with weight-only int8 (repeatable)")
    p.add_argument("--baseline", metavar="DEVICE:DTYPE", help="noise floor for every target (default: the reference's device at each target's dtype)")
    p.add_argument("--prompts", default="default", metavar="SUITE|FILE", help="prompt suite (default, quick) or a JSONL file")
    p.add_argument("--max-new-tokens", type=positive_int, default=64, metavar="N", help="greedy tokens per prompt (default 64)")
    p.add_argument("--tie-margin", type=positive_float, default=0.3, metavar="NATS", help="top-1 vs top-2 margin of a near-tie (default 0.3)")
    p.add_argument("--top-k", type=positive_int, default=5, metavar="K", help="k for top-k overlap and mutual top-k (default 5)")
    add_endpoint_options(p)
    p.add_argument("--offline", action="store_true", help="hub ids: use the local cache only, never the network")
    p.add_argument("--served-dtype", default="bf16", choices=["bf16", "fp16", "fp32"],
                   help="with --endpoint: the dtype the server computes in, for its noise floor (default bf16)")
    p.add_argument("--reference-streaming", action="store_true", default=None,
                   help="compute the reference one layer at a time from the shards (automatic when fp32 does not fit in RAM)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write accuracy.json here (default: a new directory under runs/)")
    p.add_argument("--json", action="store_true", help="print the result JSON instead of the summary")
    p.set_defaults(handler=cmd_compare)


def compare_options_from(args: argparse.Namespace, platform: str) -> "CompareOptions":  # noqa: F821
    from dataclasses import replace

    from llm_adapt.accuracy.compare import CompareOptions
    from llm_adapt.accuracy.runner import parse_runner

    reference = parse_runner(args.reference)
    mains = [parse_runner(t) for t in (args.target or [f"{platform}:bf16"])]
    if args.target_model:
        mains = [replace(t, model_path=args.target_model.resolve()) for t in mains]
    targets = mains + [replace(t, quant=q) for t in mains for q in (args.quant or [])]
    return CompareOptions(reference=reference, targets=tuple(targets),
                          baseline=parse_runner(args.baseline) if args.baseline else None, prompts=args.prompts,
                          max_new_tokens=args.max_new_tokens, tie_margin=args.tie_margin, top_k=args.top_k,
                          reference_streaming=args.reference_streaming)


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.accuracy.compare import check_same_family, compare
    from llm_adapt.accuracy.prompts import load_prompts
    from llm_adapt.accuracy.summary import print_accuracy
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import detect_platform
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import ensure_writable, new_run_dir

    load_prompts(args.prompts)  # bad prompts fail before any model loads
    options = compare_options_from(args, detect_platform())
    if args.endpoint:
        return compare_with_endpoint(args, options)
    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("compare")
    if args.target_model:
        check_same_family(source.path, args.target_model)
    out = ensure_writable(args.out) if args.out else new_run_dir(source.name, "compare")
    with progress_bar() as report:
        result = compare(source, options, report)
    path = result.save(out / "accuracy.json")
    if args.json:
        print(result.to_json())
    else:
        print_accuracy(result, Console())
        print(f"result: {path}")
    return 0


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


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="start vLLM (or transformers serve) from the plan and keep it running",
                       description="Start the engine with inspect's plan on 127.0.0.1, wait for readiness, record "
                                   "start-up time and the engine's KV-cache figures beside the prediction, and "
                                   "stop the whole process group on Ctrl-C or SIGTERM.",
                       epilog=EPILOG_SERVE, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--out", type=Path, metavar="DIR", help="run directory for serve.json and engine.log")
    p.set_defaults(handler=cmd_serve)


def _add_probe(sub) -> None:
    p = sub.add_parser("probe", help="measure the feature-support matrix of an endpoint",
                       description="Probe an OpenAI-compatible server feature by feature; each row is measured, "
                                   "with its evidence.", epilog=EPILOG_PROBE, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="start this model's engine first (instead of --endpoint)")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--only", action="append", metavar="NAME", help="run only this probe (repeatable)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write probes.json here (default: a new directory under runs/)")
    p.add_argument("--json", action="store_true", help="print the result JSON")
    p.set_defaults(handler=cmd_probe)


def endpoint_from_args(args: argparse.Namespace):
    from llm_adapt.engines.endpoint import endpoint_from_url

    return endpoint_from_url(args.endpoint, args.served_model, args.api_key)


def inspect_for_engine(args: argparse.Namespace):
    """Resolve MODEL and build the plan an engine start needs."""
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model(args.model, weights=not args.dummy, offline=args.offline)
    inspected = run_inspect(source, plan_options_from(args, source), args.platform)  # config errors first
    if not args.dummy:
        source.require_weights("starting an engine")
    return source, inspected


def cmd_serve(args: argparse.Namespace) -> int:
    from llm_adapt.engines.session import choose_engine, started_engine
    from llm_adapt.rundir import ensure_writable, new_run_dir

    engine = choose_engine(args.engine)
    source, inspected = inspect_for_engine(args)
    out = ensure_writable(args.out) if args.out else new_run_dir(source.name, f"serve-{inspected.platform['name']}")
    inspected.save(out / "inspect.json")
    print(f"starting {engine} for {source.name} (log: {out / 'engine.log'}) ...", file=sys.stderr)
    with started_engine(inspected, engine, out, mode="graph" if args.graph else "eager", port=args.port,
                        startup_timeout_s=args.startup_timeout, dummy=args.dummy) as (server, result):
        facts = result.engine_facts
        print(f"ready in {result.startup_seconds:.1f} s: {server.endpoint.base_url}  model: {server.endpoint.model}")
        if facts.get("kv_cache_tokens") is not None:
            print(f"KV cache: {facts['kv_cache_tokens']:,} tokens logged, {result.predicted['kv_cache_tokens']:,} predicted")
        print("Ctrl-C stops the server.", file=sys.stderr)
        while server.alive():
            time.sleep(1)
        raise AdaptError(f"{engine} exited on its own (code {server.proc.returncode}); see {server.log_path}")


def cmd_probe(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.probes.run import run_probes
    from llm_adapt.probes.summary import print_probes
    from llm_adapt.progress import progress_bar

    if bool(args.endpoint) == bool(args.model):
        raise UsageError("give either MODEL (an engine is started) or --endpoint URL, not both or neither")
    with engine_or_endpoint(args, "probe") as target:
        out = target.out
        with progress_bar() as report:
            result = run_probes(target.endpoint, out, engine=target.engine, only=args.only, progress=report,
                                dummy=bool(getattr(args, "dummy", False) and args.model))
    if args.json:
        print(result.to_json())
    else:
        print_probes(result, Console())
        print(f"result: {out / 'probes.json'}")
    return 0 if result.complete else 1


@dataclass
class Target:
    endpoint: "Endpoint"  # noqa: F821
    engine: str | None  # None: an external endpoint
    out: Path
    pid: int | None = None
    model_dir: Path | None = None


@contextmanager
def engine_or_endpoint(args: argparse.Namespace, label: str):
    """Yield a Target: an external --endpoint, or an engine started for MODEL (stopped on the way out)."""
    from llm_adapt.rundir import ensure_writable, new_run_dir

    if args.endpoint:
        endpoint = endpoint_from_args(args)
        out = ensure_writable(args.out) if args.out else new_run_dir("endpoint", label)
        yield Target(endpoint, None, out)
        return
    from llm_adapt.engines.session import choose_engine, started_engine

    engine = choose_engine(args.engine)
    source, inspected = inspect_for_engine(args)
    out = ensure_writable(args.out) if args.out else new_run_dir(source.name, label)
    inspected.save(out / "inspect.json")
    print(f"starting {engine} for {source.name} ...", file=sys.stderr)
    with started_engine(inspected, engine, out, mode="graph" if args.graph else "eager", port=args.port,
                        startup_timeout_s=args.startup_timeout, dummy=args.dummy) as (server, _):
        yield Target(server.endpoint, engine, out, server.proc.pid, source.path)


def compare_with_endpoint(args: argparse.Namespace, options) -> int:
    from dataclasses import replace

    from rich.console import Console

    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.endpoint_summary import print_endpoint_accuracy
    from llm_adapt.accuracy.runner import parse_runner
    from llm_adapt.models.source import resolve_model
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import ensure_writable, new_run_dir

    endpoint = endpoint_from_args(args)
    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("compare")
    floor = parse_runner(args.baseline) if args.baseline else replace(options.reference, dtype=args.served_dtype)
    out = ensure_writable(args.out) if args.out else new_run_dir(source.name, "compare-endpoint")
    with progress_bar() as report:
        result = compare_endpoint(source, endpoint, options, None if floor == options.reference else floor, out, report)
    if args.json:
        print(result.to_json())
    else:
        print_endpoint_accuracy(result, Console())
        print(f"result: {out / 'endpoint_accuracy.json'}")
    return 0 if all(s["status"] != "not run" for s in result.sections.values()) else 1


def rate_value(text: str) -> float:
    if text.strip().lower() in ("inf", "infinity"):
        return float("inf")
    return positive_float(text)


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected whole numbers separated by commas, e.g. 1,2,4,8") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive whole numbers, e.g. 1,2,4,8")
    return values


def slo_value(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower().removesuffix("_ms")
        if not sep or key not in ("ttft", "tpot", "e2el"):
            raise argparse.ArgumentTypeError(f"{part!r}: expected ttft=MS, tpot=MS or e2el=MS")
        out[key] = positive_float(value.strip().lower().removesuffix("ms"))
    return out


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="serve / latency / throughput / sweep benchmarks of an endpoint",
                       description="Benchmark an OpenAI-compatible endpoint (or an engine started for MODEL) with "
                                   "vLLM's metric definitions: TTFT, TPOT, ITL, E2EL, throughput and goodput.",
                       epilog=EPILOG_BENCH, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="start this model's engine first (instead of --endpoint)")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--mode", choices=["serve", "latency", "throughput", "sweep"], default="serve", help="benchmark mode (default serve)")
    p.add_argument("--num-prompts", type=positive_int, default=32, metavar="N", help="measured requests (default 32)")
    p.add_argument("--input-len", type=positive_int, default=128, metavar="N", help="prompt tokens (default 128)")
    p.add_argument("--output-len", type=positive_int, default=64, metavar="N", help="output tokens, fixed with ignore_eos (default 64)")
    p.add_argument("--request-rate", type=rate_value, default=float("inf"), metavar="R", help="requests/s or inf (default inf)")
    p.add_argument("--burstiness", type=positive_float, default=1.0, metavar="B", help="gamma shape of arrivals; 1 = Poisson")
    p.add_argument("--max-concurrency", type=positive_int, metavar="N", help="at most N requests in flight")
    p.add_argument("--concurrencies", type=int_list, default=(1, 2, 4, 8), metavar="LIST", help="sweep: e.g. 1,2,4,8")
    p.add_argument("--warmup", type=int, default=2, metavar="N", help="warm-up requests, not measured (default 2)")
    p.add_argument("--iterations", type=positive_int, default=8, metavar="N", help="latency mode: requests (default 8)")
    p.add_argument("--slo", type=slo_value, metavar="SPEC", help="goodput SLOs, e.g. ttft=500,tpot=100")
    p.add_argument("--dataset", metavar="FILE", help="ShareGPT-style JSON/JSONL instead of fixed-length prompts")
    p.add_argument("--prompts", dest="suite", metavar="SUITE", help="chat prompts from a suite (default, quick) or JSONL")
    p.add_argument("--tokenizer", metavar="DIR", help="tokenizer for prompt building (default: the model's, else the default model's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="S", help="per-request timeout (default 600)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write bench.json and raw records here")
    p.add_argument("--json", action="store_true", help="print the result JSON")
    p.set_defaults(handler=cmd_bench)


def bench_options_from(args: argparse.Namespace, mode: str) -> "BenchOptions":  # noqa: F821
    from llm_adapt.bench.modes import BenchOptions

    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup}: must be 0 or more")
    return BenchOptions(mode=mode, num_prompts=args.num_prompts, input_len=args.input_len, output_len=args.output_len,
                        request_rate=args.request_rate, burstiness=args.burstiness, max_concurrency=args.max_concurrency,
                        concurrencies=args.concurrencies, warmup=args.warmup, iterations=args.iterations, slo=args.slo,
                        dataset=args.dataset, suite=args.suite, seed=args.seed, timeout_s=args.timeout)


def bench_tokenizer(args: argparse.Namespace, model_dir: Path | None):
    """The tokenizer that builds prompts: --tokenizer, the model's own, else the default model's."""
    from transformers import AutoTokenizer

    from llm_adapt.models.source import resolve_model

    path = args.tokenizer or model_dir
    note = None
    if path is None:
        path, note = resolve_model("default").path, "prompts built with the default model's tokenizer (pass --tokenizer for the served model's)"
    try:
        return AutoTokenizer.from_pretrained(path), note
    except (OSError, ValueError):
        raise UsageError(f"--tokenizer {path}: no loadable tokenizer there") from None


def cmd_bench(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.bench.modes import Workload, run_bench, server_tokenizes
    from llm_adapt.bench.summary import print_bench
    from llm_adapt.engines.preflight import resolve_model_name
    from llm_adapt.progress import progress_bar

    if bool(args.endpoint) == bool(args.model):
        raise UsageError("give either MODEL (an engine is started) or --endpoint URL, not both or neither")
    options = bench_options_from(args, args.mode)
    if options.suite:
        from llm_adapt.accuracy.prompts import load_prompts

        load_prompts(options.suite)
    with engine_or_endpoint(args, f"bench-{options.mode}") as target:
        out = target.out
        model, _ = resolve_model_name(target.endpoint)
        tokenizer, note = bench_tokenizer(args, target.model_dir)
        work = Workload(tokenizer, as_ids=server_tokenizes(target.endpoint, model), notes=[note] if note else [])
        with progress_bar() as report:
            result = run_bench(target.endpoint, model, work, options, out, pid=target.pid, progress=report)
    if args.json:
        print(result.to_json())
    else:
        print_bench(result, Console())
        print(f"result: {out / 'bench.json'}")
    return 0


def _add_mock_server(sub) -> None:
    p = sub.add_parser("mock-server", help="a mock OpenAI streaming server for calibration and tests",
                       description="Serve a mock OpenAI-compatible streaming API with configurable TTFT, "
                                   "inter-token delay, output length and error rate, at zero model cost.",
                       epilog=EPILOG_MOCK, formatter_class=_formatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=positive_int, default=8000)
    p.add_argument("--ttft-ms", type=float, default=0.0)
    p.add_argument("--itl-ms", type=float, default=0.0)
    p.add_argument("--output-len", type=positive_int, help="fixed output tokens (default: max_tokens)")
    p.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with HTTP 500")
    p.add_argument("--fault", choices=["malformed", "truncate", "stall", "reset"], help="break some streams this way")
    p.add_argument("--fault-rate", type=float, default=1.0, help="share of streams broken by --fault (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="mock", help="served model name")
    p.set_defaults(handler=cmd_mock_server)


def cmd_mock_server(args: argparse.Namespace) -> int:
    from llm_adapt.bench.mock_server import MockConfig, serve

    if not 0 <= args.error_rate <= 1 or not 0 <= args.fault_rate <= 1 or args.ttft_ms < 0 or args.itl_ms < 0:
        raise UsageError("--error-rate and --fault-rate must be in [0, 1]; --ttft-ms and --itl-ms must be 0 or more")
    print(f"mock server on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    serve(MockConfig(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, output_len=args.output_len, error_rate=args.error_rate,
                     fault=args.fault, fault_rate=args.fault_rate if args.fault else 0.0, seed=args.seed,
                     model=args.model), args.host, args.port)
    return 0


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="the whole adaptation report in one command",
                       description="inspect -> accuracy (in-process) -> engine -> probes -> endpoint accuracy -> bench "
                                   "-> report. Each stage's JSON is on disk before the next starts.",
                       epilog=EPILOG_RUN, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", default="default", help="HF directory, .gguf file or 'default'")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--target", metavar="DEVICE:DTYPE", help="in-process accuracy target (default: this machine's device at bf16)")
    p.add_argument("--out", type=Path, metavar="DIR", help="run directory (default runs/<model>-<platform>-<time>)")
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="report language (default en)")
    p.add_argument("--skip", action="append", choices=list(pipeline_skippable()), default=[], help="skip a stage (repeatable)")
    p.add_argument("--resume", action="store_true", help="with --out: keep the stages that finished in an earlier run")
    p.add_argument("--quick", action="store_true", help="small workloads (a smoke run)")
    p.add_argument("--prompts", metavar="SUITE|FILE", help="accuracy prompts: a suite (default, quick) or a JSONL file")
    p.set_defaults(handler=cmd_run)


def pipeline_skippable() -> tuple[str, ...]:
    return ("accuracy", "serve", "probes", "endpoint_accuracy", "bench")


def cmd_run(args: argparse.Namespace) -> int:
    from llm_adapt.pipeline import QUICK, RunContext, Workload, run_pipeline
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import ensure_writable, new_run_dir

    from dataclasses import replace

    workload = QUICK if args.quick else Workload()
    if args.prompts:
        from llm_adapt.accuracy.prompts import load_prompts

        load_prompts(args.prompts)  # bad prompts fail before any work
        workload = replace(workload, prompts=args.prompts)
    if args.resume and not (args.out and (args.out / "status.json").exists()):
        raise UsageError("--resume needs --out pointing at an earlier run directory (one with status.json)")
    endpoint = endpoint_from_args(args) if args.endpoint else None
    if endpoint is not None:
        from llm_adapt.engines.preflight import resolve_model_name

        resolve_model_name(endpoint)  # an unreachable endpoint fails before any work
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import detect_platform

    source = resolve_model(args.model, weights=not args.dummy, offline=args.offline)  # fail before making a run dir
    if not args.dummy:
        source.require_weights("run (use --dummy for a dummy-weight check)")
    label = args.platform or detect_platform()
    out = ensure_writable(args.out) if args.out else new_run_dir(_run_name(args.model), label)
    print(f"run directory: {out}", file=sys.stderr)
    with progress_bar() as report:
        ctx = RunContext(out=out, model_arg=args.model, plan_options_for=lambda src: plan_options_from(args, src),
                         platform=args.platform, target=args.target, engine=args.engine, endpoint=endpoint,
                         graph=args.graph, startup_timeout_s=args.startup_timeout, dummy=args.dummy,
                         offline=args.offline,
                         workload=workload, lang=args.lang, skip=set(args.skip),
                         resume=args.resume, progress=report, log=lambda m: print(m, file=sys.stderr))
        status = run_pipeline(ctx)
    report_path = out / ("report.md" if args.lang == "en" else f"report.{args.lang}.md")
    print(f"report: {report_path}")
    failed = [s for s, b in status.stages.items() if b.get("status") == "failed"]
    return 1 if failed else 0


def _run_name(model: str) -> str:
    return "SmolLM2-135M-Instruct" if model == "default" else Path(model).name.removesuffix(".gguf") or "model"


def _add_tune(sub) -> None:
    p = sub.add_parser("tune", help="try the deployment knobs that matter, recommend the best, show the evidence",
                       description="Start vLLM once per setting (thread binding, graph mode, batching, prefix "
                                   "caching, KV space, memory utilization, ...), run the same short benchmark "
                                   "repeatedly, and recommend a setting only when it beats the engine's defaults "
                                   "outside the noise.", epilog=EPILOG_TUNE, formatter_class=_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    p.add_argument("--budget", type=positive_float, default=20.0, metavar="MINUTES", help="time budget (default 20)")
    p.add_argument("--objective", choices=["throughput", "latency", "goodput"], default="throughput")
    p.add_argument("--slo", type=slo_value, metavar="SPEC", help="goodput SLOs, e.g. ttft=500,tpot=100")
    p.add_argument("--repeats", type=positive_int, default=2, metavar="N", help="benchmark runs per setting (default 2)")
    p.add_argument("--num-prompts", type=positive_int, default=8, metavar="N")
    p.add_argument("--input-len", type=positive_int, default=64, metavar="N")
    p.add_argument("--output-len", type=positive_int, default=32, metavar="N")
    p.add_argument("--startup-timeout", type=positive_float, default=900.0, metavar="S")
    p.add_argument("--out", type=Path, metavar="DIR", help="write tune.json here (a run directory: its report gains the section)")
    p.set_defaults(handler=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.engines.vllm import require_vllm
    from llm_adapt.platforms import cpu_cores, local_device_count
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import ensure_writable, new_run_dir
    from llm_adapt.tune.run import TuneOptions, run_tune
    from llm_adapt.tune.summary import print_tune

    if args.objective == "goodput" and not args.slo:
        raise UsageError("--objective goodput needs --slo, e.g. --slo ttft=500,tpot=100")
    require_vllm()
    args.dummy = False
    source, inspected = inspect_for_engine(args)
    out = ensure_writable(args.out) if args.out else new_run_dir(source.name, f"tune-{inspected.platform['name']}")
    options = TuneOptions(objective=args.objective, slo=args.slo, budget_minutes=args.budget, repeats=args.repeats,
                          num_prompts=args.num_prompts, input_len=args.input_len, output_len=args.output_len,
                          startup_timeout_s=args.startup_timeout)
    with progress_bar() as report:
        result = run_tune(inspected, options, out, cores=cpu_cores(),
                          devices=max(1, local_device_count(inspected.platform["name"])), progress=report,
                          log=lambda m: print(m, file=sys.stderr))
    print_tune(result, Console())
    print(f"result: {out / 'tune.json'}")
    return 0 if result.recommendation else 1


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="re-render report.md / report.html from a run directory's JSON",
                       description="Render the adaptation report from the JSON results of a run, without rerunning anything.",
                       epilog=EPILOG_REPORT, formatter_class=_formatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--lang", choices=["en", "zh"], default="en")
    p.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from llm_adapt.report.render import render_report

    for path in render_report(args.run_dir, args.lang):
        print(path)
    return 0


def plan_options_from(args: argparse.Namespace, source) -> "PlanOptions":  # noqa: F821
    from llm_adapt.inspect.plan import PlanOptions

    return PlanOptions(
        model_path=str(source.path), served_model_name=source.name, dtype=args.dtype, kv_dtype=args.kv_dtype,
        max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, gpu_memory_utilization=args.gpu_memory_utilization,
        device_memory_gib=args.device_memory, devices_per_node=args.devices, max_nodes=args.nodes,
        kv_cache_space_gib=args.kv_cache_space, host=args.host, port=args.port or 8000,
        trust_remote_code=args.trust_remote_code,
    )


def cmd_inspect(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.inspect.summary import print_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model(args.model, weights=False, offline=args.offline)
    result = run_inspect(source, plan_options_from(args, source), args.platform)
    if args.tuned:
        from llm_adapt.tune.run import TuneResult

        result.plan["tuned"] = TuneResult.load(args.tuned).recommendation
    if args.out:
        result.save(args.out / "inspect.json")
    if args.json:
        print(result.to_json())
    else:
        print_inspect(result, Console())
    if result.support["vllm"] == "unsupported":
        sys.stderr.write(f"llm-adapt inspect: error: {result.architecture} is not supported by "
                         f"{result.support['registry']} nor by transformers; {result.support['strategy'].lower()}\n")
        return 1
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from llm_adapt.models.source import cached_models, default_gguf

    try:
        default = {"name": "default", "path": str(default_gguf()), "installed": True}
    except AdaptError as exc:
        default = {"name": "default", "path": None, "installed": False, "hint": str(exc)}
    rows = cached_models()
    if args.json:
        print(json.dumps({"default": default, "cached": rows}, indent=2))
        return 0
    print(f"default  SmolLM2-135M-Instruct  {default['path'] or 'not installed: ' + default['hint']}")
    for row in rows:
        print(f"cached   {row['name']}  {int(row['bytes']) / 1024**2:.0f} MiB  {row['path']}  (from {row['source']})")
    if not rows:
        print("(no converted models yet; they appear after first use of a .gguf or 'default')")
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every `with` block (servers above all) unwinds."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return args.handler(args)
    except AdaptError as exc:
        sys.stderr.write(f"llm-adapt {args.command}: error: {exc}\n")
        return exc.exit_code
    except Terminated:
        sys.stderr.write(f"llm-adapt {args.command}: terminated; finished results are kept\n")
        return 143
    except KeyboardInterrupt:
        sys.stderr.write(f"llm-adapt {args.command}: interrupted; finished results are kept\n")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
