"""The in-process judge: a runner (a target on the gold's prompts) against its noise floor, or without one against
absolute budgets and the rounding of its dtype. A fault the tool localizes (a layer whose own error is out of line)
is at least WARN, and FAIL where the target should match the reference to within rounding (same device and
dtype). Pure."""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.result import Check, LocatedFault, RoundingBasis, Verdict
from llm_adapt.accuracy.verdict.checks import (
    ABSOLUTE_KL,
    ABSOLUTE_LN_PPL,
    ABSOLUTE_TOP1,
    GREEDY_ARGS,
    K_SPREAD,
    MIN_GREEDY,
    allowance,
    band,
    check,
    fmt,
    genuine_count,
    graded,
    greedy_status,
    num_or_inf,
    ppl_check,
    routing_check,
    routing_totals,
    stops_check,
    top1_evidence,
    top1_figures,
    top1_status,
    unjudged,
    verdict_of,
)
from llm_adapt.status import UNJUDGED, Status, decides, severity


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
        absolute = [_kl_absolute(target), _top1_absolute(target), _ppl_absolute(target), _greedy_absolute(target)]
        # no absolute budget decides where the target is its own floor (the reference's device at its dtype): its
        # error is the rounding at that dtype by definition, so the figures are informational; where it should
        # match the reference to rounding (same device and dtype), a budget is what decides it
        checks += absolute if exact_expected else [informational(c) for c in absolute]
    checks.append(stops_check(target["greedy"]))
    if routed := routing_totals(target):
        checks.append(routing_check(routed, routing_totals(floor) if floor is not None else None))
    return verdict_of(checks, noise_floor=target.get("floor") if floor is not None else None)


def informational(c: Check) -> Check:
    """A check kept for its figure that decides nothing: the target is its own noise floor. An unjudged check stays
    as it is (its value already says why). Pure."""
    if not decides(c["status"]):
        return c
    args = {k: v for k, v in c["args"].items() if k != "why"}
    return check(c["key"], UNJUDGED, **args, why="own_floor", shown=str(c["value"]), would=c["status"])


def _template(mismatches: list[str]) -> Check:
    return check("template", Status.FAIL.check if mismatches else Status.PASS.check, count=len(mismatches),
                 examples=f" ({', '.join(mismatches[:3])})" if mismatches else "")


def _nonfinite(t) -> Check:
    where = t.get("first_nonfinite")
    if not (where or t["layers"] or (t.get("logits") or {}).get("positions")):
        return unjudged("nonfinite", "layers", form="none")
    return check("nonfinite", Status.FAIL.check if where else Status.PASS.check, form="some" if where else "none", where=where)


def _cosine(t) -> Check:
    """msprobe's cosine rule where its premise holds: one module fed the same input in both runs.
    In process that is each layer's own output on the reference's input (`local_cos_min`); the
    accumulated error's cosine (`cos_min`) is judged only where no local one was measured (layers
    captured inside a served engine). Over a 2,500-token prompt a clean bf16 target's accumulated
    cosine reached 0.989 in a middle layer while its own cosine stayed at 0.9998 (the default model)."""
    local = all("local_cos_min" in row for row in t["layers"]) and bool(t["layers"])
    key = "cosine_local" if local else "cosine_all"
    values = [row["local_cos_min" if local else "cos_min"] for row in t["layers"]]
    if not values:
        return unjudged(key, "layers")
    if any(v is None or not math.isfinite(v) for v in values):  # NaN/Inf in the output: the nonfinite check's
        return unjudged(key, "undefined")
    cos = min(values)
    return check(key, band(cos, 0.99, 0.9, higher_is_better=True), fmt(cos))


def _localized(t, exact_expected: bool) -> Check:
    where = t.get("first_local_excess")
    if not (where or t["layers"]):
        return unjudged("localized", "layers", form="none")
    if not where:
        return check("localized", Status.PASS.check, "none", form="none")
    return check("localized", Status.FAIL.check if exact_expected else Status.WARN.check, form="some", **located_args(where))


def located_args(where: LocatedFault) -> dict[str, Any]:
    """The located layer as a check's arguments (messages.located_value words them): the layer, its
    ratio and basis and, where the part pass named one, that part with its channels and heads."""
    args: dict[str, Any] = {"layer": where["name"], "ratio": fmt(where.get("ratio")), **_basis_of(where)}
    part = next((r for r in where.get("parts") or [] if r["name"] == where.get("part")), None)
    if part:
        args["part"] = {"name": part["name"], "ratio": fmt(part["ratio"]), **_basis_of(part),
                        **{k: part[k] for k in ("channels", "heads") if part.get(k)}}
    return args


def _basis_of(row: dict[str, Any]) -> dict[str, Any]:
    """A row's basis as it stores it (RoundingBasis.fields), or its words as written where of no known form."""
    basis = RoundingBasis.of(row)
    return basis.fields() if basis else {"basis": row["basis"]} if row.get("basis") is not None else {}


def _layer_ratio(t, f) -> Check:
    rows = [row for row in t["layers"] if "ratio" in row]
    if not rows:
        return unjudged("layer_ratio", "layers", form="none")
    statuses = [(s, row) for s, row in ((graded(row["ratio"], allowance(row)), row) for row in rows)
                if decides(s)]
    if not statuses:
        return unjudged("layer_ratio", "undefined", form="none")
    status, row = max(statuses, key=lambda s: (severity(s[0]), num_or_inf(s[1]["ratio"])))
    return check("layer_ratio", status, f"{row['name']}: {fmt(row['ratio'])}", form="some",
                 allowed=fmt(allowance(row)), k=K_SPREAD, floor=f["label"])


def _kl_ratio(t, f) -> Check:
    vs = t.get("vs_floor") or {}
    ratio, allowed = vs.get("kl_ratio"), allowance(vs, "kl_spread")
    status = graded(ratio, allowed)
    if not decides(status):
        return unjudged("kl_ratio", "undefined", allowed=fmt(allowed), k=K_SPREAD, floor=f["label"])
    return check("kl_ratio", status, fmt(ratio), allowed=fmt(allowed), k=K_SPREAD, floor=f["label"])


def _top1_vs_floor(t, f) -> Check:
    """Same top-1 against the floor, outside the gold's tie margin where both measured it (top1_figures)."""
    (rate, err), args = top1_figures(t["logits"], f["logits"])
    if too_few := top1_evidence(t["logits"], args):
        return too_few("top1_ratio")
    rt, et, rf, ef = t["logits"][rate], t["logits"][err], f["logits"][rate], f["logits"][err]
    return check("top1_ratio", top1_status(rt, et, rf, ef), rt=fmt(rt), rf=fmt(rf), **args)


def _ppl_vs_floor(t, f) -> Check:
    return ppl_check(t["perplexity"].get("ln_ratio"), t["perplexity"].get("ln_ratio_sem"),
                     f["perplexity"].get("ln_ratio"), f["perplexity"].get("ln_ratio_sem"), f["label"])


def _greedy_vs_floor(t, f) -> Check:
    nt, nf, n = genuine_count(t["greedy"]), genuine_count(f["greedy"]), len(t["greedy"])
    status, p = greedy_status(nt, nf, n)
    if not decides(status):
        return unjudged("greedy", "prompts", n=n, needed=MIN_GREEDY, **GREEDY_ARGS)
    return check("greedy", status, nt=nt, n=n, nf=nf, p=p, **GREEDY_ARGS)


def _kl_absolute(t) -> Check:
    kl = t["logits"]["kl_mean"]
    kl = math.nan if kl is None else kl
    if math.isnan(kl):
        return unjudged("kl_absolute", "undefined", pass_at=ABSOLUTE_KL[0], warn_at=ABSOLUTE_KL[1])
    return check("kl_absolute", band(kl, *ABSOLUTE_KL), fmt(kl), pass_at=ABSOLUTE_KL[0], warn_at=ABSOLUTE_KL[1])


def _top1_absolute(t) -> Check:
    """Same top-1 on an absolute budget, outside the gold's tie margin where it was measured (top1_figures)."""
    (key, _), args = top1_figures(t["logits"])
    limits = {"pass_at": ABSOLUTE_TOP1[0], "warn_at": ABSOLUTE_TOP1[1]}
    if too_few := top1_evidence(t["logits"], args):
        return too_few("top1_absolute")
    rate = t["logits"][key]
    rate = math.nan if rate is None else rate
    if math.isnan(rate):
        return unjudged("top1_absolute", "undefined", **limits, **args)
    return check("top1_absolute", band(rate, *ABSOLUTE_TOP1, higher_is_better=True), fmt(rate), rate=fmt(rate),
                 **limits, **args)


def _ppl_absolute(t) -> Check:
    ln = t["perplexity"].get("ln_ratio")
    if ln is None or math.isnan(ln):
        return unjudged("ppl_absolute", "undefined", form="none", ln=fmt(ln))
    if not math.isfinite(ln):
        return check("ppl_absolute", Status.FAIL.check, form="none", ln=fmt(ln))
    status = band(abs(ln), *ABSOLUTE_LN_PPL)
    return check("ppl_absolute", status, form="some", ln=ln, pass_at=ABSOLUTE_LN_PPL[0], warn_at=ABSOLUTE_LN_PPL[1])


def _greedy_absolute(t) -> Check:
    n, total = genuine_count(t["greedy"]), len(t["greedy"])
    status, p = greedy_status(n, 0, total)
    if not decides(status):
        return unjudged("greedy_absolute", "prompts", n=total, needed=MIN_GREEDY, **GREEDY_ARGS)
    return check("greedy_absolute", status, n=n, total=total, p=p, **GREEDY_ARGS)
