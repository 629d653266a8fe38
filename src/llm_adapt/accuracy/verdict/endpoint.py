"""The served judge (endpoint accuracy, accuracy/endpoint.py): the server's log-probs and greedy tokens against the
gold, as ratios to the in-process floor at the served dtype, or at the gold's own dtype against the gold itself
(it should equal it to rounding). Pure."""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.result import Check, EndpointSection, SkippedPrompt, TopkView, Verdict, ViewSpread
from llm_adapt.accuracy.shapes import shared_shape
from llm_adapt.accuracy.verdict.checks import (
    GREEDY_ARGS,
    K_SPREAD,
    MIN_GREEDY,
    SAME_DTYPE_KL,
    SAME_DTYPE_TOP1,
    allowance,
    allowed_ratio,
    band,
    check,
    decided_status,
    genuine_count,
    graded,
    greedy_status,
    ppl_check,
    relative_spread,
    stops_check,
    top1_evidence,
    top1_figures,
    top1_status,
    unjudged,
)
from llm_adapt.accuracy.verdict.prompts import ALPHA as PROMPT_ALPHA
from llm_adapt.accuracy.verdict.prompts import EFFECT as PROMPT_EFFECT
from llm_adapt.accuracy.verdict.prompts import PromptKL, judge_prompts, prompts_over
from llm_adapt.status import NOTED, Status, decides

ENDPOINT_SECTIONS = ("tokenization", "teacher_forced", "perplexity", "greedy")


def clean_kl_bound(sections: dict[str, EndpointSection]) -> float:
    """The mean top-k KL a clean server stays under: the floor's times its allowed ratio, or at the
    gold's dtype the same-dtype pass threshold. Pure."""
    tf = sections.get("teacher_forced") or {}
    floor = (tf.get("floor") or {}).get("kl_lb_mean")
    if floor is None or not math.isfinite(floor):
        return SAME_DTYPE_KL[0]
    return floor * allowance(tf["spread"], "relative")


def judge_endpoint(sections: dict[str, EndpointSection], gold_skipped: list[SkippedPrompt] = ()) -> Verdict:
    """PASS / WARN / FAIL for a served model, from its sections (see verdict.py for the rules);
    `gold_skipped`: prompts left out before the gold was measured, listed with the others."""
    checks = []
    tok, tf, ppl, greedy = (sections[n] for n in ENDPOINT_SECTIONS)
    if tok["status"] == "done":
        n = len(tok["mismatches"])
        checks.append(check("served_tokenization", Status.PASS.check if n == 0 else Status.FAIL.check, count=n, checked=tok["checked"])
                      if n or tok["checked"] else unjudged("served_tokenization", "prompts", n=0, needed=1))
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
    status, nothing = decided_status(checks)
    reasons = [f"{c['name']}: {c['value']}" for c in checks if c["status"] in NOTED] + nothing
    reasons += [f"{n}: {sections[n]['status']} ({sections[n].get('reason')})" for n in missing]
    if missing and status == Status.PASS:
        status = Status.WARN
    skipped = sorted({s["id"] for n in ("teacher_forced", "greedy") for s in sections[n].get("skipped") or []}
                     | {s["id"] for s in gold_skipped})
    return {"status": status, "checks": checks, "reasons": reasons, "skipped_prompts": skipped}


def _teacher_forced_checks(tf: EndpointSection) -> list[Check]:
    from llm_adapt.accuracy.metrics import ratio_or_none

    out = []
    bad = tf.get("nonfinite_positions", 0)
    s, f, spread = tf["server"], tf.get("floor"), tf.get("spread") or {}
    if not (bad or s.get("positions")):  # no position came back to look at
        return [unjudged("served_nonfinite", "positions", n=0, needed=1)]
    out.append(check("served_nonfinite", Status.FAIL.check if bad else Status.PASS.check, count=bad))
    if not s.get("positions"):
        return out
    if not f:  # served at the gold's own dtype: it should match to rounding, with no floor to ask
        return out + same_dtype_checks(s) + ([same_dtype_prompts_check(tf["by_prompt"])] if "by_prompt" in tf else [])
    ratio = ratio_or_none(s.get("kl_lb_mean"), f.get("kl_lb_mean"), tiny=0.0)
    if ratio == math.inf:  # a floor of exactly 0: no scale to judge the server's KL by
        return out + [same_dtype_kl_check("served_kl_zero_floor", s.get("kl_lb_mean"), floor=f.get("kl_lb_mean")),
                      top1_check(s, f)]
    allowed = allowance(spread, "relative")
    status = graded(ratio, allowed)
    out.append(check("served_kl_ratio", status, None if ratio is None else round(ratio, 4), allowed=allowed,
                     k=K_SPREAD) if decides(status) else unjudged("served_kl_ratio", "undefined", allowed=allowed,
                                                                  k=K_SPREAD))
    out.append(top1_check(s, f))
    if "by_prompt" in tf:  # an earlier version's section has no per-prompt sums
        out.append(prompts_check(tf["by_prompt"], allowed))
    return out


def prompts_check(rows: list[PromptKL], allowed: float) -> Check:
    """Every request judged on its own (verdict/prompts.py): FAIL naming each prompt out of line, with its length
    and the positions compared; unjudged with fewer than two prompts that have a ratio. Pure."""
    judged, sigma = judge_prompts(rows, allowed)
    with_ratio = [j for j in judged if j["ratio"] is not None]
    args = {"alpha": PROMPT_ALPHA, "effect": PROMPT_EFFECT, "allowed": allowed, "sigma": sigma}
    if len(with_ratio) < 2:
        return unjudged("served_prompts", "prompt_ratios", n=len(with_ratio), needed=2, **args)
    flagged = [j for j in judged if j["out_of_line"]]
    listed = "; ".join(f"{j['id']} ({j['tokens']} tokens, positions {j['first']}-{j['last']}, {j['ratio']:.2f}x)"
                       for j in flagged)
    return check("served_prompts", Status.FAIL.check if flagged else Status.PASS.check, count=len(flagged),
                 n=len(with_ratio), listed=listed, ids=[j["id"] for j in flagged], out_of_line=flagged,
                 **shaped([(r["shape"], j["out_of_line"]) for r, j in zip(rows, judged) if "shape" in r],
                          bool(flagged)), **args)


def same_dtype_prompts_check(rows: list[PromptKL]) -> Check:
    """At the gold's own dtype, every prompt's mean top-k KL against the same-dtype band's FAIL edge: a prompt
    above it FAILs, named with its length and positions, whatever the suite's mean. Pure."""
    judged = [r for r in rows if r.get("positions")]
    args = {"fail_at": SAME_DTYPE_KL[1]}
    if not judged:
        return unjudged("served_prompts_same_dtype", "prompt_ratios", n=0, needed=1, **args)
    over = prompts_over(judged, SAME_DTYPE_KL[1])
    listed = "; ".join(f"{r['id']} ({r['tokens']} tokens, positions {r['first']}-{r['last']}, mean KL "
                       f"{r['server'] / r['positions']:.3g})" for r in over)
    named = {id(r) for r in over}
    return check("served_prompts_same_dtype", Status.FAIL.check if over else Status.PASS.check, count=len(over),
                 n=len(judged), listed=listed, ids=[r["id"] for r in over],
                 **shaped([(r["shape"], id(r) in named) for r in judged if "shape" in r], bool(over)), **args)


def shaped(rows: list[tuple[Any, bool]], flagged: bool) -> dict[str, Any]:
    """A per-prompt check's form, with the likely cause where the requests out of line share a shape the in-line ones
    lack (shapes.shared_shape). Pure."""
    shape = shared_shape(rows)  # its key: check_text words it in each language (messages' ARG_WORDS)
    return {"form": ("shaped" if shape else "some") if flagged else "none", "shape": shape}


def same_dtype_checks(s: TopkView) -> list[Check]:
    """The server against the gold it should equal to rounding (no noise floor measured). Pure."""
    return [same_dtype_kl_check("same_dtype_kl", s.get("kl_lb_mean")), _same_dtype_top1(s)]


def same_dtype_kl_check(key: str, kl: float | None, **args: Any) -> Check:
    """A mean top-k KL against the gold it should equal to rounding; NaN (none measured) decides nothing. Also the
    bound where the floor's KL is exactly 0, which gives a ratio no scale (`args`: the floor's KL, for its words).
    The KL ratios themselves are taken down to the smallest floor: a flat model's rounding puts a bf16 floor's KL
    near 1e-9 (5.4e-10 on a random Mixtral's decode positions), far from 0, and a ratio to it is as meaningful as
    any. Pure."""
    limits = {"pass_at": SAME_DTYPE_KL[0], "warn_at": SAME_DTYPE_KL[1], **args}
    kl = math.nan if kl is None else kl
    if math.isnan(kl):
        return unjudged(key, "undefined", kl=kl, **limits)
    return check(key, band(kl, *SAME_DTYPE_KL), kl=kl, **limits)


def _same_dtype_top1(s: TopkView) -> Check:
    keys, args = top1_figures(s)
    limits = {"pass_at": SAME_DTYPE_TOP1[0], "warn_at": SAME_DTYPE_TOP1[1]}
    if too_few := top1_evidence(s, args):
        return too_few("same_dtype_top1")
    rate = s.get(keys[0])
    rate = math.nan if rate is None else rate
    if math.isnan(rate):
        return unjudged("same_dtype_top1", "undefined", rate=rate, **limits)
    return check("same_dtype_top1", band(rate, *SAME_DTYPE_TOP1, higher_is_better=True), rate=rate, **limits)


def top1_check(s: TopkView, f: TopkView) -> Check:
    """Same top-1 against the floor, on the positions outside the gold's tie margin: where the gold's
    top two are that close, a flip is rounding (the greedy check classifies its divergences the same
    way). Without such positions the rate over all positions is judged. Pure."""
    keys, args = top1_figures(s, f)
    if too_few := top1_evidence(s, args):
        return too_few("served_top1")
    rt, et, rf, ef = s[keys[0]], s[keys[1]], f[keys[0]], f[keys[1]]
    status = top1_status(rt, et, rf, ef)
    return check("served_top1", status, rt=rt, rf=rf, **args) if decides(status) else \
        unjudged("served_top1", "undefined", **args)


def decode_spread(server: TopkView, floor: TopkView) -> float:
    """The relative sampling spread of the decode-side KL ratio: the server's and the floor's standard errors of
    their mean KL, relative, in quadrature. Decode positions are few (the greedy tokens after the first, about 60 on
    the quick prompts), and one token whose routing or near-tie flipped can hold most of a mean: the teacher-forced
    spread, measured over hundreds of prompt positions, does not cover that. NaN parts (one position) count as
    none. Pure."""
    from llm_adapt.accuracy.metrics import combined_spread

    parts = [se / mean for se, mean in ((server.get("kl_lb_sem"), server.get("kl_lb_mean")),
                                        (floor.get("kl_lb_sem"), floor.get("kl_lb_mean")))
             if isinstance(se, (int, float)) and isinstance(mean, (int, float)) and mean > 0 and math.isfinite(se)]
    return combined_spread(*parts)


def _greedy_checks(greedy: EndpointSection, spread: ViewSpread | None) -> list[Check]:
    from llm_adapt.accuracy.metrics import combined_spread, ratio_or_none

    rows = greedy["rows"]
    nt, nf = genuine_count(rows), greedy.get("floor_genuine")
    status, p = greedy_status(nt, nf or 0, len(rows))
    out = [check("greedy", status, nt=nt, n=len(rows), nf=nf if nf is not None else "n/a", p=p, **GREEDY_ARGS)
           if decides(status) else unjudged("greedy", "prompts", n=len(rows), needed=MIN_GREEDY, **GREEDY_ARGS)]
    dec = greedy.get("decode") or {}
    s, f = dec.get("server") or {}, dec.get("floor") or {}
    if s.get("positions") and f.get("positions"):
        ratio = ratio_or_none(s["kl_lb_mean"], f["kl_lb_mean"], tiny=0.0)
        if ratio == math.inf:  # a floor of exactly 0: the absolute bound, as in the teacher-forced check
            return out + [same_dtype_kl_check("decode_kl_zero_floor", s["kl_lb_mean"], floor=f["kl_lb_mean"]),
                          stops_check(rows)]
        sampled = decode_spread(s, f)
        # without the teacher-forced section no kernel spread was measured: its own sampling spread alone
        allowed = allowed_ratio(combined_spread(relative_spread(spread, "relative") if spread else None, sampled))
        status = graded(ratio, allowed)
        out.append(check("decode_kl_ratio", status, None if ratio is None else round(ratio, 4), allowed=allowed,
                         sampled=sampled) if decides(status) else
                   unjudged("decode_kl_ratio", "undefined", allowed=allowed, sampled=sampled))
    elif s.get("positions") and greedy.get("floor_genuine") is None:  # at the gold's dtype: the gold itself
        out.append(same_dtype_kl_check("decode_same_dtype_kl", s["kl_lb_mean"]))
    out.append(stops_check(rows))
    return out
