"""msprobe's own per-tensor rules (Ascend's accuracy compare), in its words: its per-token rule for a compare of
accumulated errors and its published per-dtype standard for one API fed the same inputs. Pure."""

from __future__ import annotations


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
