"""Terminal table of a ProbesResult."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.probes.run import ProbesResult

STYLE = {"supported": "green", "unsupported": "yellow", "error": "red", "not run": "dim", "not enabled": "dim",
         "not judged": "dim", "not applicable": "dim"}


def print_probes(result: ProbesResult, console: Console) -> None:
    table = Table(title=f"Feature support: {result.model} at {result.endpoint['base_url']}")
    for col in ("feature", "status", "evidence", "ms"):
        table.add_column(col)
    for row in result.rows:
        style = STYLE.get(row["status"], "")
        table.add_row(row["name"], f"[{style}]{row['status']}[/{style}]", row["evidence"],
                      f"{row['latency_ms']:.0f}" if row["latency_ms"] is not None else "-")
    console.print(table)
    console.print(", ".join(f"{n} {k}" for k, n in sorted(result.summary.items())))
