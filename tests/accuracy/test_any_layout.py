"""Any architecture's layers, by construction: the blocks and the final norm found on the model (not at
`model.model.layers`), and each layer's own error computed on the gold's actual input to it (a forward pre-hook),
so that what a model computes between modules (Granite's embedding multiplier) is no false alarm. A checkpoint
compared with a byte-identical copy of itself at fp32 is PASS with every layer's own error exactly 0 on the
families laid out otherwise, with the scalings they ship (Granite 3's multipliers, Cohere's logit scale); every
family both registries share gets the same check at its config's defaults in tests/models/test_registry_zoo.py."""

import shutil

import pytest
import torch

from llm_adapt.accuracy.layout import find_layout
from llm_adapt.accuracy.runner import computed_between
from llm_adapt.models.synthetic import LAYOUTS, write_layout_family, write_zoo_model
from tests.conftest import scratch, write_two_prompts

FAMILIES = ("llama", *LAYOUTS)


@pytest.fixture(scope="module")
def two_prompts(tmp_path_factory):
    return write_two_prompts(tmp_path_factory.mktemp("prompts"))


@pytest.fixture(scope="module")
def families(default_model, tmp_path_factory):
    with scratch(tmp_path_factory, "layouts") as root:
        out = {}
        for family in FAMILIES:
            write = write_layout_family if family in LAYOUTS else write_zoo_model
            path = write(family, root / family, tokenizer_from=default_model.path)
            shutil.copytree(path, root / f"{family}-copy")
            out[family] = path
        yield out


@pytest.mark.parametrize("family", FAMILIES)
def test_an_identical_copy_at_fp32_is_pass_with_no_layer_above_zero(family, families, two_prompts):
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    path = families[family]
    copy = path.parent / f"{family}-copy"
    options = CompareOptions(reference=RunnerSpec("cpu", "fp32"),
                             targets=(RunnerSpec("cpu", "fp32", model_path=copy.resolve()),),
                             prompts=two_prompts, max_new_tokens=4, ppl_window=16, corpus_tokens=32)
    result = compare(resolve_model(str(path)), options)
    (target,) = result.targets
    assert result.verdict["status"] == "PASS", target.verdict["reasons"]
    assert target.first_local_excess is None
    assert all(row["local_rel_l2"] == 0.0 for row in target.layers), [(r["name"], r["local_rel_l2"]) for r in target.layers]


def test_the_layout_is_found_where_each_family_keeps_it(families):
    from transformers import AutoModelForCausalLM

    where = {family: find_layout(AutoModelForCausalLM.from_pretrained(families[family])).where
             for family in ("llama", "gptj", "gpt2", "opt", "falcon")}
    assert where == {"llama": "model.layers", "gptj": "transformer.h", "gpt2": "transformer.h",
                     "opt": "model.decoder.layers", "falcon": "transformer.h"}


def test_granites_scaled_embedding_is_what_layer_0_is_fed(families):
    """The gold's input to layer 0 is the embedding times embedding_multiplier (12), found by the pre-hook; the
    other layers are fed the output before them, and nothing is kept for them."""
    from llm_adapt.accuracy.runner import Runner, RunnerSpec

    with Runner(RunnerSpec("cpu", "fp32"), families["granite"]) as runner:
        capture = runner.capture([1, 2, 3, 4, 5])
    assert set(capture.inputs) == {0}
    torch.testing.assert_close(capture.inputs[0], capture.hidden[0] * 12.0)


def test_computed_between_keeps_only_inputs_that_are_not_the_output_before():
    outputs = [torch.ones(1, 3, 4) * (k + 1) for k in range(4)]  # embeddings, layer 0, layer 1, final norm
    arrived = [outputs[0] * 12, outputs[1].clone(), None]
    kept = computed_between(outputs, arrived)
    assert list(kept) == [0] and torch.equal(kept[0], outputs[0] * 12)
    assert computed_between(outputs, []) == {}


@pytest.mark.parametrize("family", ["granite", "gptj"])
def test_a_planted_fault_in_a_family_laid_out_otherwise_fails_at_its_layer(family, families, two_prompts, tmp_path):
    """Layer 1's attention output projection scaled 1.3x: FAIL, and the layer named is layer 1 (on Granite the
    scalings between modules are no longer mistaken for layer 0's error)."""
    from safetensors.torch import load_file, save_file

    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    faulty = shutil.copytree(families[family], tmp_path / "faulty")
    weights = load_file(faulty / "model.safetensors")
    name = next(k for k in weights if ".1." in k and k.endswith(("o_proj.weight", "out_proj.weight")))
    weights[name] = weights[name] * 1.3
    save_file(weights, faulty / "model.safetensors", metadata={"format": "pt"})
    options = CompareOptions(reference=RunnerSpec("cpu", "fp32"),
                             targets=(RunnerSpec("cpu", "fp32", model_path=faulty.resolve()),),
                             prompts=two_prompts, max_new_tokens=4, ppl_window=16, corpus_tokens=32)
    (target,) = compare(resolve_model(str(families[family])), options).targets
    assert target.verdict["status"] == "FAIL" and target.first_local_excess["name"] == "layer 1", (
        target.first_local_excess, [(r["name"], r["local_rel_l2"]) for r in target.layers])
