"""`llm-adapt export`: a run directory as the files vLLM-Ascend's adapter workflow delivers upstream."""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_adapt.cli_common import help_formatter

EPILOG_EXPORT = """examples:
  llm-adapt export runs/SmolLM2-135M-Instruct-cpu-20261201-120000 --to vllm-ascend --out upstream/
  llm-adapt export runs/x --to vllm-ascend --out upstream/ --lang en     # the report and runbook in English too
"""


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="write vLLM-Ascend's adaptation deliverables from a run directory",
                       description="Write the files vLLM-Ascend's model-adapter workflow delivers, at their paths "
                                   "in a vLLM-Ascend checkout: the tutorial, the adaptation report, the runbook, the "
                                   "e2e accuracy config and the accuracy report. Every number comes from the run's "
                                   "JSON; what it did not measure is written as not measured.",
                       epilog=EPILOG_EXPORT, formatter_class=help_formatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--to", required=True, choices=["vllm-ascend"], help="the project the files are for")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the root to write them under")
    p.add_argument("--lang", choices=["en", "zh"], default="zh",
                   help="the report's and runbook's language (default zh, as upstream keeps them; the tutorial is en)")
    p.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from llm_adapt.rundir import ensure_writable
    from llm_adapt.upstream.export import export

    ensure_writable(args.out)
    for path in export(args.run_dir, args.to, args.out, report_lang=args.lang):
        print(path)
    return 0
