"""What the model is built of: ModelFacts, read from its code (model_walk.py) or, failing that, its config.

Everything downstream (inventory rows, caveats, the report) reads ModelFacts, so the two sources
stay interchangeable and the fallback is labelled in one place. Pure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from llm_adapt.messages import reason
from llm_adapt.models.config_json import ConfigJson
from llm_adapt.models.spec import ModelSpec, moe_layer_indexes

FROM_MODEL = "model code"
FROM_CONFIG = "config only"

# ACT2FN names -> one canonical name per function (the numeric probe in model_walk uses the same keys)
ACT_ALIASES = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
               "gelu_fast": "gelu_tanh", "gelu": "gelu", "relu": "relu", "quick_gelu": "quick_gelu"}
ACT_TEXT = {"silu": "SiLU", "gelu_tanh": "GELU (tanh approximation)", "gelu": "GELU (exact erf)", "relu": "ReLU",
            "quick_gelu": "QuickGELU (x * sigmoid(1.702 x))"}
NORM_TEXT = {"rms": "RMSNorm: x / rms(x) * w", "rms_1p": "RMSNorm with (1 + w): x / rms(x) * (1 + w)",
             "layernorm": "LayerNorm: (x - mean) / std * w + b"}


@dataclass(frozen=True)
class ModelFacts:
    source: str  # FROM_MODEL or FROM_CONFIG
    source_note: str  # the model class, or why the model could not be instantiated
    norm: str  # "rms" | "rms_1p" | "layernorm" | a class name when neither formula matched
    norm_class: str | None
    norm_eps: float | None
    layer_norms: tuple[str, ...]  # norm modules of one decoder layer, by attribute name
    activation: str  # canonical key of ACT_TEXT, or the name as found
    gated_mlp: bool
    biased: tuple[str, ...]  # projections with a bias, e.g. "self_attn.q_proj"
    rope: str  # e.g. "default", "llama3", "yarn"; "none" without rotary embeddings
    rope_theta: float | None
    attention: str  # MHA | GQA | MQA | MLA
    num_heads: int
    num_kv_heads: int
    head_dim: int
    qk_norm: bool
    attn_softcap: float | None
    final_softcap: float | None
    layer_types: tuple[str, ...]  # per layer: "full" | "sliding"
    sliding_window: int | None
    experts: int | None
    experts_per_token: int | None
    shared_experts: str | None  # e.g. "1 (intermediate 5632), sigmoid-gated"
    router: str | None
    moe_layers: int
    embed_scale: float | None
    tied: bool
    quantization: str | None  # quantization_config.quant_method
    kv_lora_rank: int | None = None  # MLA: the rank of the compressed KV the cache holds
    evidence: dict[str, str] = field(default_factory=dict)  # fact name -> where it was read
    aten_ops: dict[str, int] = field(default_factory=dict)  # compute ops of one decoder layer, in order
    trace_note: str = ""  # the notes and the evidence are Reasons where they have words in other languages
    architecture: str = ""  # config.json's architectures[0], the class vLLM serves it with
    scalings: dict[str, float] = field(default_factory=dict)  # config_scalings: what the config multiplies by
    moe_layer_indexes: tuple[int, ...] = ()  # the decoder layers whose MLP is a mixture of experts

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelFacts:
        names = {f.name for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
        return cls(**values)

    @property
    def sliding_layers(self) -> int:
        return sum(1 for t in self.layer_types if t == "sliding")


def attention_variant(heads: int, kv_heads: int, mla: bool) -> str:
    if mla:
        return "MLA"
    if kv_heads == heads:
        return "MHA"
    return "MQA" if kv_heads == 1 else "GQA"


def quantization_method(config: ConfigJson) -> str | None:
    quant = config.get("quantization_config")
    return str(quant.get("quant_method") or quant.get("quant_type") or "unknown") if isinstance(quant, dict) else None


def facts_from_spec(spec: ModelSpec, why: str) -> ModelFacts:
    """The config-based inventory: what transformers' config classes imply for this family."""
    norms = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
             "post_feedforward_layernorm")[: spec.norms_per_layer]
    biased = tuple(f"self_attn.{p}_proj" for p in "qkv" if spec.qkv_bias) + (("self_attn.o_proj",) if spec.o_bias else ())
    biased += tuple(f"mlp.{p}_proj" for p in ("gate", "up", "down") if spec.mlp_bias)
    shared = spec.shared_expert_intermediate_size
    return ModelFacts(
        source=FROM_CONFIG, source_note=why, architecture=spec.architecture,
        norm="rms_1p" if spec.norm_one_plus_w else "rms", norm_class=None, norm_eps=spec.norm_eps,
        layer_norms=norms + (("self_attn.q_norm", "self_attn.k_norm") if spec.qk_norm else ()),
        activation=ACT_ALIASES.get(spec.hidden_act, spec.hidden_act), gated_mlp=True, biased=biased,
        rope=(spec.rope.scaling_type or "default") if spec.rope else "none",
        rope_theta=spec.rope.theta if spec.rope else None,
        attention=attention_variant(spec.num_heads, spec.num_kv_heads, spec.mla is not None),
        num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim, qk_norm=spec.qk_norm,
        attn_softcap=spec.attn_softcap, final_softcap=spec.final_softcap, layer_types=spec.layer_types,
        sliding_window=spec.sliding_window if "sliding" in spec.layer_types else None,
        experts=spec.num_experts, experts_per_token=spec.experts_per_token,
        shared_experts=f"intermediate {shared}" + (", sigmoid-gated" if spec.shared_expert_gate else "") if shared else None,
        router="linear top-k" if spec.num_experts else None, moe_layers=spec.moe_layers,
        moe_layer_indexes=moe_layer_indexes(spec.raw, spec.num_layers) if spec.moe_layers else (),
        embed_scale=spec.embed_scale, tied=spec.tie_word_embeddings, quantization=quantization_method(spec.raw),
        kv_lora_rank=spec.mla.kv_lora_rank if spec.mla else None, scalings=config_scalings(spec.raw),
        evidence={"all": reason("inv_ev_config", family=spec.model_type or "unknown")},
    )


@dataclass(frozen=True)
class Row:
    name: str
    value: str  # value and evidence: Reasons where they have words in the report's other language
    evidence: str




def _ev(facts: ModelFacts, key: str) -> str:
    """Where a fact was read."""
    return facts.evidence.get(key) or facts.evidence.get("all", "")


NONE = reason("inv_none")
ACT_KEYS = {"gelu_tanh": "inv_gelu_tanh", "gelu": "inv_gelu"}  # the ACT_TEXT with words


def inventory_rows(facts: ModelFacts) -> list[Row]:
    """The inventory as (operator, value, evidence) rows, in the order of a decoder layer."""
    f = facts
    eps = f" (eps {f.norm_eps:g})" if f.norm_eps is not None else ""
    act = reason(ACT_KEYS[f.activation]) if f.activation in ACT_KEYS else ACT_TEXT.get(f.activation, f.activation)
    rows = [Row("norm", reason("inv_norm_1p", eps=eps) if f.norm == "rms_1p" else NORM_TEXT.get(f.norm, f.norm) + eps,
                 _ev(f, "norm")),
            Row("norms per layer", ", ".join(f.layer_norms) or NONE, _ev(f, "layer_norms")),
            Row("activation", reason("inv_act_gated" if f.gated_mlp else "inv_act_plain", act=act), _ev(f, "activation")),
            Row("biases", ", ".join(f.biased) or NONE, _ev(f, "biased")),
            Row("positional encoding", NONE if f.rope == "none" else
                 f"RoPE ({f.rope}" + (f", theta {f.rope_theta:g}" if f.rope_theta else "") + ")", _ev(f, "rope")),
            Row("attention", _attention_text(f), _ev(f, "attention")),
            Row("head_dim", str(f.head_dim), _ev(f, "attention")),
            Row("attention window", _window_text(f), _ev(f, "layer_types")),
            Row("soft-capping", _softcap_text(f), _ev(f, "softcap")),
            Row("MoE", _moe_text(f), _ev(f, "moe")),
            Row("embedding scale", _embedding_scale_text(f), _ev(f, "embed_scale")),
            Row("scalings", ", ".join(f"{k} {v:g}" for k, v in f.scalings.items()) or NONE,
                "config.json" if f.scalings else _ev(f, "all")),
            Row("output head", reason("inv_tied") if f.tied else reason("inv_separate_head"), _ev(f, "tied"))]
    if f.quantization:
        rows.append(Row("quantization", f.quantization, "config.json quantization_config"))
    return rows


# What a config may multiply by between or inside modules (Granite's four multipliers, Cohere's logit scale,
# Gemma's soft-capping): a layer's own error is measured on its actual input whatever they are, and the
# inventory names each one, so a class that ignores one can be asked about it.
SCALING_KEYS = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling",
                "logit_scale", "attn_logit_softcapping", "final_logit_softcapping", "scale_emb", "scale_depth")


def config_scalings(config: dict) -> dict[str, float]:
    """The scalings a config declares, by key, in SCALING_KEYS' order (a text model's part of a multimodal config
    first). Pure."""
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return {k: float(cfg[k]) for k in SCALING_KEYS if isinstance(cfg.get(k), (int, float)) and not isinstance(cfg[k], bool)}


def _embedding_scale_text(f: ModelFacts) -> str:
    """The embedding's scale: the embedding module's own (Gemma), else the config's multiplier the model applies in
    its forward (Granite's embedding_multiplier)."""
    if f.embed_scale:
        return f"x {f.embed_scale:g}"
    multiplier = f.scalings.get("embedding_multiplier") or f.scalings.get("scale_emb")
    return reason("inv_embed_multiplier", scale=multiplier) if multiplier and multiplier != 1 else NONE


def _attention_text(f: ModelFacts) -> str:
    qk = reason("inv_qk_norm") if f.qk_norm else ""
    if f.attention == "MLA":
        return reason("inv_attention_mla", heads=f.num_heads, rank=f.kv_lora_rank, qk=qk)
    if f.attention == "GQA":
        return reason("inv_attention_gqa", heads=f.num_heads, kv_heads=f.num_kv_heads,
                      group=f.num_heads // max(1, f.num_kv_heads), qk=qk)
    return reason("inv_attention", attention=f.attention, heads=f.num_heads, kv_heads=f.num_kv_heads, qk=qk)


def _window_text(f: ModelFacts) -> str:
    if not f.sliding_layers:
        return reason("inv_window_full")
    if f.sliding_layers == len(f.layer_types):
        return reason("inv_window_all", window=f.sliding_window)
    pattern = "".join("S" if t == "sliding" else "F" for t in f.layer_types[:12])
    return reason("inv_window_some", window=f.sliding_window, sliding=f.sliding_layers, layers=len(f.layer_types),
                  pattern=pattern + ("..." if len(f.layer_types) > 12 else ""))


def _softcap_text(f: ModelFacts) -> str:
    parts = [reason("inv_softcap_attn", cap=f.attn_softcap) if f.attn_softcap else "",
             reason("inv_softcap_final", cap=f.final_softcap) if f.final_softcap else ""]
    parts = [p for p in parts if p]
    return reason("inv_both", first=parts[0], second=parts[1]) if len(parts) == 2 else parts[0] if parts else NONE


def _moe_text(f: ModelFacts) -> str:
    if not f.experts:
        return reason("inv_dense")
    return reason("inv_moe", experts=f.experts, top_k=f.experts_per_token, moe_layers=f.moe_layers,
                  layers=len(f.layer_types), router=f.router,
                  shared=reason("inv_moe_shared", shared=f.shared_experts) if f.shared_experts else "")
