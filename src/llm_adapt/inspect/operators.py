"""Operator inventory read from the config, with the platform caveats we know of. Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from llm_adapt.models.spec import ModelSpec


@dataclass(frozen=True)
class Operator:
    name: str  # e.g. "norm", "attention"
    value: str  # e.g. "RMSNorm (eps 1e-05)"
    caveats: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


ACTIVATIONS = {"silu": "SiLU (SwiGLU gated MLP)", "swish": "SiLU (SwiGLU gated MLP)",
               "gelu": "GELU", "gelu_pytorch_tanh": "GELU (tanh approx.)", "relu": "ReLU"}


def attention_kind(spec: ModelSpec) -> str:
    if spec.num_kv_heads == spec.num_heads:
        return f"MHA ({spec.num_heads} heads)"
    if spec.num_kv_heads == 1:
        return f"MQA ({spec.num_heads} query heads, 1 KV head)"
    group = spec.num_heads // spec.num_kv_heads
    return f"GQA ({spec.num_heads} query heads, {spec.num_kv_heads} KV heads, group size {group})"


def rope_text(spec: ModelSpec) -> str:
    if spec.rope is None:
        return "none (learned or absolute positions)"
    text = f"RoPE (theta {spec.rope.theta:g}"
    if spec.rope.scaling_type:
        text += f", {spec.rope.scaling_type} scaling"
        if spec.rope.factor:
            text += f" x{spec.rope.factor:g}"
        if spec.rope.original_max_position:
            text += f" from {spec.rope.original_max_position}"
    return text + ")"


def operator_inventory(spec: ModelSpec, platform: str, cpu_flags: set[str] | None = None) -> list[Operator]:
    """The model's building blocks and, where we know one, a caveat for the platform."""
    ops = [
        Operator("norm", f"RMSNorm (eps {spec.norm_eps:g})" if spec.norm_eps is not None else "RMSNorm"),
        Operator("activation", ACTIVATIONS.get(spec.hidden_act, spec.hidden_act), _act_caveats(spec)),
        Operator("positional encoding", rope_text(spec), _rope_caveats(spec)),
        Operator("attention", attention_kind(spec), _attention_caveats(spec, platform)),
        Operator("head_dim", str(spec.head_dim), _head_dim_caveats(spec, platform)),
        Operator("embeddings", "tied to lm_head" if spec.tie_word_embeddings else "separate lm_head"),
        Operator("sliding window", str(spec.sliding_window) if spec.sliding_window else "none"),
        Operator("MoE", f"{spec.num_experts} experts, top-{spec.experts_per_token}" if spec.is_moe else "dense",
                 ["MoE on CPU runs unfused expert loops: expect low throughput"] if spec.is_moe and platform == "cpu" else []),
        Operator("biases", _bias_text(spec)),
    ]
    if platform == "cpu" and cpu_flags is not None and "avx512f" not in cpu_flags:
        ops.append(Operator("CPU ISA", "AVX2 (no AVX-512)", ["vLLM-CPU runs its limited AVX2 kernels on this CPU"]))
    return ops


def _bias_text(spec: ModelSpec) -> str:
    parts = [name for name, on in (("attention", spec.attention_bias), ("MLP", spec.mlp_bias)) if on]
    return ", ".join(parts) + " bias" if parts else "none"


def _act_caveats(spec: ModelSpec) -> list[str]:
    return [] if spec.hidden_act in ACTIVATIONS else [f"activation {spec.hidden_act!r} is uncommon: check the engine's kernel"]


def _rope_caveats(spec: ModelSpec) -> list[str]:
    if spec.rope and spec.rope.scaling_type and spec.rope.scaling_type not in ("llama3", "linear", "dynamic", "yarn"):
        return [f"rope scaling {spec.rope.scaling_type!r} is uncommon: check the engine supports it"]
    return []


def _attention_caveats(spec: ModelSpec, platform: str) -> list[str]:
    if platform in ("cuda", "npu") and spec.num_kv_heads < 8:
        return [f"tensor parallel above {spec.num_kv_heads} replicates KV heads (more KV memory per device)"]
    return []


# vLLM 0.32's CPU attention backend (CPUAttentionBackend.get_supported_head_sizes); other sizes fail
# at the first request with "Unsupported CPU attention configuration".
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


def _head_dim_caveats(spec: ModelSpec, platform: str) -> list[str]:
    if platform == "cpu" and spec.head_dim not in CPU_HEAD_SIZES:
        return [f"vLLM-CPU attention supports head_dim {', '.join(map(str, CPU_HEAD_SIZES))}: {spec.head_dim} fails "
                "at the first request"]
    if spec.head_dim > 256 and platform in ("cuda", "npu"):
        return ["head_dim above 256 is outside the fast attention kernels' range"]
    if spec.head_dim % 16:
        return ["head_dim not a multiple of 16 may miss the fast attention kernels"]
    return []
