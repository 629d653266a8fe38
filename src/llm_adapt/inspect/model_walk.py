"""ModelFacts read from the model's own code: instantiate it on the meta device and walk its modules.

No weights are read and no memory is spent on parameters (meta tensors have shapes only). Where a
formula matters (the norm, the activation), one module is copied to the CPU and probed with
numbers, so a (1 + w) RMSNorm or a tanh-approximated GELU is recognised whatever its class is
called. Any failure falls back to the config-based facts, labelled as such.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from llm_adapt.cache import digest, read_json, write_json
from llm_adapt.inspect.inventory import (
    ACT_ALIASES,
    FROM_MODEL,
    ModelFacts,
    attention_variant,
    config_scalings,
    facts_from_spec,
    quantization_method,
)
from llm_adapt.messages import loaded, reason, stored
from llm_adapt.models.spec import ModelSpec

# Shape-only aten ops left out of the op list: they move no numbers.
SHAPE_OPS = frozenset({"view", "_unsafe_view", "t", "transpose", "expand", "unsqueeze", "squeeze", "slice", "clone",
                       "split_with_sizes", "split", "view_as_real", "view_as_complex", "new_empty", "copy_", "detach",
                       "permute", "reshape", "contiguous", "select", "alias", "empty", "_to_copy", "lift_fresh",
                       "index", "arange", "zeros", "full", "ones", "scalar_tensor", "_reshape_alias", "as_strided"})

# What a cached entry of ModelFacts holds: 2 adds the message keys of the notes and the evidence; 3 stores each
# keyed note as {text, key, args}; 4 adds the architecture; 5 the config's scalings. It is part of the cache key, so
# an older entry is walked again, not misread.
FACTS_SCHEMA = 5


def read_facts(model_dir: Path, spec: ModelSpec, trust_remote_code: bool = False) -> ModelFacts:
    """Facts from the model's code when it can be instantiated on meta, else from the config (labelled).

    Read once per config, model code and transformers version: instantiating imports transformers'
    modeling code (seconds), and a warm `inspect` should not pay it again."""
    key = facts_key(model_dir, trust_remote_code)
    cached = read_json("model-facts", key) if key else None
    if cached is not None:
        return ModelFacts.from_dict(loaded(cached))
    facts = _read_facts(model_dir, spec, trust_remote_code)
    if key and facts.source == FROM_MODEL:  # a fallback may have a cause that goes away; read it again
        write_json("model-facts", key, stored(facts.to_dict()))
    return facts


def facts_key(model_dir: Path, trust_remote_code: bool) -> str | None:
    """What the facts depend on: config.json, the model's own code, the flag and the versions."""
    import importlib.metadata

    from llm_adapt import __version__

    try:
        files = [(p.name, p.read_text(errors="replace")) for p in sorted(Path(model_dir).glob("*.py"))]
        config = (Path(model_dir) / "config.json").read_text()
        transformers = importlib.metadata.version("transformers")
    except (OSError, importlib.metadata.PackageNotFoundError):
        return None
    return digest([config, files, trust_remote_code, transformers, __version__, FACTS_SCHEMA])


def _read_facts(model_dir: Path, spec: ModelSpec, trust_remote_code: bool) -> ModelFacts:
    try:
        model = instantiate_on_meta(model_dir, trust_remote_code)
    except Exception as exc:  # any failure of foreign code: fall back, and say why
        if spec.custom_code and not trust_remote_code:
            return facts_from_spec(spec, reason("inv_no_trust"))
        return facts_from_spec(spec, reason("inv_not_instantiated", error=_first_line(exc)))
    try:
        return facts_from_model(model, spec)
    except Exception as exc:
        return facts_from_spec(spec, reason("inv_walk_failed", cls=type(model).__name__, error=_first_line(exc)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def instantiate_on_meta(model_dir: Path, trust_remote_code: bool):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(model_dir), trust_remote_code=trust_remote_code)
    config._attn_implementation = "eager"  # the op trace should show the attention math, not one fused call
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)


def decoder_layers(model) -> list:
    """The ModuleList of decoder layers: the longest ModuleList holding the most parameters."""
    import torch.nn as nn

    lists = [m for _, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) > 0]
    if not lists:
        raise ValueError("no ModuleList of decoder layers")
    return list(max(lists, key=lambda m: (len(m), sum(p.numel() for p in m.parameters()))))


def facts_from_model(model, spec: ModelSpec) -> ModelFacts:
    layers = decoder_layers(model)
    first = layers[0]
    cfg = model.config
    cls = type(model).__name__
    norm_name, norm = _main_norm(first)
    attn = _attention_module(first)
    moe = _moe_facts(layers, cfg)
    act_key, act_ev = _activation(layers, cfg)
    heads, kv_heads, head_dim, mla = _heads(attn, cfg, spec)
    if mla and spec.mla is not None:  # MLA's query/key head: the no-position part plus the rotary part
        head_dim = spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim
    layer_types, window, window_ev = _layer_types(layers, cfg, spec)
    embed_scale, embed_ev = _embed_scale(model)
    rope, rope_ev = _rope(model)
    ops, note = trace_layer_ops(model, layers[-1], head_dim)
    attn_cls = type(attn).__name__ if attn is not None else "-"
    return ModelFacts(
        source=FROM_MODEL, source_note=reason("inv_walked", cls=cls, layers=len(layers)), architecture=spec.architecture,
        norm=probe_norm(norm) if norm is not None else "none", norm_class=type(norm).__name__ if norm is not None else None,
        norm_eps=_eps(norm), layer_norms=tuple(n for n, _ in _layer_norms(first)),
        activation=act_key, gated_mlp=_gated(first), biased=_biased(layers),
        rope=rope, rope_theta=spec.rope.theta if spec.rope and rope != "none" else None,
        attention=attention_variant(heads, kv_heads, mla), num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        kv_lora_rank=spec.mla.kv_lora_rank if mla and spec.mla else None,
        qk_norm=attn is not None and any(hasattr(attn, n) for n in ("q_norm", "k_norm", "q_layernorm")),
        attn_softcap=_attr(attn, "attn_logit_softcapping", "logit_softcapping", "softcap"),
        final_softcap=getattr(cfg, "final_logit_softcapping", None) or None,
        layer_types=layer_types, sliding_window=window, embed_scale=embed_scale,
        tied=_tied(model), quantization=quantization_method(spec.raw), aten_ops=ops, trace_note=note,
        scalings=config_scalings(spec.raw), **moe["facts"],
        evidence={"norm": reason("inv_ev_norm", cls=type(norm).__name__ if norm is not None else "-", name=norm_name),
                  "layer_norms": reason("inv_ev_layer_norms"), "activation": act_ev,
                  "biased": reason("inv_ev_biases"),
                  "rope": rope_ev, "attention": reason("inv_ev_attention", cls=attn_cls),
                  "layer_types": window_ev, "softcap": reason("inv_ev_softcap", cls=attn_cls, model=cls),
                  "moe": moe["evidence"], "embed_scale": embed_ev,
                  "tied": reason("inv_ev_tied" if _tied(model) else "inv_ev_separate", cls=cls)},
    )


def _is_norm(module) -> bool:
    import torch.nn as nn

    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or "norm" in type(module).__name__.lower()


def _layer_norms(layer) -> list[tuple[str, Any]]:
    return [(n, m) for n, m in layer.named_modules() if n and _is_norm(m) and not list(m.children())]


def _main_norm(layer) -> tuple[str | None, Any]:
    """The layer's own first norm (input_layernorm), not one nested in attention (q_norm, kv_a_layernorm)."""
    norms = _layer_norms(layer)
    top = [(n, m) for n, m in norms if "." not in n]
    return (top or norms or [(None, None)])[0]


def _eps(norm) -> float | None:
    value = _attr(norm, "eps", "variance_epsilon", "epsilon")
    return float(value) if isinstance(value, (int, float)) else None


def _attr(module, *names: str):
    for name in names:
        value = getattr(module, name, None) if module is not None else None
        if value is not None:
            return value
    return None


def probe_norm(module) -> str:
    """'rms', 'rms_1p' ((1 + w) scaling), 'layernorm', or the class name when no formula matches.

    A CPU copy of the module gets all parameters 0, then weights 1 (biases 0); its output on a
    vector with a non-zero mean tells the formulas apart."""
    import torch

    probe = copy.deepcopy(module).to_empty(device="cpu").float()
    weight = getattr(probe, "weight", None)
    dim = weight.shape[-1] if weight is not None else 64
    x = torch.randn(4, dim, generator=torch.Generator().manual_seed(0)) * 2 + 0.7
    eps = _eps(module) or 1e-6
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    ln = (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    with torch.no_grad():
        for p in probe.parameters():
            p.zero_()
        zero = probe(x)
        for name, p in probe.named_parameters():
            if name.endswith("weight") or name == "scale":
                p.fill_(1.0)
        one = probe(x)
    for key, got, want in (("rms_1p", zero, rms), ("rms", one, rms), ("layernorm", one, ln)):
        if torch.allclose(got, want, rtol=1e-3, atol=1e-4):
            return key
    return type(module).__name__


ACT_NAMES = ("act_fn", "act", "activation_fn", "activation", "act_func")


def _activation(layers, cfg) -> tuple[str, str]:
    for layer in layers:
        for name, module in layer.named_modules():
            if name.split(".")[-1] in ACT_NAMES or type(module).__name__.endswith("Activation"):
                key = probe_activation(module)
                return key, reason("inv_ev_act", cls=type(module).__name__, name=name)
    name = getattr(cfg, "hidden_activation", None) or getattr(cfg, "hidden_act", "unknown")
    return ACT_ALIASES.get(name, name), reason("inv_ev_act_config")


def probe_activation(module) -> str:
    import torch
    import torch.nn.functional as F

    x = torch.linspace(-6, 6, 241)
    with torch.no_grad():
        y = module(x)
    candidates = {"silu": F.silu(x), "gelu_tanh": F.gelu(x, approximate="tanh"), "gelu": F.gelu(x),
                  "relu": F.relu(x), "quick_gelu": x * torch.sigmoid(1.702 * x)}
    for key, want in candidates.items():
        if torch.allclose(y, want, rtol=1e-4, atol=1e-5):
            return key
    return type(module).__name__


def _gated(layer) -> bool:
    names = {n.split(".")[-1] for n, _ in layer.named_modules()} | {n.split(".")[-1] for n, _ in layer.named_parameters()}
    return bool(names & {"gate_proj", "w1", "gate_up_proj", "w13", "gate_up"})


LAYER_INDEX = re.compile(r"\.\d+\.")


def _biased(layers) -> tuple[str, ...]:
    import torch.nn as nn

    found: dict[str, None] = {}
    for layer in layers:
        for name, module in layer.named_modules():
            if isinstance(module, nn.Linear) and module.bias is not None:
                found[LAYER_INDEX.sub(".*.", name)] = None
    return tuple(found)


def _attention_module(layer):
    for name, module in layer.named_children():
        if "attn" in name or "attention" in type(module).__name__.lower():
            return module
    return None


def _heads(attn, cfg, spec: ModelSpec) -> tuple[int, int, int, bool]:
    mla = attn is not None and (hasattr(attn, "kv_a_proj_with_mqa") or bool(getattr(cfg, "kv_lora_rank", None)))
    heads = int(getattr(cfg, "num_attention_heads", spec.num_heads))
    head_dim = int(_attr(attn, "head_dim") or spec.head_dim)
    groups = _attr(attn, "num_key_value_groups")
    kv_heads = heads // int(groups) if groups else int(getattr(cfg, "num_key_value_heads", None) or heads)
    q_proj = getattr(attn, "q_proj", None)
    if q_proj is not None and not mla and getattr(q_proj, "out_features", 0) and head_dim:
        heads = q_proj.out_features // head_dim
    return heads, kv_heads, head_dim, mla


def _layer_types(layers, cfg, spec: ModelSpec) -> tuple[tuple[str, ...], int | None, str]:
    attns = [_attention_module(layer) for layer in layers]
    if all(a is not None and hasattr(a, "sliding_window") for a in attns):
        windows = [a.sliding_window for a in attns]
        types = tuple("sliding" if w else "full" for w in windows)
        window = next((int(w) for w in windows if w), None)
        return types, window, reason("inv_ev_window_attr", cls=type(attns[0]).__name__)
    given = getattr(cfg, "layer_types", None)
    if isinstance(given, (list, tuple)) and len(given) == len(layers):
        types = tuple("sliding" if "sliding" in str(t) else "full" for t in given)
        window = getattr(cfg, "sliding_window", None) if "sliding" in types else None
        return types, window, reason("inv_ev_layer_types")
    return spec.layer_types, spec.sliding_window if "sliding" in spec.layer_types else None, reason("inv_ev_config_rules")


def _moe_facts(layers, cfg) -> dict[str, Any]:
    blocks = [(i, b) for i, layer in enumerate(layers) for _, b in layer.named_modules() if hasattr(b, "experts")
              and not isinstance(b.experts, (int, float))]
    none = {"experts": None, "experts_per_token": None, "shared_experts": None, "router": None, "moe_layers": 0,
            "moe_layer_indexes": ()}
    if not blocks:
        return {"facts": none, "evidence": reason("inv_ev_no_moe")}
    _, block = blocks[0]
    experts = _expert_count(block.experts)
    gate = _attr(block, "gate", "router")
    top_k = _attr(block, "top_k", "num_experts_per_tok") or _attr(gate, "top_k") or getattr(cfg, "num_experts_per_tok", None)
    shared = _attr(block, "shared_expert", "shared_experts")
    shared_text = None
    if shared is not None:
        width = getattr(getattr(shared, "gate_proj", None), "out_features", None)
        shared_text = (f"intermediate {width}" if width else type(shared).__name__) + (
            ", sigmoid-gated" if hasattr(block, "shared_expert_gate") else "")
    facts = {"experts": experts, "experts_per_token": int(top_k) if top_k else None, "shared_experts": shared_text,
             "router": type(gate).__name__ if gate is not None else "unknown", "moe_layers": len({i for i, _ in blocks}),
             "moe_layer_indexes": tuple(sorted({i for i, _ in blocks}))}
    return {"facts": facts, "evidence": reason("inv_ev_moe", cls=type(block).__name__, moe_layers=facts["moe_layers"],
                                               layers=len(layers))}


def _expert_count(experts) -> int | None:
    count = _attr(experts, "num_experts")
    if count:
        return int(count)
    try:
        return len(experts)
    except TypeError:
        params = list(experts.parameters())
        return int(params[0].shape[0]) if params and params[0].dim() == 3 else None


def _input_embedding(model):
    import torch.nn as nn

    try:
        return model.get_input_embeddings()
    except (NotImplementedError, AttributeError):  # custom code that does not declare it: the first Embedding
        return next((m for _, m in model.named_modules() if isinstance(m, nn.Embedding)), None)


def _output_embedding(model):
    try:
        return model.get_output_embeddings()
    except (NotImplementedError, AttributeError):
        return getattr(model, "lm_head", None)


def _embed_scale(model) -> tuple[float | None, str]:
    embed = _input_embedding(model)
    value = _attr(embed, "scalar_embed_scale", "embed_scale")
    if isinstance(value, (int, float)) and value != 1:
        return float(value), f"{type(embed).__name__}.scalar_embed_scale"
    return None, reason("inv_ev_no_scale", cls=type(embed).__name__)


def _rope(model) -> tuple[str, str]:
    for _, module in model.named_modules():
        if "rotary" in type(module).__name__.lower():
            kind = str(getattr(module, "rope_type", None) or "default")
            return kind, f"{type(module).__name__}.rope_type"
    return "none", reason("inv_ev_no_rope")


def _tied(model) -> bool:
    out, inp = _output_embedding(model), _input_embedding(model)
    return out is not None and inp is not None and out.weight is inp.weight


def trace_layer_ops(model, layer, head_dim: int) -> tuple[dict[str, int], str]:
    """aten compute ops of one decoder layer on meta tensors (a dispatch-mode recorder), in first-seen order.

    Stops at the first op meta tensors cannot run (data-dependent MoE routing, say) and says so."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name not in SHAPE_OPS:
                self.ops[name] = self.ops.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

    hidden = torch.zeros(1, 4, model.config.hidden_size, device="meta")
    positions = torch.arange(4, device="meta")[None]
    recorder = Recorder()
    try:
        rotary = next((m for _, m in model.named_modules() if "rotary" in type(m).__name__.lower()), None)
        extra = {"position_embeddings": rotary(hidden, positions)} if rotary is not None else {}
        with recorder, torch.no_grad():
            layer(hidden, attention_mask=None, position_ids=positions, **extra)
    except Exception as exc:
        return recorder.ops, reason("inv_trace_stopped", cls=type(layer).__name__, error=_first_line(exc))
    return recorder.ops, reason("inv_traced", cls=type(layer).__name__)
