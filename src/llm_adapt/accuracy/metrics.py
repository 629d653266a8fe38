"""Accuracy metrics. Pure functions of tensors (torch, computed in float64) and plain numbers.

Anchors: msprobe (cosine, max abs error, thousandth-error ratio, its verdict rule and its
benchmark ratio), llama.cpp's `perplexity --kl-divergence` (per-token KL, same-top
rate with its standard error, delta-p, ln PPL ratio), vLLM's tests (mutual top-k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from llm_adapt.accuracy.result import Sharpness

EPS = 1e-12


def _f64(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.float64)


def sqnr_from_sums(ref_sq: float, diff_sq: float) -> float:
    """SQNR in dB from the summed squares: inf when identical, -inf for an infinite error (a target that
    overflowed where the reference is finite), NaN where either sum is NaN."""
    if diff_sq == 0:
        return math.inf
    if math.isnan(diff_sq) or math.isnan(ref_sq):
        return math.nan
    return -math.inf if math.isinf(diff_sq) else 10 * math.log10(max(ref_sq, EPS) / diff_sq)


def cosines(dot: torch.Tensor, ref_sq: torch.Tensor, tgt_sq: torch.Tensor) -> torch.Tensor:
    """Cosine per row from its dot product and both squared norms (float64), defined at the edges: two zero
    vectors are the same vector (1), a zero vector against a non-zero one is as far from it as can be
    without pointing away (0). A padding row that a checkpoint leaves at zero (transformers zeroes the
    embedding of `pad_token_id`, and a chat prompt holds it) is identical in both runs. Pure."""
    both_zero = (ref_sq == 0) & (tgt_sq == 0)
    return torch.where(both_zero, torch.ones_like(dot), dot / (ref_sq * tgt_sq).sqrt().clamp_min(EPS))


def cosine_of_sums(dot: float, ref_sq: float, tgt_sq: float) -> float:
    """`cosines` of one whole tensor from its sums. Pure."""
    if ref_sq == 0 and tgt_sq == 0:
        return 1.0
    return dot / max(math.sqrt(ref_sq * tgt_sq), EPS)


def nonfinite(x: torch.Tensor) -> bool:
    return bool((~torch.isfinite(x)).any())


# A zero reference element's relative error: |diff| / float32's eps, as msprobe divides it
# (get_relative_err: eps of the float32 it computes in, added to both sides where the bench is 0).
ZERO_REFERENCE = float(np.finfo(np.float32).eps)
SHARE_TOLERANCES = (1e-2, 1e-3, 1e-4)  # msprobe's "two hundredths / thousandths / ten-thousandths"


@dataclass
class TensorAccumulator:
    """Aggregates one tensor's comparison over many prompts without keeping the tensors."""

    diff_sq: float = 0.0
    ref_sq: float = 0.0
    max_abs: float = 0.0
    max_rel: float = 0.0  # msprobe's MaxRelativeErr
    within: float = 0.0
    elements: int = 0
    cosines: list[np.ndarray] = field(default_factory=list)
    ref_nonfinite: bool = False
    tgt_nonfinite: bool = False
    dot: float = 0.0  # sum(ref * tgt): the whole-tensor cosine msprobe computes
    tgt_sq: float = 0.0
    over: dict[float, float] = field(default_factory=lambda: {tol: 0.0 for tol in SHARE_TOLERANCES})
    diff_sq_by_prompt: list[float] = field(default_factory=list)  # for bootstrap spreads
    diff_sq_by_position: list[np.ndarray] = field(default_factory=list)  # per prompt, per position
    diff_4th_by_position: list[np.ndarray] = field(default_factory=list)  # for the effective element count

    def add(self, ref: torch.Tensor, tgt: torch.Tensor) -> None:
        r, t = _f64(ref), _f64(tgt)
        width = r.shape[-1]
        # per position: sums of squares and products give the cosines, the tensor sums and (a square of a
        # float32 is finite in float64, so a sum is non-finite exactly when an element is) the NaN/Inf check
        rr, tt = (r * r).reshape(-1, width).sum(-1), (t * t).reshape(-1, width).sum(-1)
        rt = (r * t).reshape(-1, width).sum(-1)
        ref_sq, tgt_sq = float(rr.sum()), float(tt.sum())
        self.ref_nonfinite |= not math.isfinite(ref_sq)
        self.tgt_nonfinite |= not math.isfinite(tgt_sq)
        diff = t - r
        squares = (diff * diff).reshape(-1, width)
        by_position = squares.sum(-1)
        self.diff_4th_by_position.append((squares * squares).sum(-1).numpy())
        diff_sq = float(by_position.sum())
        self.diff_sq += diff_sq
        self.diff_sq_by_prompt.append(diff_sq)
        self.diff_sq_by_position.append(by_position.numpy())
        self.ref_sq += ref_sq
        self.tgt_sq += tgt_sq
        self.dot += float(rt.sum())
        abs_diff = diff.abs()
        self.max_abs = max(self.max_abs, float(abs_diff.max()))
        rel = abs_diff.div_(torch.where(r == 0, ZERO_REFERENCE, r.abs()))
        self.max_rel = max(self.max_rel, float(rel.max()))
        self.within += float((rel <= 1e-3).sum())
        for tol in self.over:
            self.over[tol] += float((rel > tol).sum())
        self.elements += r.numel()
        self.cosines.append(cosines(rt, rr, tt).numpy())

    def summary(self) -> dict[str, float | bool]:
        cos = np.concatenate(self.cosines) if self.cosines else np.array([np.nan])
        rel = math.sqrt(self.diff_sq) / max(math.sqrt(self.ref_sq), EPS)
        return {
            "rel_l2": rel, "cos_mean": float(np.mean(cos)), "cos_min": float(np.min(cos)),
            "max_abs": self.max_abs, "max_rel": self.max_rel, "thousandth_ratio": self.within / max(self.elements, 1),
            "sqnr_db": sqnr_from_sums(self.ref_sq, self.diff_sq),
            "nan_mismatch": self.ref_nonfinite != self.tgt_nonfinite or self.tgt_nonfinite,
            "cos_tensor": cosine_of_sums(self.dot, self.ref_sq, self.tgt_sq),
            "share_over": {f"{tol:g}": v / max(self.elements, 1) for tol, v in self.over.items()},
        }


def linear_fit(xs: list[float], ys: list[float]) -> dict[str, float]:
    """Least-squares line y = slope x + intercept with R²: how error grows with depth."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 2:
        return {"slope": float("nan"), "intercept": float("nan"), "r2": float("nan")}
    slope, intercept = np.polyfit(x, y, 1)
    residual = float(((y - (slope * x + intercept)) ** 2).sum())
    total = float(((y - y.mean()) ** 2).sum())
    return {"slope": float(slope), "intercept": float(intercept), "r2": 1 - residual / total if total > 0 else 1.0}


# ---- logits -------------------------------------------------------------------------------

def log_softmax64(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(_f64(logits), dim=-1)


def kl_from_logprobs(lp: torch.Tensor, lq: torch.Tensor) -> np.ndarray:
    """kl_per_token on log-probabilities already computed (float64)."""
    return _kl_rows(lp, lq)


# Rows of [T, V] logits handled at once by position_stats: a float64 block of 16 x 49,152 is 6 MB, so
# each block's log-softmax, KL and cosine stay in cache instead of streaming 1.4 GB arrays through
# memory once per statistic (the default suite's 3,629 positions took 30 s a target that way; 6 s so).
STATS_ROWS = 16


def _blocks(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, rows: int):
    """(start, stop, ref, tgt, ref log-probs, tgt log-probs) for each block of rows, in float64."""
    for start in range(0, ref_logits.shape[0], rows):
        stop = min(start + rows, ref_logits.shape[0])
        r, t = _f64(ref_logits[start:stop]), _f64(tgt_logits[start:stop])
        yield start, stop, r, t, torch.log_softmax(r, dim=-1), torch.log_softmax(t, dim=-1)


def _kl_rows(lp: torch.Tensor, lq: torch.Tensor) -> np.ndarray:
    return (lp.exp() * (lp - lq)).sum(-1).clamp_min(0).numpy()


def kl_rows(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, keep_logprobs: bool = False,
            rows: int = STATS_ROWS) -> tuple[np.ndarray, torch.Tensor | None]:
    """kl_per_token a block of rows at a time, with the target's float64 log-probs when `keep_logprobs`."""
    kl = np.empty(ref_logits.shape[0])
    kept = torch.empty(tgt_logits.shape, dtype=torch.float64) if keep_logprobs else None
    for start, stop, _, _, lp, lq in _blocks(ref_logits, tgt_logits, rows):
        kl[start:stop] = _kl_rows(lp, lq)
        if kept is not None:
            kept[start:stop] = lq
    return kl, kept


def position_stats(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, next_ids: torch.Tensor, k: int,
                   keep_logprobs: bool = False, rows: int = STATS_ROWS) -> tuple[dict[str, np.ndarray], torch.Tensor | None]:
    """Every per-position statistic of a target's logits against the reference's, [T, V] each: KL(ref||tgt),
    same top-1, top-k overlap, Δp of the true next token (`next_ids`, T - 1 of them), max |diff| and cosine,
    as kl_per_token, topk_overlap, delta_p and token_cosines compute them, a block of rows at a time; and the
    reference's own top-1 minus top-2 log-prob (`ref_margin`, as top2_margin computes it: a top-1 flip inside
    the tie margin is a near-tie). Returns them with the target's float64 log-probs when `keep_logprobs`."""
    n = ref_logits.shape[0]
    kept = torch.empty(tgt_logits.shape, dtype=torch.float64) if keep_logprobs else None
    kl, cos, dp, margin = np.empty(n), np.empty(n), np.empty(max(n - 1, 0)), np.full(n, math.inf)
    max_abs = 0.0
    for start, stop, r, t, lp, lq in _blocks(ref_logits, tgt_logits, rows):
        kl[start:stop] = _kl_rows(lp, lq)
        if r.shape[-1] > 1:  # one word in the vocabulary: no second to tie with
            top = r.topk(2, dim=-1).values
            margin[start:stop] = (top[:, 0] - top[:, 1]).numpy()
        cos[start:stop] = cosines((r * t).sum(-1), (r * r).sum(-1), (t * t).sum(-1)).numpy()
        inner = min(stop, n - 1)  # Δp needs the next token: none after the last position
        if inner > start:
            idx = next_ids[start:inner].unsqueeze(-1)
            dp[start:inner] = (lq[: inner - start].gather(-1, idx).exp()
                               - lp[: inner - start].gather(-1, idx).exp()).squeeze(-1).numpy()
        max_abs = max(max_abs, float((tgt_logits[start:stop] - ref_logits[start:stop]).abs().max()))
        if kept is not None:
            kept[start:stop] = lq
    stats = {"kl": kl, "same_top1": (ref_logits.argmax(-1) == tgt_logits.argmax(-1)).numpy(),
             "topk": topk_overlap(ref_logits, tgt_logits, k), "dp": dp, "max_abs": np.array([max_abs]), "cos": cos,
             "ref_margin": margin}
    return stats, kept


def logit_sharpness(logits: list[torch.Tensor], tie_margin: float, rows: int = STATS_ROWS) -> Sharpness:
    """How decisive the gold's own next-token distributions are, over every position of `logits` ([T, V]
    each): how many positions have their top-1 more than `tie_margin` nats above their top-2 (where a flip
    is not a near-tie), and the mean entropy as a share of the uniform distribution's, ln V (1.0: flat).
    Defined at the edges: no position gives 0 positions and an entropy share of NaN (nothing measured);
    a vocabulary of one word has no second to tie with and no entropy (share 0). Pure."""
    positions = decisive = 0
    entropy = 0.0
    for block in logits:
        for start in range(0, block.shape[0], rows):
            lp = log_softmax64(block[start:start + rows])
            positions += lp.shape[0]
            if lp.shape[-1] < 2:
                decisive += lp.shape[0]
                continue
            top = lp.topk(2, dim=-1).values
            decisive += int(((top[:, 0] - top[:, 1]) > tie_margin).sum())
            entropy += float(-(lp.exp() * lp).nan_to_num(0.0).sum(-1).sum()) / math.log(lp.shape[-1])
    return {"positions": positions, "decisive_positions": decisive, "tie_margin": tie_margin,
            "entropy_ratio": entropy / positions if positions else math.nan}


def mean_sem(values: np.ndarray) -> tuple[float, float]:
    """Mean and its standard error."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return float("nan"), float("nan")
    sem = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
    return float(np.mean(values)), sem


def rate_with_error(hits: int, n: int) -> tuple[float, float]:
    """A proportion and llama.cpp's uncertainty sqrt(p(1-p)/(n-1))."""
    if n == 0:
        return float("nan"), float("nan")
    p = hits / n
    return p, math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else float("nan")


PERCENTILES = {"p50": 50, "p95": 95, "p99": 99, "p99_9": 99.9, "max": 100}


def percentiles(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return {k: float("nan") for k in PERCENTILES}
    return {name: float(np.percentile(values, q)) for name, q in PERCENTILES.items()}


def topk_overlap(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, k: int = 5) -> np.ndarray:
    """Share of the reference's top-k ids also in the target's top-k, per position."""
    r = ref_logits.topk(k, dim=-1).indices
    t = tgt_logits.topk(k, dim=-1).indices
    return (r.unsqueeze(-1) == t.unsqueeze(-2)).any(-1).to(torch.float64).mean(-1).numpy()


def delta_p_from_logprobs(lp: torch.Tensor, lq: torch.Tensor, next_ids: torch.Tensor) -> np.ndarray:
    """delta_p on log-probabilities already computed."""
    idx = next_ids.unsqueeze(-1)
    return (lq.gather(-1, idx).exp() - lp.gather(-1, idx).exp()).squeeze(-1).numpy()


def nll(logits: torch.Tensor, next_ids: torch.Tensor) -> np.ndarray:
    """Negative log-likelihood of each next token: [T, V], [T] -> [T]."""
    return (-log_softmax64(logits).gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)).numpy()


def ln_ppl_ratio(nll_ref: np.ndarray, nll_tgt: np.ndarray) -> float:
    """ln(PPL_target / PPL_ref) = mean NLL_target - mean NLL_ref."""
    return float(np.mean(nll_tgt) - np.mean(nll_ref))


# ---- greedy divergence -----------------------------------------------------------------------

def first_divergence(ref_ids: list[int], tgt_ids: list[int]) -> int | None:
    """Index of the first differing generated token; None when one is a prefix of the other and lengths match."""
    for i, (a, b) in enumerate(zip(ref_ids, tgt_ids)):
        if a != b:
            return i
    return None if len(ref_ids) == len(tgt_ids) else min(len(ref_ids), len(tgt_ids))


def top2_margin(logits: torch.Tensor) -> float:
    """Reference log-prob of its top-1 minus its top-2 at one position (nats)."""
    top = log_softmax64(logits).topk(2).values
    return float(top[0] - top[1])


def classify_divergence(margin: float, tie_margin: float) -> str:
    """lighteval's idea: a flip inside the logit tie margin is not a failure."""
    return "near-tie" if margin <= tie_margin else "genuine"


def mutual_topk(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, ref_token: int, tgt_token: int, k: int = 5) -> bool:
    """vLLM's check_logprobs_close: each side's token is in the other's top-k."""
    return bool(tgt_token in ref_logits.topk(k).indices.tolist() and ref_token in tgt_logits.topk(k).indices.tolist())


def ln_ppl_ratio_sem(nll_ref: np.ndarray, nll_tgt: np.ndarray) -> float:
    """Standard error of ln PPL ratio: the paired per-token NLL differences' standard error."""
    diff = np.asarray(nll_tgt, dtype=float) - np.asarray(nll_ref, dtype=float)
    return float(np.std(diff, ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else float("nan")


def bootstrap_ratio_sd(target: np.ndarray, floor: np.ndarray, weights: np.ndarray | None = None,
                       rounds: int = 400, seed: int = 0) -> float:
    """Standard deviation of sum(target)/sum(floor) when the prompts are resampled with replacement.

    target, floor: one value per prompt (e.g. summed KL, summed squared error); weights unused
    unless given (then the ratio of weighted sums). NaN when it cannot be estimated."""
    t, f = np.asarray(target, dtype=float), np.asarray(floor, dtype=float)
    if len(t) < 2 or len(t) != len(f) or not (np.all(np.isfinite(t)) and np.all(np.isfinite(f))):
        return float("nan")
    if weights is not None:
        t, f = t * weights, f * weights
    idx = np.random.default_rng(seed).integers(0, len(t), size=(rounds, len(t)))
    ft = f[idx].sum(1)
    ok = ft > 0
    if ok.sum() < rounds // 2:
        return float("nan")
    return float(np.std(t[idx].sum(1)[ok] / ft[ok], ddof=1))


# A resampling unit of the served KL spread: about this many consecutive positions of one prompt. With
# whole prompts as units, one 2,500-token prompt among 16 (2,500 of 3,629 positions) made the prompt
# bootstrap's relative spread 0.52 and the allowed ratio 2.6x the floor: a fault that doubled the KL passed.
BLOCK_POSITIONS = 128


def position_blocks(per_prompt: list[list[tuple[float, float]]],
                    size: int = BLOCK_POSITIONS) -> tuple[np.ndarray, np.ndarray]:
    """(target, floor) sums per block: each prompt's positions cut into round(n / size) runs of near-equal
    length (at least one), so that no unit holds much more of the suite than another while positions
    next to each other, whose errors move together, stay in one unit. Pure."""
    t_blocks: list[float] = []
    f_blocks: list[float] = []
    for pairs in per_prompt:
        if not pairs:
            continue
        values = np.asarray(pairs, dtype=float).reshape(-1, 2)
        for block in np.array_split(values, max(1, round(len(values) / size))):
            t_blocks.append(float(block[:, 0].sum()))
            f_blocks.append(float(block[:, 1].sum()))
    return np.array(t_blocks), np.array(f_blocks)


def combined_spread(*relative_sds: float) -> float:
    """Independent relative spreads added in quadrature (NaN parts ignored)."""
    parts = [s for s in relative_sds if s is not None and math.isfinite(s)]
    return math.sqrt(sum(s * s for s in parts)) if parts else 0.0


def ratio_or_none(target: float | None, floor: float | None, tiny: float = 1e-9) -> float | None:
    """target / floor; 0.0 when both are (numerically) zero; inf when only the floor is; None when
    either is missing or not finite (a ratio that cannot be computed)."""
    if target is None or floor is None or not (math.isfinite(target) and math.isfinite(floor)):
        return None
    if floor <= tiny:
        return 0.0 if target <= tiny else math.inf
    return target / floor


def ratio_spread_from_squares(target: list[float] | None, floor: list[float] | None) -> float:
    """Relative spread of a rel-L2 ratio from the prompts' squared errors (half that of the squares')."""
    if not target or not floor:
        return float("nan")
    ratio_sq = ratio_or_none(sum(target), sum(floor))
    sd = bootstrap_ratio_sd(np.array(target), np.array(floor))
    return 0.5 * sd / ratio_sq if ratio_sq and np.isfinite(ratio_sq) else float("nan")
