"""Which part of a located layer: its norms, its attention or its MLP, each fed the reference's input.

The layer-level shadow pass names a layer by its own error (the layer run on the reference's input).
Inside that layer each part gets the same treatment. One teacher-forced forward of the reference
records each part's input and output; one forward of the target (and one of its floor) swaps each
part's input for the reference's with a pre-hook, and keeps what the part makes of it. The target's
own keyword arguments stay (its position embeddings, its mask), so a wrong rope_theta shows in its
attention, as it does in its layer. Forwards stop after the layer: nothing later is needed.

The parts are the decoder-layer attributes transformers' Llama, Qwen, Mistral, Gemma and DeepSeek
classes share; a layer without one of them simply has fewer parts. Inside the attention, the input of
its output projection holds every head's context side by side: its error per query head says whether a
few heads (one KV head's group) hold the error.

Inside a mixture-of-experts MLP (accuracy/routing.py) three more parts, each called on its own with the
reference's inputs after the forward: the router (what it makes of the MLP's input: the experts each token
chose with their weights, as one [T, experts] matrix, so a changed top-k, a dropped renormalization or a
wrong router row all show in it), the routed experts (given the reference's hidden states, chosen experts
and weights) and the shared expert.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.result import ChannelConcentration, HeadConcentration, PartError, PartRow

# (the name the report uses, the decoder layer's attribute), in the order a forward reaches them
PARTS = (
    ("input norm", "input_layernorm"),
    ("attention", "self_attn"),
    ("post-attention norm", "post_attention_layernorm"),
    ("pre-MLP norm", "pre_feedforward_layernorm"),
    ("MLP", "mlp"),
    ("post-MLP norm", "post_feedforward_layernorm"),
)


class _Stop(Exception):
    """Raised after the layer of interest: the rest of the forward is not needed."""


def layer_parts(layer: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """{report name: module} for the parts this decoder layer has."""
    return {name: getattr(layer, attr) for name, attr in PARTS if isinstance(getattr(layer, attr, None), torch.nn.Module)}


def moe_parts(layer: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """{report name: module} for the router, routed experts and shared expert of a MoE layer ({} elsewhere)."""
    from llm_adapt.accuracy.routing import moe_gates

    if not moe_gates([layer]):
        return {}
    mlp = layer.mlp
    shared = next((getattr(mlp, a) for a in ("shared_experts", "shared_expert")
                   if isinstance(getattr(mlp, a, None), torch.nn.Module)), None)
    return {"router": mlp.gate, "experts": mlp.experts, **({"shared expert": shared} if shared is not None else {})}


def dense_routing(output, experts: int) -> torch.Tensor:
    """A router's (logits, weights [T, k], chosen [T, k]) as one [T, experts] matrix: each token's weight on
    each expert, 0 where it was not chosen. Pure."""
    _, weights, chosen = output
    weights, chosen = weights.reshape(-1, weights.shape[-1]), chosen.reshape(-1, chosen.shape[-1])
    return torch.zeros(chosen.shape[0], experts, dtype=torch.float32).scatter_add_(
        1, chosen.to("cpu", torch.long), weights.detach().to("cpu", torch.float32))


def _main_input(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


def _main_output(out) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def _fp32_cpu(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to("cpu", torch.float32)


@dataclass
class PartRecord:
    """The reference's input and output of each part of one layer, for one sequence, and the input of the
    attention's output projection (every head's context side by side), where it has one."""

    inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    heads: torch.Tensor | None = None
    moe_inputs: dict[str, tuple] = field(default_factory=dict)  # a MoE part's whole positional input (CPU)


def head_layout(attention: torch.nn.Module) -> tuple[int, int] | None:
    """(query heads, query heads per KV head) of an attention module whose output projection reads every
    head's context side by side ([T, heads x head_dim]: transformers' Llama, Qwen, Mistral, Gemma); None
    where the shapes do not say so."""
    o_proj, config = getattr(attention, "o_proj", None), getattr(attention, "config", None)
    heads = getattr(config, "num_attention_heads", None)
    head_dim = getattr(attention, "head_dim", None)
    if not isinstance(o_proj, torch.nn.Linear) or not heads or not head_dim or o_proj.in_features != heads * head_dim:
        return None
    return heads, max(1, heads // (getattr(config, "num_key_value_heads", None) or heads))


def _record_heads(attention: torch.nn.Module, keep) -> list:
    """A pre-hook on the attention's output projection handing its input to `keep` (none without one)."""
    if head_layout(attention) is None:
        return []
    return [attention.o_proj.register_forward_pre_hook(lambda mod, args: keep(_fp32_cpu(args[0])))]


def _stop(module, args, output) -> None:
    raise _Stop()


def _forward_to(runner, index: int, sequence: list[int], hooks: list) -> None:
    """One teacher-forced forward of `runner` that stops after layer `index`; `hooks` are removed after."""
    hooks.append(runner.layers[index].register_forward_hook(_stop))
    try:
        ids = torch.tensor([sequence], device=runner.input_device)
        with runner.numerics():
            runner.model(ids, use_cache=False)
    except _Stop:
        pass
    finally:
        for hook in hooks:
            hook.remove()


def _record_moe(layer: torch.nn.Module, record: PartRecord) -> list:
    """Hooks keeping each MoE part's positional inputs and its output (the router's as dense_routing)."""
    hooks = []
    for name, module in moe_parts(layer).items():
        hooks.append(module.register_forward_pre_hook(
            lambda mod, a, name=name: record.moe_inputs.__setitem__(name, tuple(_cpu_any(x) for x in a))))
        hooks.append(module.register_forward_hook(
            lambda mod, a, o, name=name: record.outputs.__setitem__(name, _moe_output(name, mod, o))))
    return hooks


def _cpu_any(x):
    return x.detach().to("cpu") if isinstance(x, torch.Tensor) else x


def _moe_output(name: str, module: torch.nn.Module, output) -> torch.Tensor:
    if name == "router":
        return dense_routing(output, module.weight.shape[0])
    return _fp32_cpu(_main_output(output)).reshape(-1, _main_output(output).shape[-1])


def moe_replay(layer: torch.nn.Module, record: PartRecord, numerics) -> dict[str, torch.Tensor]:
    """Each MoE part of `layer` called on its own with the reference's inputs to it (hidden states in the
    part's dtype; chosen experts and weights as the reference made them): its output, as recorded."""
    out = {}
    for name, module in moe_parts(layer).items():
        if name not in record.moe_inputs:
            continue
        param = next(module.parameters())
        args = tuple(x.to(param.device, param.dtype if x.is_floating_point() else x.dtype)
                     if isinstance(x, torch.Tensor) else x for x in record.moe_inputs[name])
        with numerics():
            out[name] = _moe_output(name, module, module(*args))
    return out


@torch.no_grad()
def record_reference(runner, index: int, sequences: list[list[int]]) -> list[PartRecord]:
    """The reference runner's parts of layer `index`: input and output of each, per sequence."""
    records = []
    for sequence in sequences:
        record = PartRecord()
        hooks = _record_moe(runner.layers[index], record)
        for name, module in layer_parts(runner.layers[index]).items():
            hooks.append(module.register_forward_pre_hook(
                lambda mod, a, kw, name=name, record=record: record.inputs.__setitem__(name, _fp32_cpu(_main_input(a, kw))),
                with_kwargs=True))
            hooks.append(module.register_forward_hook(
                lambda mod, a, o, name=name, record=record: record.outputs.__setitem__(name, _fp32_cpu(_main_output(o)))))
        hooks += _record_heads(getattr(runner.layers[index], "self_attn", None),
                               lambda x, record=record: setattr(record, "heads", x))
        _forward_to(runner, index, sequence, hooks)
        records.append(record)
    return records


def _swap_input(record: PartRecord, name: str):
    """A pre-hook that hands the part `record`'s input for it instead of its own (same device and dtype)."""
    def swap(mod, args, kwargs):
        own = _main_input(args, kwargs)
        theirs = record.inputs[name].to(own.device, own.dtype)
        if args:
            return (theirs, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": theirs}
    return swap


@torch.no_grad()
def replay_parts(runner, index: int, sequences: list[list[int]], given: list[PartRecord]) -> list[PartRecord]:
    """What the runner's parts of layer `index` make of the inputs in `given` (another engine's, say):
    records with those inputs and the runner's outputs, per sequence."""
    out = []
    for sequence, record in zip(sequences, given):
        made = PartRecord(inputs=dict(record.inputs))
        hooks = []
        for name, module in layer_parts(runner.layers[index]).items():
            if name in record.inputs:
                hooks.append(module.register_forward_pre_hook(_swap_input(record, name), with_kwargs=True))
                hooks.append(module.register_forward_hook(
                    lambda mod, a, o, name=name, made=made: made.outputs.__setitem__(name, _fp32_cpu(_main_output(o)))))
        _forward_to(runner, index, sequence, hooks)
        out.append(made)
    return out


@torch.no_grad()
def part_errors(runner, index: int, sequences: list[list[int]], reference: list[PartRecord]) -> dict[str, PartError]:
    """Each part of the runner's layer `index` on the reference's input to it, against the
    reference's output of it: {part: accumulator summary (rel_l2, cos_min, max_abs, per-prompt squares)}."""
    errors = PartErrors()
    attention = getattr(runner.layers[index], "self_attn", None)
    layout = head_layout(attention) if attention is not None else None
    heads = HeadErrors(*layout) if layout else None
    for sequence, record in zip(sequences, reference):
        hooks = []
        if heads is not None and record.heads is not None:
            hooks += _record_heads(attention, lambda x, record=record: heads.add(record.heads, x))
        for name, module in layer_parts(runner.layers[index]).items():
            if name not in record.inputs:
                continue  # the reference's layer never called it
            hooks.append(module.register_forward_pre_hook(_swap_input(record, name), with_kwargs=True))
            hooks.append(module.register_forward_hook(
                lambda mod, a, o, name=name, record=record: errors.add(name, record.outputs[name],
                                                                       _fp32_cpu(_main_output(o)))))
        _forward_to(runner, index, sequence, hooks)
        for name, made in moe_replay(runner.layers[index], record, runner.numerics).items():
            errors.add(name, record.outputs[name], made)
    out = errors.summary()
    if heads is not None and heads.diff_sq is not None and "attention" in out:
        out["attention"]["heads"] = heads.summary()
    return out


class PartErrors:
    """Per part: the accumulated error of outputs against the reference's, and per output channel the
    squared error and the reference's energy, summed over tokens."""

    def __init__(self):
        self.acc: dict[str, m.TensorAccumulator] = {}
        self.channels: dict[str, torch.Tensor] = {}
        self.energy: dict[str, torch.Tensor] = {}

    def add(self, name: str, ref: torch.Tensor, mine: torch.Tensor) -> None:
        self.acc.setdefault(name, m.TensorAccumulator()).add(ref, mine)
        diff_sq = (mine.double() - ref.double()).pow(2).reshape(-1, ref.shape[-1]).sum(0)
        ref_sq = ref.double().pow(2).reshape(-1, ref.shape[-1]).sum(0)
        self.channels[name] = self.channels[name] + diff_sq if name in self.channels else diff_sq
        self.energy[name] = self.energy[name] + ref_sq if name in self.energy else ref_sq

    def summary(self) -> dict[str, PartError]:
        return {name: {**a.summary(), "diff_sq_by_prompt": a.diff_sq_by_prompt,
                       "channels": channel_concentration(
                           relative_channel_error(self.channels[name], self.energy[name]).tolist())}
                for name, a in self.acc.items()}


class HeadErrors:
    """Per query head: the squared error of its context (the output projection's input) and the
    reference's energy there, summed over tokens."""

    def __init__(self, count: int, group: int):
        self.count, self.group = count, group
        self.diff_sq: torch.Tensor | None = None
        self.energy: torch.Tensor | None = None

    def add(self, ref: torch.Tensor, mine: torch.Tensor) -> None:
        r = ref.double().reshape(-1, self.count, ref.shape[-1] // self.count)
        t = mine.double().reshape(r.shape)
        diff_sq, energy = (t - r).pow(2).sum((0, 2)), r.pow(2).sum((0, 2))
        self.diff_sq = diff_sq if self.diff_sq is None else self.diff_sq + diff_sq
        self.energy = energy if self.energy is None else self.energy + energy

    def summary(self) -> HeadConcentration:
        return head_concentration(relative_channel_error(self.diff_sq, self.energy).tolist(), self.group)


def relative_channel_error(diff_sq: torch.Tensor, ref_sq: torch.Tensor) -> torch.Tensor:
    """Each channel's squared error over its own reference energy plus the median channel's: the few
    channels with massive activations do not look concentrated for an error relative to the value
    (a wrong norm epsilon, rounding), and near-silent channels are not blown up. Pure."""
    return diff_sq / (ref_sq + ref_sq.median().clamp_min(1e-30))


TOP_CHANNELS = 0.01  # the share of a part's output channels a concentrated error sits in (at least one)
CONCENTRATED = 0.5  # ... holding at least this share of the part's squared error


def channel_concentration(diff_sq: list[float], top: float = TOP_CHANNELS, at_least: float = CONCENTRATED,
                          listed: int = 8) -> ChannelConcentration:
    """How much of a part's (relative) squared error its worst channels hold: the top `top` share of
    channels (at least one), their share of the error, and whether that is `at_least` (concentrated: a few
    rows of a weight, a scale, a slice loaded wrong, rather than noise spread over every channel).
    Uniform error over n channels gives a share near `top`. Pure."""
    n = len(diff_sq)
    total = sum(v for v in diff_sq if v == v)
    k = max(1, int(n * top))
    order = sorted(range(n), key=lambda i: diff_sq[i] if diff_sq[i] == diff_sq[i] else float("inf"), reverse=True)
    share = (sum(diff_sq[i] for i in order[:k]) / total) if total > 0 else 0.0
    return {"count": k, "of": n, "share": share, "concentrated": bool(total > 0 and share >= at_least),
            "top": order[:min(k, listed)]}


HEAD_COVER = 0.8  # the worst heads holding this share of the attention's (relative) error ...
MIN_HEADS = 4  # ... in an attention with at least this many query heads


def head_concentration(errors: list[float], group: int = 1, cover: float = HEAD_COVER) -> HeadConcentration:
    """Which query heads hold the attention's error: the fewest, worst first, that hold `cover` of it.
    Concentrated when they are one head, the heads of one KV head (`group` query heads share one), or at
    most a third of the heads: a head-specific slice of q/k/v or a kernel's head mapping (GQA, sharding
    heads over devices) rather than error spread over every head. Pure."""
    n = len(errors)
    total = sum(v for v in errors if v == v)
    order = sorted(range(n), key=lambda i: errors[i] if errors[i] == errors[i] else float("inf"), reverse=True)
    held, worst = 0.0, []
    for i in order:
        worst.append(i)
        held += errors[i] if errors[i] == errors[i] else total
        if total <= 0 or held >= cover * total:
            break
    kv = {i // group for i in worst}
    one_kv = group > 1 and len(kv) == 1 and n // group > 1
    concentrated = total > 0 and n >= MIN_HEADS and (len(worst) == 1 or one_kv or len(worst) <= n // 3)
    return {"heads": sorted(worst), "of": n, "share": min(held / total, 1.0) if total > 0 else 0.0,
            "concentrated": bool(concentrated), "kv_head": next(iter(kv)) if concentrated and one_kv else None,
            "group": group}


def layer_index(name: str) -> int | None:
    """'layer 7' -> 7; None for the embeddings or the final norm. Pure."""
    head, _, tail = name.partition(" ")
    return int(tail) if head == "layer" and tail.isdigit() else None


class PartsPass:
    """The sub-layer pass of one comparison: the reference's records of a layer, and each floor's
    part errors in it, measured once however many targets name that layer."""

    def __init__(self, source, gold, reference_spec, progress):
        self.source, self.gold, self.reference_spec, self.progress = source, gold, reference_spec, progress
        self._records: dict[int, list[PartRecord]] = {}
        self._floors: dict[tuple, dict[str, PartError]] = {}

    @property
    def refusal(self) -> str | None:
        """Why this comparison cannot look inside a layer (None when it can)."""
        if self.gold.report.streaming:
            return "the reference streams one layer at a time from the shards; the parts need it in memory"
        return None

    def measure(self, target, floor, index: int) -> tuple[dict[str, PartError], dict[str, PartError] | None]:
        """(the target's part errors in layer `index`, its floor's or None)."""
        if floor is not None and (floor, index) not in self._floors:
            self._floors[(floor, index)] = self._errors(floor, index)
        return self._errors(target, index), self._floors.get((floor, index)) if floor is not None else None

    def _sequences(self) -> list[list[int]]:
        return [p.sequence for p in self.gold.prompts]

    def _reference(self, index: int) -> list[PartRecord]:
        from llm_adapt.accuracy.runner import Runner

        if index not in self._records:
            self.progress(f"{self.reference_spec.label}: parts of layer {index}", 0, 1)
            with Runner(self.reference_spec, self.source.path) as runner:
                self._records[index] = record_reference(runner, index, self._sequences())
            self.progress(f"{self.reference_spec.label}: parts of layer {index}", 1, 1)
        return self._records[index]

    def _errors(self, spec, index: int) -> dict[str, PartError]:
        from llm_adapt.accuracy.runner import Runner

        records = self._reference(index)
        self.progress(f"{spec.label}: parts of layer {index}", 0, 1)
        with Runner(spec, self.source.path) as runner:
            errors = part_errors(runner, index, self._sequences(), records)
        self.progress(f"{spec.label}: parts of layer {index}", 1, 1)
        return errors


def part_rows(target: dict[str, PartError], floor: dict[str, PartError] | None) -> list[PartRow]:
    """Each part's own error, beside its floor's and the relative spread the prompts show (what the judge
    allows it, verdict.allowance). Pure."""
    rows = []
    for name, t in target.items():
        row = {"name": name, "rel_l2": t["rel_l2"], "cos_min": t["cos_min"], "max_abs": t["max_abs"],
               "channels": t.get("channels"), **({"heads": t["heads"]} if t.get("heads") else {})}
        f = (floor or {}).get(name)
        if f is not None:
            row.update(floor_rel_l2=f["rel_l2"], ratio=m.ratio_or_none(t["rel_l2"], f["rel_l2"]),
                       rel_spread=m.combined_spread(m.ratio_spread_from_squares(t.get("diff_sq_by_prompt"),
                                                                                f.get("diff_sq_by_prompt"))))
        rows.append(row)
    return rows
