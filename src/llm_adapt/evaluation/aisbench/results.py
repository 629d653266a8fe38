"""AISBench's output files, read and written as plain data (pure): its per-item correctness from
`results/<abbr>/<dataset>.json` (written with --dump-eval-details: `details: {id: {correct: [bool], ...}}`,
`accuracy` in points), the items whose request failed from `predictions/<abbr>/<dataset>.jsonl`
(`success` false, or missing), and the gold's predictions written in the same form.

Layout, as AISBench 3.1 writes it under --work-dir: `<work>/<timestamp>/{predictions,results,summary,logs,configs}`."""

from __future__ import annotations

import json
from typing import Any


def correctness(result: dict[str, Any]) -> dict[int, bool]:
    """{item id: correct} from one results file; an item with several predictions is correct when all are."""
    details = result.get("details")
    if not isinstance(details, dict):
        raise ValueError("no per-item 'details' (run AISBench with --dump-eval-details)")
    out = {}
    for key, item in details.items():
        marks = item.get("correct") if isinstance(item, dict) else None
        marks = marks if isinstance(marks, list) else [marks]
        if not marks or not all(isinstance(m, bool) for m in marks):
            raise ValueError(f"item {key}: 'correct' is not a list of booleans")
        out[int(key)] = all(marks)
    return out


def accuracy(result: dict[str, Any]) -> float | None:
    """AISBench's own score of the run, in points (0-100)."""
    value = result.get("accuracy")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def predictions(text: str) -> list[dict[str, Any]]:
    """The lines of a predictions .jsonl file."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def failed(rows: list[dict[str, Any]], expected: int) -> list[int]:
    """Ids of items whose request did not succeed: marked so, or absent (AISBench scores those as wrong)."""
    ok = {int(r["id"]) for r in rows if r.get("success", True)}
    return [i for i in range(expected) if i not in ok]


def gold_line(served_row: dict[str, Any], text: str) -> str:
    """One gold prediction, in the served row's form with the gold's answer in place of the served one."""
    row = {"data_abbr": served_row.get("data_abbr"), "id": served_row["id"], "success": True,
           "origin_prompt": served_row["origin_prompt"], "prediction": text, "gold": served_row.get("gold")}
    return json.dumps(row, ensure_ascii=False) + "\n"


def chat_messages(origin_prompt: Any) -> list[dict[str, str]] | str:
    """The prompt the served side was sent, as chat messages (AISBench's HUMAN/BOT/SYSTEM roles mapped as its
    chat client maps them), or a plain string for a completions prompt."""
    if isinstance(origin_prompt, str):
        return origin_prompt
    roles = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system"}
    return [{"role": roles.get(m.get("role", ""), m.get("role", "")), "content": m["prompt"]} for m in origin_prompt]
