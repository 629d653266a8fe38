"""Per-platform caveats from one table: each rule has a condition on ModelFacts, a source, and what
to check in the accuracy section. Pure.

Sources are named per rule so a reader can check them against the engine version they deploy;
the entries describe vLLM 0.32 (vLLM-CPU) and vLLM-Ascend as cited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from llm_adapt.inspect.inventory import ModelFacts

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
    text: str
    check: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


RULES: tuple[Rule, ...] = (
    Rule("cpu-head-dim", "head_dim", ("cpu",), lambda f: f.head_dim not in CPU_HEAD_SIZES and f.attention != "MLA",
         lambda f: f"vLLM-CPU attention supports head_dim {', '.join(map(str, CPU_HEAD_SIZES))}; {f.head_dim} fails at "
                   "the first request",
         "no accuracy result is possible on vLLM-CPU: the endpoint check fails at its first request",
         "vLLM 0.32 cpu_attn.py CPUAttentionBackend.get_supported_head_sizes"),
    Rule("cpu-mla", "attention", ("cpu",), lambda f: f.attention == "MLA",
         lambda f: "vLLM-CPU runs MLA through its reference CPU_MLA backend (AMX_MLA only on AMX CPUs): correct but slow",
         "compare the endpoint's top-k KL against the in-process floor; expect low throughput in the benchmark",
         "vLLM 0.32 platforms/cpu.py attention backend selection, v1/attention/backends/mla/cpu_mla.py"),
    Rule("ascend-softcap", "soft-capping", ("npu",), lambda f: bool(f.attn_softcap),
         lambda f: f"attention soft-capping ({f.attn_softcap:g}): vLLM-Ascend's AscendAttentionBackendImpl accepts "
                   "logits_soft_cap but its NPU attention kernels take no soft-cap argument, so the cap can be dropped silently",
         "per-layer cosine of the attention layers and the top-k KL on long prompts: a dropped cap shows as error growing "
         "with attention-logit magnitude",
         "vLLM-Ascend vllm_ascend/attention/attention_v1.py (0.8 series): logits_soft_cap is not stored or passed on"),
    Rule("ascend-sliding", "attention window", ("npu",), lambda f: f.sliding_layers > 0,
         lambda f: f"sliding window {f.sliding_window} in {f.sliding_layers} of {len(f.layer_types)} layers: vLLM-Ascend's attention backend stores "
                   "sliding_window but its paged/flash kernel calls do not receive it, so windowed layers may attend to "
                   "the whole context",
         "accuracy on prompts longer than the window: teacher-forced top-k KL beyond the window's length, where a "
         "missing window changes the result",
         "vLLM-Ascend vllm_ascend/attention/attention_v1.py (0.8 series): sliding_window is not passed to "
         "_npu_paged_attention / _npu_flash_attention"),
    Rule("ascend-mla", "attention", ("npu",), lambda f: f.attention == "MLA",
         lambda f: "MLA runs on vLLM-Ascend's own MLA backend (mla_v1.py), not vLLM's; its graph mode and quantized "
                   "variants are DeepSeek-specific",
         "per-layer cosine of the attention layers against the fp32 gold; check eager and graph mode separately",
         "vLLM-Ascend vllm_ascend/attention/mla_v1.py"),
    Rule("ascend-quant", "quantization", ("npu",),
         lambda f: bool(f.quantization) and f.quantization not in ("ascend", "w8a8", "w4a8"),
         lambda f: f"the checkpoint is quantized with {f.quantization!r}; vLLM-Ascend lists W8A8 (and later W4A8) in "
                   "its own ModelSlim format as supported, not GPU formats such as GPTQ, AWQ or FP8",
         "run compare against the fp32 gold of the unquantized model; expect the engine to refuse the format",
         "vLLM-Ascend docs, user guide: Supported Features (Quantization: W8A8 available) and the quantization guide"),
    Rule("fp16-softcap", "soft-capping", ("npu", "cuda"), lambda f: bool(f.attn_softcap or f.final_softcap),
         lambda f: f"soft-capping bounds logits only after they are computed (cap {f.attn_softcap or f.final_softcap:g}); "
                   f"in fp16 (largest value {FP16_MAX:,.0f}) the scores and the residual stream before the cap can "
                   "overflow to inf/NaN: prefer bf16 (Ascend 310P has no bf16)",
         "run compare with --dtype fp16 and look for NaN/Inf rows and a collapsing per-layer cosine in late layers",
         "fp16 range (IEEE 754 binary16); the models' own configs ship bf16/fp32 weights"),
    Rule("norm-one-plus-w", "norm", ALL, lambda f: f.norm == "rms_1p",
         lambda f: "RMSNorm scales by (1 + w): a port that reuses a plain RMSNorm kernel scales by w and is wrong from "
                   "the first layer",
         "per-layer cosine of layer 0 (shadow mode): a w-vs-(1+w) mix-up shows there, not only at the logits",
         "the norm module probed numerically by llm-adapt (w = 0 gives x / rms(x))"),
    Rule("embed-scale", "embedding scale", ALL, lambda f: bool(f.embed_scale),
         lambda f: f"embeddings are multiplied by {f.embed_scale:g} (cast to the model dtype first, as transformers does)",
         "layer-0 input error: a missing or fp32-vs-bf16 scale shows as a constant relative error from the first layer",
         "the embedding module's scale attribute"),
    Rule("tp-kv-replication", "attention", ("cuda", "npu"), lambda f: f.attention in ("GQA", "MQA") and f.num_kv_heads < 8,
         lambda f: f"tensor parallel above {f.num_kv_heads} replicates KV heads (more KV memory per device)",
         "none for accuracy; check the KV-cache numbers of the deployment plan",
         "vLLM QKVParallelLinear: num_kv_heads < tp_size replicates heads"),
    Rule("head-dim-large", "head_dim", ("cuda", "npu"), lambda f: f.head_dim > 256 and f.attention != "MLA",
         lambda f: "head_dim above 256 is outside the fast attention kernels' range",
         "none for accuracy; expect a slower fallback attention in the benchmark",
         "FlashAttention-2 supports head dimensions up to 256"),
    Rule("moe-cpu", "MoE", ("cpu",), lambda f: bool(f.experts),
         lambda f: f"{f.experts} experts on CPU: every expert's weights are read per step at low batch",
         "none for accuracy; expect low decode throughput in the benchmark",
         "vLLM 0.32 CPU fused-MoE path"),
    Rule("unusual-activation", "activation", ALL, lambda f: f.activation not in ("silu", "gelu_tanh", "gelu", "relu"),
         lambda f: f"activation {f.activation!r} is uncommon: check the engine has a kernel for it",
         "per-layer cosine of the MLPs", "the activation module probed numerically by llm-adapt"),
)


def platform_caveats(facts: ModelFacts, platform: str, cpu_flags: set[str] | None = None) -> list[Caveat]:
    """Every rule that applies to these facts on this platform, in table order."""
    from llm_adapt.platforms import get_platform

    out = [Caveat(r.id, r.operator, platform, r.text(facts), r.check, r.source)
           for r in RULES if (r.platforms is ALL or platform in r.platforms) and r.applies(facts)]
    isa_note = get_platform(platform).isa_note
    note = isa_note(cpu_flags) if isa_note is not None and cpu_flags is not None else None
    if note:
        out.append(Caveat(note[0], "CPU ISA", platform, note[1], "none for accuracy; expect lower throughput",
                          "/proc/cpuinfo flags of this machine"))
    return out
