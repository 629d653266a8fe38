"""Planted faults judged in process: every fault is FAIL or WARN, layer faults are localized to their
layer, and the clean bf16 target passes. One reference, every faulty copy as a --target-model."""

import os

import pytest

from llm_adapt.accuracy.compare import compare
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.runner import RunnerSpec, default_target
from tests.conftest import CORPUS_TOKENS, scratch

from . import faults as f

# One reference and ten targets in one fixture: on a 2-core box shared with other jobs it ran past the
# suite-wide 900 s limit, so it gets twice that.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

LAYER = f"layer {f.FAULT_LAYER}"
FP32 = RunnerSpec("cpu", "fp32")

# fault -> (builder, target dtype, expected verdicts, layer it must be localized to or None)
FAULTS = {
    "qk-permutation": (f.qk_permuted, "fp32", {"FAIL"}, LAYER),
    "perturbed-fp32": (f.perturbed_layer, "fp32", {"FAIL"}, LAYER),
    "int8-one-layer": (f.int8_one_layer, "fp32", {"FAIL"}, LAYER),
    "rms-norm-eps": (f.wrong_rms_norm_eps, "fp32", {"FAIL"}, "layer 0"),
    "rope-theta": (f.wrong_rope_theta, "fp32", {"FAIL"}, "layer 0"),
    "extra-eos": (lambda s, d: f.extra_eos(s, d, token_id=30), "fp32", {"FAIL", "WARN"}, None),  # "."
    "missing-eos": (f.missing_eos, "fp32", {"FAIL", "WARN"}, None),
    "nan-logits": (f.nan_logits, "fp32", {"FAIL"}, None),
    "chat-template": (f.chat_template_mismatch, "fp32", {"FAIL"}, None),
}
# A faulty bf16 target adds a bf16 target run and the bf16 floor's kernel-spread rerun (eager attention)
# to a fixture that ran past 900 s on a busy box; the served faults judge bf16 against the
# bf16 floor on every run, and this one runs with LLM_ADAPT_ALL_FAULTS=1.
if os.environ.get("LLM_ADAPT_ALL_FAULTS") == "1":
    FAULTS["perturbed-bf16"] = (f.perturbed_layer, "bf16", {"FAIL", "WARN"}, LAYER)


@pytest.fixture(scope="module")
def judged(default_model, tmp_path_factory):
    with scratch(tmp_path_factory, "faults") as root:  # nine copies of the default model: 4.7 GB
        specs = {name: RunnerSpec("cpu", dtype, model_path=build(default_model.path, root / name))
                 for name, (build, dtype, _, _) in FAULTS.items()}
        clean = default_target("cpu")  # as `run` measures it here: bf16 emulated in fp32 where the CPU has no bf16
        opts = CompareOptions(reference=FP32, targets=(clean, *specs.values()), prompts="quick", max_new_tokens=24,
                              ppl_window=128, corpus_tokens=CORPUS_TOKENS)
        result = compare(default_model, opts)
    by_label = {t.label: t for t in result.targets}
    return {name: by_label[spec.label] for name, spec in specs.items()} | {"clean": by_label[clean.label]}


def test_clean_bf16_target_passes(judged):
    clean = judged["clean"]
    assert clean.verdict["status"] == "PASS", clean.verdict["reasons"]
    assert clean.first_local_excess is None


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_planted_fault_is_caught(judged, name):
    _, _, expected, layer = FAULTS[name]
    target = judged[name]
    assert target.verdict["status"] in expected, (name, target.verdict["reasons"])
    if layer:
        assert target.first_local_excess and target.first_local_excess["name"] == layer, target.first_local_excess
        assert any(layer in r for r in target.verdict["reasons"])


# fault -> the parts of the located layer that must be out of line (each on the reference's input), the
# worst of them first: weights of one part, a config value only one kind of part reads, all linears
PARTS = {
    "qk-permutation": ["attention"],
    "perturbed-fp32": ["MLP"],  # mlp.down_proj
    "rope-theta": ["attention"],  # the rotary embedding is applied inside the attention
    "rms-norm-eps": ["input norm", "post-attention norm"],
    "int8-one-layer": ["attention", "MLP"],
}


@pytest.mark.parametrize("name", list(PARTS))
def test_the_located_layer_names_the_part_the_fault_sits_in(judged, name):
    where = judged[name].first_local_excess
    out_of_line = [r["name"] for r in where["parts"] if r["excess"]]
    assert sorted(out_of_line) == sorted(PARTS[name]), where["parts"]
    assert where["part"] in PARTS[name]
    # none of these sits in a few channels or a few heads: neither signature may fire on them
    assert not any((r["channels"] or {}).get("concentrated") for r in where["parts"]), where["parts"]
    assert not any((r.get("heads") or {}).get("concentrated") for r in where["parts"]), where["parts"]


def test_stop_faults_are_named_as_early_and_late_stops(judged):
    early = [g for g in judged["extra-eos"].greedy if g["stop"] == "early"]
    late = [g for g in judged["missing-eos"].greedy if g["stop"] == "late"]
    assert early and all(g["divergence"] == "genuine" for g in early)
    assert late and all(g["divergence"] == "genuine" for g in late)
    assert any("answers end early" in r for r in judged["extra-eos"].verdict["reasons"])


def test_nan_in_the_logits_only_is_named(judged):
    target = judged["nan-logits"]
    assert target.first_nonfinite == "logits"
    assert all(row["nan_mismatch"] is False for row in target.layers)  # hidden states stay finite


@pytest.mark.parametrize("name", ["perturbed-fp32", "qk-permutation"])
def test_msprobe_dtype_standard_flags_only_the_faulty_layer(judged, name):
    """Same dtype as the reference: msprobe's per-API standard applies, and only the planted layer errs."""
    status = {r["name"]: r["msprobe"] for r in judged[name].layers}
    assert status[LAYER] == "error"
    assert all(v == "pass" for k, v in status.items() if k != LAYER), status


def test_msprobe_dtype_standard_is_not_applied_across_dtypes(judged):
    """A bf16 target against the fp32 gold: weight rounding alone breaks msprobe's same-input premise."""
    assert {r["msprobe"] for r in judged["clean"].layers} == {"n/a"}
