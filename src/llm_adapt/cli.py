"""The `llm-adapt` command. Each subcommand is thin: parse, call one library function, print.

Heavy libraries (torch, transformers, vLLM) are imported inside the handlers, so `--help`
and bad-input errors are instant."""

from __future__ import annotations

import argparse
import sys

from llm_adapt import __version__, interrupts
from llm_adapt.cli_args import OneLineParser
from llm_adapt.cli_common import help_formatter
from llm_adapt.commands.accuracy_cmds import add_compare_parser
from llm_adapt.commands.bench_cmds import add_bench_parser, add_tune_parser
from llm_adapt.commands.eval_cmds import add_eval_parser
from llm_adapt.commands.export_cmds import add_export_parser
from llm_adapt.commands.layers_cmds import add_layers_parser
from llm_adapt.commands.model_cmds import add_inspect_parser, add_models_parser
from llm_adapt.commands.run_cmds import add_diff_parser, add_report_parser, add_run_parser
from llm_adapt.commands.serving_cmds import (
    add_mock_server_parser,
    add_probe_parser,
    add_serve_parser,
)
from llm_adapt.errors import AdaptError
from llm_adapt.interrupts import Terminated
from llm_adapt.rundir import no_empty_dirs
from llm_adapt.status import EXIT_CODES_HELP, EXIT_SIGINT, EXIT_SIGTERM


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-adapt", description="Adapt a Llama-class LLM to an accelerator (vLLM on CPU, "
                           "CUDA or Ascend NPU) and prove it with a measured adaptation report.")
    parser.add_argument("--version", action="version", version=f"llm-adapt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    add_models_parser(sub)
    add_inspect_parser(sub)
    add_compare_parser(sub)
    add_layers_parser(sub)
    add_eval_parser(sub)
    add_serve_parser(sub)
    add_probe_parser(sub)
    add_bench_parser(sub)
    add_mock_server_parser(sub)
    add_run_parser(sub)
    add_report_parser(sub)
    add_diff_parser(sub)
    add_export_parser(sub)
    add_tune_parser(sub)
    for command in sub.choices.values():  # one exit-code contract, said in every --help
        command.epilog = f"{command.epilog.rstrip()}\n\n{EXIT_CODES_HELP}" if command.epilog else EXIT_CODES_HELP
        command.formatter_class = help_formatter
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    restore = interrupts.install()
    try:
        with no_empty_dirs():  # a command that fails before writing anything leaves no directory behind
            return args.handler(args)
    except AdaptError as exc:
        sys.stderr.write(f"llm-adapt {args.command}: error: {exc}\n")
        return exc.exit_code
    except Terminated:
        interrupts.forget_escaped()
        sys.stderr.write(f"llm-adapt {args.command}: terminated (SIGTERM){_kept(args)}\n")
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        interrupts.forget_escaped()
        sys.stderr.write(f"llm-adapt {args.command}: interrupted (Ctrl-C){_kept(args)}\n")
        return EXIT_SIGINT
    finally:
        restore()


def _kept(args: argparse.Namespace) -> str:
    """Where a stopped command's finished results are: its --out (a run, which always has a directory, says it
    itself); a command without --out wrote them nowhere."""
    out = getattr(args, "out", None)
    return f"; finished results are kept in {out}" if out else ""


if __name__ == "__main__":
    sys.exit(main())
