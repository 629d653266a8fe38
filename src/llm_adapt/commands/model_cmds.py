"""`llm-adapt models` and `llm-adapt inspect`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llm_adapt import rundir
from llm_adapt.cli_common import add_plan_options, help_formatter, plan_options_from
from llm_adapt.errors import AdaptError

EPILOG_INSPECT = """examples:
  llm-adapt inspect default
  llm-adapt inspect ./Llama-3.1-8B-Instruct --platform npu --device-memory 64 --devices 8
  llm-adapt inspect model.gguf --platform cuda --device-memory 24 --json
"""


EPILOG_MODELS = """examples:
  llm-adapt models
"""


def add_models_parser(sub) -> None:
    p = sub.add_parser("models", help="list the default model and the converted-model cache",
                       description="List the bundled default model and the models converted so far.",
                       epilog=EPILOG_MODELS, formatter_class=help_formatter)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_models)


def add_inspect_parser(sub) -> None:
    p = sub.add_parser("inspect", help="architecture support, operators, memory/KV math and the deployment plan",
                       description="Check a model against vLLM and plan its deployment on a platform.",
                       epilog=EPILOG_INSPECT, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    add_plan_options(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--out", type=Path, metavar="DIR", help="also write inspect.json into DIR")
    p.add_argument("--tuned", type=Path, metavar="TUNE_JSON", help="add the recommendation of an earlier `llm-adapt tune`")
    p.add_argument("--try-backend", action="store_true",
                   help="when vLLM has no native implementation, start it with --model-impl transformers and dummy "
                        "weights; if that fails too, write an out-of-tree plugin skeleton (into --out or the cache)")
    p.set_defaults(handler=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from rich.console import Console

    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.inspect.summary import print_inspect, unsupported_verdict
    from llm_adapt.models.source import resolve_model

    if args.out:
        from llm_adapt.rundir import ensure_writable

        ensure_writable(args.out)  # an --out that refuses writes: one line before any work
    source = resolve_model(args.model, weights=False, offline=args.offline)
    if source.has_weights:  # a checkpoint with weights whose index lists a shard that is not there; config only plans
        from llm_adapt.models.source import require_listed_shards

        require_listed_shards(source.path, source.given)
    result = run_inspect(source, plan_options_from(args, source), args.platform)
    if args.tuned:
        from llm_adapt.tune.run import TuneResult

        result.plan.tuned = TuneResult.load(args.tuned).recommendation
    if args.try_backend:
        from llm_adapt.engines.backend_trial import settle_strategy
        from llm_adapt.home import adapt_home

        settle_strategy(result, args.out or adapt_home() / "plugins")
    if args.out:
        result.save(args.out / rundir.INSPECT)
    if args.json:
        print(result.to_json())
    else:
        print_inspect(result, Console())
    if result.support["vllm"] == "unsupported":  # the plan's verdict, not an error: the way on is printed above
        print(unsupported_verdict(result.architecture, result.support["registry"]), file=sys.stderr if args.json else sys.stdout)
        return 1
    if result.strategy.get("plugin"):
        sys.stderr.write(f"llm-adapt inspect: error: {result.strategy['headline']}; plugin skeleton in "
                         f"{result.strategy['plugin']['path']}\n")
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
