"""Accuracy verdicts: every threshold with its source written beside it. Pure."""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.metrics import benchmark_ratio_status, safe_ratio

ORDER = {"pass": 0, "n/a": 0, "warn": 1, "fail": 2}

# Used only when no noise floor was measured (the target runs on the reference's device).
ABSOLUTE_KL = (0.01, 0.05)  # mean KL nats: pass below the first, warn below the second
ABSOLUTE_TOP1 = (0.95, 0.90)  # same-top-1 rate: pass above the first, warn above the second


def worst(statuses: list[str]) -> str:
    return max(statuses, key=lambda s: ORDER[s], default="pass").upper().replace("N/A", "PASS")


def check(name: str, value: Any, status: str, threshold: str, source: str) -> dict[str, Any]:
    return {"name": name, "value": value, "status": status, "threshold": threshold, "source": source}


def judge(target: dict[str, Any], floor: dict[str, Any] | None) -> dict[str, Any]:
    """PASS / WARN / FAIL for one runner, with the checks that decided it."""
    checks = [_nonfinite(target), _cosine(target)]
    if floor is not None:
        checks += [_layer_ratio(target, floor), _kl_ratio(target, floor), _top1_vs_floor(target, floor),
                   _genuine_vs_floor(target, floor)]
    else:
        checks += [_kl_absolute(target), _top1_absolute(target), _genuine_absolute(target)]
    status = worst([c["status"] for c in checks])
    reasons = [f"{c['name']}: {c['value']} ({c['threshold']})" for c in checks if c["status"] in ("warn", "fail")]
    return {"status": status, "reasons": reasons, "checks": checks,
            "noise_floor": target.get("floor") if floor is not None else None}


def _nonfinite(t) -> dict:
    where = t.get("first_nonfinite")
    return check("NaN/Inf in outputs", where or "none", "fail" if where else "pass",
                 "none allowed where the reference is finite", "msprobe: NaN/Inf mismatch is an error")


def _cosine(t) -> dict:
    cos = min((row["cos_min"] for row in t["layers"] if row["cos_min"] is not None), default=float("nan"))
    status = "fail" if not cos >= 0.9 else "warn" if cos < 0.99 else "pass"
    return check("lowest per-token cosine over all layers", _fmt(cos), status, ">= 0.99 pass, >= 0.9 warn",
                 "msprobe: cosine < 0.99 (with max abs err > 1e-3) or < 0.9 is an error")


def _layer_ratio(t, f) -> dict:
    ratios = [row.get("ratio") for row in t["layers"] if row.get("ratio") is not None]
    value = max(ratios, default=None)
    status = benchmark_ratio_status(value)
    return check("worst layer error / noise floor (rel. L2)", _fmt(value), status, "<= 1 pass, <= 2 warn, else fail",
                 f"msprobe benchmark ratio against {f['label']}")


def _kl_ratio(t, f) -> dict:
    value = safe_ratio(t["logits"]["kl_mean"], f["logits"]["kl_mean"])
    return check("mean KL / noise floor", _fmt(value), benchmark_ratio_status(value), "<= 1 pass, <= 2 warn, else fail",
                 f"msprobe benchmark ratio applied to llama.cpp's KL, against {f['label']}")


def _top1_vs_floor(t, f) -> dict:
    rt, et = t["logits"]["same_top1"], t["logits"]["same_top1_err"]
    rf, ef = f["logits"]["same_top1"], f["logits"]["same_top1_err"]
    allowed = rf - 2 * math.sqrt((et or 0) ** 2 + (ef or 0) ** 2)
    if rt >= allowed:
        status = "pass"
    else:
        status = benchmark_ratio_status(safe_ratio(1 - rt, 1 - rf))
    return check("same top-1 rate", f"{rt:.4f} vs floor {rf:.4f}", status,
                 "within 2 standard errors of the floor, else mismatch ratio <= 2 warn",
                 "llama.cpp's same-top rate and its uncertainty sqrt(p(1-p)/(n-1))")


def _genuine_vs_floor(t, f) -> dict:
    nt, nf = _genuine(t), _genuine(f)
    return check("genuine greedy divergences", f"{nt} vs floor {nf}", "pass" if nt <= nf else "warn",
                 "no more than the noise floor", "vLLM tests: divergence outside the tie margin and mutual top-k")


def _kl_absolute(t) -> dict:
    kl = t["logits"]["kl_mean"]
    status = "pass" if kl <= ABSOLUTE_KL[0] else "warn" if kl <= ABSOLUTE_KL[1] else "fail"
    return check("mean KL (no noise floor measured)", _fmt(kl), status,
                 f"<= {ABSOLUTE_KL[0]} pass, <= {ABSOLUTE_KL[1]} warn", "absolute budget: the target runs on the reference's device")


def _top1_absolute(t) -> dict:
    rate = t["logits"]["same_top1"]
    status = "pass" if rate >= ABSOLUTE_TOP1[0] else "warn" if rate >= ABSOLUTE_TOP1[1] else "fail"
    return check("same top-1 rate (no noise floor measured)", _fmt(rate), status,
                 f">= {ABSOLUTE_TOP1[0]} pass, >= {ABSOLUTE_TOP1[1]} warn", "absolute budget")


def _genuine_absolute(t) -> dict:
    n = _genuine(t)
    return check("genuine greedy divergences", n, "pass" if n == 0 else "warn", "0 pass, else warn",
                 "vLLM tests: divergence outside the tie margin")


def _genuine(t) -> int:
    return sum(1 for g in t["greedy"] if g.get("divergence") == "genuine")


def _fmt(value) -> str | float | None:
    if value is None:
        return None
    if isinstance(value, float):
        return "inf" if math.isinf(value) else "nan" if math.isnan(value) else round(value, 6)
    return value


def overall(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    status = worst([v["status"].lower() for v in verdicts])
    return {"status": status}
