"""ModelSpec: the facts about a causal LM that planning and checking need, read from config.json.

Pure: `spec_from_config` takes a dict and returns a frozen dataclass or raises UsageError
naming the missing or malformed field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_adapt.errors import UsageError


@dataclass(frozen=True)
class RopeSpec:
    theta: float
    scaling_type: str | None = None  # e.g. "llama3", "linear", "dynamic", "yarn"
    factor: float | None = None
    original_max_position: int | None = None


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
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)


def load_config(model_dir: Path) -> dict[str, Any]:
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


def spec_from_config(config: dict[str, Any]) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config dict (text config of multimodal models too)."""
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    archs = config.get("architectures") or []
    if not archs or not isinstance(archs, list):
        raise UsageError("config.json has no 'architectures' list; add e.g. [\"LlamaForCausalLM\"]")
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model")
    heads = _int(cfg, "num_attention_heads", "n_head")
    kv_heads = _int(cfg, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, "head_dim", default=hidden // heads if heads else 0)
    if heads % kv_heads:
        raise UsageError(f"config.json: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})")
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0) or None
    return ModelSpec(
        architecture=str(archs[0]),
        model_type=str(config.get("model_type", "")),
        hidden_size=hidden,
        intermediate_size=_int(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden),
        num_layers=_int(cfg, "num_hidden_layers", "n_layer", "num_layers"),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", "n_positions", "max_seq_len", default=2048),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))),
        hidden_act=str(cfg.get("hidden_act") or cfg.get("activation_function") or "silu"),
        norm_eps=_float_or_none(cfg, "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps"),
        rope=_rope(cfg),
        sliding_window=_int(cfg, "sliding_window", default=0) or None,
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=0) or None,
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", default=0) or None,
        attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        torch_dtype=_dtype_name(config.get("torch_dtype") or config.get("dtype")),
        custom_code=bool(config.get("auto_map")),
        raw=config,
    )


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
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


def _float_or_none(cfg: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"config.json: '{name}' must be a number, got {value!r}")
            return float(value)
    return None


def _rope(cfg: dict[str, Any]) -> RopeSpec | None:
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
