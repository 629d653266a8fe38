"""Every decoder family transformers and vLLM both implement, computed from their registries, and a tiny random
model of each built from its own config class. Nothing here is a hand-kept list of families: the shapes below
are the common names configs give their sizes, set where a family's config has them.

- The families: transformers' causal-LM auto classes (model type -> class name) whose class vLLM's
  text-generation registry also names.
- The tiny model: the family's config class with every size it declares made small (2 layers, width 128,
  head_dim 32, 4 experts of which 2 per token, ...), everything else at the family's own defaults, so lists
  that follow the layer count (layer types, sliding windows) are derived by the config itself. A family whose
  config or model does not build that small, or whose forward pass fails, is reported with transformers' own
  error line.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path

from llm_adapt.models.synthetic import SHARP_SCALE, copy_tokenizer

# The sizes configs declare, by the names they use, made small. Only names a family's config already has are set.
SMALL = {
    # widths and depth (Llama's names, GPT-2's, OPT's, Falcon's)
    "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 2048,
    "n_embd": 128, "n_layer": 2, "n_head": 4, "n_positions": 2048, "n_inner": 256, "ffn_dim": 256,
    "word_embed_proj_dim": 128, "num_layers": 2, "num_heads": 4, "rotary_dim": 16,
    "d_model": 128, "n_heads": 4, "n_layers": 2, "max_seq_len": 2048,  # DBRX's names
    # mixtures of experts
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "moe_num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "n_shared_experts": 1, "n_group": 1,
    "topk_group": 1, "first_k_dense_replace": 1, "moe_topk": 2, "num_shared_experts": 1, "moe_k": 2,
    "index_n_heads": 4, "index_head_dim": 32, "index_topk": 16,  # DeepSeek-V3.2's sparse-attention indexer
    # latent attention (DeepSeek's MLA)
    "kv_lora_rank": 32, "q_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 32,
    # state-space and linear-attention layers
    # a state-space layer's heads span hidden_size x expand (2): 4 heads of 64
    "mamba_d_state": 16, "state_size": 16, "mamba_n_heads": 4, "mamba_d_head": 64, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
}
# Sizes a family may keep at None to mean "off" or "derived": left alone when the default is None.
KEEP_NONE = ("q_lora_rank", "head_dim", "n_inner", "num_key_value_heads", "moe_intermediate_size")


class NotBuilt(Exception):
    """A family transformers cannot build small; its message is the reason, in transformers' words."""


@dataclass(frozen=True)
class Family:
    model_type: str
    architecture: str  # the class both registries name, e.g. "LlamaForCausalLM"


def shared_families(causal_lm: dict[str, object], vllm_text: set[str] | dict) -> list[Family]:
    """The model types whose causal-LM class name vLLM's text-generation registry also holds, sorted. Pure."""
    return sorted((Family(t, c) for t, c in causal_lm.items() if isinstance(c, str) and c in vllm_text),
                  key=lambda f: f.model_type)


def installed_families() -> list[Family]:
    """shared_families of the installed transformers and vLLM."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from vllm.model_executor.models.registry import _TEXT_GENERATION_MODELS

    return shared_families(dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), set(_TEXT_GENERATION_MODELS))


def depth_for(default_types: object) -> int:
    """The fewest layers (at least 2) whose share of the family's own layer pattern holds each kind of layer it
    has (a hybrid's attention layer comes every fourth: 4). Pure."""
    if not isinstance(default_types, (list, tuple)) or not default_types:
        return 2
    first = {kind: default_types.index(kind) for kind in dict.fromkeys(default_types)}
    return max(2, max(first.values()) + 1)


def small_values(defaults: dict, accepted: set[str], *, depth: int = 2, head_dim: str = "rule") -> dict:
    """SMALL's sizes for a config whose defaults are `defaults` and whose __init__ takes `accepted`, at `depth`
    layers. head_dim "rule": set where the family has one, "force": set even where it defaults to None (derived
    later as None // ...), "drop": left to the family (DeepSeek-V3 ties it to its rope dims). Pure."""
    values = {}
    for key, small in SMALL.items():
        if key not in defaults and key not in accepted:
            continue
        if key == "head_dim" and head_dim != "rule":
            if head_dim == "force":
                values[key] = small
            continue
        if defaults.get(key, 0) is None and key in KEEP_NONE:
            continue
        values[key] = small
    for key in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
        if key in values:
            values[key] = depth
    if "kv_lora_rank" in values and "num_key_value_heads" in values:  # latent attention: a KV head per query head
        values["num_key_value_heads"] = values.get("num_attention_heads", values["num_key_value_heads"])
    types = defaults.get("layer_types")
    if isinstance(types, (list, tuple)) and types:  # an explicit pattern: the family's own, cut to the depth
        values["layer_types"] = list(types[:depth])
    return values


# (head_dim, depth): depth None is the family's own pattern's (depth_for); 8 reaches a hybrid whose attention
# layer comes by period and offset (Jamba's fifth)
ATTEMPTS = (("rule", 2), ("drop", 2), ("force", 2), ("rule", None), ("rule", 8))


def small_configs(model_type: str, ids: dict):
    """The family's config small, with the tokenizer's vocabulary and special tokens: each attempt in turn
    (head_dim by the rule, left to the family, forced; then the family's pattern at its own depth). Yields
    configs; raises NotBuilt when the family's config does not even build with its defaults."""
    from transformers import CONFIG_MAPPING

    config_cls = CONFIG_MAPPING[model_type]
    try:
        default = config_cls()
    except Exception as exc:  # noqa: BLE001 - transformers' own error is the reason reported
        raise NotBuilt(f"{config_cls.__name__}() does not build with its defaults: {one_line(exc)}") from exc
    sub = getattr(default, "sub_configs", {}).get("text_config")
    if sub is not None and getattr(default, "text_config", None) is not None:  # a composite: its text model's config
        config_cls, default = type(default.text_config), default.text_config
    defaults = default.to_dict()
    accepted = set(inspect.signature(config_cls.__init__).parameters)
    last: Exception | None = None
    for head_dim, depth in ATTEMPTS:
        depth = depth or depth_for(defaults.get("layer_types"))
        try:
            yield config_cls(**(small_values(defaults, accepted, depth=depth, head_dim=head_dim) | ids))
        except Exception as exc:  # noqa: BLE001
            last = exc
    if last is not None:
        raise NotBuilt(f"{config_cls.__name__} does not build small: {one_line(last)}")


def write_registry_model(family: Family, out: Path, *, tokenizer_from: Path, sharp: bool = False,
                         seed: int = 0) -> Path:
    """A tiny random `family` model, its class the one both registries name, with the vocabulary, special tokens
    and chat template of `tokenizer_from`; `sharp`: its (untied) head scaled SHARP_SCALE times. Runs one forward
    pass before saving. Raises NotBuilt with transformers' reason."""
    import torch
    import transformers

    special = json.loads((Path(tokenizer_from) / "config.json").read_text())
    eos = special.get("eos_token_id", 2)
    ids = {"vocab_size": special.get("vocab_size", 49152), "bos_token_id": special.get("bos_token_id", 1),
           "eos_token_id": eos, "pad_token_id": eos, "tie_word_embeddings": not sharp}
    model_cls = getattr(transformers, family.architecture, None)
    if model_cls is None:
        raise NotBuilt(f"transformers has no {family.architecture}")
    failed: Exception | None = None
    for config in small_configs(family.model_type, ids):
        torch.manual_seed(seed)
        try:
            model = model_cls(config).eval()
            with torch.no_grad():
                if sharp:
                    model.get_output_embeddings().weight.mul_(SHARP_SCALE)
                logits = model(torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])).logits
        except Exception as exc:  # noqa: BLE001
            failed = exc
            continue
        if torch.isfinite(logits).all():
            break
        failed = ValueError("non-finite logits")
    else:
        raise NotBuilt(f"{family.architecture} does not run small: {one_line(failed) if failed else 'no config built'}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    copy_tokenizer(Path(tokenizer_from), out)
    return out


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
