"""Terminal summary of an AccuracyResult (reads the result only)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.accuracy.result import AccuracyResult, RunnerReport
from llm_adapt.messages import head_list
from llm_adapt.status import Status

COLORS = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "red"}


def print_accuracy(result: AccuracyResult, console: Console) -> None:
    p = result.prompts
    console.print(f"[bold]Accuracy[/bold] of {result.model['name']} against {result.settings['reference']}: "
                  f"{p['count']} prompts, {p['tokens_compared']} positions, {p['corpus_tokens']} corpus tokens")
    for skipped in p.get("skipped", []):
        console.print(f"  skipped {skipped['id']}: {skipped['reason']}")
    console.print(_targets_table(result.targets))
    for target in result.targets:
        _print_target(target, console)
    status = result.verdict["status"]
    console.print(f"\nOverall: [{COLORS[status]}]{status}[/{COLORS[status]}]")
    for label, shown in (result.verdict.get("informational") or {}).items():
        console.print(f"  {label}: {shown} (informational: not part of the verdict)")


def _targets_table(targets: list[RunnerReport]) -> Table:
    table = Table(title="Targets")
    for col in ("target", "floor", "final rel L2", "KL mean ± se", "KL p99", "same top-1", "ln PPL ratio", "verdict"):
        table.add_column(col)
    for t in targets:
        lg, last = t.logits, t.layers[-1]
        status = t.verdict["status"]
        table.add_row(t.label, t.floor or "-", f"{last['rel_l2']:.4%}", f"{lg['kl_mean']:.5f} ± {lg['kl_sem']:.5f}",
                      f"{lg['kl_p99']:.4f}", f"{lg['same_top1']:.2%} ± {lg['same_top1_err']:.2%}",
                      f"{t.perplexity['ln_ratio']:+.4f}", f"[{COLORS[status]}]{status}[/{COLORS[status]}]")
    return table


def _print_target(t: RunnerReport, console: Console) -> None:
    console.print(f"\n[bold]{t.label}[/bold]" + (f" (noise floor {t.floor})" if t.floor else " (no noise floor: on the reference's device)"))
    if t.first_nonfinite:
        console.print(f"  [red]NaN/Inf first appears at {t.first_nonfinite}[/red]")
    if t.first_local_excess:
        e = t.first_local_excess
        console.print(f"  look first at [bold]{e['name']}[/bold]: its own error {e['local_rel_l2']:.3e} "
                      f"is {e['ratio']:.1f}x its {e['basis']}")
        for part in e.get("parts") or []:
            mark = "[red]out of line[/red]" if part["excess"] else "in line"
            channels = part.get("channels") or {}
            if channels.get("concentrated"):
                mark += f", {channels['share']:.0%} of it in channels {', '.join(map(str, channels['top']))}"
            heads = part.get("heads") or {}
            if heads.get("concentrated"):
                mark += f", {heads['share']:.0%} of it in {head_list(heads)}"
            console.print(f"    {part['name']:20s} on the reference's input: {part['rel_l2']:.3e}, "
                          f"{part['ratio']:.1f}x its {part['basis']}  {mark}")
        if e.get("parts_skipped"):
            console.print(f"    parts not measured: {e['parts_skipped']}")
    fit = t.depth_fit
    console.print(f"  error over depth: slope {fit['slope']:.2e} per layer, R² {fit['r2']:.2f}")
    for category, c in sorted(t.greedy_by_category.items()):
        console.print(f"  {category:13s} exact {c['exact']}/{c['prompts']}  tokens {c['token_match_rate']:.1%}  "
                      f"near-tie {c['near_tie']}  genuine {c['genuine']}  early stop {c.get('early_stop', 0)}  "
                      f"late stop {c.get('late_stop', 0)}")
    for reason in t.verdict["reasons"]:
        console.print(f"  [yellow]{reason}[/yellow]")
