"""The output head as the place to look (accuracy/diagnosis.head_signature): every layer and the final norm in
line while the logits are not. Plain rows first (the cases it must name, and those it must not), then a tiny
model whose lm_head alone is scaled, judged in process against its gold."""

import math
import shutil

import pytest

from llm_adapt.accuracy.diagnosis import HEAD_EXACT_REL, head_reason, head_signature

LAYERS = [{"name": "layer 0", "rel_l2": 0.0}, {"name": "layer 1", "rel_l2": 0.0}]


def test_an_exact_final_norm_with_nothing_located_names_the_head():
    assert head_signature([*LAYERS, {"name": "final norm", "rel_l2": 0.0}], None, exact=True, logits_kl=0.2) == 0.0
    assert "lm_head" in head_reason(0.0)


def test_it_stays_silent_where_a_layer_is_located_or_the_final_norm_is_off():
    final = {"name": "final norm", "rel_l2": 0.0}
    assert head_signature([*LAYERS, final], {"name": "layer 1"}, exact=True, logits_kl=0.2) is None  # a layer is the place
    assert head_signature([*LAYERS, {"name": "final norm", "rel_l2": 10 * HEAD_EXACT_REL}], None, exact=True, logits_kl=0.2) is None
    assert head_signature([*LAYERS, final], None, exact=False, logits_kl=0.2) is None  # no floor and not exact: nothing to judge by
    assert head_signature(LAYERS, None, exact=True, logits_kl=0.2) is None  # no final norm captured
    assert head_signature([*LAYERS, {"name": "final norm", "rel_l2": math.nan}], None, exact=True, logits_kl=0.2) is None


def test_equal_logits_name_no_head():  # a stop-token fault: every figure equal, the verdict out on its stops
    final = {"name": "final norm", "rel_l2": 0.0}
    assert head_signature([*LAYERS, final], None, exact=True, logits_kl=0.0) is None
    assert head_signature([*LAYERS, final], None, exact=True, logits_kl=None) is None


def test_against_a_floor_the_final_norm_is_judged_by_its_allowance():
    within = {"name": "final norm", "rel_l2": 0.01, "ratio": 1.05, "rel_spread": 0.05}
    beyond = {"name": "final norm", "rel_l2": 0.05, "ratio": 5.0, "rel_spread": 0.05}
    assert head_signature([*LAYERS, within], None, exact=False, logits_kl=0.2) == 0.01
    assert head_signature([*LAYERS, beyond], None, exact=False, logits_kl=0.2) is None
    assert head_signature([*LAYERS, {"name": "final norm", "rel_l2": 0.01, "ratio": 1.0}], None, exact=False, logits_kl=0.2) is None


@pytest.fixture(scope="module")
def tiny(default_model, tmp_path_factory):
    from llm_adapt.models.synthetic import write_zoo_model
    from tests.conftest import write_two_prompts

    root = tmp_path_factory.mktemp("head")
    return write_zoo_model("llama", root / "m", tokenizer_from=default_model.path, sharp=True), write_two_prompts(root)


def judge(model, target, prompts):
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"),
                          targets=(RunnerSpec("cpu", "fp32", model_path=target.resolve()),),
                          prompts=str(prompts), max_new_tokens=4, ppl_window=16, corpus_tokens=32)
    return compare(resolve_model(str(model)), opts).targets[0]


@pytest.mark.parametrize("scaled,named", [("lm_head.weight", True), ("model.layers.1.mlp.down_proj.weight", False)])
def test_a_scaled_head_is_named_and_a_layer_fault_is_not(tiny, tmp_path, scaled, named):
    from safetensors.torch import load_file, save_file

    model, prompts = tiny
    faulty = shutil.copytree(model, tmp_path / "faulty")
    weights = load_file(faulty / "model.safetensors")
    weights[scaled] = weights[scaled] * 1.3
    save_file(weights, faulty / "model.safetensors", metadata={"format": "pt"})
    target = judge(model, faulty, prompts)
    assert target.verdict["status"] == "FAIL"
    first = str(target.verdict["reasons"][0])
    assert first.startswith("likely cause, the output head") == named, target.verdict["reasons"]
    if not named:
        assert target.first_local_excess["name"] == "layer 1"
