"""ModelSpec: the facts about a causal LM that planning and checking need, read from config.json.

Pure: `spec_from_config` takes a dict and returns a frozen dataclass or raises UsageError
naming the missing or malformed field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llm_adapt.errors import UsageError
from llm_adapt.models.config_json import ConfigJson
from llm_adapt.models.quant import QuantInfo, detect_quant, quant_in_config


@dataclass(frozen=True)
class RopeSpec:
    theta: float
    scaling_type: str | None = None  # e.g. "llama3", "linear", "dynamic", "yarn"
    factor: float | None = None
    original_max_position: int | None = None


@dataclass(frozen=True)
class MlaSpec:
    kv_lora_rank: int
    q_lora_rank: int | None  # None: q is one full projection
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ModelSpec:
    architecture: str  # e.g. "LlamaForCausalLM"
    model_type: str  # e.g. "llama"
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    hidden_act: str
    norm_eps: float | None
    rope: RopeSpec | None
    sliding_window: int | None
    num_experts: int | None  # MoE: experts per layer
    experts_per_token: int | None
    moe_intermediate_size: int | None
    attention_bias: bool
    mlp_bias: bool
    torch_dtype: str | None
    custom_code: bool  # config.json has auto_map: the model ships its own Python code
    # Family details that change the parameter formula and the operator inventory. Defaults are
    # the Llama layout, so a spec built by hand for a Llama needs none of them.
    qkv_bias: bool = False  # q/k/v projections carry a bias (Qwen2 always; Llama with attention_bias)
    o_bias: bool = False
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3, Gemma3)
    norms_per_layer: int = 2  # Gemma2/3 add pre/post feed-forward norms: 4
    mla: MlaSpec | None = None  # DeepSeek-style multi-head latent attention
    moe_layers: int = 0  # layers whose MLP is a mixture of experts
    expert_intermediate_size: int | None = None
    shared_expert_intermediate_size: int = 0  # all shared experts of one layer together
    shared_expert_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert
    attn_softcap: float | None = None  # tanh soft-capping of attention logits (Gemma2)
    final_softcap: float | None = None  # tanh soft-capping of the output logits (Gemma2)
    layer_types: tuple[str, ...] = ()  # per layer: "full" or "sliding"
    embed_scale: float | None = None  # embeddings multiplied by this (Gemma: sqrt(hidden))
    norm_one_plus_w: bool = False  # RMSNorm scales by (1 + w) (Gemma), not w
    quant: QuantInfo | None = None  # a pre-quantized checkpoint (models/quant.py); None: float weights
    raw: ConfigJson = field(default_factory=dict, repr=False, compare=False)

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim


def load_config(model_dir: Path) -> ConfigJson:
    """Read config.json of a model directory, with one clear line for each way it can be wrong."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise UsageError(f"{model_dir}: no config.json; point MODEL at a Hugging Face model directory, a .gguf file or 'default'")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno}); fix or re-download config.json") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object; fix or re-download config.json")
    return data


def load_spec(model_dir: Path) -> ModelSpec:
    """The spec of a model directory: config.json, plus msmodelslim's description file when the
    checkpoint has one (it lives beside the weights, not in config.json)."""
    config = load_config(model_dir)
    spec = spec_from_config(config)
    quant = detect_quant(Path(model_dir), config)
    return spec if quant == spec.quant else replace(spec, quant=quant)


def architecture_hint(config: ConfigJson) -> str:
    """What to add as `architectures`: the causal-LM class transformers names for the config's model_type,
    else an example that says it is one."""
    model_type = str(config.get("model_type") or "")
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as names
    except ImportError:  # transformers is a dependency; a broken install still gets a line
        names = {}
    if model_type in names:
        return f'["{names[model_type]}"] (transformers\' causal-LM class for model_type {model_type!r})'
    named = f" (model_type {model_type!r} names no causal-LM class in transformers)" if model_type else ""
    return f'the model\'s class, e.g. ["LlamaForCausalLM"]{named}'


def unknown_model_type(config: ConfigJson) -> str | None:
    """Why an engine cannot read this config, or None: vLLM builds it through transformers' AutoConfig, which
    knows a model_type from its registry, or from the model's own code (auto_map, with --trust-remote-code)."""
    model_type = str(config.get("model_type") or "")
    if not model_type or config.get("auto_map"):
        return None
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type in CONFIG_MAPPING_NAMES:
        return None
    return (f"config.json's model_type {model_type!r} is not one transformers knows, so vLLM cannot read the config; "
            "fix model_type (the family's, e.g. 'llama'), or ship the model's own code (auto_map) and pass "
            "--trust-remote-code")


def spec_from_config(config: ConfigJson) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config dict (text config of multimodal models too)."""
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    archs = config.get("architectures") or []
    if not archs or not isinstance(archs, list):
        raise UsageError(f"config.json has no 'architectures' list; add {architecture_hint(config)}")
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model")
    heads = _int(cfg, "num_attention_heads", "n_head")
    kv_heads = _int(cfg, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, "head_dim", default=hidden // heads if heads else 0)
    if heads % kv_heads:
        raise UsageError(f"config.json: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})")
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0) or None
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers")
    family = str(cfg.get("model_type") or config.get("model_type", ""))
    return ModelSpec(
        architecture=str(archs[0]),
        model_type=str(config.get("model_type", "")),
        hidden_size=hidden,
        intermediate_size=_int(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden),
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", "n_positions", "max_seq_len", default=2048),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", cfg.get("tie_word_embeddings", family in TIED_BY_DEFAULT))),
        # Gemma's MLP reads `hidden_activation`; `hidden_act` beside it is legacy
        hidden_act=str(cfg.get("hidden_activation") or cfg.get("hidden_act") or cfg.get("activation_function") or "silu"),
        norm_eps=_float_or_none(cfg, "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps"),
        rope=_rope(cfg),
        sliding_window=_sliding_window(cfg),
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=0) or None,
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", default=0) or None,
        attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        torch_dtype=_dtype_name(config.get("torch_dtype") or config.get("dtype")),
        custom_code=bool(config.get("auto_map")),
        **_family_details(cfg, family, layers, hidden, experts),
        quant=quant_in_config(config),
        raw=config,
    )


# transformers' config classes that tie the output head to the embedding unless told otherwise
TIED_BY_DEFAULT = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"})
QKV_BIAS_ALWAYS = frozenset({"qwen2", "qwen2_moe"})  # Qwen2Attention: bias=True on q, k, v; none on o
QK_NORM = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})
FOUR_NORMS = frozenset({"gemma2", "gemma3", "gemma3_text"})  # + pre/post feed-forward norms
SCALED_EMBEDDING = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"})  # x sqrt(hidden_size)
ONE_PLUS_W_NORM = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"})  # GemmaRMSNorm: x * (1 + w)


def _family_details(cfg: ConfigJson, family: str, layers: int, hidden: int, experts: int | None) -> dict[str, Any]:
    bias = bool(cfg.get("attention_bias", False))
    return dict(
        qkv_bias=bias or family in QKV_BIAS_ALWAYS, o_bias=bias and family not in QKV_BIAS_ALWAYS,
        qk_norm=family in QK_NORM, norms_per_layer=4 if family in FOUR_NORMS else 2, mla=_mla(cfg),
        moe_layers=_moe_layer_count(cfg, layers) if experts else 0,
        expert_intermediate_size=_int(cfg, "moe_intermediate_size", "intermediate_size", default=0) if experts else None,
        shared_expert_intermediate_size=_shared_width(cfg),
        shared_expert_gate=family == "qwen2_moe" and bool(cfg.get("shared_expert_intermediate_size")),
        attn_softcap=_float_or_none(cfg, "attn_logit_softcapping"),
        final_softcap=_float_or_none(cfg, "final_logit_softcapping"),
        layer_types=_layer_types(cfg, family, layers),
        embed_scale=hidden**0.5 if family in SCALED_EMBEDDING else None,
        norm_one_plus_w=family in ONE_PLUS_W_NORM,
    )


def _mla(cfg: ConfigJson) -> MlaSpec | None:
    if not cfg.get("kv_lora_rank"):
        return None
    return MlaSpec(kv_lora_rank=_int(cfg, "kv_lora_rank"), q_lora_rank=_int(cfg, "q_lora_rank", default=0) or None,
                   qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"), qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
                   v_head_dim=_int(cfg, "v_head_dim"))


def moe_layer_indexes(cfg: ConfigJson, layers: int) -> tuple[int, ...]:
    """The decoder layers whose MLP is a mixture of experts, by the config's rules: DeepSeek, dense below
    first_k_dense_replace, then every moe_layer_freq-th; Qwen2-MoE, decoder_sparse_step and mlp_only_layers;
    Mixtral, every layer. Pure."""
    first_dense = _int(cfg, "first_k_dense_replace", default=0)
    step = _int(cfg, "moe_layer_freq", "decoder_sparse_step", default=1) or 1
    dense_only = set(cfg.get("mlp_only_layers") or [])
    if "first_k_dense_replace" in cfg:
        return tuple(i for i in range(layers) if i >= first_dense and i % step == 0)
    return tuple(i for i in range(layers) if i not in dense_only and (i + 1) % step == 0)


def _moe_layer_count(cfg: ConfigJson, layers: int) -> int:
    return len(moe_layer_indexes(cfg, layers))


def _shared_width(cfg: ConfigJson) -> int:
    if cfg.get("shared_expert_intermediate_size"):
        return _int(cfg, "shared_expert_intermediate_size")
    return _int(cfg, "n_shared_experts", default=0) * _int(cfg, "moe_intermediate_size", default=0)


def _sliding_window(cfg: ConfigJson) -> int | None:
    if cfg.get("use_sliding_window") is False:  # Qwen2 ships a window it does not use
        return None
    return _int(cfg, "sliding_window", default=0) or None


def _layer_types(cfg: ConfigJson, family: str, layers: int) -> tuple[str, ...]:
    """Per layer "full" or "sliding", the way transformers' config classes derive them."""
    given = cfg.get("layer_types")
    if isinstance(given, list) and len(given) == layers:
        return tuple("sliding" if "sliding" in str(t) else "full" for t in given)
    window = _sliding_window(cfg)
    if not window:
        return ("full",) * layers
    if family == "gemma2":
        return tuple("sliding" if (i + 1) % 2 else "full" for i in range(layers))
    if family in ("gemma3", "gemma3_text"):
        pattern = _int(cfg, "sliding_window_pattern", default=6)
        return tuple("sliding" if (i + 1) % pattern else "full" for i in range(layers))
    if family in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        first = _int(cfg, "max_window_layers", default=0)
        return tuple("sliding" if i >= first else "full" for i in range(layers))
    return ("sliding",) * layers


def _int(cfg: ConfigJson, *names: str, default: int | None = None) -> int:
    for name in names:
        value = cfg.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or int(value) != value:
            raise UsageError(f"config.json: '{name}' must be a non-negative integer, got {value!r}")
        return int(value)
    if default is None:
        raise UsageError(f"config.json: missing '{names[0]}'; this does not look like a decoder-only LM config")
    return default


def _float_or_none(cfg: ConfigJson, *names: str) -> float | None:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"config.json: '{name}' must be a number, got {value!r}")
            return float(value)
    return None


def _rope(cfg: ConfigJson) -> RopeSpec | None:
    # transformers 5 folds theta and scaling into `rope_parameters`; older configs use
    # `rope_theta` and `rope_scaling` side by side.
    params = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    scaling = cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else {}
    merged = {**scaling, **params}
    theta = merged.get("rope_theta", cfg.get("rope_theta"))
    if theta is None and cfg.get("position_embedding_type", "rope") != "rope":
        return None
    kind = merged.get("rope_type") or merged.get("type")
    return RopeSpec(
        theta=float(theta if theta is not None else 10000.0),
        scaling_type=None if kind in (None, "default") else str(kind),
        factor=float(merged["factor"]) if merged.get("factor") is not None else None,
        original_max_position=merged.get("original_max_position_embeddings"),
    )


def _dtype_name(value: Any) -> str | None:
    if value is None:
        return None
    return str(value).replace("torch.", "")
