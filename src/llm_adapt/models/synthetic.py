"""Small random Llama models written as real HF directories, for tests and benchmarks.

They use the real transformers LlamaForCausalLM, safetensors weights and (optionally) a real
tokenizer copied from another model directory, so every code path that loads a user's model
loads these the same way.
"""

from __future__ import annotations

import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                   "generation_config.json")


def tiny_llama_config(**overrides):
    from transformers import LlamaConfig

    # head_dim 32: the smallest vLLM-CPU's attention kernels accept
    values = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, vocab_size=49152, max_position_embeddings=2048,
                  rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    values.update(overrides)
    return LlamaConfig(**values)


def write_tiny_llama(out: Path, *, seed: int = 0, tokenizer_from: Path | None = None, dtype: str = "float32",
                     shard_size: str | None = None, **config) -> Path:
    """Write a random Llama into `out` (config.json + safetensors [+ tokenizer]) and return `out`."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = tiny_llama_config(**config)
    model = LlamaForCausalLM(cfg).to(getattr(torch, dtype))
    _spread_weights(model, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kwargs = {"max_shard_size": shard_size} if shard_size else {}
    model.save_pretrained(out, safe_serialization=True, **kwargs)
    if tokenizer_from is not None:
        copy_tokenizer(Path(tokenizer_from), out)
    return out


def _spread_weights(model, seed: int) -> None:
    """Random init scaled so activations neither vanish nor explode across a few layers."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 1:  # norms
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            else:
                std = 1.0 / param.shape[-1] ** 0.5
                param.copy_(std * torch.randn(param.shape, generator=gen))


def copy_tokenizer(src: Path, dst: Path) -> None:
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)


# Other families, written by transformers' own classes: (config class, model class, what the tiny
# config sets beyond the shared shape). Each family keeps the details that make it different.
FAMILIES: dict[str, tuple[str, str, dict]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),  # q/k/v biases
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {}),  # qk-norm
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"sliding_window": 16}),  # (1 + w) norms, soft-capping
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 16}),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2}),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", {"num_experts": 4, "num_experts_per_tok": 2,
                                                            "moe_intermediate_size": 32,
                                                            "shared_expert_intermediate_size": 64}),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", {"num_experts": 4, "num_experts_per_tok": 2,
                                                            "moe_intermediate_size": 32,
                                                            "norm_topk_prob": True}),  # as Qwen3-MoE ships
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"sliding_window": 16}),
    "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM", {  # MLA, a dense first layer, a shared expert
        # DeepSeek's own latent, 512 + 64: vLLM-CPU 0.32's CPU_MLA decode kernel (CPUs without AMX) takes that one
        # only ("Unsupported block size: 16" at the first request for 256 + 64), its AMX_MLA 320, 512 or 576; at
        # 16 + 16 vLLM-CPU stopped at start ("invalid weight input features 16", kv_b_proj), at 32 + 32 at the
        # first request ("Head dimension 64 is not supported by MLA")
        "num_key_value_heads": 4, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 64, "v_head_dim": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1,
        "n_group": 1, "topk_group": 1}),  # as DeepSeek-V2-Lite's: vLLM's CPU router needs the groups given
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),  # fused qkv_proj and gate_up_proj
}
# The families the planner names and vLLM serves, as the zoo (benchmarks/zoo.py, docs/models.md) writes them.
ZOO = ("llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gemma2", "gemma3", "mistral", "phi3", "deepseek_v2")
MOE = ("qwen3_moe", "mixtral", "qwen2_moe", "deepseek_v2")
# A sharp model: its lm_head scaled this many times. transformers' own init (std 0.02) leaves the logits of a
# width-128 model near-uniform (flat); twenty times that makes most positions decisive (the default tokenizer's
# vocabulary, 30 positions: see tests/models/test_zoo.py). Gemma's final soft-capping (30) flattens what scaling
# adds past it. At fifty times a clean Llama's served KL came 1.32x the in-process floor (docs/models.md).
SHARP_SCALE = 20.0
# The zoo's shape: head_dim 32 in every family, the smallest vLLM-CPU's attention serves (families that derive
# head_dim from hidden / heads, Qwen2 and Phi-3 among them, got 16 at width 64 and the engine died at the first
# request: "Unsupported CPU attention configuration: head_dim=16").
ZOO_SHAPE = dict(hidden_size=128, intermediate_size=256, head_dim=32)
# vLLM's Gemma2ForCausalLM has no lm_head of its own (it always reads the embeddings): these are sharpened
# by their final norm's gain instead, which Gemma writes as (1 + weight). Measured: an untied Gemma-2
# checkpoint stops vLLM-CPU 0.32 at start ("There is no module or parameter named 'lm_head'").
TIED_IN_VLLM = ("gemma2",)
# And the ones vLLM never ties (inspect/caveats.NEVER_TIED): saved tied, a DeepSeek-V2 holds no lm_head.weight and
# vLLM-CPU 0.32 served its head unloaded (every answer token 0). Written untied, as DeepSeek ships it.
UNTIED_IN_VLLM = ("deepseek_v2",)
TINY_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, vocab_size=1024, max_position_embeddings=2048,
                  bos_token_id=1, eos_token_id=2)


# Families laid out otherwise than Llama, each written whole by its own config (their configs name their shapes
# their own way): blocks under `transformer.h` (GPT-J, GPT-2, Falcon), under `model.decoder.layers` with the final
# norm registered before them (OPT), scalings computed between modules (Granite's embedding, residual, attention
# and logits multipliers, as Granite 3 ships them), a logit scale and a parallel block (Cohere).
LAYOUTS: dict[str, tuple[str, str, dict]] = {
    "granite": ("GraniteConfig", "GraniteForCausalLM", {**TINY_SHAPE, "embedding_multiplier": 12.0,
                                                         "residual_multiplier": 0.22,
                                                         "attention_multiplier": 0.0078125, "logits_scaling": 8.0}),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", {"n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8,
                                               "n_positions": 2048}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 2048}),
    "opt": ("OPTConfig", "OPTForCausalLM", {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                                            "ffn_dim": 128, "max_position_embeddings": 2048,
                                            "word_embed_proj_dim": 64}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {"hidden_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 4, "new_decoder_architecture": False,
                                                     "multi_query": True}),
    "cohere": ("CohereConfig", "CohereForCausalLM", {**TINY_SHAPE, "logit_scale": 0.0625,
                                                     "tie_word_embeddings": False}),  # a head vLLM never reads
}


def write_layout_family(family: str, out: Path, *, tokenizer_from: Path, seed: int = 0) -> Path:
    """A random 2-layer model of a LAYOUTS family with the vocabulary and tokenizer of `tokenizer_from`."""
    import json

    import torch
    import transformers

    config_cls, model_cls, values = LAYOUTS[family]
    special = json.loads((Path(tokenizer_from) / "config.json").read_text())
    ids = {"vocab_size": special["vocab_size"], "bos_token_id": special.get("bos_token_id", 1),
           "eos_token_id": special.get("eos_token_id", 2), "pad_token_id": special.get("eos_token_id", 2)}
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**{**values, **ids}))
    _spread_weights(model, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    copy_tokenizer(Path(tokenizer_from), out)
    return out


def write_tiny_family(family: str, out: Path, *, seed: int = 0, **overrides) -> Path:
    """A random 2-layer model of `family` (a FAMILIES key) saved as safetensors; returns `out`."""
    import torch
    import transformers

    config_cls, model_cls, extra = FAMILIES[family]
    torch.manual_seed(seed)
    config = getattr(transformers, config_cls)(**{**TINY_SHAPE, **extra, **overrides})
    model = getattr(transformers, model_cls)(config)
    _spread_weights(model, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    return out


def write_zoo_model(family: str, out: Path, *, tokenizer_from: Path, sharp: bool = False, seed: int = 0,
                    **overrides) -> Path:
    """A tiny `family` model that can be served and judged: transformers' own init ("flat": its logits near
    uniform, as any untrained checkpoint's) or, `sharp`, with its lm_head (untied) scaled SHARP_SCALE times (TIED_IN_VLLM: its final norm's gain);
    the vocabulary, special tokens and chat template of `tokenizer_from`, and `pad_token_id` at its EOS, whose
    embedding row transformers zeroes (a zero row, as real checkpoints have). Returns `out`."""
    import json

    import torch
    import transformers

    config_file = Path(tokenizer_from) / "config.json"
    special = json.loads(config_file.read_text()) if config_file.is_file() else {}
    config_cls, model_cls, extra = FAMILIES[family]
    vocab = special.get("vocab_size", 49152)
    eos = special.get("eos_token_id", 2)
    torch.manual_seed(seed)
    values = {**TINY_SHAPE, **ZOO_SHAPE, **extra, "vocab_size": vocab, "bos_token_id": special.get("bos_token_id", 1),
              "eos_token_id": eos, "pad_token_id": eos,
              "tie_word_embeddings": (not sharp or family in TIED_IN_VLLM) and family not in UNTIED_IN_VLLM,
              **overrides}
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**values))
    if sharp:
        with torch.no_grad():
            if family in TIED_IN_VLLM:
                model.model.norm.weight.add_(1).mul_(SHARP_SCALE).sub_(1)
            else:
                model.get_output_embeddings().weight.mul_(SHARP_SCALE)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    copy_tokenizer(Path(tokenizer_from), out)
    return out
