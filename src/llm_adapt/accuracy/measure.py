"""Measuring one runner against the gold: its teacher-forced pass (every layer's full error), each
layer again on the gold's input (its local error), logits statistics on the same positions, greedy
decoding and corpus NLL. The greedy tokens are read off the teacher-forced pass up to and including the
first token where the target leaves the gold (each position sees what greedy decoding would feed it);
the comparison ends there, as vLLM's tests end it, so no target runs a decode loop. No judging here:
compare.py judges what this measures.

A noise floor is measured once per gold and kept (accuracy/store.py), with the view of it that
endpoint accuracy needs (its log-probs on the gold's sequences) and its own spread on another
kernel path, so `run`'s in-process and endpoint stages, and later calls, share one measurement.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.greedy import by_category, teacher_forced_greedy
from llm_adapt.accuracy.options import CompareOptions, Progress
from llm_adapt.accuracy.reference import Gold, RefPrompt
from llm_adapt.accuracy.result import GreedyRow, KernelSpread, LocatedFault, LogitStats, Perplexity, RunnerReport
from llm_adapt.accuracy.routing import GateRecord, RoutingCount, flips
from llm_adapt.accuracy.runner import VARIANT_KERNEL, Runner, RunnerSpec
from llm_adapt.accuracy.verdict import UNIT_ROUNDOFF, msprobe_dtype_rule, msprobe_rule
from llm_adapt.models.source import ModelSource
from llm_adapt.prompts import render


@dataclass
class FloorData:
    """The in-process noise floor at the served dtype, seen the way the server is seen."""

    logprobs: list[torch.Tensor | None]  # per prompt: [T, V] log-probs on the reference's sequence
    corpus_nll: list[np.ndarray]
    greedy: list[GreedyRow | None]  # its own greedy rows against the reference
    spread: dict[str, Any]  # the same floor on another kernel path: logprobs kept for the top-k view
    variant_logprobs: list[torch.Tensor | None] = field(default_factory=list)


@dataclass
class MeasuredFloor:
    """A floor measured once: its in-process report (with its kernel spread) and its endpoint view."""

    report: RunnerReport
    data: FloorData


@dataclass
class _Kept:
    logprobs: list[torch.Tensor] = field(default_factory=list)
    corpus_nll: list[np.ndarray] = field(default_factory=list)


def evaluate(spec: RunnerSpec, source: ModelSource, gold: Gold, tokenizer, opts: CompareOptions,
             progress: Progress, keep: _Kept | None = None) -> RunnerReport:
    """The runner's measurement against the gold (unjudged); `keep` collects its log-probs and
    corpus NLL for the endpoint view of a floor."""
    checkpoint = checkpoint_tokens(spec.model_path, gold) if spec.model_path else None
    started = time.monotonic()
    with Runner(spec, source.path) as runner:
        load_s = time.monotonic() - started
        passes = _teacher_forced(runner, gold, tokenizer, opts, progress,
                                 checkpoint.stops if checkpoint else gold.eos_ids, keep)
        corpus_nll = _corpus_nll(runner, gold, progress)
        quantized = runner.quantized_linears
    if keep is not None:
        keep.corpus_nll = corpus_nll
    report = _runner_report(spec, gold, passes, corpus_nll, opts)
    report.load_seconds, report.run_seconds = round(load_s, 2), round(time.monotonic() - started - load_s, 2)
    report.quantized_linears = quantized
    if checkpoint:
        report.template_mismatches = checkpoint.template_mismatches
    return report


@dataclass
class _Passes:
    """What the teacher-forced passes over the gold's prompts accumulate."""

    full: list[m.TensorAccumulator]  # each tensor's error on the target's own input
    local: list[m.TensorAccumulator]  # each tensor's error on the gold's input to it
    logit_stats: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    greedy: list[GreedyRow | None] = field(default_factory=list)
    routing: dict[int, RoutingCount] = field(default_factory=lambda: defaultdict(RoutingCount))
    logits_nonfinite: bool = False


def _teacher_forced(runner: Runner, gold: Gold, tokenizer, opts: CompareOptions, progress: Progress,
                    stops: list[int], keep: _Kept | None) -> _Passes:
    """One teacher-forced pass per prompt, each layer again on the gold's input (its local error), the logits
    statistics, and the greedy row read off the pass."""
    label = f"{runner.spec.label}: layers and logits"
    out = _Passes([m.TensorAccumulator() for _ in gold.names], [m.TensorAccumulator() for _ in gold.names],
                  greedy=[None] * len(gold.prompts))
    for i, ref in enumerate(gold.prompts):
        progress(label, i, len(gold.prompts))
        capture = runner.capture(ref.sequence, keep_kwargs=True)
        gates: dict[int, GateRecord] | None = {} if ref.gates else None
        shadow = [capture.hidden[0]] + runner.shadow(capture, ref.hidden, gates_into=gates, reference_inputs=ref.inputs)
        kept = routed_tokens(ref, gates or {}, runner.spec.dtype, out.routing)
        for j in range(len(gold.names)):
            out.full[j].add(ref.hidden[j], capture.hidden[j])
            rows = kept.get(j)
            if rows is None:
                out.local[j].add(ref.hidden[j], shadow[j])
            elif rows.any():  # a token whose routing flipped at a near-tie is counted, not judged
                out.local[j].add(ref.hidden[j][:, rows], shadow[j][:, rows])
        out.logits_nonfinite |= m.nonfinite(capture.logits)
        logprobs = _logit_stats(ref, capture.logits, out.logit_stats, opts.top_k, keep=keep is not None)
        out.greedy[i] = teacher_forced_greedy(ref, capture.logits, tokenizer, opts.top_k, opts.tie_margin,
                                              opts.max_new_tokens, gold.eos_ids, stops)
        if keep is not None:
            keep.logprobs.append(logprobs)
    progress(label, len(gold.prompts), len(gold.prompts))
    return out


def _corpus_nll(runner: Runner, gold: Gold, progress: Progress) -> list[np.ndarray]:
    """The runner's per-token NLL on each corpus window of the gold."""
    label = f"{runner.spec.label}: corpus"
    out = []
    for w, window in enumerate(gold.corpus):
        progress(label, w, len(gold.corpus))
        out.append(m.nll(runner.capture(window).logits[:-1], torch.tensor(window[1:])))
    progress(label, len(gold.corpus), len(gold.corpus))
    return out


def routed_tokens(ref: RefPrompt, gates: dict[int, GateRecord], dtype: str,
                  counts: dict[int, RoutingCount]) -> dict[int, torch.Tensor]:
    """For each MoE layer the target ran on the gold's input: its routing against the gold's counted into
    `counts`, and {tensor index (the layer's, in gold.names): the tokens to judge its own error on}: every token
    but those whose experts flipped at a near-tie (routing.flips)."""
    kept = {}
    for layer, gold_gate in ref.gates.items():
        if layer not in gates:
            continue
        flipped, near_tie = flips(gold_gate, gates[layer].chosen, UNIT_ROUNDOFF[dtype])
        counts[layer].add(flipped, near_tie)
        kept[layer + 1] = ~near_tie
    return kept


@dataclass(frozen=True)
class CheckpointTokens:
    """What a --target-model's own tokenizer says: its stop tokens (its generation config and its EOS, as a
    deployment of it would stop), and the prompts its chat template renders differently from the
    reference's (a deployment of it would not see the tokens that were judged)."""

    stops: list[int]
    template_mismatches: list[str]


def checkpoint_tokens(model_dir: Path, gold: Gold) -> CheckpointTokens:
    from llm_adapt.models.tokenizer import eos_ids_of, load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    return CheckpointTokens(stops=eos_ids_of(model_dir, tokenizer),
                            template_mismatches=[ref.prompt.id for ref in gold.prompts
                                                 if render(tokenizer, ref.prompt) != ref.input_ids])


def kernel_spread(spec: RunnerSpec, floor: RunnerReport, source: ModelSource, gold: Gold,
                  progress: Progress, keep: _Kept | None = None) -> KernelSpread:
    """How much the floor itself moves when only the kernel path changes: the same runner with
    eager attention, teacher-forced on the same sequences. Relative differences of
    its mean KL and of each layer's rel. L2 error against the floor's; `keep` collects its log-probs."""
    started = time.monotonic()
    variant = replace(spec, kernel=VARIANT_KERNEL)
    acc = [m.TensorAccumulator() for _ in gold.names]
    kls = []
    with Runner(variant, source.path) as runner:
        for i, ref in enumerate(gold.prompts):
            progress(f"floor spread {variant.label}", i, len(gold.prompts))
            capture = runner.capture(ref.sequence)
            for j in range(len(gold.names)):
                acc[j].add(ref.hidden[j], capture.hidden[j])
            kl, logprobs = m.kl_rows(ref.logits, capture.logits, keep_logprobs=keep is not None)
            kls.append(kl)
            if keep is not None:
                keep.logprobs.append(logprobs)
    progress(f"floor spread {variant.label}", len(gold.prompts), len(gold.prompts))
    kl = float(np.concatenate(kls).mean())
    layers = {name: relative_change(a.summary()["rel_l2"], row["rel_l2"])
              for name, a, row in zip(gold.names, acc, floor.layers)}
    return KernelSpread(method=f"the floor rerun as {variant.label} (eager attention): relative differences",
                        variant=variant.label, kl_mean=relative_change(kl, floor.logits["kl_mean"]), variant_kl_mean=kl,
                        layers=layers, seconds=round(time.monotonic() - started, 2))


def relative_change(value: float, base: float) -> float:
    if not (np.isfinite(value) and np.isfinite(base)) or base <= 1e-12:
        return 0.0 if np.isfinite(value) and abs(value - base) <= 1e-12 else float("nan")
    return abs(value / base - 1)


def _logit_stats(ref: RefPrompt, logits: torch.Tensor, out: dict[str, list[np.ndarray]], k: int,
                 keep: bool = False) -> torch.Tensor | None:
    """The position statistics of one prompt into `out`; returns the target's log-probs (float64) when
    `keep` (a floor's endpoint view needs them)."""
    stats, logprobs = m.position_stats(ref.logits, logits, torch.tensor(ref.sequence[1:]), k, keep_logprobs=keep)
    for name, values in stats.items():
        out[name].append(values)
    return logprobs


def _runner_report(spec: RunnerSpec, gold: Gold, passes: _Passes, corpus_nll: list[np.ndarray],
                   opts: CompareOptions) -> RunnerReport:
    layers = []
    for name, f_acc, l_acc in zip(gold.names, passes.full, passes.local):
        row = {"name": name, **f_acc.summary()}
        loc = l_acc.summary()
        row.update(local_rel_l2=loc["rel_l2"], local_cos_min=loc["cos_min"], local_max_abs=loc["max_abs"],
                   local_share_over=loc["share_over"], diff_sq_by_prompt=f_acc.diff_sq_by_prompt,
                   local_diff_sq_by_prompt=l_acc.diff_sq_by_prompt)
        row["msprobe"] = _msprobe_dtype_status(loc, spec.dtype, gold.report.dtype if gold.report else None)
        if row["nan_mismatch"]:
            row["msprobe"] = "error"
        row["msprobe_per_token"] = msprobe_rule(row["cos_min"], row["max_abs"], row["nan_mismatch"])
        layers.append(row)
    for layer, count in passes.routing.items():  # tensor index layer + 1: embeddings come first
        layers[layer + 1]["routing"] = count.summary()
    stats, greedy = passes.logit_stats, passes.greedy
    first_nonfinite = next((r["name"] for r in layers if r["nan_mismatch"]), None)
    return RunnerReport(
        label=spec.label, device=spec.device, dtype=spec.dtype, quant=spec.quant,
        model_path=str(spec.model_path) if spec.model_path else None, load_seconds=0, run_seconds=0,
        layers=layers, depth_fit=m.linear_fit(list(range(len(layers))), [r["rel_l2"] for r in layers]),
        first_local_excess=None,
        first_nonfinite=first_nonfinite or ("logits" if passes.logits_nonfinite else None),
        logits=_logits_summary(stats, opts.tie_margin), perplexity=_perplexity(gold.corpus_nll, corpus_nll),
        greedy=greedy, greedy_by_category=by_category(greedy),
        samples={"kl_by_prompt": [float(x.sum()) for x in stats["kl"]]},
    )


def _msprobe_dtype_status(loc: LocatedFault, dtype: str, reference_dtype: str | None) -> str:
    """msprobe's per-dtype standard on the layer's own output from the reference's input.

    msprobe applies it to one API fed the same inputs in both runs. A bf16 target fed an fp32 reference's
    activations through bf16-rounded weights breaks that premise: about a quarter of each clean layer's
    elements are off by over 1% from weight rounding alone (measured on SmolLM2), so every layer would
    read "error" under a PASS verdict. Across dtypes the ratio to the floor judges instead."""
    if reference_dtype is not None and reference_dtype != dtype:
        return "n/a"
    return msprobe_dtype_rule(loc["cos_tensor"], loc["max_abs"], loc["share_over"], dtype)


def _logits_summary(stats, tie_margin: float) -> LogitStats:
    """The logits statistics summed up. Same top-1 is also given on the positions outside the gold's tie
    margin (`same_top1_decisive`), as endpoint_metrics.summarize gives it for a server: on a near-flat
    distribution a top-1 flip inside the margin is rounding, not a fault."""
    kl = np.concatenate(stats["kl"])
    same = np.concatenate(stats["same_top1"])
    dp = np.concatenate(stats["dp"])
    kl_mean, kl_sem = m.mean_sem(kl)
    rate, err = m.rate_with_error(int(same.sum()), len(same))
    decisive = same[np.concatenate(stats["ref_margin"]) > tie_margin]
    d_rate, d_err = m.rate_with_error(int(decisive.sum()), len(decisive))
    dp_mean, dp_sem = m.mean_sem(dp)
    return {"positions": int(len(kl)), "kl_mean": kl_mean, "kl_sem": kl_sem,
            **{f"kl_{k}": v for k, v in m.percentiles(kl).items()},
            "same_top1": rate, "same_top1_err": err,
            "decisive_positions": int(len(decisive)), "same_top1_decisive": d_rate, "same_top1_decisive_err": d_err,
            "tie_margin": tie_margin, "topk_overlap": float(np.concatenate(stats["topk"]).mean()),
            "delta_p_mean": dp_mean, "delta_p_sem": dp_sem, "delta_p_rms": float(np.sqrt((dp ** 2).mean())),
            "max_abs_logit_diff": float(np.max(np.concatenate(stats["max_abs"]))),
            "logit_cos_mean": float(np.concatenate(stats["cos"]).mean())}


def _perplexity(ref_nll: list[np.ndarray], tgt_nll: list[np.ndarray]) -> Perplexity:
    r, t = np.concatenate(ref_nll), np.concatenate(tgt_nll)
    return {"ref": float(np.exp(r.mean())), "target": float(np.exp(t.mean())), "ln_ratio": m.ln_ppl_ratio(r, t),
            "ln_ratio_sem": m.ln_ppl_ratio_sem(r, t), "tokens": int(len(r))}


def measure_floor(spec: RunnerSpec, source: ModelSource, gold: Gold, tokenizer, opts: CompareOptions,
                  progress: Progress, fits: Callable[[RefPrompt], bool] | None = None) -> MeasuredFloor:
    """The floor on the gold's prompts with its kernel spread, measured once per gold (cached).

    `fits`: the prompts a server can be judged on; the others are not measured (their rows are
    None), unless a floor of the whole gold is at hand already."""
    from llm_adapt.accuracy import store

    key = floor_key(gold, spec, opts)
    cached = _cached_floor(key)
    if cached is not None:
        progress(f"floor {spec.label} (cached)", 1, 1)
        return cached if fits is None else _only(cached, [fits(p) for p in gold.prompts])
    mask = [fits(p) for p in gold.prompts] if fits is not None else None
    if mask is not None and not all(mask):
        subset = replace(gold, prompts=[p for p, ok in zip(gold.prompts, mask) if ok])
        return _only(measure_floor(spec, source, subset, tokenizer, opts, progress), mask, spread_out=True)
    kept, variant = _Kept(), _Kept()
    report = evaluate(spec, source, gold, tokenizer, opts, progress, keep=kept)
    report.spread = kernel_spread(spec, report, source, gold, progress, keep=variant)
    data = FloorData(kept.logprobs, kept.corpus_nll, list(report.greedy),
                     {"method": f"the floor rerun as {report.spread['variant']} (eager attention), through "
                                f"the same top-k view; and runs of about {m.BLOCK_POSITIONS} positions within each "
                                "prompt resampled (block bootstrap)",
                      "variant": report.spread["variant"]}, variant.logprobs)
    floor = MeasuredFloor(report, data)
    if key:
        save_floor(key, floor)
        store.remember("floor", key, floor)
    return floor


def measure_target(spec: RunnerSpec, source: ModelSource, gold: Gold, tokenizer, opts: CompareOptions,
                   progress: Progress) -> RunnerReport:
    """A target's report: the one the same runner got where it was measured on this gold as a floor
    before (an endpoint stage's, kept in the measurement cache), not measured twice; else measured now."""
    cached = cached_floor(gold, spec, opts)
    return cached.report if cached is not None else evaluate(spec, source, gold, tokenizer, opts, progress)


def cached_floor(gold: Gold, spec: RunnerSpec, opts: CompareOptions) -> MeasuredFloor | None:
    """The floor of `spec` on this gold from the measurement cache (memory, then disk), or None."""
    return _cached_floor(floor_key(gold, spec, opts))


def _cached_floor(key: str | None) -> MeasuredFloor | None:
    from llm_adapt.accuracy import store

    cached = (store.recall("floor", key) or load_floor(key)) if key else None
    if cached is not None:
        store.remember("floor", key, cached)
    return cached


def _only(floor: MeasuredFloor, mask: list[bool], spread_out: bool = False) -> MeasuredFloor:
    """The floor's endpoint view on the prompts of `mask` (None elsewhere), aligned with the gold's
    prompts; `spread_out`: the floor holds just the masked prompts, in order."""
    d = floor.data

    def aligned(rows: list) -> list:
        if not spread_out:
            return [row if ok else None for row, ok in zip(rows, mask)]
        it = iter(rows)
        return [next(it) if ok else None for ok in mask]

    return MeasuredFloor(floor.report, FloorData(aligned(d.logprobs), d.corpus_nll, aligned(d.greedy), d.spread,
                                                 aligned(d.variant_logprobs)))


def floor_key(gold: Gold, spec: RunnerSpec, opts: CompareOptions) -> str | None:
    """Everything a floor's numbers depend on beyond its gold; None when the gold has no key."""
    from llm_adapt import cache

    if not gold.key or spec.model_path is not None:
        return None
    return cache.digest({"gold": gold.key, "runner": [spec.device, spec.dtype, spec.quant, spec.kernel, spec.emulated],
                         "tie_margin": opts.tie_margin, "top_k": opts.top_k, "local_factor": opts.local_factor,
                         "prompts": [p.prompt.id for p in gold.prompts]})


def save_floor(key: str, floor: MeasuredFloor) -> None:
    from safetensors.torch import save_file

    from llm_adapt.accuracy import store

    d = floor.data

    def write(directory: Path) -> None:
        # float32 on disk (half the bytes; the log-probs came from float32 logits), float64 again on load
        tensors = {f"logprobs.{i}": t.float().contiguous() for i, t in enumerate(d.logprobs) if t is not None}
        tensors |= {f"variant.{i}": t.float().contiguous() for i, t in enumerate(d.variant_logprobs) if t is not None}
        tensors |= {f"corpus_nll.{w}": torch.from_numpy(np.ascontiguousarray(n)) for w, n in enumerate(d.corpus_nll)}
        save_file(tensors, directory / "floor.safetensors")
        (directory / "floor.json").write_text(json.dumps({
            "report": floor.report.model_dump(), "greedy": d.greedy, "spread": d.spread,
            "prompts": len(d.logprobs), "variant": len(d.variant_logprobs), "corpus": len(d.corpus_nll)},
            default=_plain))

    store.store("floor", key, write, {"runner": floor.report.label})


def load_floor(key: str) -> MeasuredFloor | None:
    from safetensors.torch import load_file

    from llm_adapt.accuracy import store

    path = store.lookup("floor", key)
    if path is None:
        return None
    data = json.loads((path / "floor.json").read_text())
    tensors = load_file(path / "floor.safetensors")
    report = RunnerReport.model_validate(data["report"])
    report.reused = store.reuse_note(store.meta_of(path))
    def f64(name: str) -> torch.Tensor | None:
        return tensors[name].double() if name in tensors else None

    floor = FloorData([f64(f"logprobs.{i}") for i in range(data["prompts"])],
                      [tensors[f"corpus_nll.{w}"].numpy() for w in range(data["corpus"])], data["greedy"],
                      data["spread"], [f64(f"variant.{i}") for i in range(data["variant"])])
    return MeasuredFloor(report, floor)


def _plain(value):
    """JSON for the numpy values a report carries."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")
