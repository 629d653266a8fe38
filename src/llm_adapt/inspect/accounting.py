"""Parameter accounting: the tensors the config formula expects, beside the tensors the weights hold.

The formula is a list of expected tensor groups, named the way Hugging Face checkpoints name
them with the layer index replaced by `{L}` (and every expert of a layer in one group), so a
disagreement names the tensors behind it instead of printing two totals. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.messages import Said, reason
from llm_adapt.models.quant import QUANT_SIDE
from llm_adapt.models.spec import ModelSpec

ROLES = ("embedding", "attention", "mlp", "norms", "lm_head")
QUANT_ROLE = "quantization"  # scales, zeros, offsets of a quantized checkpoint: not parameters of the model
PACKED = re.compile(r"\.(qweight|weight_packed)$")  # AWQ / GPTQ / compressed-tensors packed int weights


@with_config(ConfigDict(extra="allow"))
class GroupRecord(TypedDict):
    """A group as inspect.json records it (Group.to_dict)."""
    name: str
    role: str
    params: int
    tensors: int


@with_config(ConfigDict(extra="allow"))
class SizeMismatch(TypedDict):
    """A group of the same name, counted differently by the config and the weights."""
    name: str
    config: int
    weights: int


@with_config(ConfigDict(extra="allow"))
class AccountingRecord(TypedDict, total=False):
    """The weights' groups against the config's, as inspect.json records it (Reconciliation.to_dict)."""
    from_config: int
    from_weights: int
    agree: bool
    by_role: dict[str, dict[str, int]]
    unexpected: list[GroupRecord]
    missing: list[GroupRecord]
    mismatched: list[SizeMismatch]
    warnings: list[Said]


@dataclass(frozen=True)
class Group:
    name: str  # e.g. "layers.{L}.self_attn.q_proj.bias"
    role: str  # one of ROLES, or "other" for tensors no rule recognises
    params: int  # over every layer
    tensors: int = 1  # how many checkpoint tensors fold into this group

    def to_dict(self) -> GroupRecord:
        return GroupRecord(**asdict(self))


def _linear(name: str, n_in: int, n_out: int, bias: bool, layers: int, role: str) -> list[Group]:
    out = [Group(f"{name}.weight", role, layers * n_in * n_out, layers)]
    return out + ([Group(f"{name}.bias", role, layers * n_out, layers)] if bias else [])


def _attention(spec: ModelSpec) -> list[Group]:
    h, n, a = spec.hidden_size, spec.num_layers, "layers.{L}.self_attn"
    if spec.mla is not None:
        return _mla(spec)
    groups = (_linear(f"{a}.q_proj", h, spec.q_size, spec.qkv_bias, n, "attention")
              + _linear(f"{a}.k_proj", h, spec.kv_size, spec.qkv_bias, n, "attention")
              + _linear(f"{a}.v_proj", h, spec.kv_size, spec.qkv_bias, n, "attention")
              + _linear(f"{a}.o_proj", spec.q_size, h, spec.o_bias, n, "attention"))
    if spec.qk_norm:  # one RMSNorm over head_dim, shared by every head
        groups += [Group(f"{a}.q_norm.weight", "norms", n * spec.head_dim, n),
                   Group(f"{a}.k_norm.weight", "norms", n * spec.head_dim, n)]
    return groups


def _mla(spec: ModelSpec) -> list[Group]:
    """DeepSeek-V2/V3 multi-head latent attention (modeling_deepseek_v2.DeepseekV2Attention)."""
    m, h, n, a = spec.mla, spec.hidden_size, spec.num_layers, "layers.{L}.self_attn"
    assert m is not None
    q_head = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        q = (_linear(f"{a}.q_a_proj", h, m.q_lora_rank, False, n, "attention")
             + [Group(f"{a}.q_a_layernorm.weight", "norms", n * m.q_lora_rank, n)]
             + _linear(f"{a}.q_b_proj", m.q_lora_rank, spec.num_heads * q_head, False, n, "attention"))
    else:
        q = _linear(f"{a}.q_proj", h, spec.num_heads * q_head, False, n, "attention")
    return q + (_linear(f"{a}.kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim, False, n, "attention")
                + [Group(f"{a}.kv_a_layernorm.weight", "norms", n * m.kv_lora_rank, n)]
                + _linear(f"{a}.kv_b_proj", m.kv_lora_rank,
                          spec.num_heads * (m.qk_nope_head_dim + m.v_head_dim), False, n, "attention")
                + _linear(f"{a}.o_proj", spec.num_heads * m.v_head_dim, h, False, n, "attention"))


def _gated_mlp(prefix: str, hidden: int, width: int, bias: bool, layers: int) -> list[Group]:
    return (_linear(f"{prefix}.gate_proj", hidden, width, bias, layers, "mlp")
            + _linear(f"{prefix}.up_proj", hidden, width, bias, layers, "mlp")
            + _linear(f"{prefix}.down_proj", width, hidden, bias, layers, "mlp"))


def _mlp(spec: ModelSpec) -> list[Group]:
    h, moe = spec.hidden_size, spec.moe_layers
    dense = spec.num_layers - moe
    groups = _gated_mlp("layers.{L}.mlp", h, spec.intermediate_size, spec.mlp_bias, dense) if dense else []
    if not moe:
        return groups
    experts, width = int(spec.num_experts or 0), int(spec.expert_intermediate_size or 0)
    groups += [Group("layers.{L}.mlp.experts", "mlp", moe * experts * 3 * h * width, moe * experts * 3),
               Group("layers.{L}.mlp.gate.weight", "mlp", moe * experts * h, moe)]
    if spec.shared_expert_intermediate_size:
        name = "shared_expert" if spec.shared_expert_gate else "shared_experts"
        groups += _gated_mlp(f"layers.{{L}}.mlp.{name}", h, spec.shared_expert_intermediate_size, False, moe)
    if spec.shared_expert_gate:
        groups.append(Group("layers.{L}.mlp.shared_expert_gate.weight", "mlp", moe * h, moe))
    return groups


LAYER_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


def expected_groups(spec: ModelSpec) -> list[Group]:
    """Every tensor group the config implies, Llama layout plus the family details the spec carries."""
    h, n = spec.hidden_size, spec.num_layers
    groups = [Group("embed_tokens.weight", "embedding", spec.vocab_size * h)]
    groups += _attention(spec) + _mlp(spec)
    groups += [Group(f"layers.{{L}}.{norm}.weight", "norms", n * h, n) for norm in LAYER_NORMS[: spec.norms_per_layer]]
    groups.append(Group("norm.weight", "norms", h))
    if not spec.tie_word_embeddings:
        groups.append(Group("lm_head.weight", "lm_head", spec.vocab_size * h))
    return groups


# Checkpoint spellings folded onto the names above (Mixtral's block_sparse_moe.experts.N.w1 ...).
ALIASES = ((re.compile(r"^(model\.|transformer\.|language_model\.model\.|model\.language_model\.)"), ""),
           (re.compile(r"\.layers\.\d+\."), ".layers.{L}."), (re.compile(r"^layers\.\d+\."), "layers.{L}."),
           (re.compile(r"\.block_sparse_moe\."), ".mlp."), (re.compile(r"\.mlp\.experts\..*$"), ".mlp.experts"))
ROLE_RULES = (("lm_head", "lm_head"), ("embed", "embedding"), ("wte", "embedding"), ("norm", "norms"),
              ("attn", "attention"), ("attention", "attention"), ("mlp", "mlp"), ("expert", "mlp"), ("ffn", "mlp"))


def canonical_name(name: str) -> str:
    for pattern, repl in ALIASES:
        name = pattern.sub(repl, name)
    return name


def role_of(name: str) -> str:
    return next((role for needle, role in ROLE_RULES if needle in name), "other")


def weight_groups(shapes: dict[str, list[int]], pack_factor: int = 1) -> list[Group]:
    """Checkpoint tensors {name: shape} folded into groups named like `expected_groups`.

    A quantized checkpoint's packed weights count as the weights they hold (`pack_factor` per stored
    element) under the float weight's name; its side data forms groups of the role "quantization"."""
    params: Counter[str] = Counter()
    tensors: Counter[str] = Counter()
    side: set[str] = set()
    for name, shape in shapes.items():
        count = 1
        for dim in shape:
            count *= int(dim)
        if PACKED.search(name):
            name, count = PACKED.sub(".weight", name), count * pack_factor
        key = canonical_name(name)
        if QUANT_SIDE.search(name):
            side.add(key)
        params[key] += count
        tensors[key] += 1
    return [Group(key, QUANT_ROLE if key in side else role_of(key), params[key], tensors[key]) for key in sorted(params)]


@dataclass(frozen=True)
class Reconciliation:
    from_config: int
    from_weights: int
    by_role: dict[str, dict[str, int]]  # role -> {"config": n, "weights": n}
    unexpected: list[Group]  # in the weights, not in the formula
    missing: list[Group]  # in the formula, not in the weights
    mismatched: list[SizeMismatch]  # same name, different size

    @property
    def agree(self) -> bool:
        return self.from_config == self.from_weights and not (self.unexpected or self.missing or self.mismatched)

    def warnings(self) -> list[str]:
        """The differences in words (Reasons: messages/ keys them for the report's other language)."""
        out = []
        if self.unexpected:
            out.append(reason("acct_unexpected", groups=_names(self.unexpected)))
        if self.missing:
            out.append(reason("acct_missing", groups=_names(self.missing)))
        for row in self.mismatched:
            out.append(reason("acct_mismatch", name=row["name"], config=row["config"], weights=row["weights"]))
        if not out and self.from_config != self.from_weights:
            out.append(reason("acct_total", config=self.from_config, weights=self.from_weights))
        return out

    def to_dict(self) -> AccountingRecord:
        return {"from_config": self.from_config, "from_weights": self.from_weights, "agree": self.agree,
                "by_role": self.by_role, "unexpected": [g.to_dict() for g in self.unexpected],
                "missing": [g.to_dict() for g in self.missing], "mismatched": self.mismatched,
                "warnings": self.warnings()}


def _names(groups: list[Group]) -> str:
    """The groups, "; "-separated, as a Reason that nests one per group (messages/ "inv_both")."""
    named = [reason("acct_group", name=g.name, tensors=g.tensors, noun=reason("acct_tensors" if g.tensors != 1 else
                                                                             "acct_tensor"), params=g.params)
             for g in groups]
    text = named[-1]
    for group in reversed(named[:-1]):
        text = reason("inv_both", first=group, second=text)
    return text


def reconcile(expected: list[Group], found: list[Group]) -> Reconciliation:
    """Match the formula's groups with the checkpoint's by name; every difference is named."""
    want = {g.name: g for g in expected}
    have = {g.name: g for g in found if g.role != QUANT_ROLE}
    by_role = {role: {"config": 0, "weights": 0} for role in (*ROLES, "other", QUANT_ROLE)}
    for g in expected:
        by_role[g.role]["config"] += g.params
    for g in found:
        by_role[want[g.name].role if g.name in want else g.role]["weights"] += g.params
    mismatched = [{"name": k, "config": want[k].params, "weights": have[k].params}
                  for k in want if k in have and want[k].params != have[k].params]
    return Reconciliation(
        from_config=sum(g.params for g in expected), from_weights=sum(g.params for g in have.values()),
        by_role={r: v for r, v in by_role.items() if v["config"] or v["weights"]},
        unexpected=[have[k] for k in have if k not in want],
        missing=[want[k] for k in want if k not in have], mismatched=mismatched)
