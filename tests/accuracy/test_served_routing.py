"""A served MoE router's choice against the gold's (accuracy/routing.served_routing, routing_verdict), on plain
tensors: a clean router, a near-tie flip, a top-k cut to one, and a dropped renormalization."""

import torch

from llm_adapt.accuracy.routing import GateRecord, gold_weights, routing_verdict, served_routing

BF16 = 2.0 ** -8


def gold(logits, k=2):
    logits = torch.tensor(logits)
    return GateRecord(logits=logits, chosen=logits.topk(k, -1).indices, input_norm=torch.ones(logits.shape[0]),
                      weight_norm=torch.ones(logits.shape[-1]))


GOLD = gold([[3.0, 1.0, 0.0, -2.0], [0.0, 2.5, 2.0, -1.0], [1.0, -1.0, 2.0, 0.5]])


def test_the_gold_routing_itself_is_clean():
    weights = gold_weights(GOLD, renormalize=True).float()
    found = served_routing(GOLD, GOLD.chosen, weights, True, BF16)
    assert found["flipped"] == 0 and found["weight_error_max"] < 1e-6
    assert routing_verdict([found])["verdict"] == "clean"


def test_a_top1_cut_flips_every_token_never_as_a_near_tie():
    weights = gold_weights(GOLD, renormalize=True).float()
    cut = torch.zeros_like(weights)
    cut[:, 0] = 1.0  # topk's first is the heaviest: top-1, renormalized
    found = served_routing(GOLD, GOLD.chosen, cut, True, BF16)
    assert (found["flipped"], found["near_tie"], found["genuine"]) == (3, 0, 3)
    assert routing_verdict([found])["verdict"] == "wrong"


def test_dropped_renormalization_keeps_the_experts_and_moves_the_weights():
    raw = gold_weights(GOLD, renormalize=False).float()
    found = served_routing(GOLD, GOLD.chosen, raw, True, BF16)
    assert found["flipped"] == 0 and found["weight_error_max"] > 0.1
    assert routing_verdict([found])["verdict"] == "wrong"


def test_a_near_tie_flip_is_counted_and_not_wrong():
    near = gold([[2.0, 1.0, 1.0 - 1e-4, -3.0]] + [[3.0, 0.0, -1.0, -2.0]] * 39)  # one tie among 40 tokens
    ids = near.chosen.clone()
    ids[0] = torch.tensor([0, 2])  # the tied third expert instead of the second
    weights = gold_weights(near, True).float()
    found = served_routing(near, ids, weights, True, BF16)
    assert (found["flipped"], found["near_tie"], found["genuine"]) == (1, 1, 0)
    assert routing_verdict([found])["verdict"] == "clean"


FP32 = 2.0 ** -24


def test_a_router_at_bf16_in_an_fp32_model_moves_its_weights_beyond_fp32_rounding_but_not_beyond_bf16s():
    """Logits rounded to bf16 (the router computed at a lower precision than the model asks for): the same
    experts, weights a few 1e-3 off, far beyond what fp32's rounding allows and inside what bf16's does."""
    exact = gold([[3.1234567, 1.0987654, 0.1111111, -2.3456789], [0.0123456, 2.5432109, 2.0246802, -1.1357913]])
    rounded = gold(exact.logits.to(torch.bfloat16).float().tolist())
    assert torch.equal(torch.sort(rounded.chosen, -1).values, torch.sort(exact.chosen, -1).values)
    weights = gold_weights(rounded, renormalize=True).float()
    at_fp32 = served_routing(exact, rounded.chosen, weights, True, FP32)
    assert at_fp32["flipped"] == 0 and 0 < at_fp32["weight_error_max"] < 0.1 and at_fp32["weight_rounding_ratio"] > 1
    assert routing_verdict([at_fp32])["verdict"] == "wrong"
    at_bf16 = served_routing(exact, rounded.chosen, weights, True, BF16)
    assert at_bf16["weight_rounding_ratio"] < 1 and routing_verdict([at_bf16])["verdict"] == "clean"


def test_a_row_without_the_rounding_ratio_is_judged_on_the_rest():
    row = {"tokens": 10, "flipped": 0, "near_tie": 0, "genuine": 0, "weight_error_max": 0.01}  # an older record
    verdict = routing_verdict([row])
    assert verdict["verdict"] == "clean" and verdict["weight_rounding_ratio"] is None
    assert routing_verdict([{**row, "weight_rounding_ratio": 1.5}])["verdict"] == "wrong"
