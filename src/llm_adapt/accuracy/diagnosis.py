"""From "out of line" to "what kind of bug": fault signatures computed from what endpoint accuracy
already measured, and a small rule table from signatures to likely causes.

Each signature is a pure function of a section's figures; it fires only with the figures that make
it. Each rule names a cause, the signatures it needs, and the next command that tells more. A
cause is never named without its figures, and no signature firing is a valid answer: "unknown".

The rules, in order:
- decode path: teacher-forced (prefill) log-probs within bounds while the server's own decode
  log-probs are out of line. The prompt's tokens went through the prefill kernels and were right;
  the tokens after them went through the decode step and the KV cache it reads. (Gemma4-E4B on
  vLLM-Ascend: layers sharing another layer's KV read the wrong keys; decode-only kernel bugs.)
- prompt log-probs only: the reverse, prefill out of line and decode clean. Not a prefill kernel: a
  prefill error corrupts the prompt's KV cache, which every decode step attends to, so it reads as
  "everywhere" (a fault planted in one layer's prefill showed exactly that). What is left is the
  path that computes prompt log-probs alone.
- positions past P: the teacher-forced error starts past a position, the bins before it in
  bounds: rotary embedding variants and scaling (rope_theta, rope_scaling, partial rotary), a
  sliding window, or a kernel path taken only for long sequences.
- one prompt category: genuine greedy divergences in one category only (e.g. multi-turn, a chat
  template; long context, as above).
- everywhere: prefill and decode both out of line from the first positions on: a layer's weights,
  a kernel every step runs (attention scale, a fused op), or the prefill path (through the KV cache
  decode reads); the layers stage places it.
- the dtype's range: the gold's own layer outputs (the residual stream) come within a factor of two of
  the served dtype's largest finite value (fp16: 65,504), so the served model overflows there (inf,
  then NaN) or loses its large values. Checked on the gold alone, so it holds for a target run in
  process at that dtype too; bf16 and fp32 share fp32's exponent range and never fire it.
- graph mode: the deployment in graph mode (torch.compile, CUDA graphs, ACLGraph) is out of line
  while the same model, served eager by the same vLLM on the same prompts against the same gold,
  passes. What differs is the compiled or captured graph: a fusion pass, a graph captured for
  other shapes, a buffer the replay does not refresh. Checked by `run`'s escalation of a graph
  deployment (it restarts the engine eager to capture inside it) and by `tune`'s graph trials
  against its eager baseline.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.accuracy.result import Candidate, Diagnosis, ModeFigures
from llm_adapt.accuracy.verdict.checks import allowance
from llm_adapt.status import OUT_OF_LINE, Status

if TYPE_CHECKING:
    from llm_adapt.accuracy.endpoint_metrics import PositionBin
    from llm_adapt.accuracy.result import CategoryStats, EndpointSection, Peak, Verdict


class PathSignature(TypedDict):
    signature: str  # decode, prefill or both
    prefill_kl: float
    decode_kl: float
    bound: float
    prefill_positions: int
    decode_positions: int


class OnsetSignature(TypedDict):
    signature: str  # positions
    from_position: int
    kl_before: float
    kl_after_min: float
    bound: float
    bins: list[dict[str, float]]  # from, to, kl of each bin that has enough positions


class CategorySignature(TypedDict):
    signature: str  # category
    category: str
    genuine: int
    prompts: int | None
    clean_categories: list[str]


class RangeSignature(TypedDict):
    signature: str  # range
    tensor: str
    max_abs: float
    limit: float
    share: float
    dtype: str
    peaks: list[Peak]


class GraphSignature(TypedDict):
    signature: str  # graph
    graph: ModeFigures
    eager: ModeFigures
    kl_ratio: float | None




ONSET_FACTOR = 10.0  # a signature's "out of line" side must exceed the in-bounds side this many times
MIN_POSITIONS = 8  # a bin or side with fewer positions says nothing


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def prefill_vs_decode(prefill_kl: float | None, decode_kl: float | None, bound: float,
                      prefill_positions: int = 0, decode_positions: int = 0) -> PathSignature | None:
    """Which path is out of line: 'decode' when prefill is within `bound` and decode exceeds both the
    bound and ONSET_FACTOR x prefill; 'prefill' the reverse; 'both' when both exceed it; None when
    neither does or a side is missing. Pure."""
    if not (_finite(prefill_kl) and _finite(decode_kl)) or min(prefill_positions, decode_positions) < MIN_POSITIONS:
        return None
    prefill_out, decode_out = prefill_kl > bound, decode_kl > bound
    if decode_out and not prefill_out and decode_kl >= ONSET_FACTOR * max(prefill_kl, 1e-30):
        signature = "decode"
    elif prefill_out and not decode_out and prefill_kl >= ONSET_FACTOR * max(decode_kl, 1e-30):
        signature = "prefill"
    elif prefill_out and decode_out:
        signature = "both"
    else:
        return None
    return PathSignature(signature=signature, prefill_kl=prefill_kl, decode_kl=decode_kl, bound=bound,
                         prefill_positions=prefill_positions, decode_positions=decode_positions)


def position_onset(profile: list[PositionBin], bound: float) -> OnsetSignature | None:
    """The first position bin out of line after at least one bin in bounds, with every bin from there
    on out of line and above ONSET_FACTOR x the in-bounds bins' mean. Pure."""
    bins = [b for b in profile if b.get("positions", 0) >= MIN_POSITIONS and _finite(b.get("kl_lb_mean"))]
    for i in range(1, len(bins)):
        before, after = bins[:i], bins[i:]
        if all(b["kl_lb_mean"] <= bound for b in before) and all(b["kl_lb_mean"] > bound for b in after):
            clean = sum(b["kl_lb_mean"] * b["positions"] for b in before) / sum(b["positions"] for b in before)
            worst = min(b["kl_lb_mean"] for b in after)
            if worst >= ONSET_FACTOR * max(clean, 1e-30):
                return {"signature": "positions", "from_position": after[0]["from"], "kl_before": clean,
                        "kl_after_min": worst, "bound": bound,
                        "bins": [{"from": b["from"], "to": b["to"], "kl": b["kl_lb_mean"]} for b in bins]}
    return None


def category_concentration(by_category: dict[str, CategoryStats]) -> CategorySignature | None:
    """Genuine greedy divergences in exactly one prompt category, which has at least two of them,
    while every other category (at least two others) has none. Pure."""
    hit = {c: v.get("genuine", 0) for c, v in by_category.items() if v.get("genuine", 0) > 0}
    if len(hit) != 1 or len(by_category) < 3:
        return None
    (category, count), = hit.items()
    if count < 2:
        return None
    return {"signature": "category", "category": category, "genuine": count,
            "prompts": by_category[category].get("prompts"),
            "clean_categories": sorted(c for c in by_category if c != category)}


RANGE_HEADROOM = 0.5  # a value past this share of the dtype's largest finite value is at its range


def largest_finite(dtype: str) -> float | None:
    """The largest finite value of a dtype named as the tool names them (fp16, bf16, fp32); None if unknown."""
    import torch

    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}.get(dtype)
    return float(torch.finfo(torch_dtype).max) if torch_dtype is not None else None


def dtype_range(peaks: list[Peak], dtype: str, headroom: float = RANGE_HEADROOM) -> RangeSignature | None:
    """The first tensor whose largest |value| in the gold reaches `headroom` of the dtype's largest finite
    value: {signature, tensor, max_abs, limit, share, dtype}; None when every tensor stays below. `peaks`:
    [{"name", "max_abs"}] in the order a forward reaches them. Pure."""
    limit = largest_finite(dtype)
    if not limit:
        return None
    for peak in peaks:
        value = peak.get("max_abs")
        if _finite(value) and value >= headroom * limit:
            return {"signature": "range", "tensor": peak["name"], "max_abs": value, "limit": limit,
                    "share": value / limit, "dtype": dtype,
                    "peaks": [{"name": p["name"], "max_abs": p["max_abs"]} for p in peaks]}
    return None


def range_reason(found: RangeSignature) -> str:
    """One line for a verdict's reasons: the figures and the cause. Pure."""
    return (f"likely cause: {found['dtype']}'s range: the gold's {found['tensor']} reaches {found['max_abs']:.3g}, "
            f"{found['share']:.0%} of {found['dtype']}'s largest finite value ({found['limit']:.6g}); "
            f"{CAUSES['range'][0]}")


# The final norm's output counts as in line against the gold where it is this close with no floor to judge by
# (a target expected to match exactly: fp32 against fp32), or within its floor's allowance where one was measured.
HEAD_EXACT_REL = 1e-4


HEAD_KL = 1e-8  # the logits differ at all: a stop-token or sampling fault leaves them equal and the head alone


def head_signature(layers: list[dict], located: dict | None, exact: bool, logits_kl: float | None) -> float | None:
    """The output head as the place to look: every layer in line (nothing located) and the final norm's output
    in line with the gold, while the verdict is out of line, so what differs is computed after it (the lm_head,
    or the embeddings it is tied to, a logit scale, soft-capping). The final norm's error where it fires, else
    None. Pure."""
    if located is not None or not (_finite(logits_kl) and logits_kl > HEAD_KL):
        return None
    final = next((row for row in reversed(layers) if row.get("name") == "final norm"), None)
    if final is None or not _finite(final.get("rel_l2")):
        return None
    if final.get("ratio") is not None:  # against its floor: within the allowance the layers are judged by
        try:
            allowed = allowance(final)
        except KeyError:  # a floor with no spread measured for the row: not judged here
            return None
        return final["rel_l2"] if _finite(final["ratio"]) and final["ratio"] <= allowed else None
    return final["rel_l2"] if exact and final["rel_l2"] <= HEAD_EXACT_REL else None


HEAD_REASON = "likely cause, the output head"  # how a verdict's reasons name the head (head_reason's start)


def head_reason(final_error: float) -> str:
    """One line for a verdict's reasons. Pure."""
    return (f"{HEAD_REASON}: every layer and the final norm are in line (the final norm's error "
            f"{final_error:.2g}) while the logits are not; look at the lm_head (or the embeddings it is tied to) and "
            f"any logit scale or soft-capping the config declares")


WARN_FACTOR = 3.0  # a graph mode that only WARNs must hold this many times the eager engine's KL


def mode_figures(verdict: Verdict | None, sections: dict[str, EndpointSection] | None) -> ModeFigures:
    """What a mode comparison needs from one endpoint accuracy result: its verdict and the served
    teacher-forced and decode-side top-k KL (None where not measured). Pure."""
    sections = sections or {}
    tf, greedy = sections.get("teacher_forced") or {}, sections.get("greedy") or {}
    return {"status": (verdict or {}).get("status"), "reasons": list((verdict or {}).get("reasons") or [])[:3],
            "kl": (tf.get("server") or {}).get("kl_lb_mean") if tf.get("status") == "done" else None,
            "decode_kl": ((greedy.get("decode") or {}).get("server") or {}).get("kl_lb_mean")
            if greedy.get("status") == "done" else None}


def graph_vs_eager(graph: ModeFigures | None, eager: ModeFigures | None) -> GraphSignature | None:
    """'graph' when the graph-mode engine is out of line and the eager one, judged the same way, passes:
    a graph FAIL, or a graph WARN whose teacher-forced KL is at least WARN_FACTOR x the eager one's.
    None when either side is missing, both are out of line (the fault is in both paths: the layers
    place it), or the graph mode passes. `graph`, `eager`: mode_figures() of each. Pure."""
    if not graph or not eager or eager.get("status") != Status.PASS or graph.get("status") not in OUT_OF_LINE:
        return None
    kl, eager_kl = graph.get("kl"), eager.get("kl")
    if graph["status"] == Status.WARN and not (_finite(kl) and _finite(eager_kl) and kl >= WARN_FACTOR * max(eager_kl, 1e-30)):
        return None
    figures = ("status", "reasons", "kl", "decode_kl")  # copies: the caller may file the cause beside them
    return {"signature": "graph", "graph": {k: graph.get(k) for k in figures},
            "eager": {k: eager.get(k) for k in figures},
            "kl_ratio": kl / eager_kl if _finite(kl) and _finite(eager_kl) and eager_kl > 0 else None}


def graph_cause(graph: ModeFigures | None, eager: ModeFigures | None) -> Candidate | None:
    """graph_vs_eager() as a candidate cause (with its next command), or None. Pure."""
    found = graph_vs_eager(graph, eager)
    return {"cause": CAUSES["graph"][0], "next": CAUSES["graph"][1], **found} if found else None


# signature -> (cause, the command that tells more; the report gives the cause in its language)
CAUSES = {
    "decode": ("the decode path: the decode attention kernel, the KV cache it writes and reads (a layer reading "
               "another layer's or stale KV), or a decode-only fused op; clean layers in the engine's prefill "
               "capture confirm it",
               "llm-adapt run MODEL --layers"),
    "prefill": ("the prompt log-probs path alone (decode, which attends to the same prompt KV cache, is clean): "
                "how the engine computes or returns prompt_logprobs, not a prefill kernel",
                "llm-adapt compare MODEL --endpoint URL"),
    "positions": ("positions past the onset: the rotary embedding variant or its scaling (rope_theta, "
                  "rope_scaling, partial rotary), a sliding window, or a kernel path only long sequences take; "
                  "the config's rope and window settings and prompts that span the onset tell more",
                  "llm-adapt inspect MODEL"),
    "category": ("inputs of one kind only: for multi-turn a chat template, for long context the positions or "
                 "window, for one language its tokenization; more prompts of that kind tell more",
                 "llm-adapt compare MODEL --endpoint URL --prompts FILE"),
    "range": ("values past the dtype's range: the activations overflow to inf (then NaN) or lose their large "
              "values where the gold's residual stream reaches them; run it in bf16 or fp32, whose exponent range "
              "is fp32's",
              "llm-adapt serve MODEL --dtype bfloat16"),
    "graph": ("graph mode: the compiled or captured graph (torch.compile on CPU, CUDA graphs, ACLGraph on Ascend) "
              "computes what the eager engine computes right: a fusion pass, a graph captured for other shapes or a "
              "buffer its replay does not refresh; serve eager (--enforce-eager) until it is fixed, and report it "
              "with both commands",
              "llm-adapt serve MODEL"),
    "both": ("every step or the prefill path: a layer's weights, a kernel both prefill and decode run (an attention "
             "scale, a fused norm or activation), or a prefill kernel, whose error reaches every decode step "
             "through the KV cache; the engine's prefill capture places the layer",
             "llm-adapt run MODEL --layers"),
}


def diagnose(sections: dict[str, EndpointSection], verdict: Verdict, bound: float,
             peaks: list[Peak] | None = None, dtype: str | None = None) -> Diagnosis | None:
    """Likely causes of a served model that is out of line, from its endpoint sections; None for a
    PASS (nothing to explain). `bound`: the mean top-k KL a clean server stays under here (the
    same-dtype pass threshold, or the floor's KL x the allowed ratio); `peaks` (the gold's largest
    |value| per tensor) and `dtype` (the served one): the range signature. Pure."""
    if verdict.get("status") not in OUT_OF_LINE:
        return None
    tf, greedy = sections.get("teacher_forced") or {}, sections.get("greedy") or {}
    found = []
    if peaks and dtype and (at_range := dtype_range(peaks, dtype)):
        found.append(at_range)
    if tf.get("status") == "done" and greedy.get("status") == "done":
        s, d = tf.get("server") or {}, (greedy.get("decode") or {}).get("server") or {}
        path = prefill_vs_decode(s.get("kl_lb_mean"), d.get("kl_lb_mean"), bound, s.get("positions", 0),
                                 d.get("positions", 0))
        if path:
            found.append(path)
    if tf.get("status") == "done":
        onset = position_onset(tf.get("by_position") or [], bound)
        if onset and not any(f["signature"] == "prefill" for f in found):
            found.append(onset)
    if greedy.get("status") == "done":
        cat = category_concentration(greedy.get("by_category") or {})
        if cat:
            found.append(cat)
    candidates = [{"cause": CAUSES[f["signature"]][0], "next": CAUSES[f["signature"]][1], **f} for f in found]
    if any(c["signature"] == "positions" for c in candidates):  # an onset explains "both" better
        candidates = [c for c in candidates if c["signature"] != "both"]
    return {"candidates": candidates, "unknown": not candidates,
            "rules": "accuracy/diagnosis.py: decode path, prefill path, positions past P, one category, everywhere, "
                     "the dtype's range"}
