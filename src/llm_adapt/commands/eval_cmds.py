"""`llm-adapt eval`: task accuracy through lm-evaluation-harness, served against the gold, paired per item."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llm_adapt.cli_args import positive_int
from llm_adapt.cli_common import (
    add_endpoint_options,
    add_engine_options,
    add_plan_options,
    engine_or_endpoint,
    help_formatter,
)

EPILOG = """examples:
  llm-adapt eval default --tasks builtin-mc,builtin-arith --limit 100      # starts vLLM, stops it after
  llm-adapt eval ./Llama-3.2-3B-Instruct --endpoint http://npu-host:8000/v1 --tasks gsm8k \\
      --baseline-file Llama-3.2-3B-Instruct.yaml

judgement: per item, served vs gold (fp32, in process, same items and few-shot seed).
  a drop McNemar's exact test calls significant (p < 0.05)       FAIL
  a drop not significant but beyond rtol (default 0.05)           WARN
  outside a --baseline-file value by its rtol                     WARN
"""


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
    p.add_argument("--limit", type=positive_int, metavar="N", help="first N items per task (default: all)")
    p.add_argument("--num-fewshot", type=int, metavar="K", help="few-shot examples (default: the task's or the baseline's)")
    p.add_argument("--num-concurrent", type=positive_int, default=4, metavar="N", help="concurrent requests (default 4)")
    p.add_argument("--batch-size", type=positive_int, default=16, metavar="N", help="gold batch size (default 16)")
    p.add_argument("--served-batch-size", type=positive_int, default=1, metavar="N",
                   help="loglikelihood continuations per request to the endpoint (default 1: one request each)")
    p.add_argument("--baseline-file", type=Path, metavar="YAML", help="published values, vLLM-Ascend configs format")
    p.add_argument("--out", type=Path, metavar="DIR", help="run directory for eval.json (default: a new one under runs/)")
    p.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    from llm_adapt.errors import UsageError
    from llm_adapt.evaluation.baseline import load_baseline
    from llm_adapt.evaluation.harness import Settings
    from llm_adapt.evaluation.tasks import parse_tasks, validate

    tasks = parse_tasks(args.tasks)
    baseline = load_baseline(args.baseline_file) if args.baseline_file else None
    if args.num_fewshot is not None and args.num_fewshot < 0:
        raise UsageError(f"--num-fewshot {args.num_fewshot}: must be 0 or more")
    _require_lm_eval()
    validate(tasks)
    settings = Settings(limit=args.limit, num_fewshot=args.num_fewshot, num_concurrent=args.num_concurrent,
                        batch_size=args.batch_size, served_batch_size=args.served_batch_size)
    source = _gold_source(args)
    if args.endpoint:
        from llm_adapt.cli_common import endpoint_from_args, require_served_gold

        require_served_gold(endpoint_from_args(args), source)  # another model's server: refused before the gold runs
    with engine_or_endpoint(args, "eval") as target:
        from llm_adapt.evaluation.stage import EVAL_FILE, run_eval_stage

        result = run_eval_stage(source, target.endpoint, tasks, target.out, settings, baseline,
                                say=lambda line: print(line, file=sys.stderr))
    _print(result)
    print(f"result: {target.out / EVAL_FILE}")
    return 1 if result.verdict["status"] == "FAIL" else 0


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
    for row in result.paired:
        print(f"{row['status']:4}  {row['task']} {row['metric']}: {row['reason']}")
    for row in result.baseline:
        print(f"{row['status']:4}  {row['task']} {row['metric']} (published): {row['reason']}")
    for line in result.skipped:
        print(f"SKIP  {line}")
    print(f"task accuracy: {result.verdict['status']}  ({', '.join(f'{k} {v:.0f} s' for k, v in result.seconds.items())})")
