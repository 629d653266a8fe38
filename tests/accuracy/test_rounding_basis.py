"""The rounding basis as a typed record: stored as fields beside its words, read back from them (and from
the words alone in files written before), and worded in both languages without parsing English."""

import pytest

from llm_adapt.accuracy.result import RoundingBasis, RunnerReport
from llm_adapt.accuracy.verdict import ROUNDOFF_FACTOR, own_error_excess, roundoff_basis, target_basis
from llm_adapt.messages import basis_text
from tests.records import record


def test_a_basis_is_stored_as_fields_and_read_back_the_same():
    for basis in (RoundingBasis(kind="roundoff", factor=185.2, dtype="fp32", contraction=8192),
                  RoundingBasis(kind="roundoff", factor=4.0, dtype="bf16"),
                  RoundingBasis(kind="floor"), RoundingBasis(kind="step", step=3.2, step_allowed=1.6)):
        assert RoundingBasis.of(basis.fields()) == basis


def test_the_words_are_the_verdicts_in_english_and_chinese():
    grown = RoundingBasis(kind="roundoff", factor=185.24, dtype="fp32", contraction=8192)
    assert grown.words() == "185.2 x fp32 unit roundoff (longest sum: 8,192 terms)"
    assert grown.words("zh") == "185.2 × fp32 单位舍入误差（最长求和：8,192 项）"
    assert RoundingBasis(kind="roundoff", factor=4.0, dtype="bf16").words() == "4 x bf16 unit roundoff"
    assert roundoff_basis("fp32", 8192)["basis"] == RoundingBasis.of(roundoff_basis("fp32", 8192)).words()
    step = RoundingBasis(kind="step", step=3.2, step_allowed=1.6)
    assert step.words() == "noise floor, stepping up 3.20x from the layer before (chance allows 1.60x)"


def test_a_layer_judged_without_a_floor_stores_its_basis_and_is_worded_from_the_fields():
    ratio, fields, excess = own_error_excess(0.1, None, 1.0, 2.0, False, "bf16", 2048)
    assert excess and fields["basis_dtype"] == "bf16" and fields["contraction"] == 2048
    # the words are made from the fields, not parsed: a row whose words were lost still reads right
    assert basis_text({**fields, "basis": "?"}, "zh").endswith("bf16 单位舍入误差（最长求和：2,048 项）")


@pytest.mark.parametrize("words, expected", [
    ("4 x bf16 unit roundoff", RoundingBasis(kind="roundoff", factor=4.0, dtype="bf16")),
    ("185 x fp32 unit roundoff (longest sum: 8,192 terms)",
     RoundingBasis(kind="roundoff", factor=185.0, dtype="fp32", contraction=8192)),
    ("noise floor", RoundingBasis(kind="floor")),
])
def test_a_file_from_before_the_fields_is_read_from_its_words(words, expected):
    assert RoundingBasis.of({"basis": words}) == expected


def test_words_of_no_known_form_are_shown_as_stored_and_claim_no_basis():
    assert RoundingBasis.of({"basis": "something else"}) is None and RoundingBasis.of({}) is None
    assert basis_text({"basis": "something else"}, "zh") == "something else"


def test_a_targets_basis_is_its_floor_its_recorded_basis_or_the_fixed_one_of_its_dtype():
    assert target_basis(record(RunnerReport, floor="cpu:bf16", dtype="bf16")).kind == "floor"
    recorded = record(RunnerReport, floor=None, dtype="fp32", roundoff_basis=roundoff_basis("fp32", 576))
    assert target_basis(recorded).contraction == 576
    old = target_basis(record(RunnerReport, floor=None, dtype="bf16"))  # before roundoff_basis was recorded
    assert old == RoundingBasis(kind="roundoff", factor=ROUNDOFF_FACTOR, dtype="bf16")
