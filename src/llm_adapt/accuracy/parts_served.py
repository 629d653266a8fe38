"""Which part of the located layer, inside the served engine: its attention and its MLP, each judged on
the engine's own input to it.

A served engine gives no shadow pass (a layer fed the reference's input), but its capture gives each
part's input and output (engines/capture_plugin.py, armed for one layer). The fp32 reference's same
part, fed the engine's input, says what the part should have made of it: the difference is the part's
own error, whatever the engine's input inherited from the layers before. The floor's same part on the
same input, against the same reference output, is its noise floor. The parts are then named by the
rule the in-process part pass uses (verdict.locate_part).

The norms are left out: vLLM fuses each with the residual add, in place, so the input the reference's
norm needs (the residual stream before the add) is not a tensor the engine hands to a module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from llm_adapt.accuracy.options import Progress
from llm_adapt.accuracy.result import PartError, RoutingVerdict
from llm_adapt.accuracy.sublayer import PartErrors, PartRecord, part_errors, part_rows, replay_parts
from llm_adapt.accuracy.verdict import locate_part
from llm_adapt.engines import capture_plugin as plugin
from llm_adapt.models.config_json import ConfigJson

SERVED_PARTS = tuple(name for name, _ in plugin.PARTS)


def served_part_record(tensors: dict[str, torch.Tensor], index: int) -> PartRecord | None:
    """The engine's parts of layer `index` from one prompt's matched capture ([T, D] each, as [1, T, D],
    the reference's layout); None where the capture holds none of them. Pure."""
    record = PartRecord()
    for part in SERVED_PARTS:
        key_in, key_out = plugin.part_key(index, part, "in"), plugin.part_key(index, part, "out")
        if key_in in tensors and key_out in tensors:
            record.inputs[part] = tensors[key_in].unsqueeze(0)
            record.outputs[part] = tensors[key_out].unsqueeze(0)
    return record if record.inputs else None


def errors_between(expected: list[PartRecord], actual: list[PartRecord]) -> dict[str, PartError]:
    """Each part's error of `actual` outputs against `expected` ones, over every prompt: the summary the
    in-process part pass gives (rel_l2, cos_min, max_abs, per-prompt squares, channel concentration). Pure."""
    errors = PartErrors()
    for want, got in zip(expected, actual):
        for name, ref in want.outputs.items():
            if name in got.outputs:
                errors.add(name, ref, got.outputs[name])
    return errors.summary()


def judge_parts(served: dict[str, PartError], floor: dict[str, PartError] | None, local_factor: float,
                dtype: str, contraction: int | None = None) -> dict[str, Any]:
    """{"part", "parts"} as the in-process pass writes it, for the engine's parts against the floor's
    (`contraction`: the layer's longest sum, for a part judged on its rounding). Pure."""
    return locate_part(part_rows(served, floor), local_factor, floor is not None, dtype, contraction)


def capture_parts(client, directory: Path, index: int, sequences: list[list[int]],
                  progress: Progress) -> list[dict[str, Any]]:
    """The engine's records of one more prefill of each sequence, with layer `index`'s parts armed: only
    the records this pass wrote (a kept earlier capture stays where it is)."""
    from llm_adapt.accuracy.capture_records import send_prefills

    before = set(Path(directory).glob(plugin.RECORD_GLOB))
    send_prefills(client, directory, sequences, progress, armed_with=json.dumps({"parts": [index]}),
                  label=f"parts of layer {index} in the engine")
    new = sorted(set(Path(directory).glob(plugin.RECORD_GLOB)) - before)
    records = [torch.load(p, weights_only=True) for p in new]
    for path in new:
        path.unlink()
    return records


def served_parts(records: list[dict[str, Any]], sequences: list[list[int]], index: int, reference, floor,
                 local_factor: float, dtype: str, contraction: int | None = None) -> dict[str, Any]:
    """The located layer's parts inside the engine: {"part", "parts"}, or {"part": None, "parts": [],
    "parts_skipped": why}. `reference` and `floor` are in-process runners (floor may be None)."""
    from llm_adapt.accuracy.capture_records import match_record

    kept_sequences, served = [], []
    for sequence in sequences:
        tensors, _ = match_record(records, sequence)
        record = served_part_record(tensors, index) if tensors is not None else None
        if record is not None:
            kept_sequences.append(sequence)
            served.append(record)
    if not served:
        return {"part": None, "parts": [], "parts_skipped": f"the engine recorded no part of layer {index}"}
    expected = replay_parts(reference, index, kept_sequences, served)
    floor_errors = part_errors(floor, index, kept_sequences, expected) if floor is not None else None
    return judge_parts(errors_between(expected, served), floor_errors, local_factor, dtype, contraction)


def served_router(records: list[dict[str, Any]], gold, index: int, renormalize: bool,
                  served_dtype: str) -> RoutingVerdict | None:
    """Layer `index`'s routing inside the engine against the gold's (accuracy/routing.py), over the prompts
    whose capture holds it and whose gold kept that router's view; None for a dense layer or no record."""
    from llm_adapt.accuracy.capture_records import match_record
    from llm_adapt.accuracy.routing import routing_verdict, served_routing
    from llm_adapt.accuracy.verdict import UNIT_ROUNDOFF

    ids_key, weights_key = plugin.router_keys(index)
    counts = []
    for ref in gold.prompts:
        tensors, _ = match_record(records, ref.sequence)
        record = (ref.gates or {}).get(index)
        if tensors is None or record is None or ids_key not in tensors:
            continue
        counts.append(served_routing(record, tensors[ids_key].long(), tensors[weights_key], renormalize,
                                     UNIT_ROUNDOFF.get(served_dtype, UNIT_ROUNDOFF["bf16"])))
    return routing_verdict(counts) if counts else None


def renormalizes(config: ConfigJson) -> bool:
    """Whether the model's MoE layers renormalize their top-k weights, as vLLM builds them: Qwen-MoE's
    norm_topk_prob, else True (Mixtral and others always do). Pure."""
    text = config.get("text_config") or config
    return bool(text.get("norm_topk_prob", True))
