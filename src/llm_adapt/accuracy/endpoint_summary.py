"""Terminal summary of an EndpointAccuracyResult."""

from __future__ import annotations

from rich.console import Console

from llm_adapt.accuracy.endpoint import EndpointAccuracyResult
from llm_adapt.status import Status

COLORS = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "red"}


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
        floor = f" (floor {p['floor_ln_ratio']:+.4f})" if "floor_ln_ratio" in p else ""
        console.print(f"  perplexity: reference {p['ref']:.3f}, server {p['server']:.3f}, ln ratio {p['ln_ratio']:+.4f}{floor}")
    if sec["greedy"]["status"] == "done":
        dec = sec["greedy"].get("decode") or {}
        if (dec.get("server") or {}).get("positions"):
            f = dec.get("floor") or {}
            console.print(f"  decode positions {dec['server']['positions']}: top-k KL {dec['server']['kl_lb_mean']:.5f}"
                          + (f" vs floor {f['kl_lb_mean']:.5f}" if f.get("positions") else ""))
        for row in sec["greedy"]["rows"]:
            if not row["exact"]:
                stop = f", {row['stop']} stop" if row.get("stop") else ""
                console.print(f"  {row['id']}: diverges at token {row['first_divergence']} ({row['divergence']}{stop}, "
                              f"reference margin {row['ref_margin']}): {row.get('ref_token')!r} vs {row.get('target_token')!r}")
    for prompt in result.verdict.get("skipped_prompts", []):
        console.print(f"  skipped {prompt}: does not fit the served context")
    status = result.verdict["status"]
    console.print(f"Verdict: [{COLORS[status]}]{status}[/{COLORS[status]}]")
    for reason in result.verdict["reasons"]:
        console.print(f"  [yellow]{reason}[/yellow]")
