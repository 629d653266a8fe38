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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.prompts import Prompt, corpus_windows, load_prompts, render
from llm_adapt.accuracy.result import AccuracyResult, RunnerReport
from llm_adapt.accuracy.runner import VARIANT_KERNEL, Runner, RunnerSpec, check_device, tensor_names
from llm_adapt.accuracy.verdict import K_SPREAD, allowed_ratio, judge, overall
from llm_adapt.errors import UsageError
from llm_adapt.models.source import ModelSource

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class CompareOptions:
    reference: RunnerSpec
    targets: tuple[RunnerSpec, ...]
    baseline: RunnerSpec | None = None  # None: chosen per target (see floor_for)
    prompts: str = "default"
    max_new_tokens: int = 64
    tie_margin: float = 0.3
    top_k: int = 5
    ppl_window: int = 512
    local_factor: float = 2.0  # a layer's local error "exceeds its floor" above this ratio
    reference_streaming: bool | None = None  # None: stream when the fp32 model would not fit in RAM


@dataclass
class RefPrompt:
    prompt: Prompt
    input_ids: list[int]
    generated: list[int]
    hidden: list[torch.Tensor]
    logits: torch.Tensor

    @property
    def sequence(self) -> list[int]:
        return self.input_ids + self.generated


@dataclass
class Gold:
    """Everything measured on the reference, kept for the targets."""

    prompts: list[RefPrompt]
    corpus: list[list[int]]
    corpus_nll: list[np.ndarray]
    eos_ids: list[int]
    report: RunnerReport | None = None
    names: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # prompts that do not fit, with the reason


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


def eos_ids_of(model_dir: Path, tokenizer) -> list[int]:
    """Stop tokens: the generation config's (else the model config's), plus the tokenizer's."""
    from transformers import AutoConfig, GenerationConfig

    try:
        value = GenerationConfig.from_pretrained(model_dir).eos_token_id
    except OSError:
        value = AutoConfig.from_pretrained(model_dir).eos_token_id
    ids = list(value) if isinstance(value, (list, tuple)) else [value] if value is not None else []
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


class InMemoryReference:
    """The reference as one loaded model, behind the same calls as StreamingReference."""

    def __init__(self, runner: Runner):
        self.runner = runner

    def greedy_all(self, prompts: list[list[int]], max_new_tokens: int, eos_ids: list[int]) -> list[list[int]]:
        return [self.runner.generate(ids, max_new_tokens, eos_ids) for ids in prompts]

    def capture_all(self, sequences: list[list[int]]) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        return [(c.hidden, c.logits) for c in (self.runner.capture(s) for s in sequences)]

    def logits_all(self, sequences: list[list[int]]) -> list[torch.Tensor]:
        return [self.runner.capture(s).logits for s in sequences]


def should_stream(opts: CompareOptions, source: ModelSource) -> bool:
    """Stream when asked, or automatically when the float32 model would not fit in RAM."""
    if opts.reference_streaming is not None:
        return opts.reference_streaming
    import psutil

    from llm_adapt.inspect.weights import parameters_from_weights

    counted = parameters_from_weights(source.path)
    return bool(counted) and counted[0] * 4 > 0.6 * psutil.virtual_memory().available


def open_reference(source: ModelSource, tokenizer, opts: CompareOptions):
    if should_stream(opts, source):
        from llm_adapt.accuracy.streaming import StreamingReference

        if opts.reference.device != "cpu" or opts.reference.dtype != "fp32" or opts.reference.quant:
            raise UsageError("the streaming reference runs on cpu:fp32; use --reference cpu:fp32")
        ref = StreamingReference(source.path)
    else:
        ref = InMemoryReference(Runner(opts.reference, source.path))
    return ref, eos_ids_of(source.path, tokenizer)


def measure_reference(source, tokenizer, prompts, opts, progress) -> Gold:
    started = time.monotonic()
    label = f"reference {opts.reference.label}"
    progress(label, 0, 3)
    ref, eos = open_reference(source, tokenizer, opts)
    load_s = time.monotonic() - started
    prompts, inputs, skipped = fitting_prompts(prompts, [render(tokenizer, p) for p in prompts],
                                               max_positions(source.path), opts.max_new_tokens, "the model's max_position_embeddings")
    if not prompts:
        raise UsageError(f"no prompt of the suite fits the model's {max_positions(source.path)} positions "
                         f"with {opts.max_new_tokens} new tokens; use --prompts quick or a shorter suite")
    generated = ref.greedy_all(inputs, opts.max_new_tokens, eos)
    progress(label, 1, 3)
    captures = ref.capture_all([i + g for i, g in zip(inputs, generated)])
    kept = [RefPrompt(p, i, g, h, lg) for p, i, g, (h, lg) in zip(prompts, inputs, generated, captures)]
    progress(label, 2, 3)
    corpus = corpus_windows(tokenizer, opts.ppl_window)
    corpus_nll = [m.nll(lg[:-1], torch.tensor(w[1:])) for w, lg in zip(corpus, ref.logits_all(corpus))]
    progress(label, 3, 3)
    num_layers = len(kept[0].hidden) - 2
    gold = Gold(kept, corpus, corpus_nll, eos, names=tensor_names(num_layers), skipped=skipped)
    gold.report = _reference_report(opts.reference, gold, tokenizer, load_s, time.monotonic() - started - load_s)
    gold.report.streaming = not isinstance(ref, InMemoryReference)
    return gold


def fitting_prompts(prompts: list[Prompt], inputs: list[list[int]], limit: int | None, new_tokens: int,
                    what: str) -> tuple[list[Prompt], list[list[int]], list[dict[str, Any]]]:
    """The prompts whose tokens plus `new_tokens` fit `limit`, and one skip row for each other."""
    kept, kept_inputs, skipped = [], [], []
    for prompt, ids in zip(prompts, inputs):
        if limit is not None and len(ids) + new_tokens > limit:
            skipped.append({"id": prompt.id, "category": prompt.category,
                            "reason": f"{len(ids)} prompt + {new_tokens} new tokens exceed {what} ({limit})"})
        else:
            kept.append(prompt)
            kept_inputs.append(ids)
    return kept, kept_inputs, skipped


def max_positions(model_dir: Path) -> int | None:
    from llm_adapt.models.spec import load_config

    cfg = load_config(model_dir)
    cfg = cfg.get("text_config", cfg)
    value = cfg.get("max_position_embeddings")
    return int(value) if isinstance(value, int) and value > 0 else None


def _reference_report(spec, gold, tokenizer, load_s, run_s) -> RunnerReport:
    nll = np.concatenate(gold.corpus_nll)
    greedy = [{"id": p.prompt.id, "category": p.prompt.category, "prompt_tokens": len(p.input_ids),
               "ref_tokens": len(p.generated), "ref_text": tokenizer.decode(p.generated, skip_special_tokens=True)}
              for p in gold.prompts]
    return RunnerReport(label=spec.label, device=spec.device, dtype=spec.dtype, load_seconds=round(load_s, 2),
                        run_seconds=round(run_s, 2), layers=[], depth_fit={}, first_local_excess=None,
                        first_nonfinite=None, logits={}, greedy=greedy, greedy_by_category={},
                        perplexity={"ref": float(np.exp(nll.mean())), "tokens": int(len(nll))})


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
                           _sqrt_sd(row.get("diff_sq_by_prompt"), f.get("diff_sq_by_prompt")),
                           spread.get("layers", {}).get(row["name"]))),
                       local_allowed=allowed_ratio(_sqrt_sd(row.get("local_diff_sq_by_prompt"),
                                                            f.get("local_diff_sq_by_prompt"))))
    out.floor = floor.label if floor else None
    out.vs_floor = _vs_floor(out, floor) if floor else None
    out.first_local_excess = _first_local_excess(out.layers, opts.local_factor, floor is not None, out.dtype)
    ref = opts.reference
    exact = out.device == ref.device and out.dtype == ref.dtype and not out.quant
    out.verdict = judge(out.model_dump(), floor.model_dump() if floor else None, exact_expected=exact)
    return out


def _sqrt_sd(target: list[float] | None, floor: list[float] | None) -> float:
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
    stops = eos_ids_of(spec.model_path, tokenizer) if spec.model_path else gold.eos_ids  # the target's own EOS list
    full = [m.TensorAccumulator() for _ in gold.names]
    local = [m.TensorAccumulator() for _ in gold.names]
    logit_stats: dict[str, list[np.ndarray]] = defaultdict(list)
    greedy, logits_nonfinite = [], False
    for i, ref in enumerate(gold.prompts):
        progress(f"target {spec.label}", i, len(gold.prompts))
        capture = runner.capture(ref.sequence, keep_kwargs=True)
        shadow = [capture.hidden[0]] + runner.shadow(capture, ref.hidden)
        for j in range(len(gold.names)):
            full[j].add(ref.hidden[j], capture.hidden[j])
            local[j].add(ref.hidden[j], shadow[j])
        logits_nonfinite |= m.nonfinite(capture.logits)
        _logit_stats(ref, capture.logits, logit_stats, opts.top_k)
        generated = runner.generate(ref.input_ids, opts.max_new_tokens, stops)
        greedy.append(_greedy_row(ref, generated, capture.logits, tokenizer, opts, gold.eos_ids, stops))
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
    layers = {name: _rel_diff(a.summary()["rel_l2"], row["rel_l2"]) for name, a, row in zip(gold.names, acc, floor.layers)}
    return {"method": f"the floor rerun as {variant.label} (eager attention, 1 thread): relative differences",
            "variant": variant.label, "kl_mean": _rel_diff(kl, floor.logits["kl_mean"]), "variant_kl_mean": kl,
            "layers": layers, "seconds": round(time.monotonic() - started, 2)}


def _rel_diff(value: float, base: float) -> float:
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


def greedy_row(ref: RefPrompt, generated: list[int], tokenizer, tie_margin: float,
               mutual: Callable[[int, int], bool | None], ref_stops: list[int],
               target_stops: list[int]) -> dict[str, Any]:
    """One prompt's greedy comparison: first divergence, classified by the reference's own margin there.

    A token differing is classified by the reference's top-1 - top-2 margin; a side that stopped
    where the other went on ("early" / "late" stop) by the reference's margin between stopping and
    going on; a stop where both chose the same token but only one side treats it as a stop is a
    genuine stop divergence (the EOS lists differ). `mutual(k, pos)`: each side's token at
    divergence k is in the other's top-k."""
    k = m.first_divergence(ref.generated, generated)
    row: dict[str, Any] = {
        "id": ref.prompt.id, "category": ref.prompt.category, "ref_tokens": len(ref.generated),
        "target_tokens": len(generated), "matched_tokens": len(ref.generated) if k is None else k,
        "exact": k is None, "first_divergence": k, "divergence": None, "stop": None, "ref_margin": None,
        "mutual_topk": None, "ref_text": tokenizer.decode(ref.generated, skip_special_tokens=True),
        "target_text": tokenizer.decode(generated, skip_special_tokens=True),
    }
    if k is None:
        return row
    pos = len(ref.input_ids) + k - 1  # the position whose logits chose token k
    if k < len(ref.generated) and k < len(generated):
        ref_tok, tgt_tok = ref.generated[k], generated[k]
        row.update(ref_token=tokenizer.decode([ref_tok]), target_token=tokenizer.decode([tgt_tok]))
        if ref_tok in ref_stops or tgt_tok in target_stops:
            ref_stopped = ref_tok in ref_stops
            margin = m.stop_margin(ref.logits[pos], ref_tok, [ref_tok] if ref_stopped else [tgt_tok], ref_stopped)
            return _classified(row, margin, tie_margin, stop="late" if ref_stopped else "early")
        margin = m.top2_margin(ref.logits[pos])
        row["mutual_topk"] = mutual(k, pos)
        return _classified(row, margin, tie_margin)
    return _stop_row(row, ref, generated, k, pos, tie_margin, ref_stops, target_stops)


def _stop_row(row, ref: RefPrompt, generated: list[int], k: int, pos: int, tie_margin: float,
              ref_stops: list[int], target_stops: list[int]) -> dict[str, Any]:
    """One side's tokens are a prefix of the other's: it stopped at k, the other went on."""
    if len(generated) < len(ref.generated):  # the target ended first
        last = generated[-1] if generated else None
        if (last in target_stops and last not in ref_stops) or ref.generated[k] in target_stops:
            row.update(divergence="genuine", stop="early", stop_note="both chose the same token; only the target stops on it")
            return row
        margin = m.stop_margin(ref.logits[pos], ref.generated[k], target_stops, ref_stopped=False)
        return _classified(row, margin, tie_margin, stop="early")
    # the reference ended first: it stopped on a token the target also chose but went past
    row.update(divergence="genuine", stop="late", stop_note=(
        "both chose the same token; only the reference stops on it" if ref.generated and ref.generated[-1] in ref_stops
        else "the target went past the reference's last token"))
    return row


def _classified(row: dict[str, Any], margin: float, tie_margin: float, stop: str | None = None) -> dict[str, Any]:
    row.update(divergence=m.classify_divergence(margin, tie_margin), ref_margin=round(margin, 5), stop=stop)
    return row


def _runner_report(spec, gold, full, local, stats, greedy, corpus_nll, opts) -> RunnerReport:
    layers = []
    for name, f_acc, l_acc in zip(gold.names, full, local):
        row = {"name": name, **f_acc.summary()}
        loc = l_acc.summary()
        row.update(local_rel_l2=loc["rel_l2"], local_cos_min=loc["cos_min"], local_max_abs=loc["max_abs"],
                   local_share_over=loc["share_over"], diff_sq_by_prompt=f_acc.diff_sq_by_prompt,
                   local_diff_sq_by_prompt=l_acc.diff_sq_by_prompt)
        # msprobe's per-dtype standard on the layer's own output from the reference's input (what its
        # single-API check measures); the stricter per-token rule on the accumulated error stays beside it.
        row["msprobe"] = m.msprobe_dtype_rule(loc["cos_tensor"], loc["max_abs"], loc["share_over"], spec.dtype)
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
        greedy=greedy, greedy_by_category=_by_category(greedy),
        samples={"kl_by_prompt": [float(x.sum()) for x in stats["kl"]]},
    )


# Unit roundoff of each dtype: the local error one rounding step per value would give.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}
ROUNDOFF_FACTOR = 4.0  # without a measured floor, a layer may lose this many rounding steps


def _first_local_excess(layers, factor: float, have_floor: bool, dtype: str) -> dict[str, Any] | None:
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


def _by_category(greedy: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in greedy:
        cat = out.setdefault(row["category"], {"prompts": 0, "exact": 0, "matched_tokens": 0, "ref_tokens": 0,
                                                "near_tie": 0, "genuine": 0, "early_stop": 0, "late_stop": 0})
        cat["prompts"] += 1
        cat["exact"] += int(row["exact"])
        cat["matched_tokens"] += row["matched_tokens"]
        cat["ref_tokens"] += row["ref_tokens"]
        if row["divergence"]:
            cat[row["divergence"].replace("-", "_")] += 1
        if row.get("stop"):
            cat[f"{row['stop']}_stop"] += 1
    for cat in out.values():
        cat["exact_rate"] = cat["exact"] / cat["prompts"]
        cat["token_match_rate"] = cat["matched_tokens"] / cat["ref_tokens"] if cat["ref_tokens"] else 1.0
    return out


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
