"""Terminal summary of an EndpointAccuracyResult."""

from __future__ import annotations

from rich.console import Console

from llm_adapt.accuracy.endpoint import EndpointAccuracyResult

COLORS = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}


def print_endpoint_accuracy(result: EndpointAccuracyResult, console: Console) -> None:
    console.print(f"[bold]Endpoint accuracy[/bold] of {result.model} at {result.endpoint['base_url']} "
                  f"against {result.reference} (noise floor: {result.floor or 'none'})")
    sec = result.sections
    for name, body in sec.items():
        if body["status"] != "done":
            console.print(f"  {name}: {body['status']} ({body.get('reason')})")
    if sec["tokenization"]["status"] == "done":
        console.print(f"  tokenization: {len(sec['tokenization']['mismatches'])} of {sec['tokenization']['checked']} prompts differ")
    if sec["teacher_forced"]["status"] == "done":
        s, f = sec["teacher_forced"]["server"], sec["teacher_forced"]["floor"]
        console.print(f"  teacher-forced, {s['positions']} positions: top-k KL (lower bound) {s['kl_lb_mean']:.5f}"
                      + (f" vs floor {f['kl_lb_mean']:.5f}" if f else "")
                      + f"; same top-1 {s['same_top1']:.2%}" + (f" vs floor {f['same_top1']:.2%}" if f else ""))
    if sec["perplexity"]["status"] == "done":
        p = sec["perplexity"]
        console.print(f"  perplexity: reference {p['ref']:.3f}, server {p['server']:.3f}, ln ratio {p['ln_ratio']:+.4f}")
    if sec["greedy"]["status"] == "done":
        for row in sec["greedy"]["rows"]:
            if not row["exact"]:
                console.print(f"  {row['id']}: diverges at token {row['first_divergence']} ({row['divergence']}, "
                              f"reference margin {row['ref_margin']}): {row.get('ref_token')!r} vs {row.get('target_token')!r}")
    status = result.verdict["status"]
    console.print(f"Verdict: [{COLORS[status]}]{status}[/{COLORS[status]}]")
    for reason in result.verdict["reasons"]:
        console.print(f"  [yellow]{reason}[/yellow]")
