"""What every judge shares: the thresholds and where they come from, one banding of a figure into pass / warn /
fail, checks worded from their keys (messages.CHECKS), the unjudged form of a check that decided nothing, and the
checks more than one judge makes (same top-1, perplexity, greedy divergences and stops, expert routing). Pure.

Rules that hold for every judgement:
- a value that cannot be computed (NaN, a missing floor) is never a pass, and never decides a status
  either: NaN or Inf in the model's or the server's output is FAILed by its own check (msprobe's rule),
  so a figure our own arithmetic could not compute (0/0, the spread of one sample) is UNJUDGED;
- a rate over fewer items than it needs to decide (decisive positions, greedy prompts) is UNJUDGED,
  "not enough evidence (n of N)": the verdict rests on the other checks, and is WARN when no check
  decided anything;
- a ratio to a noise floor passes up to 1 + K_SPREAD x the floor's measured relative spread
  (the same ratio the floor itself would show by chance), warns up to twice that, fails above;
- greedy divergences outside the tie margin, wrong stop positions included, are judged against the
  floor's own count, and fail when the floor's rate cannot explain them.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

from llm_adapt.accuracy.result import (
    AccuracyVerdict,
    Check,
    GreedyRow,
    LayerRow,
    LogitStats,
    TopkView,
    Verdict,
    ViewSpread,
    VsFloor,
)
from llm_adapt.messages import CHECK_FIELDS, check_text, reason
from llm_adapt.status import NOTED, UNJUDGED, Status, decides, worst

K_SPREAD = 3.0  # allowed ratio = 1 + K x relative spread: a clean target passes ~99.9% of the time


# Without a measured floor (the target runs on the reference's device):
ABSOLUTE_KL = (0.01, 0.05)  # mean KL nats: pass below the first, warn below the second


ABSOLUTE_TOP1 = (0.95, 0.90)  # same-top-1 rate: pass above the first, warn above the second


ABSOLUTE_LN_PPL = (0.01, 0.05)  # |ln PPL ratio|: pass below the first, warn below the second


# Served at the gold's own dtype (fp32 on a CPU without native bf16), no floor: equal to rounding. A
# clean vLLM-CPU fp32 server gave top-k KL 4.5e-9 against the fp32 gold (default model, quick suite),
# a bf16 one about 1e-3, a planted q/k permutation about 1e-1.
SAME_DTYPE_KL = (1e-6, 1e-4)  # mean top-k KL: pass up to the first, warn up to the second


SAME_DTYPE_TOP1 = (0.995, 0.98)  # same-top-1 rate outside the tie margin: pass from the first, warn from the second


PPL_ABS_TOLERANCE = 0.002  # nats added to K x se: below it a perplexity shift is not worth a warning


GREEDY_P = (0.05, 0.001)  # binomial tail of the genuine divergences at the floor's rate: warn, fail


# Too little evidence to decide a rate. Same top-1: a perfect match over n positions bounds the unseen flip
# rate at 3/n (the rule of three, 95%), so below 3 / (1 - the warn budget of 0.90) = 30 decisive positions
# even a perfect match cannot show that the rate is inside the budget.
RULE_OF_THREE = 3.0


MIN_DECISIVE = math.ceil(RULE_OF_THREE / (1 - ABSOLUTE_TOP1[1]) - 1e-9)


def greedy_min_prompts(fail_p: float = GREEDY_P[1]) -> int:
    """The fewest greedy prompts on which the greedy check can fail at all: every prompt diverging, against a
    floor that diverged on none (greedy_status's smoothed rate 1/(n+2)), has a tail below `fail_p`. On fewer,
    no outcome could fail it, so it is no evidence. Pure."""
    n = 1
    while binomial_tail(n, n, 1 / (n + 2)) >= fail_p:
        n += 1
    return n


def unjudged(key: str, why: str, **args: Any) -> Check:
    """A check that decides nothing, its value saying why: `why` "positions" or "prompts" (too little
    evidence: `n` of `needed`), "layers" (none compared) or "undefined" (a figure our own arithmetic
    could not compute). `args`: what the check's name and threshold need."""
    return check(key, UNJUDGED, **args, why=why)


def check(key: str, status: str, value: Any = None, **args: Any) -> Check:
    """One judged check: its words in English (name, threshold, source, and the value where it has
    words) from messages.CHECKS[key] and `args`, with the key and arguments kept beside them so the
    report renders them in its language. `value`: the figure itself, where the value has no words."""
    words = {field: check_text(key, field, "en", args, status) for field in CHECK_FIELDS}
    return {"name": words["name"] or key, "value": value if words["value"] is None else words["value"],
            "status": status, "threshold": words["threshold"], "source": words["source"], "key": key, "args": args}


def graded(ratio: float | None, allowed: float) -> str:
    """msprobe's benchmark-ratio grading (<= 1 pass, <= 2 warn) widened by the floor's spread. A ratio
    that cannot be computed (missing or NaN: a figure of our own arithmetic; the model's NaN/Inf is its
    own check's FAIL) decides nothing; an infinite one (an error where the floor has none) fails."""
    if ratio is None or math.isnan(ratio):
        return UNJUDGED
    return band(ratio, allowed, 2 * allowed)


def band(value: float, pass_at: float, warn_at: float, higher_is_better: bool = False) -> str:
    """The one pass / warn / fail banding: pass up to `pass_at`, warn up to `warn_at`, else fail (from
    `pass_at` and `warn_at` down when `higher_is_better`). NaN is UNJUDGED, never a status of its own. Pure."""
    if math.isnan(value):
        return UNJUDGED
    if higher_is_better:
        status = Status.PASS if value >= pass_at else Status.WARN if value >= warn_at else Status.FAIL
    else:
        status = Status.PASS if value <= pass_at else Status.WARN if value <= warn_at else Status.FAIL
    return status.check


# What each ratio's measured relative spread is stored as, and what an earlier version stored instead: the
# allowed ratio itself, computed when it was measured (read as written).
SPREAD_FIELDS = {"rel_spread": "allowed", "local_rel_spread": "local_allowed", "kl_spread": "kl_allowed",
                 "relative": "allowed"}


# what carries a measured spread the allowance is computed from: a layer's row, a target against its floor, the
# served floor's view
Spreadable = LayerRow | VsFloor | ViewSpread
# what carries same-top-1 rates: an in-process runner's logits, a served top-k view
Decisive = LogitStats | TopkView


def allowance(row: Spreadable, field: str = "rel_spread") -> float:
    """The ratio to its floor a figure may reach, computed here where it is judged: 1 + K_SPREAD x the relative
    spread measured for it (row[field], allowed_ratio). A row of an earlier version holds the ratio itself
    (SPREAD_FIELDS) and is read as written. A row with neither was never compared with a floor: KeyError, never a
    default. Pure."""
    if field in row:
        return allowed_ratio(row[field])
    return row[SPREAD_FIELDS[field]]


def relative_spread(row: Spreadable, field: str = "rel_spread") -> float:
    """The relative spread a row measured; an earlier version's row holds only the ratio it allowed, read back
    through allowed_ratio's inverse. Pure."""
    if field in row:
        return row[field]
    return (row[SPREAD_FIELDS[field]] - 1) / K_SPREAD


def allowed_ratio(spread: float | None) -> float:
    return 1 + K_SPREAD * (spread if spread is not None and math.isfinite(spread) else 0.0)


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in logs (exact terms overflow a float past n of about 1,000:
    the routing check counts tokens)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
            for i in range(k, n + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def greedy_status(target_genuine: int, floor_genuine: int, prompts: int) -> tuple[str, float]:
    """Genuine divergences against the floor's rate (Laplace-smoothed): the tail probability decides. On
    fewer prompts than it can fail on (greedy_min_prompts) it is UNJUDGED."""
    if prompts < MIN_GREEDY:
        return UNJUDGED, math.nan
    if target_genuine <= floor_genuine:
        return Status.PASS.check, 1.0
    rate = (floor_genuine + 1) / (prompts + 2)
    p = binomial_tail(prompts, target_genuine, rate)
    status = Status.FAIL if p < GREEDY_P[1] else Status.WARN if p < GREEDY_P[0] else Status.PASS
    return status.check, p


MIN_GREEDY = greedy_min_prompts()


GREEDY_ARGS = {"warn_p": GREEDY_P[0], "fail_p": GREEDY_P[1]}  # the greedy checks' threshold (messages.CHECKS)


def verdict_of(checks: list[Check], **extra: Any) -> Verdict:
    """A verdict from its checks: the worst that decided, a reason per check noted (status.NOTED)."""
    # an informational figure (a target that is its own floor) is shown with the checks, never given as a reason
    reasons = [f"{c['name']}: {c['value']} ({c['threshold']})" for c in checks
               if c["status"] in NOTED and c["args"].get("why") != "own_floor"]
    status, more = decided_status(checks)
    return {"status": status, "reasons": reasons + more, "checks": checks, **extra}


def decided_status(checks: list[Check]) -> tuple[str, list[str]]:
    """The worst status of the checks that decided, and the reason to add: WARN, "no check had enough
    evidence to decide", where none did (nothing judged is never a PASS). Pure."""
    if any(decides(c["status"]) for c in checks):
        return worst([c["status"] for c in checks]), []
    return Status.WARN, [NOTHING_DECIDED]


NOTHING_DECIDED = reason("nothing_decided")


def top1_evidence(t: Decisive, args: dict[str, Any]):
    """None where a same-top-1 rate has the positions it needs (MIN_DECISIVE outside the tie margin, or over
    all positions where no margin was measured); else a maker of the check's UNJUDGED form (key -> Check).
    On flat logits (random or untrained weights) few positions are decisive, and the rate over all positions
    counts rounding flips of near-ties. Pure."""
    decisive = args["form"] == "decisive"
    n = t.get("decisive_positions" if decisive else "positions")
    if n is not None and n >= MIN_DECISIVE:
        return None
    form = {"form": "decisive", "margin": t.get("tie_margin", 0.0)} if decisive else {"form": "all"}
    return lambda key: unjudged(key, "positions", n=n or 0, needed=MIN_DECISIVE, **form)


def top1_figures(t: Decisive, f: Decisive | None = None) -> tuple[tuple[str, str], dict[str, Any]]:
    """Which same-top-1 rate to judge, and the check's arguments that say so: the rate on the positions
    outside the gold's tie margin (its own top-1 minus top-2 above `tie_margin`, the margin greedy
    divergences are classified by) where `t`, and the floor `f` when there is one, measured it; else the
    rate over all positions (an accuracy.json of an earlier version, which did not measure the margin). With
    too few decisive positions the check is UNJUDGED (top1_evidence), never the rate over all positions.
    Inside the margin a flip is rounding: on a model with near-flat logits (random weights, a small
    or undertrained model) a clean bf16 target on the gold's own device flips many near-ties (Llama-3.2-3B's
    body with random weights on an H200: same top-1 0.945 over all positions; 32 random layers of width 64
    on the CPU: 0.934 over all, 1.000 over the 94 decisive ones, tests/accuracy/test_same_device.py). Pure.

    t, f: logits summaries ({"same_top1", "same_top1_err", "positions"} and, where measured,
    {"decisive_positions", "same_top1_decisive", "same_top1_decisive_err", "tie_margin"})."""
    if "decisive_positions" not in t or (f is not None and "decisive_positions" not in f):
        return ("same_top1", "same_top1_err"), {"form": "all"}
    args = {"form": "decisive", "margin": t.get("tie_margin", 0.0), "decisive": t["decisive_positions"],
            "positions": t.get("positions"), "all_t": t.get("same_top1")}
    return ("same_top1_decisive", "same_top1_decisive_err"), args | ({"all_f": f["same_top1"]} if f else {})


def top1_status(rt: float, et: float | None, rf: float, ef: float | None) -> str:
    """The target's same-top-1 rate against the floor's, within 2 standard errors of both (an error that
    is not finite, as over one position, counts as none: the callers ask for MIN_DECISIVE first). Pure."""
    if not (math.isfinite(rt) and math.isfinite(rf)):
        return UNJUDGED
    if rt >= rf - 2 * math.hypot(finite_or_zero(et), finite_or_zero(ef)):
        return Status.PASS.check
    ratio = (1 - rt) / (1 - rf) if rf < 1 else math.inf
    return Status.WARN.check if ratio <= 2 else Status.FAIL.check


def ppl_check(ln_t: float | None, se_t: float | None, ln_f: float | None, se_f: float | None, floor_label: str) -> Check:
    """ln PPL ratio against the floor's, within K standard errors of the paired difference (the floor's, for both
    sides) plus an absolute tolerance; `se_t` is kept for the record only."""
    if ln_t is None or ln_f is None or math.isnan(ln_t) or math.isnan(ln_f):
        return unjudged("ppl", "undefined", form="none", ln_t=fmt(ln_t))
    if not (math.isfinite(ln_t) and math.isfinite(ln_f)):  # a token the model gives probability 0
        return check("ppl", Status.FAIL.check, form="none", ln_t=fmt(ln_t))
    # the paired difference's noise from the floor alone, its standard error taken for both sides (a clean target's
    # is the floor's): the target's own would grow with a fault on a few prompts and widen its own allowance
    allowed = K_SPREAD * math.sqrt(2) * finite_or_zero(se_f) + PPL_ABS_TOLERANCE
    delta = ln_t - ln_f
    return check("ppl", band(abs(delta), allowed, 2 * allowed), form="some", ln_t=ln_t, ln_f=ln_f, allowed=allowed, k=K_SPREAD,
                 tolerance=PPL_ABS_TOLERANCE, floor=floor_label)


def stops_check(rows: list[GreedyRow]) -> Check:
    """Answers that end earlier or later than the reference's, outside the tie margin."""
    early = sum(1 for r in rows if r.get("stop") == "early" and r.get("divergence") == "genuine")
    late = sum(1 for r in rows if r.get("stop") == "late" and r.get("divergence") == "genuine")
    if not (early or late) and len(rows) < MIN_GREEDY:  # no stop seen wrong, on too few prompts to say so
        return unjudged("stops", "prompts", n=len(rows), needed=MIN_GREEDY)
    return check("stops", Status.WARN.check if early or late else Status.PASS.check, early=early, late=late, n=len(rows))


def genuine_count(rows: list[GreedyRow]) -> int:
    return sum(1 for g in rows if g.get("divergence") == "genuine")


class RoutingTotals(TypedDict):
    """A runner's routed tokens against the gold's over its MoE layers, and the layer with most genuine flips."""
    tokens: int
    flipped: int
    near_tie: int
    genuine: int
    layer: str
    layer_genuine: int


def routing_totals(runner: dict[str, Any]) -> RoutingTotals | None:
    """A runner's expert routing against the gold's, summed over its MoE layers (accuracy/routing.py), with
    the layer that has the most genuine flips; None for a model without routers. Pure."""
    rows = [r for r in runner["layers"] if r.get("routing")]
    if not rows:
        return None
    totals = {k: sum(r["routing"][k] for r in rows) for k in ("tokens", "flipped", "near_tie", "genuine")}
    worst = max(rows, key=lambda r: r["routing"]["genuine"])
    return totals | {"layer": worst["name"], "layer_genuine": worst["routing"]["genuine"]}


def routing_check(target: RoutingTotals, floor: RoutingTotals | None) -> Check:
    """Expert routing: the tokens whose experts changed where the gold's margin between its k-th and
    (k+1)-th expert exceeds the target's rounding (genuine flips), against the floor's count as greedy
    divergences are (a near-tie flip is counted, never an error). Too few routed tokens decide nothing."""
    nf = floor["genuine"] if floor else 0
    status, p = greedy_status(target["genuine"], nf, target["tokens"])
    args = {"nt": target["genuine"], "n": target["tokens"], "near": target["near_tie"], "nf": nf,
            "layer": target["layer"], **GREEDY_ARGS}
    if not decides(status):
        return unjudged("routing", "prompts", n=target["tokens"], needed=MIN_GREEDY, **GREEDY_ARGS)
    return check("routing", status, p=p, **args)


def num_or_inf(value) -> float:
    return value if isinstance(value, (int, float)) and not math.isnan(value) else math.inf


def finite_or_zero(value) -> float:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def fmt(value) -> str | float | None:
    if value is None:
        return None
    if isinstance(value, float):
        return "inf" if math.isinf(value) else "nan" if math.isnan(value) else round(value, 6)
    return value


def is_informational(quant: str | None, quants_only: bool) -> bool:
    """An emulated weight quantization (`--quant int8-tensor`) beside an unquantized target is an
    experiment on a scheme nobody deploys as emulated (vLLM-Ascend quantizes with msmodelslim and
    calibration data): its result is shown, never judged. Judged only when every target is one, since
    then the user asked for nothing else. Pure."""
    return bool(quant) and not quants_only


def accuracy_verdict(targets: list[tuple[str, str | None, str]]) -> AccuracyVerdict:
    """accuracy.json's verdict from (label, quant, status) per target: the worst of the judged targets,
    with each judged target's status, and the informational ones apart. Pure."""
    quants_only = all(quant for _, quant, _ in targets)
    judged = {label: status for label, quant, status in targets if not is_informational(quant, quants_only)}
    informational = {label: status for label, quant, status in targets if is_informational(quant, quants_only)}
    return {"status": worst([s.lower() for s in judged.values()]) if judged else Status.WARN, "targets": judged,
            "informational": informational}
