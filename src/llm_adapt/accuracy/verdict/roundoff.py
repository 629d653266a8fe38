"""What a layer's own error is judged against where there is no noise floor: the rounding a correct kernel makes
at its dtype (a few unit roundoffs, growing with the square root of the layer's longest sum), and where inside a
layer its error is out of line. Pure."""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.result import LayerRow, LocatedFault, PartRow, RoundingBasis, RoundoffBasis, RunnerReport
from llm_adapt.accuracy.verdict.checks import allowance, num_or_inf

# Unit roundoff of each dtype: the local error one rounding step per value would give.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}


ROUNDOFF_FACTOR = 4.0  # without a measured floor, a layer may lose this many rounding steps that do not grow


# with its width (its input, weights, output and residual add each rounded once to the dtype) ...
# ... and the rounding that does grow: a correct kernel sums a length-n contraction in its own order (another
# blocking, split-K, another device), which moves the result by about sqrt(n) unit roundoffs of the sum's
# accumulator (Higham & Mary, "A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput.
# 41(5), 2019: with high probability an inner product's rounding error grows like sqrt(n) u, not like the
# worst case's n u). GEMMs accumulate in fp32 at every dtype judged here (cuBLAS, oneDNN, torch's CPU
# kernels), so the growth is counted in fp32 units: it dominates an fp32 layer and vanishes beside bf16's
# own rounding. The constant: a whole Llama decoder layer (random weights) with every linear summed one term
# after another, the worst order, came 0.56-0.65 x sqrt(n) fp32 units from float64 and 0.60-0.69 from
# torch's own blocked fp32, flat over widths 64-1024 (tests/accuracy/test_roundoff_basis.py measures it);
# two correct kernels may each be that far from the exact result, in opposite ways: 2 x sqrt(n). The clean
# layer the fixed 4 units flagged (Llama-3.2-3B's layer 0, CUDA fp32 against the host's fp32, H200) was
# 26.8 units: 0.30 x sqrt(8,192), 0.14 of this basis; a 0.003-std perturbation of one MLP weight stays
# about 100x above it or more (SmolLM2's layer 7: 102x; random MLPs of widths 64-2048: 171-941x).
ACCUMULATOR = "fp32"


SUM_GROWTH = 2.0


def longest_sum(hidden: int, intermediate: int, heads: int, head_dim: int, sequence: int) -> int:
    """The longest contraction in one decoder layer: q/k/v and gate/up sum over the hidden size, down over
    the intermediate size, o over heads x head_dim, the scores over head_dim and the weighted values over
    the sequence. Pure."""
    return max(hidden, intermediate, heads * head_dim, head_dim, sequence)


def roundoff_basis(dtype: str, contraction: int | None = None) -> RoundoffBasis:
    """What a layer's own error is judged against without a noise floor: ROUNDOFF_FACTOR unit roundoffs of
    `dtype`, plus SUM_GROWTH x sqrt(contraction) of the fp32 accumulator's (see above). {"basis": its
    words, "kind", "factor" (in `dtype` units), "dtype", "contraction", "allowed" (a relative error)};
    contraction None: the fixed ROUNDOFF_FACTOR (a layer whose shape the caller does not know). Pure."""
    growth = SUM_GROWTH * math.sqrt(contraction) * UNIT_ROUNDOFF[ACCUMULATOR] if contraction else 0.0
    factor = ROUNDOFF_FACTOR + growth / UNIT_ROUNDOFF[dtype]
    words = RoundingBasis(kind="roundoff", factor=factor, dtype=dtype, contraction=contraction).words()
    return RoundoffBasis(basis=words, kind="roundoff", factor=factor, dtype=dtype, contraction=contraction,
                         allowed=factor * UNIT_ROUNDOFF[dtype])


def target_basis(target: RunnerReport) -> RoundingBasis:
    """What a target's layers were judged against: its floor, else the rounding basis it recorded, else (a
    file from before that was recorded) the fixed ROUNDOFF_FACTOR unit roundoffs of its dtype. Pure."""
    if target.floor:
        return RoundingBasis(kind="floor")
    recorded = RoundingBasis.of(target.roundoff_basis) if target.roundoff_basis else None
    return recorded or RoundingBasis(kind="roundoff", factor=ROUNDOFF_FACTOR, dtype=target.dtype)


def own_error_excess(value: float, ratio: float | None, allowed: float, factor: float, have_floor: bool,
                     dtype: str, contraction: int | None = None) -> tuple[float | None, dict[str, Any], bool]:
    """One module's own error (fed the reference's input) against its basis: above `factor` x the
    ratio to its floor that the spread allows, or, with no floor, above the rounding a correct
    implementation of the layer makes (roundoff_basis, `contraction`: its longest sum); non-finite is
    always out of line. (ratio, {"basis": its words, and without a floor "basis_factor" and
    "contraction"}, out of line). Pure."""
    if have_floor:
        excess = ratio is not None and ratio > factor * allowed
        return ratio, RoundingBasis(kind="floor").fields(), bool(excess or not math.isfinite(value))
    basis = roundoff_basis(dtype, contraction)
    ratio = value / basis["allowed"]
    fields = RoundingBasis(kind="roundoff", factor=basis["factor"], dtype=dtype, contraction=contraction).fields()
    return ratio, fields, bool(ratio > 1 or not math.isfinite(value))


def local_ruling(row: LayerRow, factor: float, have_floor: bool, dtype: str,
                 contraction: int | None = None) -> tuple[float | None, float | None, dict[str, Any], bool]:
    """One layer's own (local) error against its basis (own_error_excess): (its ratio, the ratio it may reach, the
    basis's fields, out of line). The ratio it may reach: factor x its allowance against a floor, 1 against the
    rounding of its dtype, None where a floor was measured but this row was never compared with it. Pure."""
    floored = have_floor and row.get("local_ratio") is not None
    allowed = allowance(row, "local_rel_spread") if floored else 1.0
    ratio, basis, excess = own_error_excess(row["local_rel_l2"], row.get("local_ratio"), allowed, factor,
                                            have_floor, dtype, contraction)
    may_reach = factor * allowed if floored else None if have_floor else 1.0
    return ratio, may_reach, basis, excess


def find_first_local_excess(layers: list[LayerRow], factor: float, have_floor: bool, dtype: str,
                            contraction: int | None = None) -> LocatedFault | None:
    """The first layer whose own (local) error is out of line (local_ruling)."""
    for row in layers:
        ratio, _, basis, excess = local_ruling(row, factor, have_floor, dtype, contraction)
        if excess:
            return {"name": row["name"], "local_rel_l2": row["local_rel_l2"], "ratio": ratio, **basis}
    return None


NO_FLOOR_ERROR = 1e-9  # a floor's rel. L2 error at or below this is no error at all (metrics.ratio_or_none's tiny)


def locate_part(rows: list[PartRow], factor: float, have_floor: bool, dtype: str,
                contraction: int | None = None) -> dict[str, Any]:
    """Which part of a located layer is out of line, each part fed the reference's input, by the
    rule layers are judged by (own_error_excess). rows: [{"name", "rel_l2", "ratio"?, "allowed"?}]
    in forward order. Returns {"part": the worst part out of line or None, "parts": rows, each
    marked}. A part the floor leaves exactly as the reference computes it (the floor's other kernel
    path does not reach it: an MLP beside an attention kernel) has no noise floor to be a ratio of,
    and is judged by the rounding of its dtype instead (roundoff_basis, `contraction`: the layer's
    longest sum). Pure."""
    marked = []
    for row in rows:
        floor_value = row.get("floor_rel_l2")
        floored = have_floor and not (floor_value is not None and floor_value <= NO_FLOOR_ERROR)
        ratio, basis, excess = own_error_excess(row["rel_l2"], row.get("ratio") if floored else None,
                                                allowance(row) if floored and row.get("ratio") is not None else 1.0,
                                                factor, floored, dtype,
                                                contraction)
        marked.append({**row, "ratio": ratio, **basis, "excess": excess})
    out = [r for r in marked if r["excess"]]
    named = {r["name"] for r in out}
    inner = [r for r in out if not (set(INSIDE.get(r["name"], ())) & named)]  # the most specific parts
    worst_part = max(inner, key=lambda r: num_or_inf(r["ratio"]) if math.isfinite(r["rel_l2"]) else math.inf) if inner else None
    return {"part": worst_part["name"] if worst_part else None, "parts": marked}


# A part measured inside another (sublayer.moe_parts): where both are out of line, the inner one is named,
# its error the cause of the outer's (a wrong router makes a wrong MLP output).
INSIDE = {"MLP": ("router", "experts", "shared expert")}
