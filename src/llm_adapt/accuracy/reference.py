"""The gold reference: greedy continuations of the prompts that fit, one teacher-forced capture of
every layer and the logits, and the corpus NLL; measured once and kept for every target."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.result import Peak, RunnerReport, Sharpness
from llm_adapt.accuracy.routing import GATE_FIELDS, GateRecord
from llm_adapt.accuracy.runner import Runner, tensor_names
from llm_adapt.accuracy.verdict import longest_sum
from llm_adapt.errors import UsageError
from llm_adapt.messages import reason
from llm_adapt.models.quant import transformers_problem
from llm_adapt.models.source import ModelSource
from llm_adapt.models.spec import load_spec
from llm_adapt.models.tokenizer import eos_ids_of
from llm_adapt.prompts import Prompt, corpus_windows, render


@dataclass
class RefPrompt:
    prompt: Prompt
    input_ids: list[int]
    generated: list[int]
    hidden: list[torch.Tensor]
    logits: torch.Tensor
    gates: dict[int, GateRecord] = field(default_factory=dict)  # each expert router's view, by layer index
    inputs: dict[int, torch.Tensor] = field(default_factory=dict)  # runner.Capture.inputs: computed between modules

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
    key: str | None = None  # the measurement cache's key (accuracy/store.py); floors measured on it key off it
    _sharpness: dict[float, Sharpness] = field(default_factory=dict, repr=False)

    def sharpness(self, tie_margin: float) -> Sharpness:
        """How decisive the gold's own logits are (metrics.logit_sharpness), measured once per margin."""
        if tie_margin not in self._sharpness:
            self._sharpness[tie_margin] = m.logit_sharpness([p.logits for p in self.prompts], tie_margin)
        return self._sharpness[tie_margin]


def layer_contraction(model_path: Path, gold: Gold) -> int | None:
    """The longest sum in one of the model's layers on the gold's prompts (verdict.longest_sum): how far a
    correct kernel's rounding may move a layer that has no noise floor to be judged against. None where the
    config does not say (the fixed rounding basis then)."""
    try:
        spec = load_spec(Path(model_path))
    except (UsageError, KeyError, TypeError, ValueError):
        return None
    sequence = max((len(p.sequence) for p in gold.prompts), default=0)
    return longest_sum(spec.hidden_size, max(spec.intermediate_size, spec.moe_intermediate_size or 0), spec.num_heads,
                       spec.head_dim, sequence) or None


def activation_peaks(gold: Gold) -> list[Peak]:
    """The gold's largest |value| of each captured tensor (embeddings, each layer's output, the final norm)
    over every prompt, in forward order: how close the model's residual stream comes to a dtype's range."""
    peaks = []
    for j, name in enumerate(gold.names):
        values = [float(p.hidden[j].abs().max()) for p in gold.prompts if p.hidden[j].numel()]
        peaks.append(Peak(name=name, max_abs=max(values, default=0.0)))
    return peaks


class InMemoryReference:
    """The reference as one loaded model, behind the same calls as StreamingReference."""

    def __init__(self, runner: Runner):
        self.runner = runner

    def greedy_all(self, prompts: list[list[int]], max_new_tokens: int, eos_ids: list[int],
                   progress=None) -> list[list[int]]:
        return self.runner.generate_all(prompts, max_new_tokens, eos_ids, progress=progress)

    def capture_all(self, sequences: list[list[int]], progress=None) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        out = []
        for i, sequence in enumerate(sequences):
            if progress:
                progress(i, len(sequences))
            capture = self.runner.capture(sequence, gates=True)
            out.append((capture.hidden, capture.logits, capture.gates, capture.inputs))
        if progress:
            progress(len(sequences), len(sequences))
        return out

    def logits_all(self, sequences: list[list[int]], progress=None) -> list[torch.Tensor]:
        return [captured[1] for captured in self.capture_all(sequences, progress)]


def should_stream(opts: CompareOptions, source: ModelSource) -> bool:
    """Stream when asked, or automatically when the float32 model would not fit in RAM."""
    if opts.reference_streaming is not None:
        return opts.reference_streaming
    if opts.reference.device == "auto":  # accelerate places it over the devices, the host and the disk
        return False
    import psutil

    from llm_adapt.models.weights import parameters_from_weights

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


def measure_reference(source, tokenizer, prompts, opts, progress, served_len: int | None = None) -> Gold:
    """The gold on every prompt that fits the model's positions (and `served_len`, the context of
    the server it will be compared with, when known); the others are skipped with the reason.
    Measured once per model content, prompts, settings and versions (accuracy/store.py)."""
    problem = transformers_problem(load_spec(source.path).quant)
    if problem:  # a checkpoint transformers cannot load (or would misread) cannot be the gold
        raise UsageError(f"{source.given}: {problem}")
    limit, what = max_positions(source.path), reason("rf_model_limit")
    if served_len is not None and (limit is None or served_len < limit):
        limit, what = served_len, reason("rf_served_limit")
    prompts, inputs, skipped = fitting_prompts(prompts, [render(tokenizer, p) for p in prompts], limit,
                                               opts.max_new_tokens, what)
    if not prompts:
        raise UsageError(f"no prompt of the suite fits {what} ({limit}) with {opts.max_new_tokens} new tokens; "
                         "use --prompts quick or a shorter suite")
    from llm_adapt.accuracy import store

    label = f"reference {opts.reference.label}"
    corpus = corpus_windows(tokenizer, opts.ppl_window, opts.corpus_tokens)
    key = gold_key(source, opts, prompts, inputs, corpus, should_stream(opts, source))
    cached = store.recall("gold", key) or load_gold(key, prompts)
    if cached is not None:
        store.remember("gold", key, cached)
        progress(label + " (cached)", 1, 1)
        cached.skipped, cached.key = skipped, key
        return cached
    gold = _measure_gold(source, tokenizer, prompts, inputs, corpus, opts, progress, label)
    gold.skipped, gold.key = skipped, key
    save_gold(key, gold)
    store.remember("gold", key, gold)
    return gold


def _measure_gold(source, tokenizer, prompts, inputs, corpus, opts, progress, label) -> Gold:
    def part(what: str):
        return lambda done, total: progress(f"{label}: {what}", done, total)

    started = time.monotonic()
    ref, eos = open_reference(source, tokenizer, opts)
    load_s = time.monotonic() - started
    generated = ref.greedy_all(inputs, opts.max_new_tokens, eos, progress=part("greedy"))
    captures = ref.capture_all([i + g for i, g in zip(inputs, generated)], progress=part("layers and logits"))
    kept = [RefPrompt(p, i, g, *captured) for p, i, g, captured in zip(prompts, inputs, generated, captures)]
    corpus_nll = [m.nll(lg[:-1], torch.tensor(w[1:])) for w, lg in zip(corpus, ref.logits_all(corpus, part("corpus")))]
    num_layers = len(kept[0].hidden) - 2
    gold = Gold(kept, corpus, corpus_nll, eos, names=tensor_names(num_layers))
    gold.report = _reference_report(opts.reference, gold, tokenizer, load_s, time.monotonic() - started - load_s)
    gold.report.streaming = not isinstance(ref, InMemoryReference)
    return gold


def gold_key(source, opts: CompareOptions, prompts: list[Prompt], inputs: list[list[int]],
             corpus: list[list[int]], streaming: bool) -> str:
    """Everything the gold's numbers depend on."""
    from llm_adapt import cache
    from llm_adapt.accuracy import store

    return cache.digest({"model": cache.model_fingerprint(source.path), "reference": opts.reference.label,
                         "streaming": streaming, "max_new_tokens": opts.max_new_tokens,
                         "prompts": [[p.id, p.category, ids] for p, ids in zip(prompts, inputs)],
                         "corpus": corpus, "versions": store.versions()})


def save_gold(key: str, gold: Gold) -> None:
    from safetensors.torch import save_file

    from llm_adapt.accuracy import store

    def write(directory: Path) -> None:
        tensors = {f"logits.{i}": p.logits.contiguous() for i, p in enumerate(gold.prompts)}
        # a layer's input can be a view of another output (Gemma-4's per-layer inputs): safetensors saves no
        # two names over one storage, so the captured states are saved as copies of their own
        tensors |= {f"hidden.{i}.{j}": h.clone(memory_format=torch.contiguous_format)
                    for i, p in enumerate(gold.prompts) for j, h in enumerate(p.hidden)}
        tensors |= {f"corpus_nll.{w}": torch.from_numpy(np.ascontiguousarray(n)) for w, n in enumerate(gold.corpus_nll)}
        tensors |= {f"gate.{i}.{layer}.{name}": getattr(record, name).contiguous() for i, p in enumerate(gold.prompts)
                    for layer, record in p.gates.items() for name in GATE_FIELDS}
        tensors |= {f"input.{i}.{j}": x.clone(memory_format=torch.contiguous_format)
                    for i, p in enumerate(gold.prompts) for j, x in p.inputs.items()}
        save_file(tensors, directory / "gold.safetensors")
        (directory / "gold.json").write_text(json.dumps({
            "prompts": [{"id": p.prompt.id, "input_ids": p.input_ids, "generated": p.generated,
                         "layers": len(p.hidden), "gates": sorted(p.gates), "inputs": sorted(p.inputs)}
                        for p in gold.prompts],
            "corpus": gold.corpus, "eos_ids": gold.eos_ids, "names": gold.names,
            "report": gold.report.model_dump() if gold.report else None}))

    store.store("gold", key, write, {"prompts": len(gold.prompts), "reference": gold.report.label if gold.report else None})


def load_gold(key: str, prompts: list[Prompt]) -> Gold | None:
    """The cached gold for these prompts, or None."""
    from safetensors.torch import load_file

    from llm_adapt.accuracy import store

    path = store.lookup("gold", key)
    if path is None:
        return None
    data = json.loads((path / "gold.json").read_text())
    tensors = load_file(path / "gold.safetensors")
    by_id = {p.id: p for p in prompts}
    kept = [RefPrompt(by_id[row["id"]], row["input_ids"], row["generated"],
                      [tensors[f"hidden.{i}.{j}"] for j in range(row["layers"])], tensors[f"logits.{i}"],
                      {layer: GateRecord(**{name: tensors[f"gate.{i}.{layer}.{name}"] for name in GATE_FIELDS})
                       for layer in row.get("gates", [])},
                      {j: tensors[f"input.{i}.{j}"] for j in row.get("inputs", [])})
            for i, row in enumerate(data["prompts"])]
    corpus_nll = [tensors[f"corpus_nll.{w}"].numpy() for w in range(len(data["corpus"]))]
    report = RunnerReport.model_validate(data["report"]) if data["report"] else None
    if report is not None:
        report.reused = store.reuse_note(store.meta_of(path))
    return Gold(kept, data["corpus"], corpus_nll, data["eos_ids"], report=report, names=data["names"])


def fitting_prompts(prompts: list[Prompt], inputs: list[list[int]], limit: int | None, new_tokens: int,
                    what: str) -> tuple[list[Prompt], list[list[int]], list[dict[str, Any]]]:
    """The prompts whose tokens plus `new_tokens` fit `limit`, and one skip row for each other."""
    kept, kept_inputs, skipped = [], [], []
    for prompt, ids in zip(prompts, inputs):
        if limit is not None and len(ids) + new_tokens > limit:
            why = reason("rf_too_long", prompt=len(ids), new=new_tokens, what=what, limit=limit)
            skipped.append({"id": prompt.id, "category": prompt.category, "reason": why})
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

