"""Terminal table of a TuneResult."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.tune.run import TuneResult


def fmt(s: dict | None, digits: int = 1) -> str:
    if not s or not s.get("n"):
        return "-"
    return f"{s['mean']:.{digits}f} ± {s['std']:.{digits}f}"


def _gain(trial: dict) -> str:
    g = trial.get("vs_baseline")
    if not g:
        return "-"
    return f"{g['gain']:.2f} ± {g['gain_uncertainty']:.2f}" + (" *" if g.get("significant") else "")


def print_tune(result: TuneResult, console: Console) -> None:
    table = Table(title=f"Tuning on {result.platform}: objective {result.objective} ({result.metric})")
    for col in ("setting", "start-up s", "out tok/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "x defaults", "accuracy", "status"):
        table.add_column(col)
    for t in result.trials:
        table.add_row(t["name"], f"{t.get('startup_s') or 0:.0f}", fmt(t.get("output_throughput")),
                      fmt(t.get("median_ttft_ms")), fmt(t.get("p99_ttft_ms")), fmt(t.get("median_tpot_ms")), _gain(t),
                      (t.get("accuracy") or {}).get("status", "not checked"), t.get("status", "?") + (f": {t['reason']}" if t.get("reason") else ""))
    console.print(table)
    for s in result.skipped:
        console.print(f"skipped: {s['name']} (~{s['estimated_s']:.0f} s, {s['reason']})")
    rec = result.recommendation
    if rec:
        gain = f"{rec['gain']:.2f}x ± {rec['gain_uncertainty']:.2f}" if "gain" in rec else "n/a"
        console.print(f"\nrecommended: [bold]{rec['name']}[/bold] (gain over engine defaults {gain}; {rec['note']})")
        console.print(rec["command"], markup=False, highlight=False, soft_wrap=True)
        for name in rec.get("rejected_for_accuracy") or []:
            console.print(f"not recommended: {name} was faster but failed its accuracy check" + (
                "; likely cause: graph mode (the eager baseline passed the same check)"
                if any(t["name"] == name and (t.get("accuracy") or {}).get("cause") for t in result.trials) else ""))
        if rec.get("significant") and not rec.get("accuracy_verified"):
            console.print("its accuracy was not checked in this tuning run (--no-accuracy-check or no weights)")
