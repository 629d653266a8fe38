"""Metrics for a server seen only through its top-k log-probs. Pure.

A server returns, per position, the log-prob of the actual token and of its own top-k. Full-vocab
KL is then out of reach; coarse-graining both distributions to {the tokens both sides know, the
rest} gives a KL that is a lower bound on the full one (log-sum inequality), and that is what we
report, with the same coarse-graining applied to the in-process noise floor so the two compare.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from typing_extensions import TypedDict

from llm_adapt.accuracy.result import TopkView

# One bin of position_profile: positions [from, to) (to None: open), how many, and their mean top-k
# KL and same-top-1 rate. The functional form, as "from" is a keyword.
PositionBin = TypedDict("PositionBin", {"from": int, "to": int | None, "positions": int, "kl_lb_mean": float,
                                        "same_top1": float})


def coarse_kl(ref_lp: torch.Tensor, known: dict[int, float]) -> float:
    """KL(ref || server) on the partition {each known token} + {everything else}: a lower bound."""
    ids = list(known)
    p = ref_lp[ids].double().exp()
    q = torch.tensor([known[i] for i in ids], dtype=torch.float64).exp()
    kl = float((p * (p.log() - q.log())).sum())
    p_rest, q_rest = max(1 - float(p.sum()), 0.0), max(1 - float(q.sum()), 0.0)
    if p_rest > 1e-12:
        kl += p_rest * (math.log(p_rest) - math.log(max(q_rest, 1e-12)))
    return max(kl, 0.0)


def topk_of(lp: torch.Tensor, k: int) -> dict[int, float]:
    values, ids = lp.topk(k)
    return {int(i): float(v) for i, v in zip(ids, values)}


def position_stats(ref_lp: torch.Tensor, actual: int, server: dict[int, float], server_top1: int, k: int) -> dict:
    """One position: ref log-probs [V] vs the server's {id: logprob} (its top-k plus the actual token)."""
    ref_top = topk_of(ref_lp, max(k, 2))
    best = sorted(ref_top.values(), reverse=True)
    ref_top = dict(sorted(ref_top.items(), key=lambda kv: -kv[1])[:k])
    server_top = sorted(server, key=server.get, reverse=True)[:k]
    return {
        "kl_lb": coarse_kl(ref_lp, server),
        "ref_margin": best[0] - best[1],  # the gold's top-1 minus top-2: a flip inside a small margin is a near-tie
        "same_top1": int(server_top1 == int(ref_lp.argmax())),
        "topk_agree": len(set(ref_top) & set(server_top)) / k,
        "dlogprob": server.get(actual, float("nan")) - float(ref_lp[actual]),
    }


def as_server_view(lp: torch.Tensor, actual: int, k: int) -> tuple[dict[int, float], int]:
    """What a server with these log-probs would return: its top-k plus the actual token."""
    known = topk_of(lp, k)
    known.setdefault(actual, float(lp[actual]))
    return known, int(lp.argmax())


TIE_MARGIN = 0.3  # nats: the same margin greedy divergences are classified by (lighteval's 0.25-0.3 bf16 steps)


def summarize(rows: list[dict], tie_margin: float = TIE_MARGIN) -> TopkView:
    """Position rows summed up. Same top-1 is also given on the positions outside the gold's tie margin
    (`same_top1_decisive`): on a near-flat distribution a top-1 flip inside it is rounding, not a fault."""
    from llm_adapt.accuracy.metrics import mean_sem, percentiles, rate_with_error

    if not rows:
        return {"positions": 0}
    decisive = [r["same_top1"] for r in rows if r.get("ref_margin", math.inf) > tie_margin]
    d_rate, d_err = rate_with_error(int(sum(decisive)), len(decisive))
    kl = np.array([r["kl_lb"] for r in rows])
    same = np.array([r["same_top1"] for r in rows])
    dlp = np.array([r["dlogprob"] for r in rows])
    kl_mean, kl_sem = mean_sem(kl)
    rate, err = rate_with_error(int(same.sum()), len(same))
    return {"positions": len(rows), "kl_lb_mean": kl_mean, "kl_lb_sem": kl_sem,
            **{f"kl_lb_{k}": v for k, v in percentiles(kl).items()}, "same_top1": rate, "same_top1_err": err,
            "decisive_positions": len(decisive), "same_top1_decisive": d_rate, "same_top1_decisive_err": d_err,
            "tie_margin": tie_margin,
            "topk_agree": float(np.mean([r["topk_agree"] for r in rows])),
            "dlogprob_mean": float(np.nanmean(dlp)), "dlogprob_abs_mean": float(np.nanmean(np.abs(dlp)))}


# Position bins of the teacher-forced profile: fine at the start (the chat template's first tokens),
# doubling after, so that an error that starts past some position shows where.
POSITION_EDGES = (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)


def position_profile(rows: list[dict]) -> list[PositionBin]:
    """Mean top-k KL and same-top-1 rate per position bin, from rows that carry their `position`. Pure."""
    import bisect

    bins: dict[int, list[dict]] = {}
    for row in rows:
        if "position" in row:
            bins.setdefault(bisect.bisect_right(POSITION_EDGES, row["position"]) - 1, []).append(row)
    out = []
    for b in sorted(bins):
        members = bins[b]
        hi = POSITION_EDGES[b + 1] if b + 1 < len(POSITION_EDGES) else None
        out.append({"from": POSITION_EDGES[b], "to": hi, "positions": len(members),
                    "kl_lb_mean": float(np.mean([r["kl_lb"] for r in members])),
                    "same_top1": float(np.mean([r["same_top1"] for r in members]))})
    return out
