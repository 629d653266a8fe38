"""Expert routing against the gold: near-tie flips counted and left out, routing faults failed and named.
Plain tensors first; then a tiny Qwen3-MoE in process (slow)."""


import pytest
import torch

from llm_adapt.accuracy.routing import GateRecord, RoutingCount, flips, tie_width
from llm_adapt.accuracy.sublayer import dense_routing
from llm_adapt.accuracy.verdict import UNIT_ROUNDOFF, locate_part, routing_check, routing_totals

BF16 = UNIT_ROUNDOFF["bf16"]


def gate(logits, k=2, input_norm=1.0, weight_norm=1.0):
    logits = torch.tensor(logits, dtype=torch.float32)
    return GateRecord(logits=logits, chosen=logits.topk(k, dim=-1).indices,
                      input_norm=torch.full((logits.shape[0],), input_norm, dtype=torch.float64),
                      weight_norm=torch.full((logits.shape[1],), weight_norm, dtype=torch.float64))


def test_a_flip_inside_the_rounding_of_the_gold_margin_is_a_near_tie_and_one_outside_it_is_not():
    width = float(tie_width(gate([[0.0, 0.0, 0.0]]), BF16)[0])
    assert width == pytest.approx(8 * BF16)  # 2 x 4 unit roundoffs of |x| max|w|, both 1 here
    gold = gate([[3.0, 1.0, 1.0 - width / 2, -2.0],   # 2nd and 3rd expert within the rounding: a near-tie
                 [3.0, 1.0, 0.0, -2.0]])              # a full nat apart: no tie
    other = torch.tensor([[0, 2], [0, 2]])  # the target chose the 3rd expert instead of the 2nd on both
    flipped, near = flips(gold, other, BF16)
    assert flipped.tolist() == [True, True] and near.tolist() == [True, False]
    same, near_same = flips(gold, torch.tensor([[1, 0], [1, 0]]), BF16)  # same set, other order
    assert not same.any() and not near_same.any()


def test_another_number_of_experts_flips_every_token_never_near_a_tie():
    gold = gate([[3.0, 1.0, 1.0, -2.0]] * 3)
    flipped, near = flips(gold, torch.tensor([[0], [0], [0]]), BF16)
    assert flipped.all() and not near.any()


def test_the_rounding_grows_with_the_input_and_the_router_rows():
    assert float(tie_width(gate([[0.0, 0.0]], input_norm=8.0, weight_norm=0.5), BF16)[0]) == \
        pytest.approx(4 * float(tie_width(gate([[0.0, 0.0]]), BF16)[0]))


def test_the_dense_routing_matrix_holds_a_changed_top_k_and_a_dropped_renormalization():
    chosen, weights = torch.tensor([[0, 2]]), torch.tensor([[0.6, 0.4]])
    assert dense_routing((None, weights, chosen), 4)[0].tolist() == pytest.approx([0.6, 0.0, 0.4, 0.0])
    assert dense_routing((None, torch.tensor([[0.3, 0.2]]), chosen), 4)[0].tolist() == pytest.approx([0.3, 0.0, 0.2, 0.0])


def test_genuine_flips_fail_the_routing_check_and_near_ties_alone_pass():
    count = RoutingCount()
    count.add(torch.tensor([True] * 5 + [False] * 995), torch.tensor([True] * 5 + [False] * 995))
    clean = {"layers": [{"name": "layer 0", "routing": count.summary()}]}
    totals = routing_totals(clean)
    assert totals == {"tokens": 1000, "flipped": 5, "near_tie": 5, "genuine": 0, "layer": "layer 0",
                      "layer_genuine": 0}
    assert routing_check(totals, None)["status"] == "pass"
    broken = {**totals, "flipped": 400, "genuine": 395, "layer_genuine": 395}
    check = routing_check(broken, None)
    assert check["status"] == "fail" and check["name"].startswith("expert routing")
    assert "395 of 1000 tokens chose other experts" in check["value"]
    assert routing_check({**totals, "tokens": 2}, None)["status"] == "unjudged"
    assert routing_totals({"layers": [{"name": "layer 0"}]}) is None  # a dense model has no routing check


def test_the_router_is_named_before_the_mlp_it_sits_in():
    rows = [{"name": "MLP", "rel_l2": 0.03, "ratio": None}, {"name": "router", "rel_l2": 0.02, "ratio": None},
            {"name": "experts", "rel_l2": 1e-9, "ratio": None}]
    found = locate_part(rows, factor=4.0, have_floor=False, dtype="fp32", contraction=128)
    assert found["part"] == "router"
    only_mlp = locate_part(rows[:1] + [{"name": "router", "rel_l2": 1e-9, "ratio": None}], 4.0, False, "fp32", 128)
    assert only_mlp["part"] == "MLP"


# ---- a tiny Qwen3-MoE in process -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def moe_judged(default_model, tmp_path_factory):
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec, default_target
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_zoo_model
    from tests.conftest import CORPUS_TOKENS, scratch

    from . import faults as f

    with scratch(tmp_path_factory, "moe") as root:
        model = write_zoo_model("qwen3_moe", root / "qwen3_moe", tokenizer_from=default_model.path, sharp=True,
                                num_experts=8)
        faulty = {"top-k 1": f.moe_top_k(model, root / "topk"), "no renormalization":
                  f.moe_no_renormalization(model, root / "norenorm"),
                  "router rows": f.router_rows_swapped(model, root / "rows")}
        specs = {name: RunnerSpec("cpu", "fp32", model_path=path) for name, path in faulty.items()}
        clean = default_target("cpu")
        opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(clean, *specs.values()), prompts="quick",
                              max_new_tokens=12, corpus_tokens=CORPUS_TOKENS)
        by_label = {t.label: t for t in compare(resolve_model(str(model)), opts).targets}
    return {name: by_label[spec.label] for name, spec in specs.items()} | {"clean": by_label[clean.label]}


@pytest.mark.slow
def test_a_clean_moe_at_bf16_passes_with_its_routing_flips_counted(moe_judged):
    clean = moe_judged["clean"]
    assert clean.verdict["status"] == "PASS", clean.verdict["reasons"]
    totals = routing_totals(clean.model_dump())
    assert totals["tokens"] > 0 and totals["genuine"] == 0
    assert any(c["key"] == "routing" and c["status"] == "pass" for c in clean.verdict["checks"])


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["top-k 1", "no renormalization", "router rows"])
def test_a_routing_fault_fails_and_names_expert_routing(moe_judged, fault):
    judged = moe_judged[fault]
    assert judged.verdict["status"] == "FAIL", judged.verdict["reasons"]
    assert any("expert routing" in r for r in judged.verdict["reasons"]), judged.verdict["reasons"]
    assert judged.first_local_excess["part"] == "router"
    layer = "layer 1" if fault == "router rows" else "layer 0"
    assert judged.first_local_excess["name"] == layer
