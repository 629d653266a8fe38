"""`llm-adapt eval`: task accuracy through lm-evaluation-harness, served against the gold, paired per item."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llm_adapt.cli_args import positive_float, positive_int
from llm_adapt.cli_common import (
    add_endpoint_options,
    add_engine_options,
    add_plan_options,
    engine_or_endpoint,
    help_formatter,
)
from llm_adapt.status import exit_code

EPILOG = """examples:
  llm-adapt eval default --tasks builtin-mc,builtin-arith --limit 100      # starts vLLM, stops it after
  llm-adapt eval default --tasks builtin-mc --limit auto --detect 5         # as many items as 5 points need
  llm-adapt eval ./Llama-3.2-3B-Instruct --endpoint http://npu-host:8000/v1 --tasks gsm8k \\
      --baseline-file Llama-3.2-3B-Instruct.yaml
  llm-adapt eval ./Llama-3.2-3B-Instruct --endpoint http://npu-host:8000/v1 --backend aisbench \\
      --aisbench-data ./gsm8k --limit 200 --max-out-len 512    # AISBench, as vLLM-Ascend's nightly runs it

judgement: per item, served vs gold (fp32, in process, same items and few-shot seed).
  a drop McNemar's exact test calls significant (p < 0.05)       FAIL
  a drop not significant but beyond rtol (default 0.05)           WARN
  outside a --baseline-file value by its rtol                     WARN
beside it, not deciding: vLLM-Ascend's e2e rule (np.isclose(gold, served, rtol=0.05)) and its nightly
AISBench rule (gold +/- --threshold points); and what the items run could see: with N items, a drop
smaller than D points goes unseen (--detect, alpha 0.05, power 0.8).
"""


def item_limit(text: str) -> int | str:
    """--limit: a positive number of items, or 'auto'."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)


def add_eval_parser(sub) -> None:
    p = sub.add_parser("eval", help="task accuracy (lm-eval) of the served model against the gold, paired",
                       description="Run lm-evaluation-harness tasks on the served model (local-completions for "
                                   "loglikelihood tasks, local-chat-completions with the chat template for "
                                   "generative ones) and on the gold in process (HF backend, fp32), on the same "
                                   "items; judge the per-item difference. Needs the 'eval' extra.",
                       epilog=EPILOG, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="the gold: HF model directory, .gguf file or 'default' (also served "
                                                  "when no --endpoint is given)")
    add_endpoint_options(p)
    add_plan_options(p)
    add_engine_options(p)
    p.add_argument("--tasks", default="builtin-mc,builtin-arith", metavar="LIST",
                   help="comma-separated lm-eval tasks (default: the built-in builtin-mc,builtin-arith)")
    p.add_argument("--limit", type=item_limit, metavar="N|auto",
                   help="first N items per task (default: all); auto: a pilot of the first 100 measures how often "
                        "the two sides disagree, then the first as many items as the paired test needs to see "
                        "--detect points (lm-eval backend)")
    p.add_argument("--num-fewshot", type=int, metavar="K", help="few-shot examples (default: the task's or the baseline's)")
    p.add_argument("--num-concurrent", type=positive_int, default=4, metavar="N", help="concurrent requests (default 4)")
    p.add_argument("--batch-size", type=positive_int, default=16, metavar="N", help="gold batch size (default 16)")
    p.add_argument("--served-batch-size", type=positive_int, default=1, metavar="N",
                   help="loglikelihood continuations per request to the endpoint (default 1: one request each)")
    p.add_argument("--baseline-file", type=Path, metavar="YAML", help="published values, vLLM-Ascend configs format")
    p.add_argument("--detect", type=positive_float, default=3.0, metavar="POINTS",
                   help="the drop (points, 0-100) the items should see, at alpha 0.05 and power 0.8: the report says the "
                        "items each test needs, and the drop that went unseen with the items run (default 3, "
                        "TensorRT-LLM's)")
    p.add_argument("--threshold", type=positive_float, default=1.0, metavar="POINTS",
                   help="AISBench's +/- rule shown beside ours, in points around the gold's score (default 1, "
                        "vLLM-Ascend's tools/aisbench.py; its nightly configs use 5 or 10)")
    p.add_argument("--backend", choices=("lm-eval", "aisbench"), default="lm-eval",
                   help="the harness: lm-eval (default) or AISBench (ais-bench-benchmark, in its own venv), both "
                        "sides paired per item")
    p.add_argument("--aisbench-dataset", default="gsm8k/gsm8k_gen_0_shot_cot_chat_prompt", metavar="CONF",
                   help="AISBench's dataset config as FAMILY/NAME (default gsm8k/gsm8k_gen_0_shot_cot_chat_prompt, "
                        "vLLM-Ascend's nightly)")
    p.add_argument("--aisbench-data", type=Path, metavar="DIR",
                   help="the dataset's folder (gsm8k: train.jsonl, test.jsonl); default AISBench's own "
                        "ais_bench/datasets/FAMILY. Nothing is downloaded")
    p.add_argument("--gsm8k-data", type=Path, metavar="DIR",
                   help="lm-eval backend: gsm8k's dataset at a path, read instead of the hub's: train.jsonl and "
                        "test.jsonl, or a copy of openai/gsm8k (main/*.parquet); --tasks must name gsm8k")
    p.add_argument("--aisbench-api", choices=("chat", "completions"), default="chat",
                   help="chat completions (vllm_api_general_chat, default) or completions (vllm_api_general)")
    p.add_argument("--max-out-len", type=positive_int, default=512, metavar="N",
                   help="AISBench's max_out_len: generated tokens per item on both sides (default 512)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write eval.json here (default: not kept, only the summary is printed)")
    p.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    from llm_adapt.errors import UsageError
    from llm_adapt.evaluation.baseline import load_baseline
    from llm_adapt.evaluation.harness import Settings
    from llm_adapt.evaluation.tasks import parse_tasks, validate

    if args.backend == "aisbench":
        return _cmd_aisbench(args)
    tasks = parse_tasks(args.tasks)
    baseline = load_baseline(args.baseline_file) if args.baseline_file else None
    if args.num_fewshot is not None and args.num_fewshot < 0:
        raise UsageError(f"--num-fewshot {args.num_fewshot}: must be 0 or more")
    _require_lm_eval()
    validate(tasks, args.gsm8k_data)
    settings = Settings(limit=args.limit, num_fewshot=args.num_fewshot, num_concurrent=args.num_concurrent,
                        batch_size=args.batch_size, served_batch_size=args.served_batch_size)
    source = _gold_source(args)
    if args.endpoint:
        from llm_adapt.cli_common import endpoint_from_args, require_served_gold

        require_served_gold(endpoint_from_args(args), source)  # another model's server: refused before the gold runs
    with engine_or_endpoint(args) as target:
        from llm_adapt.evaluation.stage import EVAL_FILE, run_eval_stage

        result = run_eval_stage(source, target.endpoint, tasks, target.out, settings, baseline,
                                say=lambda line: print(line, file=sys.stderr), detect=args.detect,
                                threshold=args.threshold, gsm8k_data=args.gsm8k_data)
    _print(result)
    print(f"result: {target.out / EVAL_FILE}" if args.out else f"result not kept: pass --out DIR to keep {EVAL_FILE}")
    return exit_code(result.verdict["status"])


def _cmd_aisbench(args: argparse.Namespace) -> int:
    """The same judgement through AISBench: its dataset config on the served model, the gold in process."""
    from llm_adapt.errors import UsageError
    from llm_adapt.evaluation.aisbench import config, install
    from llm_adapt.evaluation.aisbench.stage import Options

    config.dataset_module(args.aisbench_dataset)
    if args.limit == "auto":
        raise UsageError("--limit auto sizes the lm-eval backend's pilot; give AISBench a number of items (--limit N)")
    if args.gsm8k_data is not None:
        raise UsageError("--gsm8k-data is the lm-eval backend's; AISBench reads the same train.jsonl and test.jsonl "
                         "from --aisbench-data DIR")
    if args.aisbench_data is not None and not args.aisbench_data.is_dir():
        raise UsageError(f"--aisbench-data {args.aisbench_data}: no such directory")
    install.require()
    options = Options(dataset=args.aisbench_dataset, data_dir=args.aisbench_data, api=args.aisbench_api,
                      max_out_len=args.max_out_len, batch_size=args.num_concurrent, limit=args.limit,
                      detect=args.detect, threshold=args.threshold)
    source = _gold_source(args)
    if args.endpoint:
        from llm_adapt.cli_common import endpoint_from_args, require_served_gold

        require_served_gold(endpoint_from_args(args), source)
    with engine_or_endpoint(args) as target:
        from llm_adapt.evaluation.aisbench.stage import run_aisbench_stage
        from llm_adapt.evaluation.stage import EVAL_FILE

        result = run_aisbench_stage(source, target.endpoint, target.out, options,
                                    say=lambda line: print(line, file=sys.stderr))
    _print(result)
    print(f"result: {target.out / EVAL_FILE}" if args.out else f"result not kept: pass --out DIR to keep {EVAL_FILE}")
    return exit_code(result.verdict["status"])


def _require_lm_eval() -> None:
    from importlib.util import find_spec

    from llm_adapt.errors import UsageError

    if find_spec("lm_eval") is None:
        raise UsageError("lm-eval is not installed; pip install 'llm-adapt[eval]' (or pip install lm-eval)")


def _gold_source(args):
    from llm_adapt.models.source import resolve_model

    source = resolve_model(args.model, weights=True, offline=args.offline)
    source.require_weights("the in-process gold of eval")
    return source


def _print(result) -> None:
    from llm_adapt.evaluation.judge import sizing_line

    for row in result.paired:
        print(f"{row['status']:4}  {row['task']} {row['metric']}: {row['reason']}")
        rules = row.get("rules") or {}
        if rules:
            print("      upstream's rules: " + "; ".join(f"{name} {rules[name]['status']}" for name in ("lm_eval", "aisbench")
                                                         if name in rules))
        if row.get("sizing"):
            print(f"      {sizing_line(row)}")
    for row in result.baseline:
        print(f"{row['status']:4}  {row['task']} {row['metric']} (published): {row['reason']}")
    for line in result.skipped:
        print(f"SKIP  {line}")
    print(f"task accuracy: {result.verdict['status']}  ({', '.join(f'{k} {v:.0f} s' for k, v in result.seconds.items())})")
