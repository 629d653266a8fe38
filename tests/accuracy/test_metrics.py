"""Every metric on hand-computed cases."""

import math

import numpy as np
import pytest
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.verdict import msprobe_rule


# Whole-tensor definitions: the streaming accumulators and position statistics must equal them.

def rel_l2(ref: torch.Tensor, tgt: torch.Tensor) -> float:
    """||tgt - ref|| / ||ref|| over all elements."""
    r, t = m._f64(ref), m._f64(tgt)
    return float(torch.linalg.vector_norm(t - r) / torch.linalg.vector_norm(r).clamp_min(m.EPS))


def token_cosines(ref: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Cosine similarity per token: inputs [..., D] -> [N]."""
    r, t = m._f64(ref).reshape(-1, ref.shape[-1]), m._f64(tgt).reshape(-1, tgt.shape[-1])
    return torch.nn.functional.cosine_similarity(r, t, dim=-1, eps=m.EPS)


def thousandth_ratio(ref: torch.Tensor, tgt: torch.Tensor, tol: float = 1e-3) -> float:
    """msprobe's 'one thousandth error ratio': share of elements whose relative error is within 0.1%."""
    r, t = m._f64(ref), m._f64(tgt)
    rel = (t - r).abs() / r.abs().clamp_min(m.EPS)
    return float((rel <= tol).to(torch.float64).mean())


def sqnr_db(ref: torch.Tensor, tgt: torch.Tensor) -> float:
    """Signal-to-quantization-noise ratio in dB; inf when identical."""
    r, t = m._f64(ref), m._f64(tgt)
    noise = float(((t - r) ** 2).sum())
    return math.inf if noise == 0 else 10 * math.log10(float((r**2).sum()) / noise)


def kl_per_token(ref_logits: torch.Tensor, tgt_logits: torch.Tensor) -> np.ndarray:
    """KL(ref || target) per position over the full vocabulary: [T, V] x [T, V] -> [T]."""
    return m.kl_from_logprobs(m.log_softmax64(ref_logits), m.log_softmax64(tgt_logits))


def delta_p(ref_logits: torch.Tensor, tgt_logits: torch.Tensor, next_ids: torch.Tensor) -> np.ndarray:
    """p_target(true next token) - p_ref(true next token), per position (llama.cpp's Δp)."""
    return m.delta_p_from_logprobs(m.log_softmax64(ref_logits), m.log_softmax64(tgt_logits), next_ids)


def test_rel_l2_cosine_max_abs():
    ref = torch.tensor([[3.0, 4.0]])
    tgt = torch.tensor([[3.0, 5.0]])
    assert rel_l2(ref, tgt) == pytest.approx(1 / 5)
    assert float(token_cosines(ref, tgt)[0]) == pytest.approx(29 / (5 * math.sqrt(34)))
    assert sqnr_db(ref, tgt) == pytest.approx(10 * math.log10(25 / 1))
    assert sqnr_db(ref, ref) == math.inf


def test_thousandth_ratio():
    ref = torch.tensor([1.0, 1.0, 1.0, 1.0])
    tgt = torch.tensor([1.0, 1.0005, 1.002, 0.99])
    assert thousandth_ratio(ref, tgt) == pytest.approx(0.5)


def test_msprobe_rule():
    assert msprobe_rule(0.999, 0.5, False) == "pass"
    assert msprobe_rule(0.98, 0.01, False) == "fail"  # cos < 0.99 with max abs > 1e-3
    assert msprobe_rule(0.98, 0.0005, False) == "pass"
    assert msprobe_rule(0.85, 0.0, False) == "fail"
    assert msprobe_rule(0.9999, 1.5, False) == "fail"
    assert msprobe_rule(1.0, 0.0, True) == "fail"


def test_kl_is_zero_for_same_and_matches_formula():
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    assert kl_per_token(logits, logits)[0] == pytest.approx(0.0, abs=1e-12)
    p = torch.softmax(logits.double(), -1)[0]
    q_logits = torch.tensor([[3.0, 2.0, 1.0]])
    q = torch.softmax(q_logits.double(), -1)[0]
    assert kl_per_token(logits, q_logits)[0] == pytest.approx(float((p * (p / q).log()).sum()))


def test_rate_with_error_and_mean_sem():
    rate, err = m.rate_with_error(90, 100)
    assert rate == 0.9 and err == pytest.approx(math.sqrt(0.9 * 0.1 / 99))
    mean, sem = m.mean_sem(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0 and sem == pytest.approx(1 / math.sqrt(3))


def test_percentiles_and_topk_and_delta_p():
    pct = m.percentiles(np.arange(1, 101, dtype=float))
    assert pct["max"] == 100 and pct["p50"] == pytest.approx(50.5)
    ref = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])
    tgt = torch.tensor([[0.0, 4.0, 3.0, 2.0, 1.0, 5.0]])
    assert m.topk_overlap(ref, tgt, k=2)[0] == pytest.approx(0.5)
    dp = delta_p(ref, ref, torch.tensor([0]))
    assert dp[0] == pytest.approx(0.0)


def test_nll_and_ppl_ratio():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    assert m.nll(logits, torch.tensor([0]))[0] == pytest.approx(math.log(2))
    assert m.ln_ppl_ratio(np.array([1.0, 1.0]), np.array([1.5, 1.5])) == pytest.approx(0.5)


def test_linear_fit():
    fit = m.linear_fit([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])
    assert fit["slope"] == pytest.approx(2.0) and fit["intercept"] == pytest.approx(1.0) and fit["r2"] == pytest.approx(1.0)


def test_first_divergence():
    assert m.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert m.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert m.first_divergence([1, 2], [1, 2, 3]) == 2


def test_tie_classification_on_constructed_logits():
    # The SmolLM2 case from the design notes: "The" -1.883 vs "L" -1.965 -> margin 0.082 nats.
    logits = torch.full((10,), -30.0)
    logits[3], logits[7] = -1.883, -1.965
    margin = m.top2_margin(logits)
    assert margin == pytest.approx(0.082, abs=1e-6)
    assert m.classify_divergence(margin, 0.3) == "near-tie"
    logits[7] = -3.0
    assert m.classify_divergence(m.top2_margin(logits), 0.3) == "genuine"


def test_mutual_topk():
    ref = torch.tensor([5.0, 4.9, 0.0, -1.0])
    tgt = torch.tensor([4.9, 5.0, 0.0, -1.0])
    assert m.mutual_topk(ref, tgt, 0, 1, k=2)
    assert not m.mutual_topk(ref, tgt, 0, 3, k=2)


def test_accumulator_matches_direct_metrics():
    torch.manual_seed(0)
    a, b = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    acc = m.TensorAccumulator()
    acc.add(a[:1], b[:1])
    acc.add(a[1:], b[1:])
    s = acc.summary()
    assert s["rel_l2"] == pytest.approx(rel_l2(a, b))
    assert s["max_abs"] == pytest.approx(float((b - a).abs().max()))
    assert s["cos_min"] == pytest.approx(float(token_cosines(a, b).min()))
    assert s["max_rel"] == pytest.approx(float(((b - a).abs() / a.abs()).max()))
    assert not s["nan_mismatch"]
    acc.add(a[:1], torch.full_like(a[:1], float("nan")))
    assert acc.summary()["nan_mismatch"]


def test_position_blocks_cut_long_prompts_and_keep_short_ones_whole():
    short = [(1.0, 2.0)] * 50
    long = [(float(i), 1.0) for i in range(2500)]
    t, f = m.position_blocks([short, [], long], size=128)
    assert len(t) == 1 + 20  # 50 positions: one unit; 2,500: round(19.5) = 20 runs of 125; empty: none
    assert t[0] == 50.0 and f[0] == 100.0
    assert t.sum() == 50.0 + sum(range(2500)) and f.sum() == 100.0 + 2500.0
    assert t[1] == sum(range(125)) and t[-1] == sum(range(2375, 2500))  # consecutive positions stay together
    assert m.position_blocks([[(1.0, 1.0)] * 300], size=128)[0].tolist() == [150.0, 150.0]


def test_position_stats_in_blocks_equal_the_whole_array_functions():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(37, 101, generator=g) * 4
    tgt = ref + 0.05 * torch.randn(37, 101, generator=g)
    tgt[5] = ref[5]  # one identical position: KL 0, cosine 1
    nxt = torch.randint(0, 101, (36,), generator=g)
    for rows in (1, 4, 16, 64):
        stats, kept = m.position_stats(ref, tgt, nxt, 5, keep_logprobs=True, rows=rows)
        np.testing.assert_allclose(stats["kl"], kl_per_token(ref, tgt), rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(stats["cos"], token_cosines(ref, tgt).numpy(), rtol=1e-12)
        np.testing.assert_allclose(stats["dp"], delta_p(ref[:-1], tgt[:-1], nxt), rtol=1e-10, atol=1e-15)
        assert stats["max_abs"][0] == float((tgt - ref).abs().max())
        assert (stats["same_top1"] == (ref.argmax(-1) == tgt.argmax(-1)).numpy()).all()
        np.testing.assert_array_equal(stats["topk"], m.topk_overlap(ref, tgt, 5))
        assert torch.equal(kept, m.log_softmax64(tgt))
        assert stats["kl"][5] == 0.0 and abs(stats["cos"][5] - 1) < 1e-12
        np.testing.assert_allclose(stats["ref_margin"], [m.top2_margin(r) for r in ref], rtol=1e-9, atol=1e-12)
        kl, none = m.kl_rows(ref, tgt, rows=rows)
        assert none is None and np.array_equal(kl, stats["kl"])
    assert m.position_stats(ref[:1], tgt[:1], nxt[:0], 5)[0]["dp"].shape == (0,)


def test_an_infinite_error_is_an_infinite_sqnr_not_a_crash():
    acc = m.TensorAccumulator()
    ref = torch.tensor([[1.0e4, 2.0, 3.0]])
    acc.add(ref, torch.tensor([[float("inf"), 2.0, 3.0]]))  # the target overflowed where the reference is finite
    s = acc.summary()
    assert s["sqnr_db"] == -math.inf and s["nan_mismatch"] and s["max_abs"] == math.inf
    assert m.sqnr_from_sums(4.0, 0.0) == math.inf and m.sqnr_from_sums(4.0, 4.0) == 0.0
    assert math.isnan(m.sqnr_from_sums(float("nan"), 1.0))


def test_the_logits_summary_gives_same_top1_outside_the_golds_tie_margin():
    """measure._logits_summary: the rate over all positions and over those where the gold's own top two
    are more than the tie margin apart (a flip inside it is rounding), as endpoint_metrics.summarize does."""
    from llm_adapt.accuracy.measure import _logits_summary

    same = [np.array([1, 0, 0, 1]), np.array([1, 1, 0])]
    margin = [np.array([2.0, 0.1, 0.29, 0.31]), np.array([5.0, np.inf, 1.0])]  # inf: a one-word vocabulary
    stats = {"kl": [np.zeros(4), np.zeros(3)], "same_top1": same, "ref_margin": margin, "dp": [np.zeros(3), np.zeros(2)],
             "topk": [np.ones(4), np.ones(3)], "max_abs": [np.zeros(1)], "cos": [np.ones(4), np.ones(3)]}
    lg = _logits_summary(stats, 0.3)
    assert lg["same_top1"] == pytest.approx(4 / 7) and lg["positions"] == 7
    assert lg["decisive_positions"] == 5 and lg["same_top1_decisive"] == pytest.approx(4 / 5)
    assert lg["same_top1_decisive_err"] == pytest.approx(m.rate_with_error(4, 5)[1]) and lg["tie_margin"] == 0.3
