"""The capture plugin's records inside a served engine, asked for and found: `send_prefills` sends each
prompt as one prefill while the capture is armed; `match_record` finds a prompt's tensors among the
records (or an msprobe dump's pieces). Shared by the layer pass (layers_served.py), the part pass
(parts_served.py) and msprobe's reader."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import torch

from llm_adapt.accuracy.options import Progress
from llm_adapt.engines import capture_plugin as plugin
from llm_adapt.engines.client import EndpointClient
from llm_adapt.messages import reason


def match_record(records: list[dict[str, Any]], sequence: list[int]) -> tuple[dict[str, torch.Tensor] | None, str | None]:
    """The tensors of this exact token sequence at positions 0..n-1: from the record that opens
    with it (a batch may hold more after it), or stitched from the chunks of a chunked prefill (a
    record opening with its first tokens at 0, then later records, in order, each opening with two
    or more of the next tokens at the next positions: a one-token piece is a decode step, another
    kernel path, and is not stitched in); else why none matched."""
    n, want = len(sequence), torch.tensor(sequence)
    partial = False
    for i, record in enumerate(records):
        k = opens_with(record, want, 0)
        if k == 0:
            continue
        pieces, done = [(record, k)], k
        for later in records[i + 1:]:
            if done == n:
                break
            m = opens_with(later, want, done)
            if m > 1:
                pieces.append((later, m))
                done += m
        if done == n:
            names = record["tensors"].keys()
            return {name: torch.cat([r["tensors"][name][:m] for r, m in pieces]) for name in names}, None
        partial = True
    if partial:
        return None, reason("cr_chunks_missing")
    return None, reason("cr_no_record")


def opens_with(record: dict[str, Any], want: torch.Tensor, start: int) -> int:
    """How many of want[start:] the record opens with, at positions start, start + 1, ... (0: none)."""
    ids, pos = record["input_ids"], record["positions"]
    m = min(len(ids), len(want) - start)
    if m <= 0 or not torch.equal(ids[:m], want[start:start + m]):
        return 0
    return m if torch.equal(pos[:m], torch.arange(start, start + m)) else 0


def send_prefills(client: EndpointClient, directory: Path, sequences: list[list[int]],
                  progress: Progress, armed_with: str = "1", label: str = "capture in the engine") -> list[str | None]:
    """One request at a time, each a prefill of exactly its tokens (max_tokens=1, a fresh cache salt so
    no cached prefix shortens it), while the capture is armed (`armed_with`: the armed file's text, see
    capture_plugin.armed_parts). Per sequence: None, or why it failed."""
    armed = Path(directory) / plugin.ARMED
    armed.write_text(armed_with)
    errors: list[str | None] = []
    try:
        for i, ids in enumerate(sequences):
            progress(label, i, len(sequences))
            reply = client.post("completions", {"prompt": ids, "max_tokens": 1, "temperature": 0,
                                                "cache_salt": uuid.uuid4().hex})
            failed = reply.status_code != 200
            errors.append(reason("pe_http", code=reply.status_code, body=reply.text[:200]) if failed else None)
    finally:
        armed.unlink(missing_ok=True)
    progress(label, len(sequences), len(sequences))
    return errors
