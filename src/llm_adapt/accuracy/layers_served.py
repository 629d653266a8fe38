"""Layer by layer inside the served engine: the engine's own per-layer outputs against the fp32 gold.

The tensors come from a `LayerDump`: today the capture plugin's records
(engines/capture_plugin.py, vLLM on CPU/CUDA); an msprobe dump reader for vLLM-Ascend would be a
second implementation of the same small interface. The comparison reuses the in-process
comparison's pieces: the same accumulators (metrics.TensorAccumulator), the same ratio to the noise
floor widened by the floor's measured spread, the same localization and the same per-layer checks.

One difference, said in the result: a served engine gives no "shadow" pass (a layer fed the
reference's input), so each layer's error here is its full error (own + inherited). A fault is
localized where the error curve steps up: of the layers out of their floor's allowance whose ratio
jumps from the layer before by more than chance, the largest jump (first_step_up); failing that,
the first layer past the local factor.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from llm_adapt import rundir
from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.capture_records import match_record, send_prefills
from llm_adapt.accuracy.measure import relative_change
from llm_adapt.accuracy.options import Progress
from llm_adapt.accuracy.positions import chance_spread, effective_count, effective_elements, prefix_units, unit_values
from llm_adapt.accuracy.reference import Gold
from llm_adapt.accuracy.result import (  # its typed result, declared where the report reads it
    Capture,
    CapturePlugin,
    LayerRow,
    LayersResult,
    LocatedFault,
    TensorStats,
)
from llm_adapt.accuracy.runner import VARIANT_KERNEL, Runner, RunnerSpec
from llm_adapt.accuracy.verdict import locate_and_judge, msprobe_rule
from llm_adapt.engines import capture_plugin as plugin
from llm_adapt.engines.client import EndpointClient, ServerGone
from llm_adapt.errors import AdaptError, UsageError

ERROR_KIND = ("full: the served engine has no shadow pass, so each layer's error includes what it "
              "inherits; the first layer out of line is where the excess starts")


class TensorRow(TensorStats):
    """One tensor's error over the captured prompts, with the squared errors the spreads resample: per
    prompt, and per prompt and position."""
    name: str
    diff_sq_by_prompt: list[float]
    diff_sq_by_position: list[np.ndarray]
    diff_4th_by_position: list[np.ndarray]


class LayerDump(Protocol):
    """Per-layer outputs of a served engine, found by the tokens it was given."""

    mode: str  # how the engine ran while it was captured: "eager" or "graph"

    def layers_for(self, sequence: list[int]) -> tuple[dict[str, torch.Tensor] | None, str | None]:
        """({gold name: [T, D] float32} for this exact token sequence, None) or (None, why not)."""
        ...


class CaptureDump:
    """The capture plugin's records in one directory (see engines/capture_plugin.py)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.mode = "eager"
        self.records = [torch.load(p, weights_only=True) for p in sorted(self.directory.glob(plugin.RECORD_GLOB))]

    def layers_for(self, sequence: list[int]) -> tuple[dict[str, torch.Tensor] | None, str | None]:
        return match_record(self.records, sequence)


def with_capture(inspected, out: Path):
    """The inspect result with the capture plugin switched on in its plan, recording into the run
    directory's capture folder (its hooks stay idle until a capture arms them)."""
    plan = inspected.plan.with_env({plugin.ENV_DIR: str(capture_dir(out))})
    return inspected.model_copy(update={"plan": plan})


def capture_dir(out: Path) -> Path:
    return (Path(out) / rundir.CAPTURE).resolve()


def capture_modes(graph: bool, accept_eager: bool) -> Capture:
    """The capture runs eager; a graph-mode deployment is judged by it only when the user says so."""
    if graph and not accept_eager:
        raise UsageError("the deployment runs graph mode but layer capture needs eager mode (hooks do not run inside "
                         "a compiled graph); add --accept-eager to judge it by an eager capture anyway")
    return {"mode": "eager", "deploy_mode": "graph" if graph else "eager", "eager_for_graph": graph}


def check_plugin(directory: Path) -> CapturePlugin:
    """What the plugin wrote at engine start: ready.json, else the reason it refused or did not load."""
    ready, refused = Path(directory) / plugin.READY, Path(directory) / plugin.REFUSED
    import json

    if (Path(directory) / plugin.ERROR).exists():
        raise AdaptError(f"layer capture failed inside the engine: {(Path(directory) / plugin.ERROR).read_text()}")
    if refused.exists():
        raise AdaptError(f"layer capture refused inside the engine: {json.loads(refused.read_text())['reason']}")
    if not ready.exists():
        raise AdaptError(f"the capture plugin did not load in the engine (no {ready}); start it with "
                         f"{plugin.ENV_DIR}={directory} and reinstall llm-adapt (pip install -e .) so vLLM finds "
                         "its entry point")
    return json.loads(ready.read_text())


def floor_layers(spec: RunnerSpec, model_path: Path, gold: Gold, progress: Progress) -> list[TensorRow]:
    """The in-process floor's full error per tensor on the gold's sequences (summaries with the
    per-prompt squared errors kept for the bootstrap)."""
    acc = [m.TensorAccumulator() for _ in gold.names]
    label = f"floor {spec.label}".replace("[", "(").replace("]", ")")  # no rich markup
    with Runner(spec, model_path) as runner:
        for i, ref in enumerate(gold.prompts):
            progress(label, i, len(gold.prompts))
            capture = runner.capture(ref.sequence)
            for j in range(len(gold.names)):
                acc[j].add(ref.hidden[j], capture.hidden[j])
    progress(label, len(gold.prompts), len(gold.prompts))
    return [accumulated(name, a) for name, a in zip(gold.names, acc)]


def accumulated(name: str, acc: m.TensorAccumulator) -> TensorRow:
    """A tensor's summary with the squared errors the spreads resample: per prompt and per position."""
    return {"name": name, **acc.summary(), "diff_sq_by_prompt": acc.diff_sq_by_prompt,
            "diff_sq_by_position": acc.diff_sq_by_position, "diff_4th_by_position": acc.diff_4th_by_position}


def floor_spread(floor: list[TensorRow], variant: list[TensorRow]) -> dict[str, float]:
    """Per tensor, how much the floor's rel. L2 error moves on another kernel path (relative)."""
    return {f["name"]: relative_change(v["rel_l2"], f["rel_l2"]) for f, v in zip(floor, variant)}


def served_rows(gold: Gold, dump: LayerDump) -> tuple[list[TensorRow], list[dict[str, str]]]:
    """The engine's per-tensor errors over every prompt it captured; the prompts it did not, with why."""
    acc = [m.TensorAccumulator() for _ in gold.names]
    missing = []
    for ref in gold.prompts:
        tensors, why = dump.layers_for(ref.sequence)
        if tensors is None:
            missing.append({"id": ref.prompt.id, "reason": why})
            continue
        for j, name in enumerate(gold.names):
            gold_t = ref.hidden[j]
            acc[j].add(gold_t.reshape(-1, gold_t.shape[-1]), tensors[name])
    return [accumulated(name, a) for name, a in zip(gold.names, acc)], missing


def sampling_spread(row: TensorRow, floor: TensorRow,
                    units: tuple[list[np.ndarray], int] | None) -> dict[str, float]:
    """How much the ratio to the floor moves by chance, two ways (see positions.py): prompts
    resampled, and the chance within the elements that carry the error (its effective count, shared
    prefixes counted once). The bootstrap misses the second when one position carries the error;
    the larger is used. (A bootstrap over positions is not used: where the floor's error rests on
    one position, resamples without it leave a denominator near zero.)"""
    out = {"prompts": m.ratio_spread_from_squares(row["diff_sq_by_prompt"], floor["diff_sq_by_prompt"]),
           "elements": float("nan"), "effective_positions": float("nan"), "effective_elements": float("nan"),
           "floor_effective_elements": float("nan")}
    if units is not None and row.get("diff_sq_by_position") and floor.get("diff_sq_by_position"):
        ids, count = units
        squares = [unit_values(r["diff_sq_by_position"], ids, count) for r in (row, floor)]
        k_target, k_floor = (effective_elements(sq, unit_values(r["diff_4th_by_position"], ids, count))
                             for sq, r in zip(squares, (row, floor)))
        out.update(elements=chance_spread(k_target, k_floor), effective_elements=k_target,
                   floor_effective_elements=k_floor, effective_positions=effective_count(squares[0]))
    finite = [v for v in (out["prompts"], out["elements"]) if np.isfinite(v)]
    out["used"] = max(finite) if finite else float("nan")
    return out


def against_floor(rows: list[TensorRow], floor: list[TensorRow] | None,
                  spread: dict[str, float] | None, sequences: list[list[int]] | None = None) -> list[LayerRow]:
    """Each row with its floor's error, the ratio and the ratio the floor's spread allows (as
    compare.with_floor does: chance, here the larger of sampling_spread's two, and the floor's
    kernel spread, in quadrature), and the local fields the localization reads, set to the full ones.
    sequences: the compared token sequences, in the rows' order (for the position units)."""
    by_name = {f["name"]: f for f in floor or []}
    units = prefix_units(sequences) if sequences else None
    out = []
    for row in rows:
        row = dict(row)
        f = by_name.get(row["name"])
        if f is not None:
            chance, kernel = sampling_spread(row, f, units), (spread or {}).get(row["name"])
            row.update(floor_rel_l2=f["rel_l2"], ratio=m.ratio_or_none(row["rel_l2"], f["rel_l2"]),
                       rel_spread=m.combined_spread(chance["used"], kernel),
                       spread={"prompts": chance["prompts"], "elements": chance["elements"], "kernel": kernel},
                       **{k: chance[k] for k in ("effective_positions", "effective_elements",
                                                 "floor_effective_elements")})
        for key in ("diff_sq_by_position", "diff_4th_by_position"):  # too long for the result; summarized
            row.pop(key, None)
        row.update(local_rel_l2=row["rel_l2"], local_ratio=row.get("ratio"),
                   **({"local_rel_spread": row["rel_spread"]} if "rel_spread" in row else {}))
        row["msprobe_per_token"] = msprobe_rule(row["cos_min"], row["max_abs"], row["nan_mismatch"])
        out.append(row)
    return out


def captured_gold(gold: Gold, missing: list[dict[str, str]]) -> Gold:
    """The gold restricted to the prompts the engine captured: the floor is measured on the same ones."""
    skip = {row["id"] for row in missing}
    return replace(gold, prompts=[p for p in gold.prompts if p.prompt.id not in skip])


def layers_result(rows: list[TensorRow], missing: list[dict[str, str]], floor: list[TensorRow] | None,
                  spread: dict[str, float] | None, *, gold: Gold, floor_label: str | None, served_dtype: str,
                  reference: RunnerSpec, local_factor: float, **facts: Any) -> LayersResult:
    """The typed result from the engine's rows and the in-process floor's (facts: model, endpoint,
    capture, seconds)."""
    rows = against_floor(rows, floor, spread, [p.sequence for p in captured_gold(gold, missing).prompts])
    exact = served_dtype == reference.dtype and floor_label is None
    excess, verdict = locate_and_judge(rows, floor_label, served_dtype, local_factor, exact)
    return LayersResult(reference=reference.label, floor=floor_label, served_dtype=served_dtype, error_kind=ERROR_KIND,
                        prompts={"count": len(gold.prompts), "captured": len(gold.prompts) - len(missing),
                                 "missing": missing, "tokens": int(sum(len(p.sequence) for p in gold.prompts
                                                                       if p.prompt.id not in {r["id"] for r in missing}))},
                        layers=[{k: v for k, v in r.items() if not k.startswith("local_")} for r in rows],
                        first_local_excess=excess, verdict=verdict, **facts)


def floor_spec_for(reference: RunnerSpec, served_dtype: str) -> RunnerSpec:
    """The in-process floor: the reference's device at the served dtype; for a served dtype equal to
    the reference's, the reference itself on another kernel path."""
    floor = replace(reference, dtype=served_dtype)
    return floor if floor != reference else replace(reference, kernel=VARIANT_KERNEL)


def measure_floor_with_spread(spec: RunnerSpec, model_path: Path, gold: Gold,
                              progress: Progress) -> tuple[list[TensorRow], dict[str, float] | None]:
    """The floor's rows, and its spread on another kernel path (none when the floor is that path)."""
    floor = floor_layers(spec, model_path, gold, progress)
    if spec.kernel == VARIANT_KERNEL:
        return floor, None
    return floor, floor_spread(floor, floor_layers(replace(spec, kernel=VARIANT_KERNEL), model_path, gold, progress))


def elapsed(started: float) -> float:
    return round(time.monotonic() - started, 2)


def run_layers(source, endpoint, capture_dir: Path, opts, served_dtype: str, capture: Capture,
               progress: Progress, gold: Gold | None = None, keep_records: bool = False) -> LayersResult:
    """Gold (or the one given), the engine's capture of every prompt, the floor on the captured ones,
    compared. `capture`: the mode that ran and the deployment's, recorded in the result."""
    from llm_adapt.accuracy.endpoint import served_max_model_len
    from llm_adapt.accuracy.reference import measure_reference
    from llm_adapt.engines.preflight import resolve_model_name
    from llm_adapt.models.tokenizer import load_tokenizer
    from llm_adapt.prompts import load_prompts

    started = time.monotonic()
    model, info = resolve_model_name(endpoint)
    served_len = served_max_model_len(info.get("listed"), model)
    if gold is None:  # the prefill of a whole sequence and one sampled token must fit the served length
        tokenizer = load_tokenizer(source.path)
        gold = measure_reference(source, tokenizer, load_prompts(opts.prompts), opts, progress,
                                 served_len - 1 if served_len else None)
    seconds = {"gold": elapsed(started)}
    plugin_info = check_plugin(capture_dir)
    started = time.monotonic()
    errors = send_prefills(EndpointClient(endpoint, model), capture_dir, [p.sequence for p in gold.prompts], progress)
    check_plugin(capture_dir)  # a hook that failed during the capture says so here
    dump = CaptureDump(capture_dir)
    rows, missing = served_rows(gold, dump)
    for row in missing:  # a refused request says more than "no record"
        if error := errors[[p.prompt.id for p in gold.prompts].index(row["id"])]:
            row.update(reason=error)
    seconds["capture"] = elapsed(started)
    if len(missing) == len(gold.prompts):
        raise AdaptError(f"no prompt was captured inside the engine: {missing[0]['reason'] if missing else 'no prompts'}")
    if not keep_records:
        for path in Path(capture_dir).glob(plugin.RECORD_GLOB):
            path.unlink()
    started = time.monotonic()
    spec = floor_spec_for(opts.reference, served_dtype)
    floor, spread = measure_floor_with_spread(spec, source.path, captured_gold(gold, missing), progress)
    seconds["floor"] = elapsed(started)
    capture = {**capture, "directory": str(capture_dir), "records": len(dump.records), "plugin": plugin_info,
               "records_kept": keep_records}
    result = layers_result(rows, missing, floor, spread, gold=gold, floor_label=spec.label, served_dtype=served_dtype,
                           reference=opts.reference, local_factor=opts.local_factor,
                           model={"name": source.name, "path": str(source.path), "served": model},
                           endpoint=endpoint.redacted(), capture=capture, seconds=seconds)
    started = time.monotonic()
    result.first_local_excess = with_served_parts(result.first_local_excess, EndpointClient(endpoint, model), capture_dir,
                                                  captured_gold(gold, missing), source.path, opts, spec, served_dtype,
                                                  progress)
    result.seconds["parts"] = elapsed(started)
    return result


def with_served_parts(where: LocatedFault | None, client: EndpointClient, capture_dir: Path, gold: Gold,
                      model_path: Path, opts, floor_spec: RunnerSpec, served_dtype: str,
                      progress: Progress) -> LocatedFault | None:
    """The located layer with its parts inside the engine (accuracy/parts_served.py): one more prefill of
    each captured prompt with that layer's attention and MLP recorded. The layer's location and every
    figure before it stand if the look inside fails; the reason is kept."""
    from llm_adapt.accuracy.parts_served import capture_parts, renormalizes, served_parts, served_router
    from llm_adapt.accuracy.reference import layer_contraction
    from llm_adapt.accuracy.sublayer import layer_index
    from llm_adapt.models.spec import load_config

    index = layer_index(where["name"]) if where else None
    if index is None:
        return where
    sequences = [p.sequence for p in gold.prompts]
    runners = []
    try:
        records = capture_parts(client, capture_dir, index, sequences, progress)
        check_plugin(capture_dir)
        progress(f"parts of layer {index}: reference and floor", 0, 1)
        runners = [Runner(opts.reference, model_path), Runner(floor_spec, model_path)]
        located = served_parts(records, sequences, index, *runners, opts.local_factor, served_dtype,
                               layer_contraction(model_path, gold))
        routing = served_router(records, gold, index, renormalizes(load_config(model_path)), served_dtype)
        if routing is not None:  # a MoE layer: whether its router chose and weighed the gold's experts
            located["routing"] = routing
        progress(f"parts of layer {index}: reference and floor", 1, 1)
    except (AdaptError, ServerGone, RuntimeError, KeyError, IndexError, TypeError, ValueError) as exc:
        located = {"part": None, "parts": [], "parts_skipped": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        for runner in runners:
            runner.close()
    return {**where, **located}
