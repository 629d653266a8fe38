"""In-process accuracy: the gold reference against targets, each judged against its noise floor.

One way through: measure (the reference, reference.py; then each floor and each target once,
measure.py) -> locate against its floor (the layer, then the part of it, sublayer.py) -> judge
(with the rules of accuracy/verdict/) -> result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.diagnosis import dtype_range, head_reason, head_signature, range_reason
from llm_adapt.accuracy.measure import measure_floor, measure_target
from llm_adapt.accuracy.options import CompareOptions, Progress
from llm_adapt.accuracy.reference import activation_peaks, layer_contraction, measure_reference
from llm_adapt.accuracy.result import AccuracyResult, RunnerReport, Sharpness, VsFloor
from llm_adapt.accuracy.runner import RunnerSpec, check_device, floor_for
from llm_adapt.accuracy.sublayer import PartsPass, layer_index, part_rows
from llm_adapt.accuracy.verdict import (
    K_SPREAD,
    accuracy_verdict,
    find_first_local_excess,
    judge,
    locate_part,
    roundoff_basis,
)
from llm_adapt.errors import UsageError
from llm_adapt.models.quant import QuantInfo, transformers_problem, with_measures
from llm_adapt.models.source import ModelSource
from llm_adapt.models.spec import load_spec
from llm_adapt.prompts import load_prompts
from llm_adapt.status import OUT_OF_LINE, Status


@dataclass
class Measured:
    """Everything a comparison measures before it computes anything from it: the gold, each floor
    and each target once, and the gold's activation peaks."""

    gold: Any
    floor_of: dict[RunnerSpec, RunnerSpec | None]  # each target's floor spec (None: judged on roundoff)
    floors: dict[RunnerSpec, RunnerReport]
    reports: dict[RunnerSpec, RunnerReport]  # each target's, a floor's own where a target is one
    peaks: Any
    sharpness: Sharpness  # how decisive the gold's own logits are at the comparison's tie margin
    contraction: int | None = None  # a layer's longest sum on these prompts (layer_contraction): its rounding basis
    # a pre-quantized --target-model's own quantization, from its config.json (None: quantized here, or not at all)
    checkpoint_quant: dict[RunnerSpec, QuantInfo | None] = field(default_factory=dict)

    def floor(self, target: RunnerSpec) -> RunnerReport | None:
        return self.floors.get(self.floor_of[target])


def compare(source: ModelSource, opts: CompareOptions, progress: Progress | None = None,
            keep_gold: list | None = None) -> AccuracyResult:
    """In-process comparison; the measured reference is appended to `keep_gold` for reuse.
    Measure everything, then locate each target against its floor, then look inside the located
    layers (the only measuring that needs a location first), then judge."""
    progress = progress or (lambda what, done, total: None)
    measured = measure_all(source, opts, progress)
    if keep_gold is not None:
        keep_gold.append(measured.gold)
    n = measured.contraction
    parts = PartsPass(source, measured.gold, opts.reference, progress)
    located = {t: located_against(measured.reports[t], measured.floor(t), opts, n) for t in opts.targets}
    located = {t: located_in_parts(located[t], parts, t, measured.floor_of[t] if measured.floor(t) else None, opts, n)
               for t in opts.targets}
    targets = [judged(located[t], measured.floor(t), opts.reference, measured.checkpoint_quant[t], measured.peaks)
               for t in opts.targets]
    floors = [with_floor(f, None, opts, measured.contraction) for f in measured.floors.values()]
    return _result(source, opts, measured, targets, floors)


def measure_all(source: ModelSource, opts: CompareOptions, progress: Progress) -> Measured:
    """The reference, then each floor (a target that is also a floor is measured once), then each target."""
    from llm_adapt.models.tokenizer import load_tokenizer

    for spec in (opts.reference, *opts.targets, *([opts.baseline] if opts.baseline else [])):
        check_device(spec.device)  # a missing device fails before any model loads
    tokenizer, prompts = load_tokenizer(source.path), load_prompts(opts.prompts)
    gold = measure_reference(source, tokenizer, prompts, opts, progress)
    sharpness = gold.sharpness(opts.tie_margin)
    floor_of: dict[RunnerSpec, RunnerSpec | None] = {}
    floors: dict[RunnerSpec, RunnerReport] = {}
    for target in opts.targets:
        floor = floor_of[target] = floor_for(target, opts.reference, opts.baseline, opts.targets)
        if floor is not None and floor not in floors:
            floors[floor] = measure_floor(floor, source, gold, tokenizer, opts, progress).report
    reports = dict(floors)
    for target in opts.targets:
        if target not in reports:
            reports[target] = measure_target(target, source, gold, tokenizer, opts, progress)
    return Measured(gold, floor_of, floors, reports, activation_peaks(gold), sharpness,
                    layer_contraction(source.path, gold), {t: checkpoint_quant(t) for t in opts.targets})


def checkpoint_quant(target: RunnerSpec) -> QuantInfo | None:
    """A pre-quantized --target-model's own quantization, read from its config.json once it is measured
    (the verdict names it, judged)."""
    return load_spec(Path(target.model_path)).quant if target.model_path else None


def _result(source: ModelSource, opts: CompareOptions, measured: Measured, targets: list[RunnerReport],
            floors: list[RunnerReport]) -> AccuracyResult:
    gold = measured.gold
    return AccuracyResult(
        model={"name": source.name, "path": str(source.path)},
        reference=gold.report.model_copy(update={"logits": measured.sharpness}), targets=targets,
        floors=floors,
        prompts={"suite": opts.prompts, "count": len(gold.prompts), "skipped": gold.skipped,
                 "categories": sorted({p.prompt.category for p in gold.prompts}),
                 "tokens_compared": int(sum(len(p.sequence) for p in gold.prompts)),
                 "generated_tokens": int(sum(len(p.generated) for p in gold.prompts)),
                 "corpus_tokens": int(sum(len(w) for w in gold.corpus))},
        settings={"max_new_tokens": opts.max_new_tokens, "tie_margin": opts.tie_margin, "top_k": opts.top_k,
                  "ppl_window": opts.ppl_window, "corpus_tokens": opts.corpus_tokens, "local_factor": opts.local_factor,
                  "reference": opts.reference.label, "reference_streaming": gold.report.streaming,
                  **({"reference_why": opts.reference_why} if opts.reference_why else {})},
        verdict=accuracy_verdict([(t.label, t.quant, t.verdict["status"]) for t in targets]),
    )


def with_floor(report: RunnerReport, floor: RunnerReport | None, opts: CompareOptions,
               contraction: int | None = None) -> RunnerReport:
    """A copy of `report` judged against its noise floor (see located_against and judged)."""
    return judged(located_against(report, floor, opts, contraction), floor, opts.reference)


def located_against(report: RunnerReport, floor: RunnerReport | None, opts: CompareOptions,
                    contraction: int | None = None) -> RunnerReport:
    """A copy of `report` with per-layer ratios to its noise floor, the ratio each may reach given
    the floor's measured spread, the KL against the floor's, and where to look first. Without a floor each
    layer's own error is judged against the rounding a correct kernel makes (verdict.roundoff_basis, with
    `contraction`, the layer's longest sum; None: the fixed basis), recorded as `roundoff_basis`."""
    out = report.model_copy(deep=True)
    floor_rows = {row["name"]: row for row in floor.layers} if floor else {}
    spread = (floor.spread or {}) if floor else {}
    for row in out.layers:
        if row["name"] in floor_rows:
            f = floor_rows[row["name"]]
            row.update(floor_rel_l2=f["rel_l2"], floor_local_rel_l2=f["local_rel_l2"],
                       ratio=m.ratio_or_none(row["rel_l2"], f["rel_l2"]),
                       local_ratio=m.ratio_or_none(row["local_rel_l2"], f["local_rel_l2"]),
                       rel_spread=m.combined_spread(
                           m.ratio_spread_from_squares(row.get("diff_sq_by_prompt"), f.get("diff_sq_by_prompt")),
                           spread.get("layers", {}).get(row["name"])),
                       local_rel_spread=m.combined_spread(m.ratio_spread_from_squares(
                           row.get("local_diff_sq_by_prompt"), f.get("local_diff_sq_by_prompt"))))
    out.floor = floor.label if floor else None
    out.vs_floor = _vs_floor(out, floor) if floor else None
    out.first_local_excess = find_first_local_excess(out.layers, opts.local_factor, floor is not None, out.dtype,
                                                     contraction)
    out.roundoff_basis = None if floor else roundoff_basis(out.dtype, contraction)
    return out


def located_in_parts(report: RunnerReport, parts: PartsPass, target: RunnerSpec, floor: RunnerSpec | None,
                     opts: CompareOptions, contraction: int | None = None) -> RunnerReport:
    """The located layer's parts (norms, attention, MLP), each on the reference's input, judged
    against the floor's same part: `first_local_excess` gains "part" and "parts"."""
    where = report.first_local_excess
    index = layer_index(where["name"]) if where else None
    if index is None:
        return report
    if parts.refusal:
        report.first_local_excess = {**where, "part": None, "parts": [], "parts_skipped": parts.refusal}
        return report
    try:
        mine, floors = parts.measure(target, floor, index)
    except (RuntimeError, KeyError, IndexError, TypeError, ValueError) as exc:  # an unusual layer: the layer's
        # location and every measurement before it stand; only the look inside it is missing
        report.first_local_excess = {**where, "part": None, "parts": [],
                                     "parts_skipped": f"{type(exc).__name__}: {exc}"[:300]}
        return report
    located = locate_part(part_rows(mine, floors), opts.local_factor, floors is not None, report.dtype, contraction)
    report.first_local_excess = {**where, **located}
    return report


def judged(out: RunnerReport, floor: RunnerReport | None, ref: RunnerSpec, ckpt_quant: QuantInfo | None = None,
           peaks: list[dict] | None = None) -> RunnerReport:
    """`out` (from located_against) with its verdict; `ckpt_quant`: a pre-quantized --target-model's
    (checkpoint_quant), named in the verdict. Out of line where the gold's `peaks` reach the target dtype's
    range, the verdict names that as the likely cause, with the figures."""
    exact = out.device == ref.device and out.dtype == ref.dtype and not out.quant and ckpt_quant is None
    out.verdict = judge(out.model_dump(), floor.model_dump() if floor else None, exact_expected=exact)
    if ckpt_quant is not None:
        out.verdict = with_measures(out.verdict, ckpt_quant, out.dtype, out.floor)
    at_range = dtype_range(peaks, out.dtype) if peaks and out.verdict["status"] in OUT_OF_LINE else None
    if at_range:
        out.verdict = {**out.verdict, "reasons": [*out.verdict["reasons"], range_reason(at_range)],
                       "causes": [at_range]}
    head = head_signature(out.layers, out.first_local_excess, exact, (out.logits or {}).get("kl_mean")) \
        if out.verdict["status"] == Status.FAIL and not at_range else None  # a WARN of flat logits names no place
    if head is not None:  # the layers are right and the logits are not: the place is after the final norm
        out.verdict = {**out.verdict, "reasons": [head_reason(head), *out.verdict["reasons"]]}
    return out


def _vs_floor(t: RunnerReport, f: RunnerReport) -> VsFloor:
    """The target's mean KL against the floor's, with the spread it may show by chance: prompts
    resampled (bootstrap) and the floor rerun on another kernel path (its `spread`)."""
    kl_t, kl_f = t.samples.get("kl_by_prompt"), f.samples.get("kl_by_prompt")
    ratio = m.ratio_or_none(t.logits["kl_mean"], f.logits["kl_mean"], tiny=0.0)  # a flat model's floor is ~1e-9
    boot = m.bootstrap_ratio_sd(np.array(kl_t), np.array(kl_f)) if kl_t and kl_f else float("nan")
    boot_rel = boot / ratio if ratio and np.isfinite(ratio) and np.isfinite(boot) else float("nan")
    kernel = (f.spread or {}).get("kl_mean")
    spread = m.combined_spread(boot_rel, kernel)
    return VsFloor(kl_ratio=ratio, kl_spread=spread, kl_spread_bootstrap=boot_rel,
                   kl_spread_kernel=kernel, k=K_SPREAD)


def check_same_family(reference_dir: Path, target_dir: Path) -> None:
    """--target-model must share the architecture, shapes and tokenizer of the reference model."""
    from llm_adapt.models.spec import load_config, spec_from_config
    from llm_adapt.models.tokenizer import load_tokenizer

    if not Path(target_dir).is_dir():
        raise UsageError(f"--target-model {target_dir}: not a model directory")
    ref, tgt = spec_from_config(load_config(reference_dir)), spec_from_config(load_config(target_dir))
    for field_name in ("architecture", "num_layers", "hidden_size", "vocab_size", "num_heads", "num_kv_heads"):
        if getattr(ref, field_name) != getattr(tgt, field_name):
            raise UsageError(f"--target-model {target_dir}: {field_name} is {getattr(tgt, field_name)!r}, the reference "
                             f"model has {getattr(ref, field_name)!r}; compare checkpoints of the same architecture")
    try:
        same_vocab = load_tokenizer(reference_dir).get_vocab() == load_tokenizer(target_dir).get_vocab()
    except (OSError, ValueError):
        raise UsageError(f"--target-model {target_dir}: has no loadable tokenizer; copy the reference's tokenizer files") from None
    if not same_vocab:
        raise UsageError(f"--target-model {target_dir}: its tokenizer differs from the reference's; token-level comparison needs the same vocabulary")
    problem = transformers_problem(load_spec(target_dir).quant)
    if problem:
        raise UsageError(f"--target-model {target_dir}: {problem}")
