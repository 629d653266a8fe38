"""The served view of the log-probs and its coarse-grained KL (accuracy/endpoint_metrics.py), on plain tensors."""

import math

import pytest
import torch

from llm_adapt.accuracy.endpoint_metrics import as_server_view, coarse_kl, position_stats


def test_coarse_kl_by_hand_and_a_lower_bound():
    p = torch.tensor([0.5, 0.3, 0.1, 0.1]).log()
    q = {0: math.log(0.4), 1: math.log(0.4)}  # the server's top-2; rest 0.2
    expected = 0.5 * math.log(0.5 / 0.4) + 0.3 * math.log(0.3 / 0.4) + 0.2 * math.log(0.2 / 0.2)
    assert coarse_kl(p, q) == pytest.approx(expected)
    q_full = torch.tensor([0.4, 0.4, 0.15, 0.05])
    full = float((p.exp() * (p - q_full.log())).sum())
    assert coarse_kl(p, q) <= full + 1e-12  # the log-sum inequality


def test_coarse_kl_of_identical_distributions_is_zero():
    lp = torch.log_softmax(torch.randn(50, dtype=torch.float64), -1)
    view, top1 = as_server_view(lp, actual=3, k=5)
    assert coarse_kl(lp, view) == pytest.approx(0.0, abs=1e-12)
    stats = position_stats(lp, 3, view, top1, 5)
    assert stats["same_top1"] == 1 and stats["topk_agree"] == 1.0 and stats["dlogprob"] == pytest.approx(0.0)
