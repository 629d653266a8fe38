"""Layer by layer from an msprobe dump: vLLM-Ascend's own per-layer outputs, read as a `LayerDump`.

vLLM-Ascend runs msprobe's PrecisionDebugger when started with a `dump_config` (see
inspect/msprobe_config.py): each engine step is `start -> forward -> stop -> step`, and a level L0
tensor dump writes, per step and rank (mindstudio-probe 26.2.0, its docs and vLLM-Ascend's
msprobe_guide.md):

    DUMP/step{N}/rank{R}/dump.json                 {"task", "level", "framework", "data": {module: entry}}
    DUMP/step{N}/rank{R}/dump_tensor_data/*.pt     one tensor per file, named by the entry's "data_name"

(`rank` alone without distribution; `proc{pid}` from a plain PyTorch process, as on CPU.) A module
entry is `Module.{path}.{class}.forward.{call}` with "input_args", "input_kwargs" and "output".

What this module does with it, and why:
- names: `model.embed_tokens` -> "embeddings", `model.layers.{i}` -> "layer i", `model.norm` ->
  "final norm" (the gold's names, as the capture plugin maps vLLM's modules);
- fused residual: vLLM's decoder layer returns (hidden, residual) and leaves the add to the next
  layer's fused add-norm, so a layer's output is hidden + residual; a layer with one output
  (transformers) is that output; the final norm's output is its first;
- tokens: the embedding's input is the token ids, the first layer's positions (vLLM's positional
  first argument, transformers' `position_ids`); V1 packs every scheduled request into one flat
  batch, so a step is split where the positions stop counting up by one, and each piece is a
  record for `capture_records.match_record`: a prompt's prefill is the piece at positions 0..n-1,
  decode steps never match.

The files are read with `json` and `torch.load(weights_only=True)`, which is what msprobe's own
`load_pt` calls; importing `msprobe.pytorch` for it would patch triton's JIT at import and take
seconds, for the same tensors.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_adapt.accuracy.capture_records import match_record
from llm_adapt.errors import AdaptError, UsageError

META = "dump.json"
TENSORS = "dump_tensor_data"
_STEP = re.compile(r"^step(\d+)$")
_RANK = re.compile(r"^(?:rank(\d*)|proc\d+)$")
_MODULE = re.compile(r"^Module\.(?:\d+\.)?model\.(embed_tokens|norm|layers\.(\d+))\.\w+\.forward\.(\d+)$")
_POSITION_KWARGS = ("positions", "position_ids")


def gold_name(key: str) -> tuple[str, int] | None:
    """An msprobe module key -> (the gold's tensor name, the forward's call number); None for others."""
    match = _MODULE.match(key)
    if not match:
        return None
    path, layer, call = match.groups()
    name = "embeddings" if path == "embed_tokens" else "final norm" if path == "norm" else f"layer {layer}"
    return name, int(call)


def unfused_output(name: str, outputs: list[torch.Tensor]) -> torch.Tensor:
    """A module's true output [T, D] float32 from its dumped outputs (see the module docstring)."""
    if name.startswith("layer ") and len(outputs) > 1 and outputs[1] is not None:
        total = outputs[0].to(torch.float32) + outputs[1].to(torch.float32)
    else:
        total = outputs[0].to(torch.float32)
    return total.reshape(-1, total.shape[-1])


def flat_positions(positions: torch.Tensor) -> torch.Tensor:
    """[T] positions from vLLM's [T], transformers' [1, T] or M-RoPE's [3, T] (its text row)."""
    if positions.dim() > 1 and positions.shape[0] > 1:
        positions = positions[0]
    return positions.reshape(-1).to(torch.int64)


def split_packed(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat step -> one record per request: a new piece wherever positions stop counting up by one."""
    pos = record["positions"]
    starts = [0] + [k for k in range(1, len(pos)) if int(pos[k]) != int(pos[k - 1]) + 1] + [len(pos)]
    return [{"input_ids": record["input_ids"][a:b], "positions": pos[a:b],
             "tensors": {name: t[a:b] for name, t in record["tensors"].items()}}
            for a, b in pairwise(starts)]


def rank_dirs(root: Path) -> list[Path]:
    """The first rank's folder of every step, in step order; `root` may be the dump path, one step
    folder or one rank folder. Every rank holds the same all-reduced hidden states."""
    if (root / META).is_file():
        return [root]
    steps = sorted((p for p in root.iterdir() if _STEP.match(p.name)), key=lambda p: int(_STEP.match(p.name)[1]))
    if not steps and any(_RANK.match(p.name) for p in root.iterdir()):
        steps = [root]
    found = []
    for step in steps:
        ranks = sorted((p for p in step.iterdir() if _RANK.match(p.name) and (p / META).is_file()), key=_rank_order)
        found += ranks[:1]
    return found


def _rank_order(path: Path) -> tuple[int, str]:
    match = _RANK.match(path.name)
    return (int(match[1]) if match and match[1] else 0, path.name)


def load_tensor(folder: Path, item: Any) -> torch.Tensor | None:
    """The tensor an entry's item names (a .pt or .npy in dump_tensor_data); None for non-tensors."""
    if not isinstance(item, dict) or not item.get("data_name"):
        return None
    path = folder / TENSORS / item["data_name"]
    try:
        if path.suffix == ".npy":
            return torch.from_numpy(np.load(path, allow_pickle=False))
        return torch.load(path, map_location="cpu", weights_only=True).detach()
    except (OSError, RuntimeError, ValueError) as exc:
        raise UsageError(f"msprobe dump: cannot read {path} ({type(exc).__name__}); was the dump copied whole?") from exc


def positions_of(folder: Path, entry: dict[str, Any]) -> torch.Tensor | None:
    """The first layer's positions: a `positions`/`position_ids` keyword, else its first integer argument."""
    kwargs = entry.get("input_kwargs") or {}
    candidates = [kwargs.get(k) for k in _POSITION_KWARGS] + list(entry.get("input_args") or [])
    for item in candidates:
        if isinstance(item, dict) and "int" in str(item.get("dtype", "")):
            return flat_positions(load_tensor(folder, item))
    return None


def step_records(folder: Path) -> list[dict[str, Any]]:
    """Every complete forward of one rank folder (embedding, layers, final norm), split per request."""
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"msprobe dump: {folder / META} is not readable JSON ({exc}); was the dump cut short?") from exc
    check_meta(folder, meta)
    forwards: dict[int, dict[str, Any]] = {}
    for key, entry in (meta.get("data") or {}).items():
        found = gold_name(key)
        if found is None or not isinstance(entry, dict):
            continue
        name, call = found
        record = forwards.setdefault(call, {"input_ids": None, "positions": None, "tensors": {}})
        outputs = [load_tensor(folder, item) for item in entry.get("output") or []]
        if outputs and outputs[0] is not None:
            record["tensors"][name] = unfused_output(name, outputs)
        if name == "embeddings" and entry.get("input_args"):
            ids = load_tensor(folder, entry["input_args"][0])
            record["input_ids"] = None if ids is None else ids.reshape(-1).to(torch.int64)
        if name == "layer 0":
            record["positions"] = positions_of(folder, entry)
    return [piece for _, rec in sorted(forwards.items()) if _complete(rec) for piece in split_packed(rec)]


def _complete(record: dict[str, Any]) -> bool:
    names = record["tensors"]
    return (record["input_ids"] is not None and record["positions"] is not None
            and {"embeddings", "layer 0", "final norm"} <= set(names))


def check_meta(folder: Path, meta: dict[str, Any]) -> None:
    """A dump the comparison can use: tensors, at module level."""
    task, level = meta.get("task"), meta.get("level")
    if task != "tensor" or level not in ("L0", "mix"):
        raise UsageError(f"{folder / META} is a task '{task}' dump at level '{level}'; layer comparison needs "
                         "task 'tensor' at level 'L0' (write that dump_config with `llm-adapt inspect MODEL --platform npu`)")


class MsprobeDump:
    """An msprobe L0 tensor dump as a `layers_served.LayerDump`: prefills found by their token ids."""

    mode = "eager"  # vLLM-Ascend dumps tensors through PrecisionDebugger only without graph capture

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise UsageError(f"msprobe dump not found: {self.directory} is not a directory; pass the dump_path "
                             "of the dump_config vLLM-Ascend ran with")
        folders = rank_dirs(self.directory)
        if not folders:
            raise UsageError(f"no msprobe dump in {self.directory}: expected step*/rank*/{META} (msprobe's layout); "
                             "pass the dump_path of the dump_config vLLM-Ascend ran with")
        self.steps = len(folders)
        self.records = [record for folder in folders for record in step_records(folder)]
        if not self.records:
            raise UsageError(f"the msprobe dump in {self.directory} holds no complete forward of model.embed_tokens, "
                             "model.layers.* and model.norm; dump them (level L0, the dump_config `list` llm-adapt writes)")

    def layers_for(self, sequence: list[int]) -> tuple[dict[str, torch.Tensor] | None, str | None]:
        return match_record(self.records, sequence)

    def summary(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "steps": self.steps, "records": len(self.records)}


# ---- compared with the fp32 gold through layers_served's pieces (same metrics, floor, verdict) ----

def prompt_only(gold):
    """The gold cut to each prompt's own tokens, which is what a served request's prefill computes: the
    model is causal, so the first n positions of prompt + continuation are the prompt's own."""
    from dataclasses import replace

    return replace(gold, prompts=[replace(p, generated=[], hidden=[h[..., :len(p.input_ids), :] for h in p.hidden],
                                          logits=p.logits[:len(p.input_ids)]) for p in gold.prompts])


def compare_dump(dump: MsprobeDump, gold, source, opts, served_dtype: str, progress, **facts):
    """The dump's per-layer errors against the gold (cut to the prompts), the in-process floor at the
    served dtype on the prompts it holds, judged as `llm-adapt layers` judges a capture."""
    import time

    from llm_adapt.accuracy import layers_served as ls

    started = time.monotonic()
    rows, missing = ls.served_rows(gold, dump)
    if len(missing) == len(gold.prompts):
        raise AdaptError(f"no prompt of the suite has its prefill in the msprobe dump ({missing[0]['reason'] if missing else 'no prompts'}); "
                         "send each prompt as one request while vLLM-Ascend dumps: llm-adapt layers MODEL "
                         "--endpoint URL --msprobe-dump DIR")
    spec = ls.floor_spec_for(opts.reference, served_dtype)
    floor, spread = ls.measure_floor_with_spread(spec, source.path, ls.captured_gold(gold, missing), progress)
    seconds = {**facts.pop("seconds", {}), "floor": ls.elapsed(started)}
    return ls.layers_result(rows, missing, floor, spread, gold=gold, floor_label=spec.label, served_dtype=served_dtype,
                            reference=opts.reference, local_factor=opts.local_factor, seconds=seconds, **facts)


def run_msprobe_layers(source, directory: Path, opts, served_dtype: str, capture: dict[str, Any], progress,
                       endpoint=None):
    """Gold on the suite's prompts; with `endpoint` (a vLLM-Ascend server dumping into `directory`)
    each prompt sent first as one prefill; then the dump read and compared."""
    import tempfile
    import time
    from dataclasses import replace

    from llm_adapt.accuracy import layers_served as ls
    from llm_adapt.accuracy.reference import measure_reference
    from llm_adapt.models.tokenizer import load_tokenizer
    from llm_adapt.prompts import load_prompts

    started = time.monotonic()
    tokenizer = load_tokenizer(source.path)
    opts = replace(opts, max_new_tokens=1)  # the prefills hold the prompts alone: no continuation is compared
    gold = prompt_only(measure_reference(source, tokenizer, load_prompts(opts.prompts), opts, progress))
    seconds = {"gold": ls.elapsed(started)}
    served = None
    if endpoint is not None:
        from llm_adapt.accuracy import capture_records
        from llm_adapt.engines.client import EndpointClient
        from llm_adapt.engines.preflight import resolve_model_name

        served, _ = resolve_model_name(endpoint)
        with tempfile.TemporaryDirectory() as switch:  # send_prefills' arming file: unused by msprobe
            capture_records.send_prefills(EndpointClient(endpoint, served), Path(switch), [p.sequence for p in gold.prompts], progress)
    dump = MsprobeDump(directory)
    return compare_dump(dump, gold, source, opts, served_dtype, progress, seconds=seconds,
                        model={"name": source.name, "path": str(source.path), "served": served},
                        endpoint=endpoint.redacted() if endpoint is not None else {},
                        capture={**capture, "source": "msprobe", **dump.summary()})
