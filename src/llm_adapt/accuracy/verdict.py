"""Accuracy verdicts, in process and served (endpoint accuracy): every threshold with its source
written beside it (the words in messages.CHECKS). Pure.

Rules that hold for every judgement here:
- a value that cannot be computed (NaN, a missing floor) is never a pass;
- a ratio to a noise floor passes up to 1 + K_SPREAD x the floor's measured relative spread
  (the same ratio the floor itself would show by chance), warns up to twice that, fails above;
- a fault the tool localizes (a layer whose own error is out of line) is at least WARN, and FAIL
  where the target should match the reference to within rounding (same device and dtype);
- greedy divergences outside the tie margin, wrong stop positions included, are judged against the
  floor's own count, and fail when the floor's rate cannot explain them.
"""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.result import (Check, GreedyRow, LayerRow, LocatedFault, PartRow, RoundingBasis, RoundoffBasis,
                                        Verdict)
from llm_adapt.messages import CHECK_FIELDS, check_text
from llm_adapt.status import severity, worst as _worst

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


def worst(statuses: list[str]) -> str:
    return _worst(statuses, default="pass").upper()


def check(key: str, status: str, value: Any = None, **args: Any) -> Check:
    """One judged check: its words in English (name, threshold, source, and the value where it has
    words) from messages.CHECKS[key] and `args`, with the key and arguments kept beside them so the
    report renders them in its language. `value`: the figure itself, where the value has no words."""
    words = {field: check_text(key, field, "en", args) for field in CHECK_FIELDS}
    return {"name": words["name"] or key, "value": value if words["value"] is None else words["value"],
            "status": status, "threshold": words["threshold"], "source": words["source"], "key": key, "args": args}


def graded(ratio: float | None, allowed: float) -> str:
    """msprobe's benchmark-ratio grading (<= 1 pass, <= 2 warn) widened by the floor's spread."""
    if ratio is None or math.isnan(ratio):
        return "fail"  # a ratio that cannot be computed is never a pass
    return "pass" if ratio <= allowed else "warn" if ratio <= 2 * allowed else "fail"


def allowed_ratio(spread: float | None) -> float:
    return 1 + K_SPREAD * (spread if spread is not None and math.isfinite(spread) else 0.0)


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return float(sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def greedy_status(target_genuine: int, floor_genuine: int, prompts: int) -> tuple[str, float]:
    """Genuine divergences against the floor's rate (Laplace-smoothed): the tail probability decides."""
    if target_genuine <= floor_genuine:
        return "pass", 1.0
    rate = (floor_genuine + 1) / (prompts + 2)
    p = binomial_tail(prompts, target_genuine, rate)
    return ("fail" if p < GREEDY_P[1] else "warn" if p < GREEDY_P[0] else "pass"), p


GREEDY_ARGS = {"warn_p": GREEDY_P[0], "fail_p": GREEDY_P[1]}  # the greedy checks' threshold (messages.CHECKS)


# ---- msprobe's per-tensor rules ---------------------------------------------------------------

def msprobe_rule(cos_min: float, max_abs: float, nan_mismatch: bool) -> str:
    """msprobe's per-tensor verdict: 'fail' if (cos<0.99 and max abs>1e-3) or cos<0.9 or max abs>1 or NaN/Inf mismatch."""
    if nan_mismatch or (cos_min < 0.99 and max_abs > 1e-3) or cos_min < 0.9 or max_abs > 1:
        return "fail"
    return "pass"


# msprobe's per-dtype standard for one tensor computed from the same inputs (its API pre-check,
# "API预检指标", msprobe/pytorch/doc/api_accuracy_checker.md, mindstudio-probe 1.0.3):
# cosine <= 0.99 -> error; max abs err < 0.001 -> pass; else fp16/bf16: the share of elements with
# relative error > 1% must be < 1% (else error) and the share > 0.1% must be < 0.1% (else warning);
# fp32: the share > 0.1% must be < 0.1% (else error) and the share > 0.01% must be < 0.01% (else warning).
MSPROBE_DTYPE_SHARES = {"bf16": (1e-2, 1e-3), "fp16": (1e-2, 1e-3), "fp32": (1e-3, 1e-4)}


def msprobe_dtype_rule(cos: float, max_abs: float, share_over: dict[str, float], dtype: str) -> str:
    """msprobe's published per-dtype standard: 'pass' / 'warning' / 'error'.

    share_over: {relative tolerance as f"{tol:g}": share of elements whose relative error exceeds it}."""
    if not cos > 0.99:
        return "error"
    if max_abs < 1e-3:
        return "pass"
    hard, soft = MSPROBE_DTYPE_SHARES.get(dtype, MSPROBE_DTYPE_SHARES["fp32"])
    if share_over.get(f"{hard:g}", 1.0) >= hard:
        return "error"
    if share_over.get(f"{soft:g}", 1.0) >= soft:
        return "warning"
    return "pass"


# ---- in-process targets ------------------------------------------------------------------------

def judge(target: dict[str, Any], floor: dict[str, Any] | None, exact_expected: bool = False) -> Verdict:
    """PASS / WARN / FAIL for one runner, with the checks that decided it.

    target: a RunnerReport as a dict (with `vs_floor` filled when it has a floor);
    exact_expected: the target runs on the reference's device and dtype, so it should match to rounding."""
    checks = [_nonfinite(target), _cosine(target), _localized(target, exact_expected)]
    if target.get("template_mismatches") is not None:
        checks.append(_template(target["template_mismatches"]))
    if floor is not None:
        checks += [_layer_ratio(target, floor), _kl_ratio(target, floor), _top1_vs_floor(target, floor),
                   _ppl_vs_floor(target, floor), _greedy_vs_floor(target, floor)]
    else:
        checks += [_kl_absolute(target), _top1_absolute(target), _ppl_absolute(target), _greedy_absolute(target)]
    checks.append(stops_check(target["greedy"]))
    return _verdict(checks, noise_floor=target.get("floor") if floor is not None else None)


def judge_layers(target: dict[str, Any], floor: dict[str, Any] | None, exact_expected: bool = False) -> Verdict:
    """The per-layer checks of `judge` alone: layers captured inside a served engine (no logits, no
    greedy tokens there). target: {"layers", "first_local_excess", "first_nonfinite"}; floor: {"label"}."""
    checks = [_nonfinite(target), _cosine(target), _localized(target, exact_expected)]
    if floor is not None:
        checks.append(_layer_ratio(target, floor))
    return _verdict(checks, noise_floor=floor["label"] if floor is not None else None)


def _verdict(checks: list[Check], **extra: Any) -> Verdict:
    reasons = [f"{c['name']}: {c['value']} ({c['threshold']})" for c in checks if c["status"] in ("warn", "fail")]
    return {"status": worst([c["status"] for c in checks]), "reasons": reasons, "checks": checks, **extra}


def _template(mismatches: list[str]) -> Check:
    return check("template", "fail" if mismatches else "pass", count=len(mismatches),
                 examples=f" ({', '.join(mismatches[:3])})" if mismatches else "")


def _nonfinite(t) -> Check:
    where = t.get("first_nonfinite")
    return check("nonfinite", "fail" if where else "pass", form="some" if where else "none", where=where)


def _cosine(t) -> Check:
    """msprobe's cosine rule where its premise holds: one module fed the same input in both runs.
    In process that is each layer's own output on the reference's input (`local_cos_min`); the
    accumulated error's cosine (`cos_min`) is judged only where no local one was measured (layers
    captured inside a served engine). Over a 2,500-token prompt a clean bf16 target's accumulated
    cosine reached 0.989 in a middle layer while its own cosine stayed at 0.9998 (the default model)."""
    local = all("local_cos_min" in row for row in t["layers"]) and bool(t["layers"])
    values = [row["local_cos_min" if local else "cos_min"] for row in t["layers"]]
    cos = min(values, default=float("nan"))
    if any(v is None or not math.isfinite(v) for v in values):
        cos = float("nan")
    status = "fail" if not cos >= 0.9 else "warn" if cos < 0.99 else "pass"
    return check("cosine_local" if local else "cosine_all", status, _fmt(cos))


def _localized(t, exact_expected: bool) -> Check:
    where = t.get("first_local_excess")
    if not where:
        return check("localized", "pass", "none", form="none")
    return check("localized", "fail" if exact_expected else "warn", form="some", **located_args(where))


def located_args(where: LocatedFault) -> dict[str, Any]:
    """The located layer as a check's arguments (messages.located_value words them): the layer, its
    ratio and basis and, where the part pass named one, that part with its channels and heads."""
    args: dict[str, Any] = {"layer": where["name"], "ratio": _fmt(where.get("ratio")), **_basis_of(where)}
    part = next((r for r in where.get("parts") or [] if r["name"] == where.get("part")), None)
    if part:
        args["part"] = {"name": part["name"], "ratio": _fmt(part["ratio"]), **_basis_of(part),
                        **{k: part[k] for k in ("channels", "heads") if part.get(k)}}
    return args


def _basis_of(row: dict[str, Any]) -> dict[str, Any]:
    """A row's basis as it stores it (RoundingBasis.fields), or its words as written where of no known form."""
    basis = RoundingBasis.of(row)
    return basis.fields() if basis else {"basis": row["basis"]} if row.get("basis") is not None else {}


def _layer_ratio(t, f) -> Check:
    rows = [row for row in t["layers"] if "ratio" in row]
    if not rows:
        return check("layer_ratio", "fail", None, form="none")
    statuses = [(graded(row["ratio"], row.get("allowed", 1.0)), row) for row in rows]
    status, row = max(statuses, key=lambda s: (severity(s[0]), _num(s[1]["ratio"])))
    return check("layer_ratio", status, f"{row['name']}: {_fmt(row['ratio'])}", form="some",
                 allowed=_fmt(row.get("allowed", 1.0)), k=K_SPREAD, floor=f["label"])


def _kl_ratio(t, f) -> Check:
    vs = t.get("vs_floor") or {}
    ratio, allowed = vs.get("kl_ratio"), vs.get("kl_allowed", 1.0)
    return check("kl_ratio", graded(ratio, allowed), _fmt(ratio), allowed=_fmt(allowed), k=K_SPREAD, floor=f["label"])


def _top1_vs_floor(t, f) -> Check:
    """Same top-1 against the floor, outside the gold's tie margin where both measured it (top1_figures)."""
    (rate, err), args = top1_figures(t["logits"], f["logits"])
    rt, et, rf, ef = t["logits"][rate], t["logits"][err], f["logits"][rate], f["logits"][err]
    return check("top1_ratio", top1_status(rt, et, rf, ef), rt=_fmt(rt), rf=_fmt(rf), **args)


def top1_figures(t: dict[str, Any], f: dict[str, Any] | None = None) -> tuple[tuple[str, str], dict[str, Any]]:
    """Which same-top-1 rate to judge, and the check's arguments that say so: the rate on the positions
    outside the gold's tie margin (its own top-1 minus top-2 above `tie_margin`, the margin greedy
    divergences are classified by) where `t`, and the floor `f` when there is one, measured it; else the
    rate over all positions (an accuracy.json of an earlier version, or no position outside the margin).
    Inside the margin a flip is rounding: on a model with near-flat logits (random weights, a small
    or undertrained model) a clean bf16 target on the gold's own device flips many near-ties (Llama-3.2-3B's
    body with random weights on an H200: same top-1 0.945 over all positions; 32 random layers of width 64
    on the CPU: 0.934 over all, 1.000 over the 94 decisive ones, tests/accuracy/test_same_device.py). Pure.

    t, f: logits summaries ({"same_top1", "same_top1_err", "positions"} and, where measured,
    {"decisive_positions", "same_top1_decisive", "same_top1_decisive_err", "tie_margin"})."""
    if not (t.get("decisive_positions") and (f is None or f.get("decisive_positions"))):
        return ("same_top1", "same_top1_err"), {"form": "all"}
    args = {"form": "decisive", "margin": t["tie_margin"], "decisive": t["decisive_positions"],
            "positions": t["positions"], "all_t": t["same_top1"]}
    return ("same_top1_decisive", "same_top1_decisive_err"), args | ({"all_f": f["same_top1"]} if f else {})


def top1_status(rt: float, et: float | None, rf: float, ef: float | None) -> str:
    if not (math.isfinite(rt) and math.isfinite(rf)):
        return "fail"
    if rt >= rf - 2 * math.hypot(et or 0, ef or 0):
        return "pass"
    ratio = (1 - rt) / (1 - rf) if rf < 1 else math.inf
    return "warn" if ratio <= 2 else "fail"


def _ppl_vs_floor(t, f) -> Check:
    return ppl_check(t["perplexity"].get("ln_ratio"), t["perplexity"].get("ln_ratio_sem"),
                     f["perplexity"].get("ln_ratio"), f["perplexity"].get("ln_ratio_sem"), f["label"])


def ppl_check(ln_t: float | None, se_t: float | None, ln_f: float | None, se_f: float | None, floor_label: str) -> Check:
    """ln PPL ratio against the floor's, within K standard errors of the paired difference."""
    if ln_t is None or ln_f is None or not (math.isfinite(ln_t) and math.isfinite(ln_f)):
        return check("ppl", "fail", form="none", ln_t=_fmt(ln_t))
    allowed = K_SPREAD * math.hypot(_finite(se_t), _finite(se_f)) + PPL_ABS_TOLERANCE
    delta = ln_t - ln_f
    status = "pass" if abs(delta) <= allowed else "warn" if abs(delta) <= 2 * allowed else "fail"
    return check("ppl", status, form="some", ln_t=ln_t, ln_f=ln_f, allowed=allowed, k=K_SPREAD,
                 tolerance=PPL_ABS_TOLERANCE, floor=floor_label)


def _greedy_vs_floor(t, f) -> Check:
    nt, nf, n = genuine_count(t["greedy"]), genuine_count(f["greedy"]), len(t["greedy"])
    status, p = greedy_status(nt, nf, n)
    return check("greedy", status, nt=nt, n=n, nf=nf, p=p, **GREEDY_ARGS)


def _kl_absolute(t) -> Check:
    kl = t["logits"]["kl_mean"]
    status = "fail" if not math.isfinite(kl) else "pass" if kl <= ABSOLUTE_KL[0] else "warn" if kl <= ABSOLUTE_KL[1] else "fail"
    return check("kl_absolute", status, _fmt(kl), pass_at=ABSOLUTE_KL[0], warn_at=ABSOLUTE_KL[1])


def _top1_absolute(t) -> Check:
    """Same top-1 on an absolute budget, outside the gold's tie margin where it was measured (top1_figures)."""
    (key, _), args = top1_figures(t["logits"])
    rate = t["logits"][key]
    rate = math.nan if rate is None else rate
    status = "fail" if not math.isfinite(rate) else (
        "pass" if rate >= ABSOLUTE_TOP1[0] else "warn" if rate >= ABSOLUTE_TOP1[1] else "fail")
    return check("top1_absolute", status, _fmt(rate), rate=_fmt(rate), pass_at=ABSOLUTE_TOP1[0],
                 warn_at=ABSOLUTE_TOP1[1], **args)


def _ppl_absolute(t) -> Check:
    ln = t["perplexity"].get("ln_ratio")
    if ln is None or not math.isfinite(ln):
        return check("ppl_absolute", "fail", form="none", ln=_fmt(ln))
    status = "pass" if abs(ln) <= ABSOLUTE_LN_PPL[0] else "warn" if abs(ln) <= ABSOLUTE_LN_PPL[1] else "fail"
    return check("ppl_absolute", status, form="some", ln=ln, pass_at=ABSOLUTE_LN_PPL[0], warn_at=ABSOLUTE_LN_PPL[1])


def _greedy_absolute(t) -> Check:
    n, total = genuine_count(t["greedy"]), len(t["greedy"])
    status, p = greedy_status(n, 0, total)
    return check("greedy_absolute", status, n=n, total=total, p=p, **GREEDY_ARGS)


def stops_check(rows: list[GreedyRow]) -> Check:
    """Answers that end earlier or later than the reference's, outside the tie margin."""
    early = sum(1 for r in rows if r.get("stop") == "early" and r.get("divergence") == "genuine")
    late = sum(1 for r in rows if r.get("stop") == "late" and r.get("divergence") == "genuine")
    return check("stops", "warn" if early or late else "pass", early=early, late=late, n=len(rows))


def genuine_count(rows: list[GreedyRow]) -> int:
    return sum(1 for g in rows if g.get("divergence") == "genuine")


def _num(value) -> float:
    return value if isinstance(value, (int, float)) and not math.isnan(value) else math.inf


def _finite(value) -> float:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _fmt(value) -> str | float | None:
    if value is None:
        return None
    if isinstance(value, float):
        return "inf" if math.isinf(value) else "nan" if math.isnan(value) else round(value, 6)
    return value


def overall(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    status = worst([v["status"].lower() for v in verdicts])
    return {"status": status}


def is_informational(quant: str | None, quants_only: bool) -> bool:
    """An emulated weight quantization (`--quant int8-tensor`) beside an unquantized target is an
    experiment on a scheme nobody deploys as emulated (vLLM-Ascend quantizes with msmodelslim and
    calibration data): its result is shown, never judged. Judged only when every target is one, since
    then the user asked for nothing else. Pure."""
    return bool(quant) and not quants_only


def accuracy_verdict(targets: list[tuple[str, str | None, str]]) -> dict[str, Any]:
    """accuracy.json's verdict from (label, quant, status) per target: the worst of the judged targets,
    with each judged target's status, and the informational ones apart. Pure."""
    quants_only = all(quant for _, quant, _ in targets)
    judged = {label: status for label, quant, status in targets if not is_informational(quant, quants_only)}
    informational = {label: status for label, quant, status in targets if is_informational(quant, quants_only)}
    return {"status": worst([s.lower() for s in judged.values()]) if judged else "WARN", "targets": judged,
            "informational": informational}


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


def target_basis(target: dict[str, Any]) -> RoundingBasis:
    """What a target's layers were judged against: its floor, else the rounding basis it recorded, else (a
    file from before that was recorded) the fixed ROUNDOFF_FACTOR unit roundoffs of its dtype. Pure."""
    if target.get("floor"):
        return RoundingBasis(kind="floor")
    recorded = RoundingBasis.of(target["roundoff_basis"]) if target.get("roundoff_basis") else None
    return recorded or RoundingBasis(kind="roundoff", factor=ROUNDOFF_FACTOR, dtype=target["dtype"])


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


def find_first_local_excess(layers: list[LayerRow], factor: float, have_floor: bool, dtype: str,
                            contraction: int | None = None) -> LocatedFault | None:
    """The first layer whose own (local) error is out of line (own_error_excess)."""
    for row in layers:
        value = row["local_rel_l2"]
        ratio, basis, excess = own_error_excess(value, row.get("local_ratio"), row.get("local_allowed", 1.0), factor,
                                                have_floor, dtype, contraction)
        if excess:
            return {"name": row["name"], "local_rel_l2": value, "ratio": ratio, **basis}
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
                                                row.get("allowed", 1.0), factor, floored, dtype, contraction)
        marked.append({**row, "ratio": ratio, **basis, "excess": excess})
    out = [r for r in marked if r["excess"]]
    worst_part = max(out, key=lambda r: _num(r["ratio"]) if math.isfinite(r["rel_l2"]) else math.inf) if out else None
    return {"part": worst_part["name"] if worst_part else None, "parts": marked}


# ---- layers captured inside a served engine (accuracy/layers_served.py) -----------------------

def first_step_up(rows: list[LayerRow]) -> LocatedFault | None:
    """Where a served fault enters, from full errors alone: of the layers whose ratio to the floor
    exceeds its allowance and steps up from the layer before by more than that step's chance spread
    (both ratios' spreads in quadrature, the same K), the one with the largest step. Pure.

    A served layer's error includes all it inherits, so after a fault each later layer stays out of
    line and the error may keep growing: waiting for a layer above twice its allowance named one
    seven layers past the planted fault on vLLM-CPU; the step itself is where it entered. The largest
    step, not the first: where the engine's kernels sit above the in-process floor from the first
    layer on (vLLM-CPU in fp32: about 3x at every clean layer), that offset is a step too, and a
    fault's is far larger. The other significant steps are listed."""
    before_ratio, before_spread, steps = 1.0, 0.0, []  # the embeddings' input: the floor itself
    for row in rows:
        ratio, allowed = row.get("ratio"), row.get("allowed", 1.0)
        if ratio is None or not math.isfinite(ratio) or ratio <= 0:
            continue  # no error on either side (the embeddings, say): no step to measure from it
        spread = max(allowed - 1.0, 0.0) / K_SPREAD
        step = ratio / before_ratio
        step_allowed = 1 + K_SPREAD * math.hypot(spread, before_spread)
        if ratio > allowed and step > step_allowed:
            steps.append({"name": row["name"], "local_rel_l2": row["rel_l2"], "ratio": ratio,
                          **RoundingBasis(kind="step", step=step, step_allowed=step_allowed).fields()})
        before_ratio, before_spread = ratio, spread
    if not steps:
        return None
    largest = max(steps, key=lambda s: s["step"])
    return largest | {"other_steps": [s["name"] for s in steps if s is not largest]}


def judged(rows: list[LayerRow], floor_label: str | None, dtype: str, local_factor: float,
           exact_expected: bool) -> tuple[LocatedFault | None, Verdict]:
    """Where to look first and the verdict, by the in-process comparison's own rules; with a floor,
    where the error curve steps up first (first_step_up), else the first layer past the local factor."""
    excess = (first_step_up(rows) if floor_label is not None else None) or \
        find_first_local_excess(rows, local_factor, floor_label is not None, dtype)
    target = {"layers": rows, "first_local_excess": excess,
              "first_nonfinite": next((r["name"] for r in rows if r["nan_mismatch"]), None)}
    return excess, judge_layers(target, {"label": floor_label} if floor_label else None, exact_expected)


# ---- a served model (endpoint accuracy, accuracy/endpoint.py) ----------------------------------

ENDPOINT_SECTIONS = ("tokenization", "teacher_forced", "perplexity", "greedy")


def clean_kl_bound(sections: dict[str, dict[str, Any]]) -> float:
    """The mean top-k KL a clean server stays under: the floor's times its allowed ratio, or at the
    gold's dtype the same-dtype pass threshold. Pure."""
    tf = sections.get("teacher_forced") or {}
    floor = (tf.get("floor") or {}).get("kl_lb_mean")
    if floor is None or not math.isfinite(floor):
        return SAME_DTYPE_KL[0]
    return floor * (tf.get("spread") or {}).get("allowed", 1.0)


def judge_endpoint(sections: dict[str, dict[str, Any]], gold_skipped: list[dict[str, Any]] = ()) -> Verdict:
    """PASS / WARN / FAIL for a served model, from its sections (see verdict.py for the rules);
    `gold_skipped`: prompts left out before the gold was measured, listed with the others."""
    checks = []
    tok, tf, ppl, greedy = (sections[n] for n in ENDPOINT_SECTIONS)
    if tok["status"] == "done":
        n = len(tok["mismatches"])
        checks.append(check("served_tokenization", "pass" if n == 0 else "fail", count=n, checked=tok["checked"]))
    if tf["status"] == "done":
        checks += _teacher_forced_checks(tf)
    if ppl["status"] == "done" and "floor_ln_ratio" in ppl:
        checks.append(ppl_check(ppl["ln_ratio"], ppl["ln_ratio_sem"], ppl["floor_ln_ratio"], ppl["floor_ln_ratio_sem"],
                                "the in-process floor"))
    elif ppl["status"] == "done":  # at the gold's dtype: against the gold itself
        checks.append(ppl_check(ppl["ln_ratio"], ppl["ln_ratio_sem"], 0.0, 0.0, "the gold itself (same dtype)"))
    if greedy["status"] == "done":
        checks += _greedy_checks(greedy, tf.get("spread") if tf["status"] == "done" else None)
    missing = [n for n, s in sections.items() if s["status"] != "done"]
    status = worst([c["status"] for c in checks]) if checks else "WARN"
    reasons = [f"{c['name']}: {c['value']}" for c in checks if c["status"] in ("warn", "fail")]
    reasons += [f"{n}: {sections[n]['status']} ({sections[n].get('reason')})" for n in missing]
    if missing and status == "PASS":
        status = "WARN"
    skipped = sorted({s["id"] for n in ("teacher_forced", "greedy") for s in sections[n].get("skipped") or []}
                     | {s["id"] for s in gold_skipped})
    return {"status": status, "checks": checks, "reasons": reasons, "skipped_prompts": skipped}


def _teacher_forced_checks(tf: dict[str, Any]) -> list[Check]:
    from llm_adapt.accuracy.metrics import ratio_or_none

    out = []
    bad = tf.get("nonfinite_positions", 0)
    out.append(check("served_nonfinite", "fail" if bad else "pass", count=bad))
    s, f, spread = tf["server"], tf.get("floor"), tf.get("spread") or {}
    if not s.get("positions"):
        return out
    if not f:  # served at the gold's own dtype: it should match to rounding, with no floor to ask
        return out + same_dtype_checks(s)
    ratio = ratio_or_none(s.get("kl_lb_mean"), f.get("kl_lb_mean"))
    allowed = spread.get("allowed", 1.0)
    out.append(check("served_kl_ratio", graded(ratio, allowed), None if ratio is None else round(ratio, 4),
                     allowed=allowed, k=K_SPREAD))
    out.append(top1_check(s, f))
    return out


def same_dtype_checks(s: dict[str, Any]) -> list[Check]:
    """The server against the gold it should equal to rounding (no noise floor measured). Pure."""
    kl = s.get("kl_lb_mean", math.nan)
    status = "pass" if kl <= SAME_DTYPE_KL[0] else "warn" if kl <= SAME_DTYPE_KL[1] else "fail"
    rate = s.get("same_top1_decisive", s.get("same_top1", math.nan)) if s.get("decisive_positions") else s.get("same_top1")
    rate = math.nan if rate is None else rate
    top1 = "pass" if rate >= SAME_DTYPE_TOP1[0] else "warn" if rate >= SAME_DTYPE_TOP1[1] else "fail"
    return [check("same_dtype_kl", status if math.isfinite(kl) else "fail", kl=kl, pass_at=SAME_DTYPE_KL[0],
                  warn_at=SAME_DTYPE_KL[1]),
            check("same_dtype_top1", top1 if math.isfinite(rate) else "fail", rate=rate, pass_at=SAME_DTYPE_TOP1[0],
                  warn_at=SAME_DTYPE_TOP1[1])]


def top1_check(s: dict[str, Any], f: dict[str, Any]) -> Check:
    """Same top-1 against the floor, on the positions outside the gold's tie margin: where the gold's
    top two are that close, a flip is rounding (the greedy check classifies its divergences the same
    way). Without such positions the rate over all positions is judged. Pure."""
    keys, args = top1_figures(s, f)
    rt, et, rf, ef = s[keys[0]], s[keys[1]], f[keys[0]], f[keys[1]]
    return check("served_top1", top1_status(rt, et, rf, ef), rt=rt, rf=rf, **args)


def _greedy_checks(greedy: dict[str, Any], spread: dict[str, Any] | None) -> list[Check]:
    from llm_adapt.accuracy.metrics import ratio_or_none

    rows = greedy["rows"]
    nt, nf = genuine_count(rows), greedy.get("floor_genuine")
    status, p = greedy_status(nt, nf or 0, len(rows))
    out = [check("greedy", status, nt=nt, n=len(rows), nf=nf if nf is not None else "n/a", p=p, **GREEDY_ARGS)]
    dec = greedy.get("decode") or {}
    s, f = dec.get("server") or {}, dec.get("floor") or {}
    if s.get("positions") and f.get("positions"):
        ratio = ratio_or_none(s["kl_lb_mean"], f["kl_lb_mean"])
        allowed = (spread or {}).get("allowed", 1.0)
        out.append(check("decode_kl_ratio", graded(ratio, allowed), None if ratio is None else round(ratio, 4),
                         allowed=allowed))
    elif s.get("positions") and greedy.get("floor_genuine") is None:  # at the gold's dtype: the gold itself
        kl = s["kl_lb_mean"]
        status = "pass" if kl <= SAME_DTYPE_KL[0] else "warn" if kl <= SAME_DTYPE_KL[1] else "fail"
        out.append(check("decode_same_dtype_kl", status if math.isfinite(kl) else "fail", kl=kl,
                         pass_at=SAME_DTYPE_KL[0], warn_at=SAME_DTYPE_KL[1]))
    out.append(stops_check(rows))
    return out
