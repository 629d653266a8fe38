"""What holds on every accelerator platform (a device with its own memory, served at a lower precision than the
host's fp32): the caveats a model carries there. Each accelerator platform lists them beside its own."""

from __future__ import annotations

from llm_adapt.messages import reason
from llm_adapt.platforms.base import CaveatRule

FP16_MAX = 65504.0

ACCELERATOR_CAVEATS: tuple[CaveatRule, ...] = (
    CaveatRule("fp16-softcap", "soft-capping", lambda f: bool(f.attn_softcap or f.final_softcap),
               lambda f: reason("cav_fp16_softcap", cap=f.attn_softcap or f.final_softcap, fp16_max=FP16_MAX),
               reason("cav_fp16_softcap_check"), reason("cav_src_fp16")),
    CaveatRule("tp-kv-replication", "attention", lambda f: f.attention in ("GQA", "MQA") and f.num_kv_heads < 8,
               lambda f: reason("cav_tp_kv_replication", kv_heads=f.num_kv_heads), reason("cav_tp_kv_replication_check"),
               "vLLM QKVParallelLinear: num_kv_heads < tp_size replicates heads"),
    CaveatRule("head-dim-large", "head_dim", lambda f: f.head_dim > 256 and f.attention != "MLA",
               lambda f: reason("cav_head_dim_large"), reason("cav_head_dim_large_check"),
               "FlashAttention-2 supports head dimensions up to 256"),
)
