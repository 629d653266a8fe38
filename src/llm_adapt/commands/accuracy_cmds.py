"""`llm-adapt compare`: in process, or against an endpoint."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from llm_adapt import rundir
from llm_adapt.accuracy import defaults
from llm_adapt.cli_args import positive_float, positive_int
from llm_adapt.cli_common import (
    add_accuracy_workload_options,
    add_endpoint_options,
    endpoint_from_args,
    help_formatter,
    show_result,
)
from llm_adapt.status import exit_code

if TYPE_CHECKING:  # built lazily: the CLI's start stays fast
    from llm_adapt.accuracy.options import CompareOptions

EPILOG_COMPARE = """examples:
  llm-adapt compare default --target cpu:bf16 --quant int8-tensor --quant int8-channel
  llm-adapt compare ./Llama-3.2-3B-Instruct --reference cpu:fp32 --target npu:bf16 --baseline cpu:bf16
  llm-adapt compare ./orig --target cpu:fp32 --target-model ./converted --prompts my_prompts.jsonl
"""


def add_compare_parser(sub) -> None:
    p = sub.add_parser("compare", help="accuracy against the float32 gold reference, layer by layer",
                       description="Compare target runners with the gold reference: every layer (full and local "
                                   "error), logits (KL, same top-1, perplexity), greedy tokens (near-tie vs genuine "
                                   "divergences) and int8 weights, each judged against a measured noise floor.",
                       epilog=EPILOG_COMPARE, formatter_class=help_formatter)
    p.add_argument("model", metavar="MODEL", help="HF model directory, .gguf file, or 'default'")
    p.add_argument("--reference", default="cpu:fp32", metavar="DEVICE:DTYPE", help="gold reference (default cpu:fp32; auto: on this machine's GPU/NPU when its fp32 matmul is true fp32 "
                        "(TF32/HF32 switched off and read back) and the model fits, else across it and the host, else "
                        "the host; auto:fp32 places a model larger than one device over every GPU/NPU, the host and "
                        "the disk with accelerate; LLM_ADAPT_AUTO_MAX_MEMORY caps each)")
    p.add_argument("--target", action="append", metavar="DEVICE:DTYPE",
                   help="runner under test, repeatable (default: the detected platform at bf16, emulated in fp32 on a CPU without native bf16)")
    p.add_argument("--target-model", type=Path, metavar="PATH", help="another checkpoint of the same architecture for the targets")
    p.add_argument("--quant", action="append", choices=["int8-tensor", "int8-channel"],
                   help="also test each target with emulated weight-only int8 (repeatable); informational, not part of the verdict")
    p.add_argument("--baseline", metavar="DEVICE:DTYPE", help="noise floor for every target (default: the reference's device at each target's dtype)")
    add_accuracy_workload_options(p)
    p.add_argument("--tie-margin", type=positive_float, default=defaults.TIE_MARGIN, metavar="NATS",
                   help=f"top-1 vs top-2 margin of a near-tie (default {defaults.TIE_MARGIN})")
    p.add_argument("--top-k", type=positive_int, default=defaults.TOP_K, metavar="K",
                   help=f"k for top-k overlap and mutual top-k (default {defaults.TOP_K})")
    p.add_argument("--corpus-tokens", type=positive_int, metavar="N",
                   help="perplexity on the first N tokens of each corpus text, as run --quick does with 256 "
                        "(default: every token of the corpus, about 2,400)")
    add_endpoint_options(p)
    p.add_argument("--offline", action="store_true", help="hub ids: use the local cache only, never the network")
    p.add_argument("--served-dtype", default="bf16", choices=["bf16", "fp16", "fp32"],
                   help="with --endpoint: the dtype the server computes in, for its noise floor (default bf16)")
    p.add_argument("--reference-streaming", action="store_true", default=None,
                   help="compute the reference one layer at a time from the shards (automatic when fp32 does not fit in RAM)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write accuracy.json (endpoint_accuracy.json with --endpoint) here (default: not kept, only the summary is printed)")
    p.add_argument("--json", action="store_true", help="print the result JSON instead of the summary")
    p.set_defaults(handler=cmd_compare)


def compare_options_from(args: argparse.Namespace, platform: str) -> "CompareOptions":
    from dataclasses import replace

    from llm_adapt.accuracy.options import GOLD, compare_options
    from llm_adapt.accuracy.runner import default_target, parse_runner

    mains = [parse_runner(t) for t in args.target] if args.target else [default_target(platform)]
    if args.target_model:
        mains = [replace(t, model_path=args.target_model.resolve()) for t in mains]
    return compare_options(GOLD if args.reference == "auto" else args.reference,  # auto: placed_reference
                           targets=mains, quants=args.quant or (), baseline=args.baseline, prompts=args.prompts,
                           max_new_tokens=args.max_new_tokens, tie_margin=args.tie_margin, top_k=args.top_k,
                           corpus_tokens=args.corpus_tokens, reference_streaming=args.reference_streaming)


def placed_reference(args: argparse.Namespace, options, source):
    """`--reference auto`: the gold on the accelerator when its fp32 is true fp32 and the model fits, else across
    it and the host, else on the host (accuracy/gold_placement.py); the choice and why go to accuracy.json."""
    if args.reference != "auto":
        return options
    from dataclasses import replace

    from llm_adapt.accuracy.gold_placement import placed_gold, why_text
    from llm_adapt.accuracy.runner import parse_runner
    from llm_adapt.platforms import detect_platform

    choice = placed_gold(source, detect_platform())
    print(f"gold reference: {choice.label} ({why_text(choice)})", file=sys.stderr)
    return replace(options, reference=parse_runner(choice.label),
                   reference_why={lang: why_text(choice, lang) for lang in ("en", "zh")})


def cmd_compare(args: argparse.Namespace) -> int:

    from llm_adapt.accuracy.compare import check_same_family, compare
    from llm_adapt.accuracy.summary import print_accuracy
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import detect_platform
    from llm_adapt.progress import progress_bar
    from llm_adapt.prompts import load_prompts
    from llm_adapt.rundir import ensure_writable

    load_prompts(args.prompts)  # bad prompts fail before any model loads
    options = compare_options_from(args, detect_platform())
    if args.endpoint:
        return compare_with_endpoint(args, options)
    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("compare")
    if args.target_model:
        check_same_family(source.path, args.target_model)
    options = placed_reference(args, options, source)
    out = ensure_writable(args.out) if args.out else None  # an --out that refuses writes: refused before the work
    with progress_bar() as report:
        result = compare(source, options, report)
    path = result.save(out / rundir.ACCURACY) if out else Path(rundir.ACCURACY)
    show_result(result, args.json, print_accuracy, path, kept=out is not None)
    return exit_code(result.verdict["status"])


def compare_with_endpoint(args: argparse.Namespace, options) -> int:
    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.endpoint_summary import print_endpoint_accuracy
    from llm_adapt.accuracy.options import served_floor
    from llm_adapt.accuracy.runner import parse_runner
    from llm_adapt.models.source import resolve_model
    from llm_adapt.progress import progress_bar
    from llm_adapt.rundir import kept_or_scratch

    endpoint = endpoint_from_args(args)
    source = resolve_model(args.model, offline=args.offline)
    source.require_weights("compare")
    from llm_adapt.cli_common import require_served_gold
    from llm_adapt.engines.preflight import require_answers

    model = require_served_gold(endpoint, source)  # a server of another model is refused before the gold is measured
    require_answers(endpoint, model)  # and one whose every request fails (its /v1/models answering)
    from llm_adapt.engines.same_model import other_served_name

    if other_served_name(model, source.name):  # said before any figure: the likely cause of a difference
        print(f"note: the server answers as {model!r}, not the gold's {source.name!r}; if it serves another model, "
              "that is the likely cause of any difference", file=sys.stderr)
    floor = served_floor(options.reference, args.served_dtype, parse_runner(args.baseline) if args.baseline else None)
    with kept_or_scratch(args.out) as out, progress_bar() as report:
        result = compare_endpoint(source, endpoint, options, floor, out, report)
    show_result(result, args.json, print_endpoint_accuracy, out / rundir.ENDPOINT_ACCURACY, kept=args.out is not None)
    not_run = any(s["status"] == "not run" for s in result.sections.values())
    return exit_code(result.verdict["status"] if result.verdict else None, failed=not_run)
