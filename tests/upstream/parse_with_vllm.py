"""Run by tests/upstream/vllm_release.py in a child Python whose path puts a vLLM release's own source
first: parse `vllm serve` lines with that release's parser, or dump its option table. Not a test module.

stdin: {"dump": true} or {"argvs": [[...], ...]}; stdout: one JSON line.
"""

import json
import sys


def serve_parser():
    # The release's device inference needs a platform; the CPU one adds no serve options (vLLM-Ascend's
    # platform plugin adds none either: its options travel in --additional-config).
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    root = FlexibleArgumentParser()
    serve = ServeSubcommand().subparser_init(root.add_subparsers(dest="subparser"))
    return root, serve


def option_table(serve) -> dict:
    """Every option string the release defines, with what a check of a value needs."""
    table = {}
    for action in serve._actions:
        for flag in action.option_strings:
            table[flag] = {"dest": action.dest, "action": type(action).__name__.strip("_"),
                           "nargs": action.nargs if action.nargs is None or isinstance(action.nargs, str)
                           else int(action.nargs),
                           "choices": sorted(map(str, action.choices)) if action.choices else None,
                           "type": getattr(action.type, "__name__", None)}
    return table


def parse(root, serve, argv: list[str]) -> dict:
    """One line: the flags the release lacks under exactly that name, and argparse's own verdict."""
    if argv[:2] != ["vllm", "serve"]:
        return {"error": f"not a `vllm serve` line: {argv[:3]}"}
    unknown = [a.split("=", 1)[0] for a in argv[2:] if a.startswith("-") and a.split("=", 1)[0]
               not in serve._option_string_actions]
    serve.error = root.error = _raise
    try:
        root.parse_args(argv[1:])
    except ValueError as exc:
        return {"unknown": unknown, "error": str(exc)}
    return {"unknown": unknown, "error": None}


def _raise(message: str):
    """argparse's error() prints and exits; the test wants the message."""
    raise ValueError(message)


def main() -> None:
    request = json.loads(sys.stdin.read())
    import vllm

    root, serve = serve_parser()
    out = {"version": vllm.__version__}
    if request.get("dump"):
        from vllm.tool_parsers import _TOOL_PARSERS_TO_REGISTER  # --tool-call-parser's names (not argparse choices)

        out |= {"options": option_table(serve), "tool_call_parsers": sorted(_TOOL_PARSERS_TO_REGISTER)}
    if "argvs" in request:  # with the table in the same child: importing the release is most of its time
        out["results"] = [parse(root, serve, argv) for argv in request["argvs"]]
    sys.stdout.write("\n" + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
