"""§10 of the tutorial: model-specific FAQ entries, each a phenomenon, a cause and a solution, as
vLLM-Ascend's template asks. They come from the model's own caveats for the NPU (inspect/caveats.py:
soft-capping, head_dim, MLA, quantization, ...), the operators of its own code that need a custom op on Ascend
(inspect/operator_gate.py: a CUDA kernel, with or without a fallback, or a Triton kernel) and the plan's warnings
and numbers (the memory it assumed, the memory left outside vLLM's share, the KV cache at the chosen
max-model-len). The cause is the caveat's
own sentence or the plan's figures; the phenomenon and the solution are written per kind
(messages/upstream.py). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_adapt.inspect.operator_gate import CUDA, CUDA_FALLBACK, TRITON, OperatorGate
from llm_adapt.inspect.operators import CaveatRecord
from llm_adapt.inspect.plan import DeployPlan, allowed_tp
from llm_adapt.inspect.stage import ConfigSummary
from llm_adapt.messages import Reason, reason

# caveat id -> (title key, phenomenon key, solution key); the solution may take the facts below
BY_CAVEAT = {
    "ascend-softcap": ("faq_t_softcap", "faq_softcap_seen", "faq_softcap_fix"),
    "fp16-softcap": ("faq_t_fp16", "faq_fp16_seen", "faq_fp16_fix"),
    "head-dim-large": ("faq_t_head_dim", "faq_head_dim_seen", "faq_head_dim_fix"),
    "tp-kv-replication": ("faq_t_kv_repl", "faq_kv_repl_seen", "faq_kv_repl_fix"),
    "ascend-quant": ("faq_t_quant", "faq_quant_seen", "faq_quant_fix"),
    "moe-cpu": ("faq_t_numeric", "faq_slow_seen", "faq_slow_fix"),
}
NUMERIC = ("faq_t_numeric", "faq_numeric_seen", "faq_numeric_fix")  # any other caveat: an accuracy risk
PLAN_OWN = ("memory_assumed", "kv_below_one", "kv_below_seqs")  # warnings the plan's own entries below cover


@dataclass(frozen=True)
class FaqEntry:
    title: Reason
    phenomenon: Reason
    cause: Any  # a Reason, or a warning's text where it has no key
    solution: Reason


def faq_entries(caveats: list[CaveatRecord], plan: DeployPlan, config: ConfigSummary,
                operators: OperatorGate | None = None) -> list[FaqEntry]:
    """The FAQ of one model's NPU deployment: its caveats and the custom ops its own code needs, then the plan's
    memory and KV cache entries, then any other plan warning. `config`: inspect.json's config summary (head_dim,
    num_kv_heads); `operators`: the operator gate over the model's own code (None or {}: not read)."""
    facts = {"head_dim": config.get("head_dim"), "kv_heads": config.get("num_kv_heads")}
    entries = _tensor_parallel(config) + [_from_caveat(c, facts) for c in caveats] + _custom_ops(operators)
    entries += _context(plan, config) + _dtype_range(plan, config)
    entries += _memory(plan) + [_kv_capacity(plan)]
    entries += [FaqEntry(reason("faq_t_warning"), reason("faq_warning_seen"), w, reason("faq_warning_fix"))
                for w in plan.warnings if getattr(w, "key", None) not in PLAN_OWN]
    return entries


def _tensor_parallel(config: ConfigSummary) -> list[FaqEntry]:
    """The tensor-parallel sizes this model's heads allow (inspect/plan.allowed_tp), from its config: vLLM refuses
    any other at start. None where the config does not give the heads."""
    heads, kv = config.get("num_heads") or 0, config.get("num_kv_heads") or 0
    sizes = allowed_tp(heads, kv)
    if not sizes:
        return []
    return [FaqEntry(reason("faq_t_tp"), reason("faq_tp_seen"), reason("faq_tp_cause", heads=heads, kv=kv),
                     reason("faq_tp_fix", sizes=", ".join(map(str, sizes)), largest=sizes[-1]))]


def _context(plan: DeployPlan, config: ConfigSummary) -> list[FaqEntry]:
    """Where the deployment's context is shorter than the model's positions: requests past it are refused. None
    where it serves every position."""
    positions = config.get("max_position_embeddings")
    if not positions or plan.max_model_len >= positions:
        return []
    return [FaqEntry(reason("faq_t_context"), reason("faq_context_seen", mml=f"{plan.max_model_len:,}"),
                     reason("faq_context_cause", mml=f"{plan.max_model_len:,}", positions=f"{positions:,}",
                            longest=f"{plan.longest_max_model_len:,}"),
                     reason("faq_context_fix", longest=f"{plan.longest_max_model_len:,}", positions=f"{positions:,}"))]


def _dtype_range(plan: DeployPlan, config: ConfigSummary) -> list[FaqEntry]:
    """Where the deployment serves float16 a checkpoint stored in bf16 or fp32: a narrower range than it was
    trained in. None otherwise."""
    stored = str(config.get("torch_dtype") or "").replace("torch.", "")
    served = str(plan.dtype).lower()
    if served not in ("fp16", "float16", "half") or stored not in ("bfloat16", "float32"):
        return []
    from llm_adapt.accuracy.diagnosis import largest_finite  # torch's finfo: imported where an entry needs it

    return [FaqEntry(reason("faq_t_dtype"), reason("faq_dtype_seen"),
                     reason("faq_dtype_cause", stored=stored, top=f"{largest_finite('fp16'):,.0f}"),
                     reason("faq_dtype_fix"))]


# operator kind -> (phenomenon key, solution key): what each kind of the model's own kernels does on Ascend
CUSTOM_OP = {CUDA: ("faq_cuda_seen", "faq_cuda_fix"), CUDA_FALLBACK: ("faq_fallback_seen", "faq_fallback_fix"),
             TRITON: ("faq_triton_seen", "faq_triton_fix")}


def _custom_ops(gate: OperatorGate | None) -> list[FaqEntry]:
    """One entry per file of the model's own code whose operators need a custom op on Ascend (a CUDA kernel, with
    or without a fallback, or a Triton kernel), its evidence the lines that show it. None where the model ships
    no code, or only plain torch."""
    out = []
    for found in (gate or {}).get("files", []):
        keys = CUSTOM_OP.get(found.get("kind", ""))
        if keys:
            evidence = "; ".join(found.get("evidence", [])[:3])
            out.append(FaqEntry(reason("faq_t_custom_op", file=found.get("file", "")), reason(keys[0]),
                                reason("faq_custom_op_cause", file=found.get("file", ""), evidence=evidence),
                                reason(keys[1])))
    return out


def _from_caveat(caveat: CaveatRecord, facts: dict[str, int | None]) -> FaqEntry:
    title, seen, fix = BY_CAVEAT.get(caveat.get("id"), NUMERIC)
    return FaqEntry(reason(title, operator=caveat.get("operator", ""), **facts), reason(seen), caveat.get("text"),
                    reason(fix, **facts))


def _memory(plan: DeployPlan) -> list[FaqEntry]:
    """The memory the plan assumed (where no card was named), and the headroom its memory share leaves."""
    gib, util = plan.device_memory_gib, plan.memory_utilization
    out = []
    if plan.device_memory_assumed:
        out.append(FaqEntry(reason("faq_t_memory"), reason("faq_memory_seen"),
                            reason("faq_memory_cause", gib=f"{gib:g}", util=f"{util:g}"), reason("faq_memory_fix")))
    used = gib * util
    out.append(FaqEntry(reason("faq_t_headroom"), reason("faq_headroom_seen"),
                        reason("faq_headroom_cause", util=f"{util:g}", used=f"{used:.1f}", gib=f"{gib:g}",
                               free=f"{gib - used:.1f}"), reason("faq_headroom_fix")))
    return out


def _kv_capacity(plan: DeployPlan) -> FaqEntry:
    """The KV cache at the chosen max-model-len: below --max-num-seqs, long requests queue for the cache;
    above it, the scheduler's cap is what queues them."""
    fit, seqs = int(plan.max_concurrency), plan.max_num_seqs
    figures = {"mml": f"{plan.max_model_len:,}", "blocks": f"{plan.kv_cache_blocks:,}",
               "block": plan.block_size, "per_token": f"{plan.kv_bytes_per_token:,}", "fit": fit, "seqs": seqs}
    title = reason("faq_t_kv", mml=figures["mml"])
    if fit < seqs:
        return FaqEntry(title, reason("faq_kv_seen", fit=fit), reason("faq_kv_cause", **figures), reason("faq_kv_fix"))
    return FaqEntry(title, reason("faq_seqs_seen", seqs=seqs), reason("faq_seqs_cause", **figures),
                    reason("faq_seqs_fix", fit=fit))
