"""Expert routing in a mixture-of-experts layer: which experts each token chose in the gold and in a target,
and whether a difference is a near-tie that rounding explains or a routing error.

transformers' MoE blocks (Qwen2/3-MoE, Mixtral, DeepSeek-V2/V3, ...) share one shape: the layer's `mlp.gate`
is a router whose forward returns (router logits [T, E], routing weights [T, k], chosen experts [T, k]), and
`mlp.experts(hidden, chosen, weights)` applies them. A token whose gold scores for its k-th and (k+1)-th
experts lie closer than the target's rounding can move them may choose the other expert in a correct
deployment, and its output then jumps: as a greedy near-tie, its flip is not an error. It is counted and
left out of that layer's own error, and the tokens that did not flip are judged as any other. A flip
outside that margin, or a change in the number of experts chosen, is a routing error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from llm_adapt.accuracy.result import RoutingCounts, RoutingVerdict, ServedRouting

# The rounding a router's score may carry at a dtype: each input and weight rounded once (relative u each),
# so a logit x . w moves by at most 2u sum|x_i w_i| <= 2u |x| |w|, and the gap between two experts' logits
# by at most 2u |x| (|w_a| + |w_b|) <= 4u |x| max|w|; the attention before it adds its own error to x, which
# ROUTING_SLACK covers. (Cauchy-Schwarz makes this a wide bound: for unaligned x and w it exceeds the typical
# rounding by about the square root of the width.)
ROUTING_ROUNDOFF = 4.0
ROUTING_SLACK = 2.0


def moe_gates(layers) -> dict[int, torch.nn.Module]:
    """{layer index: router} for the decoder layers with a router of the shape above."""
    out = {}
    for i, layer in enumerate(layers):
        mlp = getattr(layer, "mlp", None)
        gate, experts = getattr(mlp, "gate", None), getattr(mlp, "experts", None)
        if isinstance(gate, torch.nn.Module) and isinstance(experts, torch.nn.Module) and \
                isinstance(getattr(gate, "top_k", None), int) and isinstance(getattr(gate, "weight", None), torch.Tensor):
            out[i] = gate
    return out


@dataclass
class GateRecord:
    """One router's view of one sequence: its logits [T, E] and chosen experts [T, k] (CPU), the norm of its
    input per token [T], and the norm of each expert's router row [E]."""

    logits: torch.Tensor
    chosen: torch.Tensor
    input_norm: torch.Tensor
    weight_norm: torch.Tensor


GATE_FIELDS = ("logits", "chosen", "input_norm", "weight_norm")


def record_gates(gates: dict[int, torch.nn.Module], into: dict[int, GateRecord]) -> list:
    """Forward hooks that keep each router's GateRecord in `into` (by layer index); remove them after."""
    def hook(index):
        def keep(module, args, output):
            x = (args[0] if args else None)
            logits, _, chosen = output
            into[index] = GateRecord(logits=logits.detach().reshape(-1, logits.shape[-1]).to("cpu", torch.float32),
                                     chosen=chosen.detach().reshape(-1, chosen.shape[-1]).to("cpu"),
                                     input_norm=x.detach().reshape(-1, x.shape[-1]).to("cpu", torch.float64).norm(dim=-1),
                                     weight_norm=module.weight.detach().to("cpu", torch.float64).norm(dim=-1))
        return keep
    return [gate.register_forward_hook(hook(i)) for i, gate in gates.items()]


def tie_width(gold: GateRecord, unit_roundoff: float) -> torch.Tensor:
    """Per token: how far rounding at the target's dtype may move the gap between two experts' logits. Pure."""
    return ROUTING_SLACK * ROUTING_ROUNDOFF * unit_roundoff * gold.input_norm * float(gold.weight_norm.max())


def flips(gold: GateRecord, chosen: torch.Tensor, unit_roundoff: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(flipped, near_tie) per token, [T] bool each: the target chose another set of experts than the gold;
    and, of those, the ones whose gold gap between its k-th and (k+1)-th experts' logits is inside tie_width
    (a rounding flip). A target choosing another number of experts flips every token, never near a tie. Pure."""
    k = gold.chosen.shape[-1]
    same_k = chosen.shape[-1] == k
    gold_sets = torch.sort(gold.chosen, dim=-1).values
    flipped = torch.ones(gold_sets.shape[0], dtype=torch.bool) if not same_k else \
        (torch.sort(chosen, dim=-1).values != gold_sets).any(-1)
    if not same_k or k >= gold.logits.shape[-1]:
        return flipped, torch.zeros_like(flipped)
    top = gold.logits.double().topk(k + 1, dim=-1).values
    gap = top[:, k - 1] - top[:, k]
    return flipped, flipped & (gap <= tie_width(gold, unit_roundoff))


@dataclass
class RoutingCount:
    """A layer's routing against the gold over every prompt: tokens, flips, and which of them were near-ties."""

    tokens: int = 0
    flipped: int = 0
    near_tie: int = 0
    per_prompt_genuine: list[int] = field(default_factory=list)

    def add(self, flipped: torch.Tensor, near_tie: torch.Tensor) -> None:
        self.tokens += int(flipped.numel())
        self.flipped += int(flipped.sum())
        self.near_tie += int(near_tie.sum())
        self.per_prompt_genuine.append(int((flipped & ~near_tie).sum()))

    @property
    def genuine(self) -> int:
        return self.flipped - self.near_tie

    def summary(self) -> RoutingCounts:
        return {"tokens": self.tokens, "flipped": self.flipped, "near_tie": self.near_tie, "genuine": self.genuine}


# A served router's weights, against the weights the gold's logits give the same experts: softmax weights
# carry the rounding of the logits they come from (a few units of the served dtype's roundoff); a tenth of
# a weight is far beyond it and is what a dropped renormalization or a changed top-k does (a weight of 0,
# or each weight times the share of probability its experts hold, 0.2-0.7 with 8 experts, top-2).
WEIGHT_TOLERANCE = 0.1
# A softmax weight moves by at most twice the largest move of the logits it comes from (|dw_i| <= w_i (|dl_i|
# + sum_j w_j |dl_j|)), and renormalizing over the k chosen at most doubles that: a weight further from the gold's
# than WEIGHT_ROUNDING x tie_width (the gap bound, twice a logit's) is beyond the served dtype's rounding, as
# a router computed at a lower precision than the model asks for is (held out when the 0.1 rule was written).
WEIGHT_ROUNDING = 2.0
# Flips beyond rounding on this share of the tokens (or more) is a router choosing other experts; below it,
# a few tokens whose inherited error moved them are not named as a routing fault.
FLIP_SHARE = 0.05


def gold_weights(gold: GateRecord, renormalize: bool) -> torch.Tensor:
    """The weights [T, k] the gold's router gives its chosen experts: their softmax probability over all
    experts, renormalized over the k where the layer renormalizes (norm_topk_prob). Pure."""
    probs = torch.softmax(gold.logits.double(), dim=-1).gather(-1, gold.chosen.long())
    return probs / probs.sum(-1, keepdim=True) if renormalize else probs


def served_routing(gold: GateRecord, ids: torch.Tensor, weights: torch.Tensor, renormalize: bool,
                   unit_roundoff: float) -> ServedRouting:
    """A served router's routing of one sequence (ids and weights [T, k], as the engine combined its experts)
    against the gold's: the experts that carry weight (an expert of weight 0 adds nothing, so a top-k cut
    to fewer shows as fewer experts), flips and near-ties as `flips` counts them, and on the tokens that kept
    their experts the largest difference of a weight from the gold's. Pure."""
    carried = torch.where(weights.abs() > 1e-6, ids.long(), torch.full_like(ids.long(), -1))
    fewer = (carried >= 0).sum(-1) != gold.chosen.shape[-1]
    same_experts = torch.sort(carried, dim=-1).values == torch.sort(gold.chosen.long(), dim=-1).values
    flipped, near_tie = flips(gold, carried, unit_roundoff)
    flipped, near_tie = flipped | fewer, near_tie & ~fewer
    kept = same_experts.all(-1)
    expected = gold_weights(gold, renormalize)
    order_gold, order_served = torch.sort(gold.chosen.long(), dim=-1), torch.sort(ids.long(), dim=-1)
    diff = (weights.double().gather(-1, order_served.indices) - expected.gather(-1, order_gold.indices)).abs()
    worst = float(diff[kept].max()) if bool(kept.any()) else None
    # per token, its worst weight against what the dtype's rounding allows it (a zero allowance: an exact router)
    allowed = WEIGHT_ROUNDING * tie_width(gold, unit_roundoff)
    ratio = diff.max(-1).values / allowed.clamp_min(1e-300)
    worst_ratio = float(ratio[kept].max()) if bool(kept.any()) else None
    return {"tokens": int(flipped.numel()), "flipped": int(flipped.sum()), "near_tie": int(near_tie.sum()),
            "genuine": int((flipped & ~near_tie).sum()), "weight_error_max": worst, "weight_rounding_ratio": worst_ratio}


def routing_verdict(counts: list[ServedRouting]) -> RoutingVerdict:
    """One layer's served routing over every prompt (served_routing's rows): 'wrong' when the router chose
    other experts beyond rounding on FLIP_SHARE of the tokens or more, or weighted the same experts beyond
    WEIGHT_TOLERANCE or beyond the served dtype's rounding (weight_rounding_ratio over 1); else 'clean'. Pure."""
    total = {k: sum(c[k] for c in counts) for k in ("tokens", "flipped", "near_tie", "genuine")}
    worst, ratio = (_largest(c.get(key) for c in counts) for key in ("weight_error_max", "weight_rounding_ratio"))
    wrong = (total["tokens"] and total["genuine"] >= FLIP_SHARE * total["tokens"]) or \
        (worst is not None and worst > WEIGHT_TOLERANCE) or (ratio is not None and ratio > 1.0)
    return {**total, "weight_error_max": worst, "weight_rounding_ratio": ratio, "verdict": "wrong" if wrong else "clean",
            "rule": f"genuine flips on >= {FLIP_SHARE:.0%} of tokens, or a weight off by > {WEIGHT_TOLERANCE:g} or by more "
                    "than the served dtype's rounding allows"}


def _largest(values) -> float | None:
    """The largest of the values that are numbers (a row without the figure, e.g. read from an older file, has
    none); None where none is. Pure."""
    found = [v for v in values if v is not None]
    return max(found) if found else None
