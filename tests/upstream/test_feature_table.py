"""The tutorial's section 2 row in the template's columns, on plain data: nothing is ✅ that no NPU run served."""

from types import SimpleNamespace

from llm_adapt.inspect.ascend_features import NOT_APPLICABLE, NOT_VERIFIED, SUPPORTED
from llm_adapt.upstream.feature_table import COLUMNS, FAILED, NA, TO_VERIFY, VERIFIED, cells, used_words

PLAN = SimpleNamespace(dtype="bfloat16", tensor_parallel=2, max_model_len=8192)
DENSE = [{"feature": "ACLGraph", "status": SUPPORTED}, {"feature": "EP", "status": NOT_APPLICABLE},
         {"feature": "MTP", "status": NOT_APPLICABLE}]
MOE = [{"feature": "ACLGraph", "status": NOT_VERIFIED}, {"feature": "EP", "status": NOT_VERIFIED},
       {"feature": "MTP", "status": NOT_VERIFIED}]


def row(rows, *, on_npu, served=True, checks=None, plan=PLAN, quant=None):
    return cells("m", rows, plan, on_npu=on_npu, served=served, remark="r", hardware="2 NPUs", quantization=quant,
                 setting_checks=checks or {}, doc_link="[m](m.md)")


def test_the_row_has_the_templates_columns_in_order():
    assert tuple(row(DENSE, on_npu=False)) == COLUMNS


def test_a_planned_deployment_claims_nothing():
    planned = row(DENSE, on_npu=False)
    assert VERIFIED not in planned.values() and FAILED not in planned.values()
    assert planned["Expert Parallelism"] == NA and planned["BF16"] == TO_VERIFY
    assert planned["Segmented ACL Graph Execution"] == TO_VERIFY  # "supported" off an NPU is not verified
    assert planned["Max Model Length"] == "8,192" and used_words(planned) == [TO_VERIFY, NA]


def test_an_npu_run_that_served_verifies_what_it_served():
    ran = row(DENSE, on_npu=True)
    assert ran["Support Status"] == ran["BF16"] == ran["Segmented ACL Graph Execution"] == VERIFIED
    assert ran["Tensor Parallelism"] == VERIFIED  # it served at TP2
    assert ran["Chunked Prefill"] == TO_VERIFY and ran["Full ACL Graph Execution"] == TO_VERIFY


def test_an_npu_run_whose_engine_did_not_start_verifies_nothing():
    assert VERIFIED not in row(DENSE, on_npu=True, served=False).values()


def test_a_settings_check_that_failed_is_a_cross_and_one_that_passed_a_tick():
    checks = {"ep": {"status": "FAIL"}, "tp": {"status": "PASS"}, "graph": {"status": None}}  # None: refused
    ran = row(MOE, on_npu=True, checks=checks)
    assert ran["Expert Parallelism"] == FAILED and ran["Tensor Parallelism"] == VERIFIED
    assert ran["Segmented ACL Graph Execution"] == FAILED
    assert row(MOE, on_npu=False, checks=checks)["Expert Parallelism"] == TO_VERIFY  # a CPU check is no NPU check


def test_a_float16_deployment_is_not_a_bf16_one_and_a_w8a8_checkpoint_is_one():
    fp16 = row(DENSE, on_npu=True, plan=SimpleNamespace(dtype="float16", tensor_parallel=1, max_model_len=512),
               quant="w8a8")
    assert fp16["BF16"] == NA and fp16["W8A8"] == VERIFIED and fp16["Tensor Parallelism"] == TO_VERIFY
