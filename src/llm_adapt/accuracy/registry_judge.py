"""Every family of the registry zoo (models/registry_zoo.py) judged in process: its small build against a
byte-identical copy (PASS, every layer's own error exactly 0) and against a copy whose decoder block FAULT_LAYER is
scaled FAULT_SCALE times (FAIL at that layer), in one compare. The building is the models room's; the planting and
the judging are here, beside the comparison they use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llm_adapt.models.registry_zoo import Family, NotBuilt, one_line, write_registry_model

FAULT_SCALE = 1.3
FAULT_LAYER = 1


def plant_layer_fault(path: Path, out: Path, *, layer: int = FAULT_LAYER, scale: float = FAULT_SCALE) -> Path:
    """A copy of the checkpoint at `path` whose decoder block `layer` (found by accuracy/layout.find_layout, wherever
    the family keeps it) has every matrix scaled `scale` times: a fault every family has a place for."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    from llm_adapt.accuracy.layout import find_layout  # torch and transformers load with it

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    block = find_layout(model).layers[layer]
    mine = {id(p) for p in block.parameters()}
    names = {name for name, p in model.named_parameters() if id(p) in mine and p.ndim == 2}
    out = Path(shutil.copytree(path, out))
    weights = load_file(out / "model.safetensors")
    planted = [name for name in names if name in weights]
    if not planted:
        raise NotBuilt(f"no matrix of block {layer} is in the checkpoint under its module name")
    for name in planted:
        weights[name] = weights[name] * scale
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    return out


@dataclass(frozen=True)
class InProcessRow:
    """One family judged in process: its identical copy and its planted fault against its fp32 gold."""
    family: str
    architecture: str
    built: bool
    copy_status: str | None = None  # PASS expected
    copy_max_layer_error: float | None = None  # every layer's own error: 0.0 expected
    fault_status: str | None = None  # FAIL expected
    fault_layer: str | None = None  # "layer 1" expected
    reason: str = ""  # why not built or not judged, in transformers' or llm-adapt's own words
    seconds: float = 0.0

    @property
    def as_expected(self) -> bool:
        return (self.built and self.copy_status == "PASS" and self.copy_max_layer_error == 0.0
                and self.fault_status == "FAIL" and self.fault_layer == f"layer {FAULT_LAYER}")


def judge_in_process(family: Family, root: Path, *, tokenizer_from: Path, prompts: Path) -> InProcessRow:
    """Build `family` small under `root`, then compare it at fp32 with a byte-identical copy and with a copy whose
    block FAULT_LAYER is scaled FAULT_SCALE times, in one compare (one gold). Every failure becomes the row's
    reason: this is a survey, and a family the tool cannot judge is a finding, not a crash."""
    import shutil
    import time

    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.errors import AdaptError
    from llm_adapt.models.source import resolve_model

    started = time.monotonic()
    base = Path(root) / family.model_type
    try:
        path = write_registry_model(family, base, tokenizer_from=tokenizer_from)
    except NotBuilt as why:
        return InProcessRow(family.model_type, family.architecture, False, reason=str(why),
                            seconds=round(time.monotonic() - started, 1))
    try:
        copy = Path(shutil.copytree(path, base.with_name(f"{family.model_type}-copy")))
        faulty = plant_layer_fault(path, base.with_name(f"{family.model_type}-fault"))
        opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"),
                              targets=(RunnerSpec("cpu", "fp32", model_path=copy.resolve()),
                                       RunnerSpec("cpu", "fp32", model_path=faulty.resolve())),
                              prompts=str(prompts), max_new_tokens=4, ppl_window=16, corpus_tokens=32)
        same, bad = compare(resolve_model(str(path)), opts).targets
    except (AdaptError, NotBuilt, RuntimeError, ValueError, TypeError, AttributeError, KeyError) as why:
        return InProcessRow(family.model_type, family.architecture, True, reason=f"not judged: {one_line(why)}",
                            seconds=round(time.monotonic() - started, 1))
    errors = [row["local_rel_l2"] for row in same.layers if row.get("local_rel_l2") is not None]
    return InProcessRow(family.model_type, family.architecture, True, copy_status=_status(same.verdict["status"]),
                        copy_max_layer_error=max(errors) if errors else None,
                        fault_status=_status(bad.verdict["status"]),
                        fault_layer=(bad.first_local_excess or {}).get("name"),
                        seconds=round(time.monotonic() - started, 1))


def _status(value: object) -> str:
    return str(getattr(value, "value", value))
