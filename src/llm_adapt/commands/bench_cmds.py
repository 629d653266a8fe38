"""`llm-adapt bench` and `llm-adapt tune`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from llm_adapt import rundir
from llm_adapt.cli_args import (
    goodput_pair,
    int_list,
    metadata_pair,
    metric_names,
    percentile_list,
    positive_float,
    positive_int,
    rate_value,
    slo_value,
)
from llm_adapt.cli_common import (
    add_endpoint_options,
    add_engine_options,
    add_plan_options,
    command_run,
    engine_or_endpoint,
    help_formatter,
    show_result,
)
from llm_adapt.errors import UsageError

if TYPE_CHECKING:  # built lazily: the CLI's start stays fast
    from llm_adapt.bench.modes import BenchOptions

EPILOG_BENCH = """examples:
  llm-adapt bench --endpoint http://127.0.0.1:8000/v1 --mode serve --request-rate 4 --num-prompts 64
  llm-adapt bench default --mode latency --input-len 128 --output-len 64 --iterations 10
  llm-adapt bench default --mode sweep --concurrencies 1,2,4,8 --slo ttft=500,tpot=100
  llm-adapt bench --endpoint http://127.0.0.1:8000/v1 --mode sla --slo ttft=500,tpot=100 --repeats 3
  llm-adapt bench --endpoint http://127.0.0.1:8000 --mode throughput --dataset sharegpt.json
  llm-adapt bench --endpoint http://127.0.0.1:8000/v1 --max-concurrency 4 --repeats 3 --goodput ttft:500 tpot:100 --save-result
  llm-adapt bench --endpoint http://127.0.0.1:8000/v1 --max-concurrency 1 --prefix-len 256 --prefix-repeats 8
"""


EPILOG_TUNE = """examples:
  llm-adapt tune default --budget 10
  llm-adapt tune ./Llama-3.1-8B-Instruct --platform cuda --objective latency --budget 30
  llm-adapt tune default --objective goodput --slo ttft=500,tpot=100 --out runs/x   # the run's report gains a tuning section
"""


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="serve / latency / throughput / sweep benchmarks of an endpoint",
                       description="Benchmark an OpenAI-compatible endpoint (or an engine started for MODEL) with "
                                   "vLLM's metric definitions: TTFT, TPOT, ITL, E2EL, throughput and goodput.",
                       epilog=EPILOG_BENCH, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="start this model's engine first (instead of --endpoint)")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--mode", choices=["serve", "latency", "throughput", "sweep", "sla"], default="serve",
                   help="benchmark mode (default serve); sla: the highest concurrency meeting --slo")
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
    p.add_argument("--any", dest="sla_any", action="store_true",
                   help="sla: one SLO met is enough (default: all of them)")
    p.add_argument("--sla-max", type=positive_int, default=64, metavar="N",
                   help="sla: the highest concurrency the search tries (default 64)")
    p.add_argument("--sla-percentile", type=int, choices=[50, 90, 95, 99], default=99, metavar="P",
                   help="sla: the percentile each SLO applies to (default 99)")
    p.add_argument("--dataset", metavar="FILE", help="ShareGPT-style JSON/JSONL instead of fixed-length prompts")
    p.add_argument("--prompts", dest="suite", metavar="SUITE", help="chat prompts from a suite (default, quick) or JSONL")
    p.add_argument("--tokenizer", metavar="DIR", help="tokenizer for prompt building (default: the model's, else the default model's)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the prompts; each mode, level and repeat derives its own from it (default 0)")
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="S", help="seconds any one request may take, the pre-check of the endpoint included (default 600; the "
                        "pre-check waits at most 10)")
    p.add_argument("--repeats", type=positive_int, default=None, metavar="N",
                   help="measured runs per level; the result gives each metric's median and spread (default 1; "
                        "3 for --mode sla)")
    p.add_argument("--reuse-prompts", action="store_true",
                   help="send the same prompts at every level and repeat (default: fresh prompts for each)")
    p.add_argument("--prefix-len", type=positive_int, metavar="N",
                   help="prefix-cache workload: requests share N-token prefixes in groups (prompt = prefix + --input-len)")
    p.add_argument("--prefix-repeats", type=positive_int, default=4, metavar="R",
                   help="with --prefix-len: requests per shared prefix (default 4)")
    p.add_argument("--client-processes", type=client_processes, default=None, metavar="N|auto",
                   help="client processes the streams are spread over (default auto: one, more when one passes half a "
                        "core; a client that is busy itself measures itself)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write bench.json and raw records here (default: not kept, only the summary is printed)")
    p.add_argument("--json", action="store_true", help="print the result JSON")
    add_vllm_aliases(p)
    p.set_defaults(handler=cmd_bench)


def client_processes(text: str) -> int | None:
    """--client-processes: a count, or auto (None)."""
    if text == "auto":
        return None
    return positive_int(text)


def add_vllm_aliases(p) -> None:
    """`vllm bench serve`'s own flag names, so its command lines carry over."""
    g = p.add_argument_group("vllm bench serve names")
    g.add_argument("--goodput", type=goodput_pair, nargs="+", metavar="KEY:MS", help="as --slo: ttft:500 tpot:100")
    g.add_argument("--save-result", action="store_true",
                   help="accepted for vLLM's command lines: the vLLM-format result file is always written")
    g.add_argument("--result-dir", metavar="DIR", help="where the vLLM-format result files go (default: beside bench.json)")
    g.add_argument("--result-filename", metavar="NAME", help="the vLLM-format file's name (several runs add -LEVEL-rN)")
    g.add_argument("--label", help="label (file-name prefix) of the vLLM-format result (default: the backend)")
    g.add_argument("--metadata", type=metadata_pair, nargs="*", metavar="KEY=VALUE", help="extra fields for that file")
    g.add_argument("--percentile-metrics", type=metric_names, metavar="LIST",
                   help="metrics whose percentiles the vLLM-format file holds (default ttft,tpot,itl,e2el)")
    g.add_argument("--metric-percentiles", type=percentile_list, metavar="LIST",
                   help="percentiles to compute, e.g. 25,50,75 (default 50,90,95,99)")


def bench_options_from(args: argparse.Namespace, mode: str) -> "BenchOptions":
    from llm_adapt.bench.modes import BenchOptions
    from llm_adapt.bench.stats import PERCENTILES

    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup}: must be 0 or more")
    if args.prefix_len and (args.dataset or args.suite):
        raise UsageError("--prefix-len builds fixed-length prompts; drop --dataset / --prompts to use it")
    slo = dict(args.slo or {}) | dict(args.goodput or [])
    if mode == "sla" and not slo:
        raise UsageError("--mode sla needs --slo, e.g. --slo ttft=500,tpot=100 (milliseconds)")
    extra = {"percentile_metrics": args.percentile_metrics} if args.percentile_metrics else {}
    return BenchOptions(mode=mode, num_prompts=args.num_prompts, input_len=args.input_len, output_len=args.output_len,
                        request_rate=args.request_rate, burstiness=args.burstiness, max_concurrency=args.max_concurrency,
                        concurrencies=args.concurrencies, warmup=args.warmup, iterations=args.iterations, slo=slo or None,
                        dataset=args.dataset, suite=args.suite, seed=args.seed, timeout_s=args.timeout,
                        repeats=args.repeats or (3 if mode == "sla" else 1), reuse_prompts=args.reuse_prompts,
                        percentiles=args.metric_percentiles or PERCENTILES, label=args.label,
                        metadata=tuple(args.metadata or ()), result_dir=args.result_dir,
                        result_filename=args.result_filename, tokenizer_id=args.tokenizer,
                        prefix_len=args.prefix_len or 0, prefix_repeats=args.prefix_repeats,
                        client_processes=args.client_processes, sla_any=getattr(args, "sla_any", False),
                        sla_max=getattr(args, "sla_max", 64), sla_percentile=getattr(args, "sla_percentile", 99),
                        **extra)


def bench_tokenizer(args: argparse.Namespace, model_dir: Path | None):
    """The tokenizer that builds prompts: --tokenizer, the model's own, else the default model's."""
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.tokenizer import load_tokenizer

    path = args.tokenizer or model_dir
    note = None
    if path is None:
        path, note = resolve_model("default").path, "prompts built with the default model's tokenizer (pass --tokenizer for the served model's)"
    try:
        return load_tokenizer(path), note
    except (OSError, ValueError):
        raise UsageError(f"--tokenizer {path}: no loadable tokenizer there") from None


def cmd_bench(args: argparse.Namespace) -> int:

    from llm_adapt.bench.modes import Workload, run_bench, server_tokenizes
    from llm_adapt.bench.summary import print_bench
    from llm_adapt.engines.preflight import precheck_timeout, resolve_model_name
    from llm_adapt.progress import progress_bar

    if bool(args.endpoint) == bool(args.model):
        raise UsageError("give either MODEL (an engine is started) or --endpoint URL, not both or neither")
    options = bench_options_from(args, args.mode)
    if options.suite:
        from llm_adapt.prompts import load_prompts

        load_prompts(options.suite)
    with engine_or_endpoint(args) as target:
        out = target.out
        model, _ = resolve_model_name(target.endpoint, precheck_timeout(args.timeout))
        tokenizer, note = bench_tokenizer(args, target.model_dir)
        work = Workload(tokenizer, as_ids=server_tokenizes(target.endpoint, model, precheck_timeout(args.timeout)),
                        notes=[note] if note else [])
        options = replace(options, tokenizer_id=options.tokenizer_id or str(tokenizer.name_or_path))
        with progress_bar() as report:
            result = run_bench(target.endpoint, model, work, options, out, pid=target.pid, progress=report)
    show_result(result, args.json, print_bench, out / rundir.bench(), kept=args.out is not None)
    return 0


def add_tune_parser(sub) -> None:
    p = sub.add_parser("tune", help="try the deployment knobs that matter, recommend the best, show the evidence",
                       description="Start vLLM once per setting (thread binding, graph mode, batching, prefix "
                                   "caching, KV space, memory utilization, ...), run the same short benchmark "
                                   "repeatedly, and recommend a setting only when it beats the engine's defaults "
                                   "outside the noise.", epilog=EPILOG_TUNE, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    p.add_argument("--budget", type=positive_float, default=20.0, metavar="MINUTES", help="time budget (default 20)")
    p.add_argument("--max-trials", type=positive_int, metavar="N",
                   help="try at most N settings besides the baseline, the most promising first (default: as many "
                        "as the budget allows)")
    p.add_argument("--objective", choices=["throughput", "latency", "goodput"], default="throughput",
                   help="what a setting must improve: output tokens/s, median end-to-end latency, or requests/s "
                        "within --slo (default throughput)")
    p.add_argument("--slo", type=slo_value, metavar="SPEC", help="goodput SLOs, e.g. ttft=500,tpot=100")
    p.add_argument("--repeats", type=positive_int, default=2, metavar="N", help="benchmark runs per setting (default 2)")
    p.add_argument("--num-prompts", type=positive_int, default=8, metavar="N", help="requests per benchmark run (default 8)")
    p.add_argument("--input-len", type=positive_int, default=64, metavar="N", help="prompt tokens (default 64)")
    p.add_argument("--output-len", type=positive_int, default=32, metavar="N",
                   help="output tokens, fixed with ignore_eos (default 32)")
    p.add_argument("--startup-timeout", type=positive_float, default=900.0, metavar="S",
                   help="seconds to wait for each trial's server to be ready (default 900)")
    p.add_argument("--no-accuracy-check", action="store_true",
                   help="skip the short endpoint accuracy check on each trial's server (the recommendation then "
                        "says its accuracy was not checked)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write tune.json here (a run directory: its report gains the section)")
    p.set_defaults(handler=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.engines.vllm import require_vllm
    from llm_adapt.platforms import cpu_cores, local_device_count
    from llm_adapt.progress import progress_bar
    from llm_adapt.tune.run import TuneOptions, run_tune
    from llm_adapt.tune.summary import print_tune

    if args.objective == "goodput" and not args.slo:
        raise UsageError("--objective goodput needs --slo, e.g. --slo ttft=500,tpot=100")
    require_vllm()
    cfg, state = command_run(args, lambda platform: f"tune-{platform}")
    inspected, out = state.inspect, cfg.out
    options = TuneOptions(objective=args.objective, slo=args.slo, budget_minutes=args.budget, max_trials=args.max_trials,
                          repeats=args.repeats,
                          num_prompts=args.num_prompts, input_len=args.input_len, output_len=args.output_len,
                          startup_timeout_s=args.startup_timeout, accuracy_check=not args.no_accuracy_check)
    with progress_bar() as report:
        result = run_tune(inspected, options, out, cores=cpu_cores(),
                          devices=max(1, local_device_count(inspected.plan.platform)), progress=report,
                          log=lambda m: print(m, file=sys.stderr))
    print_tune(result, Console())
    print(f"result: {out / 'tune.json'}")
    return 0 if result.recommendation else 1
