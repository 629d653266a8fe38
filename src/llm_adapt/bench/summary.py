"""Terminal tables of a BenchResult."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.bench.modes import BenchResult

SPREAD_KEYS = ("output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms")


def print_server_view(run: dict, console: Console) -> None:
    """The server's own means beside the client's, and the prefix-cache hit rate, from vLLM's /metrics."""
    view = run.get("server_metrics")
    if not view:
        return
    parts = [f"{r['metric']} {r['client_mean_ms']:.1f} vs {r['server_mean_ms']:.1f} ms" for r in view["comparison"]]
    hit = view.get("prefix_cache_hit_rate")
    console.print(f"{run['label']}: client vs server means: " + ", ".join(parts)
                  + (f"; prefix-cache hit rate {hit:.1%}" if hit is not None else "")
                  + f"; preemptions {view['counters'].get('preemptions', 0):.0f}")
    for r in view["comparison"]:
        if not r["agree"]:
            console.print(f"[yellow]{run['label']}: client and server disagree on mean {r['metric']} by "
                          f"{r['difference_ms']:+.1f} ms, beyond the client's measured overhead "
                          f"({view['client_overhead_ms']:.1f} ms) + 5%[/yellow]")


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
        print_server_view(run, console)
        if run.get("spread"):
            sp = run["spread"]
            console.print(f"{run['label']}: median of {len(run['repeats'])} repeats; spread (max-min)/median: "
                          + ", ".join(f"{k} {sp[k]['rel_spread']:.1%}" for k in SPREAD_KEYS if k in sp))
        if "latency" in run:
            lat = run["latency"]
            console.print(f"latency: avg {lat['avg_latency']:.3f} s, p50 {lat['p50_latency']:.3f} s, p99 {lat['p99_latency']:.3f} s")
    if result.sla:
        sla = result.sla
        met = ", ".join(f"c{r['load']} {'met' if r['sla']['met'] else 'missed'}" for r in result.runs if "sla" in r)
        console.print(f"SLA (p{sla['percentile']} {', '.join(f'{k} <= {v:g} ms' for k, v in sla['slo_ms'].items())}"
                      f"{', any' if sla['any_of'] else ''}; {sla['repeats']} runs a point, every request must succeed): "
                      f"{sla['note']} [{met}]")
    if result.knee:
        console.print(f"knee: concurrency {result.knee['load']} reaches {result.knee['share_of_best']:.0%} of the best throughput")
    for note in result.notes:
        console.print(f"note: {note}")
