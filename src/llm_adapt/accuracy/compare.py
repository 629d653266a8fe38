"""In-process accuracy: the gold reference against targets, each judged against its noise floor.

Order of work, so each model is loaded once:
1. reference: greedy continuation of every prompt, then one teacher-forced pass over
   prompt + continuation capturing every layer and the logits; corpus NLL;
2. each noise floor and each target: the same teacher-forced pass (full error), every layer
   again on the reference's input (local error), logits metrics on the same positions, free
   greedy decoding (divergences classified with the reference's margin), corpus NLL.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.greedy import by_category, greedy_row
from llm_adapt.accuracy.options import CompareOptions, Progress
from llm_adapt.prompts import load_prompts, render
from llm_adapt.accuracy.reference import Gold, RefPrompt, eos_ids_of, measure_reference
from llm_adapt.accuracy.result import AccuracyResult, RunnerReport
from llm_adapt.accuracy.runner import VARIANT_KERNEL, Runner, RunnerSpec, check_device
from llm_adapt.accuracy.verdict import K_SPREAD, allowed_ratio, judge, overall
from llm_adapt.errors import UsageError
from llm_adapt.models.quant import transformers_problem, with_measures
from llm_adapt.models.source import ModelSource
from llm_adapt.models.spec import load_spec



def floor_for(target: RunnerSpec, reference: RunnerSpec, explicit: RunnerSpec | None) -> RunnerSpec | None:
    """The runner whose error vs the gold is this target's noise floor.

    Default: the reference's device at the target's dtype and quantization (so quantization error
    is separated from backend error); for a target already on the reference's device, the
    unquantized version of it; None when the target itself is that floor.
    """
    if explicit is not None:
        return explicit
    floor = replace(target, device=reference.device, model_path=None)
    if floor == target:
        floor = replace(target, quant=None) if target.quant else None
    return floor if floor != reference else None


def compare(source: ModelSource, opts: CompareOptions, progress: Progress | None = None,
            keep_gold: list | None = None) -> AccuracyResult:
    """In-process comparison; the measured reference is appended to `keep_gold` for reuse."""
    from transformers import AutoTokenizer

    progress = progress or (lambda what, done, total: None)
    for spec in (opts.reference, *opts.targets, *([opts.baseline] if opts.baseline else [])):
        check_device(spec.device)  # a missing device fails before any model loads
    tokenizer = AutoTokenizer.from_pretrained(source.path)
    prompts = load_prompts(opts.prompts)
    gold = measure_reference(source, tokenizer, prompts, opts, progress)
    if keep_gold is not None:
        keep_gold.append(gold)
    done: dict[RunnerSpec, RunnerReport] = {}  # each distinct runner is measured once
    floors: dict[RunnerSpec, RunnerReport] = {}
    targets = []
    for target in opts.targets:
        floor = floor_for(target, opts.reference, opts.baseline)
        for spec in (floor, target):
            if spec is not None and spec not in done:
                done[spec] = evaluate(spec, source, gold, tokenizer, opts, progress)
        if floor is not None and floor not in floors:
            done[floor].spread = kernel_spread(floor, done[floor], source, gold, progress)
            floors[floor] = done[floor]
        targets.append(with_floor(done[target], done.get(floor), opts))
    return AccuracyResult(
        model={"name": source.name, "path": str(source.path)},
        reference=gold.report, floors=list(floors.values()), targets=targets,
        prompts={"suite": opts.prompts, "count": len(gold.prompts), "skipped": gold.skipped,
                 "categories": sorted({p.prompt.category for p in gold.prompts}),
                 "tokens_compared": int(sum(len(p.sequence) for p in gold.prompts)),
                 "generated_tokens": int(sum(len(p.generated) for p in gold.prompts)),
                 "corpus_tokens": int(sum(len(w) for w in gold.corpus))},
        settings={"max_new_tokens": opts.max_new_tokens, "tie_margin": opts.tie_margin, "top_k": opts.top_k,
                  "ppl_window": opts.ppl_window, "local_factor": opts.local_factor,
                  "reference": opts.reference.label, "reference_streaming": gold.report.streaming},
        verdict=overall([t.verdict for t in targets]) | {"targets": {t.label: t.verdict["status"] for t in targets}},
    )


def with_floor(report: RunnerReport, floor: RunnerReport | None, opts: CompareOptions) -> RunnerReport:
    """A copy of `report` judged against its noise floor: per-layer ratios and the ratio each may
    reach given the floor's measured spread, where to look first, verdict."""
    out = report.model_copy(deep=True)
    floor_rows = {row["name"]: row for row in floor.layers} if floor else {}
    spread = (floor.spread or {}) if floor else {}
    for row in out.layers:
        if row["name"] in floor_rows:
            f = floor_rows[row["name"]]
            row.update(floor_rel_l2=f["rel_l2"], floor_local_rel_l2=f["local_rel_l2"],
                       ratio=m.ratio_or_none(row["rel_l2"], f["rel_l2"]),
                       local_ratio=m.ratio_or_none(row["local_rel_l2"], f["local_rel_l2"]),
                       allowed=allowed_ratio(m.combined_spread(
                           ratio_spread_from_squares(row.get("diff_sq_by_prompt"), f.get("diff_sq_by_prompt")),
                           spread.get("layers", {}).get(row["name"]))),
                       local_allowed=allowed_ratio(ratio_spread_from_squares(row.get("local_diff_sq_by_prompt"),
                                                            f.get("local_diff_sq_by_prompt"))))
    out.floor = floor.label if floor else None
    out.vs_floor = _vs_floor(out, floor) if floor else None
    out.first_local_excess = find_first_local_excess(out.layers, opts.local_factor, floor is not None, out.dtype)
    ref = opts.reference
    ckpt_quant = load_spec(Path(out.model_path)).quant if out.model_path else None  # a pre-quantized --target-model
    exact = out.device == ref.device and out.dtype == ref.dtype and not out.quant and ckpt_quant is None
    out.verdict = judge(out.model_dump(), floor.model_dump() if floor else None, exact_expected=exact)
    if ckpt_quant is not None:
        out.verdict = with_measures(out.verdict, ckpt_quant, out.dtype, out.floor)
    return out


def ratio_spread_from_squares(target: list[float] | None, floor: list[float] | None) -> float:
    """Relative spread of a rel-L2 ratio from the prompts' squared errors (half that of the squares')."""
    if not target or not floor:
        return float("nan")
    ratio_sq = m.ratio_or_none(sum(target), sum(floor))
    sd = m.bootstrap_ratio_sd(np.array(target), np.array(floor))
    return 0.5 * sd / ratio_sq if ratio_sq and np.isfinite(ratio_sq) else float("nan")


def _vs_floor(t: RunnerReport, f: RunnerReport) -> dict[str, Any]:
    """The target's mean KL against the floor's, with the spread it may show by chance: prompts
    resampled (bootstrap) and the floor rerun on another kernel path (its `spread`)."""
    kl_t, kl_f = t.samples.get("kl_by_prompt"), f.samples.get("kl_by_prompt")
    ratio = m.ratio_or_none(t.logits["kl_mean"], f.logits["kl_mean"])
    boot = m.bootstrap_ratio_sd(np.array(kl_t), np.array(kl_f)) if kl_t and kl_f else float("nan")
    boot_rel = boot / ratio if ratio and np.isfinite(ratio) and np.isfinite(boot) else float("nan")
    kernel = (f.spread or {}).get("kl_mean")
    spread = m.combined_spread(boot_rel, kernel)
    return {"kl_ratio": ratio, "kl_allowed": allowed_ratio(spread), "kl_spread": spread,
            "kl_spread_bootstrap": boot_rel, "kl_spread_kernel": kernel, "k": K_SPREAD}


def evaluate(spec: RunnerSpec, source: ModelSource, gold: Gold, tokenizer, opts: CompareOptions,
             progress: Progress) -> RunnerReport:
    started = time.monotonic()
    runner = Runner(spec, source.path)
    load_s = time.monotonic() - started
    stops = own_stop_ids(spec.model_path) if spec.model_path else gold.eos_ids
    full = [m.TensorAccumulator() for _ in gold.names]
    local = [m.TensorAccumulator() for _ in gold.names]
    logit_stats: dict[str, list[np.ndarray]] = defaultdict(list)
    greedy, logits_nonfinite = [], False
    progress(f"target {spec.label}: greedy", 0, len(gold.prompts))
    continuations = runner.generate_all([ref.input_ids for ref in gold.prompts], opts.max_new_tokens, stops)
    for i, ref in enumerate(gold.prompts):
        progress(f"target {spec.label}", i, len(gold.prompts))
        capture = runner.capture(ref.sequence, keep_kwargs=True)
        shadow = [capture.hidden[0]] + runner.shadow(capture, ref.hidden)
        for j in range(len(gold.names)):
            full[j].add(ref.hidden[j], capture.hidden[j])
            local[j].add(ref.hidden[j], shadow[j])
        logits_nonfinite |= m.nonfinite(capture.logits)
        _logit_stats(ref, capture.logits, logit_stats, opts.top_k)
        greedy.append(_greedy_row(ref, continuations[i], capture.logits, tokenizer, opts, gold.eos_ids, stops))
    progress(f"target {spec.label}", len(gold.prompts), len(gold.prompts))
    corpus_nll = [m.nll(runner.capture(w).logits[:-1], torch.tensor(w[1:])) for w in gold.corpus]
    quantized = runner.quantized_linears
    runner.close()
    report = _runner_report(spec, gold, full, local, logit_stats, greedy, corpus_nll, opts)
    if logits_nonfinite and not report.first_nonfinite:
        report.first_nonfinite = "logits"
    report.load_seconds, report.run_seconds = round(load_s, 2), round(time.monotonic() - started - load_s, 2)
    report.quantized_linears = quantized
    if spec.model_path:
        report.template_mismatches = template_mismatches(spec.model_path, gold)
    return with_floor(report, None, opts)


def own_stop_ids(model_dir: Path) -> list[int]:
    """A --target-model's own stop tokens: its generation config and its own tokenizer's EOS, as a
    deployment of it would stop."""
    from transformers import AutoTokenizer

    return eos_ids_of(model_dir, AutoTokenizer.from_pretrained(model_dir))


def template_mismatches(model_dir: Path, gold: Gold) -> list[str]:
    """Prompts the target checkpoint's own tokenizer and chat template render differently from the
    reference's: a deployment of it would not see the tokens that were judged."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return [ref.prompt.id for ref in gold.prompts if render(tokenizer, ref.prompt) != ref.input_ids]


def kernel_spread(spec: RunnerSpec, floor: RunnerReport, source: ModelSource, gold: Gold,
                  progress: Progress) -> dict[str, Any]:
    """How much the floor itself moves when only the kernel path changes: the same runner with
    eager attention and one thread, teacher-forced on the same sequences. Relative differences of
    its mean KL and of each layer's rel. L2 error against the floor's."""
    started = time.monotonic()
    variant = replace(spec, kernel=VARIANT_KERNEL)
    runner = Runner(variant, source.path)
    acc = [m.TensorAccumulator() for _ in gold.names]
    kls = []
    for i, ref in enumerate(gold.prompts):
        progress(f"floor spread {variant.label}", i, len(gold.prompts))
        capture = runner.capture(ref.sequence)
        for j in range(len(gold.names)):
            acc[j].add(ref.hidden[j], capture.hidden[j])
        kls.append(m.kl_per_token(ref.logits, capture.logits))
    runner.close()
    kl = float(np.concatenate(kls).mean())
    layers = {name: relative_change(a.summary()["rel_l2"], row["rel_l2"])
              for name, a, row in zip(gold.names, acc, floor.layers)}
    return {"method": f"the floor rerun as {variant.label} (eager attention, 1 thread): relative differences",
            "variant": variant.label, "kl_mean": relative_change(kl, floor.logits["kl_mean"]), "variant_kl_mean": kl,
            "layers": layers, "seconds": round(time.monotonic() - started, 2)}


def relative_change(value: float, base: float) -> float:
    if not (np.isfinite(value) and np.isfinite(base)) or base <= 1e-12:
        return 0.0 if np.isfinite(value) and abs(value - base) <= 1e-12 else float("nan")
    return abs(value / base - 1)


def _logit_stats(ref: RefPrompt, logits: torch.Tensor, out: dict[str, list[np.ndarray]], k: int) -> None:
    r, t = ref.logits, logits
    nxt = torch.tensor(ref.sequence[1:])
    out["kl"].append(m.kl_per_token(r, t))
    out["same_top1"].append((r.argmax(-1) == t.argmax(-1)).numpy())
    out["topk"].append(m.topk_overlap(r, t, k))
    out["dp"].append(m.delta_p(r[:-1], t[:-1], nxt))
    out["max_abs"].append(np.array([float((t - r).abs().max())]))
    out["cos"].append(m.token_cosines(r, t).numpy())


def _greedy_row(ref: RefPrompt, generated: list[int], logits: torch.Tensor, tokenizer, opts,
                ref_stops: list[int], target_stops: list[int]) -> dict[str, Any]:
    def mutual(k: int, pos: int) -> bool:
        return m.mutual_topk(ref.logits[pos], logits[pos], ref.generated[k], generated[k], opts.top_k)

    return greedy_row(ref, generated, tokenizer, opts.tie_margin, mutual, ref_stops, target_stops)


def _runner_report(spec, gold, full, local, stats, greedy, corpus_nll, opts) -> RunnerReport:
    layers = []
    for name, f_acc, l_acc in zip(gold.names, full, local):
        row = {"name": name, **f_acc.summary()}
        loc = l_acc.summary()
        row.update(local_rel_l2=loc["rel_l2"], local_cos_min=loc["cos_min"], local_max_abs=loc["max_abs"],
                   local_share_over=loc["share_over"], diff_sq_by_prompt=f_acc.diff_sq_by_prompt,
                   local_diff_sq_by_prompt=l_acc.diff_sq_by_prompt)
        row["msprobe"] = _msprobe_dtype_status(loc, spec.dtype, gold.report.dtype if gold.report else None)
        if row["nan_mismatch"]:
            row["msprobe"] = "error"
        row["msprobe_per_token"] = m.msprobe_rule(row["cos_min"], row["max_abs"], row["nan_mismatch"])
        layers.append(row)
    return RunnerReport(
        label=spec.label, device=spec.device, dtype=spec.dtype, quant=spec.quant,
        model_path=str(spec.model_path) if spec.model_path else None, load_seconds=0, run_seconds=0,
        layers=layers, depth_fit=m.linear_fit(list(range(len(layers))), [r["rel_l2"] for r in layers]),
        first_local_excess=None,
        first_nonfinite=next((r["name"] for r in layers if r["nan_mismatch"]), None),
        logits=_logits_summary(stats), perplexity=_perplexity(gold.corpus_nll, corpus_nll),
        greedy=greedy, greedy_by_category=by_category(greedy),
        samples={"kl_by_prompt": [float(x.sum()) for x in stats["kl"]]},
    )


def _msprobe_dtype_status(loc: dict[str, Any], dtype: str, reference_dtype: str | None) -> str:
    """msprobe's per-dtype standard on the layer's own output from the reference's input.

    msprobe applies it to one API fed the same inputs in both runs. A bf16 target fed an fp32 reference's
    activations through bf16-rounded weights breaks that premise: about a quarter of each clean layer's
    elements are off by over 1% from weight rounding alone (measured on SmolLM2), so every layer would
    read "error" under a PASS verdict. Across dtypes the ratio to the floor judges instead."""
    if reference_dtype is not None and reference_dtype != dtype:
        return "n/a"
    return m.msprobe_dtype_rule(loc["cos_tensor"], loc["max_abs"], loc["share_over"], dtype)


# Unit roundoff of each dtype: the local error one rounding step per value would give.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}
ROUNDOFF_FACTOR = 4.0  # without a measured floor, a layer may lose this many rounding steps


def find_first_local_excess(layers, factor: float, have_floor: bool, dtype: str) -> dict[str, Any] | None:
    """The first layer whose own (local) error is out of line: above `factor` x its measured noise
    floor, or, with no floor, above a few unit roundoffs of the runner's dtype."""
    for row in layers:
        value = row["local_rel_l2"]
        if have_floor:
            ratio, basis = row.get("local_ratio"), "noise floor"
            excess = ratio is not None and ratio > factor * row.get("local_allowed", 1.0)
        else:
            bound = ROUNDOFF_FACTOR * UNIT_ROUNDOFF[dtype]
            ratio, basis = value / bound, f"{ROUNDOFF_FACTOR:g} x {dtype} unit roundoff"
            excess = ratio > 1
        if excess or not np.isfinite(value):
            return {"name": row["name"], "local_rel_l2": value, "ratio": ratio, "basis": basis}
    return None


def _logits_summary(stats) -> dict[str, Any]:
    kl = np.concatenate(stats["kl"])
    same = np.concatenate(stats["same_top1"])
    dp = np.concatenate(stats["dp"])
    kl_mean, kl_sem = m.mean_sem(kl)
    rate, err = m.rate_with_error(int(same.sum()), len(same))
    dp_mean, dp_sem = m.mean_sem(dp)
    return {"positions": int(len(kl)), "kl_mean": kl_mean, "kl_sem": kl_sem,
            **{f"kl_{k}": v for k, v in m.percentiles(kl).items()},
            "same_top1": rate, "same_top1_err": err, "topk_overlap": float(np.concatenate(stats["topk"]).mean()),
            "delta_p_mean": dp_mean, "delta_p_sem": dp_sem, "delta_p_rms": float(np.sqrt((dp ** 2).mean())),
            "max_abs_logit_diff": float(np.max(np.concatenate(stats["max_abs"]))),
            "logit_cos_mean": float(np.concatenate(stats["cos"]).mean())}


def _perplexity(ref_nll: list[np.ndarray], tgt_nll: list[np.ndarray]) -> dict[str, Any]:
    r, t = np.concatenate(ref_nll), np.concatenate(tgt_nll)
    return {"ref": float(np.exp(r.mean())), "target": float(np.exp(t.mean())), "ln_ratio": m.ln_ppl_ratio(r, t),
            "ln_ratio_sem": m.ln_ppl_ratio_sem(r, t), "tokens": int(len(r))}


def check_same_family(reference_dir: Path, target_dir: Path) -> None:
    """--target-model must share the architecture, shapes and tokenizer of the reference model."""
    from transformers import AutoTokenizer

    from llm_adapt.models.spec import load_config, spec_from_config

    if not Path(target_dir).is_dir():
        raise UsageError(f"--target-model {target_dir}: not a model directory")
    ref, tgt = spec_from_config(load_config(reference_dir)), spec_from_config(load_config(target_dir))
    for field_name in ("architecture", "num_layers", "hidden_size", "vocab_size", "num_heads", "num_kv_heads"):
        if getattr(ref, field_name) != getattr(tgt, field_name):
            raise UsageError(f"--target-model {target_dir}: {field_name} is {getattr(tgt, field_name)!r}, the reference "
                             f"model has {getattr(ref, field_name)!r}; compare checkpoints of the same architecture")
    try:
        same_vocab = AutoTokenizer.from_pretrained(reference_dir).get_vocab() == AutoTokenizer.from_pretrained(target_dir).get_vocab()
    except (OSError, ValueError):
        raise UsageError(f"--target-model {target_dir}: has no loadable tokenizer; copy the reference's tokenizer files") from None
    if not same_vocab:
        raise UsageError(f"--target-model {target_dir}: its tokenizer differs from the reference's; token-level comparison needs the same vocabulary")
    problem = transformers_problem(load_spec(target_dir).quant)
    if problem:
        raise UsageError(f"--target-model {target_dir}: {problem}")
