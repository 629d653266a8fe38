"""Terminal tables of a BenchResult."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.bench.modes import BenchResult


def print_bench(result: BenchResult, console: Console) -> None:
    table = Table(title=f"{result.mode} benchmark of {result.model} at {result.endpoint['base_url']}")
    for col in ("run", "ok/failed", "req/s", "out tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "E2EL p50 ms", "conc."):
        table.add_column(col)
    for run in result.runs:
        m = run["metrics"]
        table.add_row(run["label"], f"{m['completed']}/{m['failed']}", f"{m['request_throughput']:.2f}",
                      f"{m['output_throughput']:.1f}", f"{m['median_ttft_ms']:.1f} / {m['p99_ttft_ms']:.1f}",
                      f"{m['median_tpot_ms']:.1f} / {m['p99_tpot_ms']:.1f}", f"{m['median_e2el_ms']:.0f}",
                      f"{m['achieved_concurrency']:.2f}")
    console.print(table)
    for run in result.runs:
        acc = run.get("token_accounting") or {}
        if acc and not acc.get("fixed_length_honoured", True):
            console.print(f"[yellow]{run['label']}: {acc['wrong_length']} requests did not return the fixed output length[/yellow]")
        if acc.get("client_vs_server_disagree"):
            console.print(f"[yellow]{run['label']}: client tokenizer and server usage disagree by >5% on "
                          f"{acc['client_vs_server_disagree']} requests[/yellow]")
        if run["metrics"]["errors"]:
            console.print(f"[yellow]{run['label']}: errors {run['metrics']['errors']}[/yellow]")
        if "latency" in run:
            lat = run["latency"]
            console.print(f"latency: avg {lat['avg_latency']:.3f} s, p50 {lat['p50_latency']:.3f} s, p99 {lat['p99_latency']:.3f} s")
    if result.knee:
        console.print(f"knee: concurrency {result.knee['load']} reaches {result.knee['share_of_best']:.0%} of the best throughput")
    for note in result.notes:
        console.print(f"note: {note}")
