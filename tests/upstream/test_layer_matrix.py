"""The adaptation report's layer-by-layer compatibility matrix (upstream/layer_matrix.py) on plain rows: the skill's
dense or MoE template, a gap where the run located a fault or the platform has a caveat, and one row per decoder
layer judged by the rule its verdict used."""

import math

from llm_adapt.messages import reason
from llm_adapt.upstream.layer_matrix import (
    DENSE,
    MOE,
    Measured,
    component_rows,
    decoder_rows,
    located_component,
    template_for,
    words,
)

OPERATORS = [{"name": "attention", "value": "GQA (4 query heads, 2 KV heads)"}, {"name": "head_dim", "value": "64"},
             {"name": "activation", "value": "SiLU gated MLP"}, {"name": "norm", "value": "RMSNorm"},
             {"name": "positional encoding", "value": "RoPE"}]
DENSE_INV = {"tied": True, "moe_layers": 0}
MOE_INV = {"tied": False, "moe_layers": 2, "experts": 8, "experts_per_token": 2, "router": "Qwen3MoeTopKRouter"}


def rows_of(errors, **extra):
    return [{"name": "embeddings", "rel_l2": 0.0, "local_rel_l2": 0.0}] + [
        {"name": f"layer {i}", "rel_l2": e, "local_rel_l2": e, **extra} for i, e in enumerate(errors)]


def in_process(errors, located=None, **extra):
    return Measured(reason("lm_src_in_process", label="cpu:bf16"), rows_of(errors, **extra), located, False, 2.0,
                    "bf16", 576, True)


def gap(rows, layer):
    return words(next(r for r in rows if r.layer == layer).gap, "en")


def test_the_template_follows_the_experts():
    assert template_for(0) == DENSE and template_for(3) == MOE
    assert DENSE == ("embedding", "positional/rope", "attention", "mlp/ffn", "norm", "lm_head/output")


def test_one_row_per_decoder_layer_each_judged_against_its_dtype_rounding():
    rows = decoder_rows(["full", "sliding", "full"], [1], 3, in_process([0.003, 0.004, 0.5]))
    assert [(r.index, r.attention, r.mlp) for r in rows] == [(0, "full", "dense"), (1, "sliding", "MoE"),
                                                             (2, "full", "dense")]
    assert [r.status for r in rows] == ["in line", "in line", "out of line"]  # 0.5 is far past bf16's rounding
    assert rows[2].ratio > 1 and rows[0].ratio < 1 and rows[0].allowed == 1.0


def test_the_located_layer_is_marked_and_a_nan_is_out_of_line():
    located = {"name": "layer 1", "local_rel_l2": 0.3, "ratio": 20.0, "basis": "roundoff"}
    rows = decoder_rows([], [], 3, in_process([0.003, 0.3, math.nan], located))
    assert [r.status for r in rows] == ["in line", "located", "out of line"]


def test_served_rows_are_judged_on_their_ratio_to_the_floor():
    served = Measured(reason("lm_src_served", dtype="bf16"),
                      rows_of([0.01, 0.05], ratio=None) , None, True, 1.0, "bf16", None, False)
    served.rows[1].update(ratio=1.1, rel_spread=0.05)  # allowed 1 + 3 x 0.05
    served.rows[2].update(ratio=4.0, rel_spread=0.05)
    rows = decoder_rows([], [], 2, served)
    assert [r.status for r in rows] == ["in line", "out of line"] and rows[1].allowed > 1


def test_a_run_that_measured_no_layer_still_has_a_row_per_layer():
    rows = decoder_rows(["full"] * 4, [], 4, None)
    assert len(rows) == 4 and {r.status for r in rows} == {"not measured"} and rows[0].error is None


def test_the_gap_names_the_located_part_the_head_or_the_whole_layer():
    part = located_component({"name": "layer 3", "part": "attention"}, False)
    assert part == ("attention", "layer 3 / attention")
    rows = component_rows(DENSE, OPERATORS, DENSE_INV, [], "native", "LlamaForCausalLM", True, part, "FAIL")
    assert "layer 3 / attention" in gap(rows, "attention") and gap(rows, "mlp/ffn").startswith("none found")
    head = component_rows(DENSE, OPERATORS, DENSE_INV, [], "native", "X", True, located_component(None, True), "FAIL")
    assert "output head" in gap(head, "lm_head/output") and gap(head, "attention").startswith("none found")
    whole = component_rows(DENSE, OPERATORS, DENSE_INV, [], "native", "X", True,
                           located_component({"name": "layer 2"}, False), "FAIL")
    assert "layer 2" in gap(whole, "attention") and "layer 2" in gap(whole, "mlp/ffn")
    assert gap(whole, "embedding").startswith("none found")


def test_a_failure_located_nowhere_is_not_called_clean():
    rows = component_rows(DENSE, OPERATORS, DENSE_INV, [], "native", "X", True, (None, None), "FAIL")
    assert all(gap(rows, layer).startswith("not located") for layer in DENSE)
    clean = component_rows(DENSE, OPERATORS, DENSE_INV, [], "native", "X", True, (None, None), "PASS")
    assert all(gap(clean, layer).startswith("none found") for layer in DENSE)


def test_a_platform_caveat_is_its_components_gap_and_a_planned_run_claims_nothing_measured():
    caveat = {"operator": "head_dim", "text": "head_dim 288 is above the NPU's attention kernel", "check": "serve it"}
    rows = component_rows(DENSE, OPERATORS, DENSE_INV, [caveat], "native", "Gemma2ForCausalLM", False, (None, None))
    assert gap(rows, "attention") == caveat["text"]
    assert all("to verify" in words(r.capability, "en") for r in rows)
    assert gap(rows, "norm").startswith("none known")


def test_the_moe_template_fills_router_and_experts_and_marks_a_missing_shared_expert():
    rows = component_rows(MOE, OPERATORS, MOE_INV, [], "native", "Qwen3MoeForCausalLM", True, (None, None), "PASS")
    assert [r.layer for r in rows] == list(MOE)
    router = words(next(r for r in rows if r.layer == "moe router/gate").requirement, "en")
    assert "top-2 of 8 experts" in router
    shared = next(r for r in rows if r.layer == "shared expert / residual mlp")
    assert words(shared.requirement, "en").startswith("N/A") and words(shared.gap, "zh").startswith("不适用")


def test_the_report_rule_holds_the_exported_matrix_and_fails_on_each_planted_break():
    from llm_adapt.upstream.template_rules import layer_matrix_rule

    text = MATRIX_REPORT
    assert layer_matrix_rule(text, 3) == []
    assert layer_matrix_rule(text.replace("Layer-by-Layer", "Layer by layer"), 3)[0].startswith("layer matrix: no")
    assert "columns" in layer_matrix_rule(text.replace("| Gap |", "| Gaps |"), 3)[0]
    assert "template" in layer_matrix_rule(text.replace("| norm |", "| layernorm |"), 3)[0]
    assert "decoder-layer rows" in layer_matrix_rule(text, 4)[0]
    assert "filled" in layer_matrix_rule(text.replace("| RoPE |", "|  |"), 3)[0]


MATRIX_REPORT = """# M: adaptation report

## Layer-by-Layer Compatibility Matrix

| Layer | Current capability | Model requirement | Gap | Adaptation plan |
| --- | --- | --- | --- | --- |
| embedding | native | token embedding | none | none |
| positional/rope | native | RoPE | none | none |
| attention | native | GQA | none | none |
| mlp/ffn | native | SiLU | none | none |
| norm | native | RMSNorm | none | none |
| lm_head/output | native | tied | none | none |

| Decoder layer | Attention | MLP | Own error | Ratio | Allowed | Status |
| --- | --- | --- | --- | --- | --- | --- |
| 0 | full | dense | 0.003 | 0.2 | 1 | in line |
| 1 | full | dense | 0.003 | 0.2 | 1 | in line |
| 2 | full | dense | 0.003 | 0.2 | 1 | in line |

## Code changes
"""
