"""`llm-adapt export`: a run directory as the files vLLM-Ascend's adapter workflow delivers upstream."""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_adapt.cli_common import help_formatter

EPILOG_EXPORT = """examples:
  llm-adapt export runs/Llama-3.2-3B-Instruct-npu-20261201-120000 --to vllm-ascend --out upstream/
  llm-adapt export runs/x --to vllm-ascend --out upstream/ --lang en     # the report and runbook in English too
  llm-adapt export runs/x-cpu-... --to vllm-ascend --out upstream/ --plan-for npu --model-id meta-llama/Llama-3.2-3B-Instruct
  llm-adapt export runs/x --to vllm-ascend --out upstream/ --baseline-file published.yaml   # the published score beside it
"""


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="write vLLM-Ascend's adaptation deliverables from a run directory",
                       description="Write the files vLLM-Ascend's model-adapter workflow delivers, at their paths "
                                   "in a vLLM-Ascend checkout, in the formats on its main branch: the tutorial, the "
                                   "adaptation report, the runbook, the e2e accuracy config and the accuracy report. "
                                   "They describe an NPU deployment: a run elsewhere needs --plan-for npu. Every "
                                   "number comes from the run's JSON or the plan; what it did not measure is written "
                                   "as not measured; no file names a path of this machine.",
                       epilog=EPILOG_EXPORT, formatter_class=help_formatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run directory of `llm-adapt run` to export")
    p.add_argument("--to", required=True, choices=["vllm-ascend"], help="the project the files are for")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the root to write them under")
    p.add_argument("--lang", choices=["en", "zh"], default="zh",
                   help="the report's and runbook's language (default zh, as upstream keeps them; the tutorial is en)")
    p.add_argument("--plan-for", choices=["npu"], metavar="npu",
                   help="for a run not on an NPU: write the NPU deployment the planner makes from the run's model, "
                        "labelled planned, not run on an NPU (the run's figures keep the platform they were measured on)")
    p.add_argument("--model-id", metavar="ORG/NAME",
                   help="the model's hub id, for a run of a local model directory or file (upstream files name hub ids)")
    p.add_argument("--baseline-file", type=Path, metavar="FILE",
                   help="the published accuracy of the same model and size (gsm8k preferred; another dataset is named "
                        "as the fallback): a JSON or YAML file with model, dataset, metric, score (points, 0-100) and "
                        "source; the report and the e2e config say where it came from")
    p.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    import sys

    from llm_adapt.rundir import ensure_writable
    from llm_adapt.upstream.export import export

    ensure_writable(args.out)
    done = export(args.run_dir, args.to, args.out, report_lang=args.lang, plan_for=args.plan_for, model_id=args.model_id,
                  baseline_file=args.baseline_file)
    for path in done.written:
        print(path)
    for note in done.notes:
        print(f"llm-adapt export: {note}", file=sys.stderr)
    return 0
