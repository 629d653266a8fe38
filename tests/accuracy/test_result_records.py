"""The typed records the accuracy rooms pass on (layer rows, located faults, checks, verdicts): a result
model refuses one that breaks its type, keeps a clean one, with its extra fields, as the plain dict the
JSON files hold, and the verdict's checks come out in that shape."""

import json

import pytest
from pydantic import ValidationError

from llm_adapt.accuracy.layers_served import LayersResult
from llm_adapt.accuracy.verdict import find_first_local_excess, judge_layers

ROWS = [{"name": "embed", "rel_l2": 0.0, "local_rel_l2": 0.0, "nan_mismatch": False, "cos_min": 1.0, "max_abs": 0.0},
        {"name": "layers.0", "rel_l2": 0.2, "local_rel_l2": 0.2, "nan_mismatch": False, "cos_min": 0.98, "max_abs": 1.5,
         "diff_sq_by_prompt": [0.1, 0.3]}]


def layers_result(**changes):
    excess = find_first_local_excess(ROWS, 2.0, False, "bf16")
    verdict = judge_layers({"layers": ROWS, "first_local_excess": excess, "first_nonfinite": None}, None)
    fields = dict(model={}, endpoint={}, capture={}, reference="cpu:fp32", floor=None, served_dtype="bf16",
                  error_kind="rel_l2", prompts={}, layers=ROWS, first_local_excess=excess, verdict=verdict,
                  seconds={})
    return LayersResult(**(fields | changes))


def test_a_clean_result_keeps_its_records_as_plain_dicts_with_their_extras():
    result = layers_result()
    assert result.first_local_excess["name"] == "layers.0" and result.first_local_excess["basis_dtype"] == "bf16"
    assert result.verdict["status"] == "WARN" and {c["status"] for c in result.verdict["checks"]} <= {"pass", "warn"}
    dumped = json.loads(result.model_dump_json())
    assert dumped["layers"] == ROWS  # the extras (diff_sq_by_prompt, nan_mismatch) are kept, nothing added
    assert LayersResult.model_validate(dumped).model_dump() == result.model_dump()


@pytest.mark.parametrize("changes", [
    {"layers": [{"rel_l2": 0.1}]},  # a layer row without its name
    {"layers": [{"name": "x", "rel_l2": "large"}]},  # an error that is not a number
    {"verdict": {"status": "MAYBE", "reasons": []}},  # a status the verdict does not give
    {"verdict": {"status": "PASS", "reasons": [], "checks": [{"name": "c", "status": "ok"}]}},  # a check cut short
    {"first_local_excess": {"name": "layers.0"}},  # a located fault without its error and basis
])
def test_a_record_that_breaks_its_type_is_refused(changes):
    with pytest.raises(ValidationError):
        layers_result(**changes)


def test_greedy_rows_logits_and_perplexity_are_typed_where_a_runner_report_holds_them():
    import json as _json

    from llm_adapt.accuracy.result import RunnerReport

    base = dict(label="cpu:bf16", device="cpu", dtype="bf16", load_seconds=1.0, run_seconds=2.0, layers=ROWS,
                depth_fit={}, first_local_excess=None, first_nonfinite=None, greedy_by_category={},
                logits={"positions": 10, "kl_mean": 0.01, "same_top1": 0.9, "extra_figure": 3.5},
                perplexity={"ref": 10.0, "target": 10.5, "ln_ratio": 0.049, "ln_ratio_sem": 0.01, "tokens": 100},
                greedy=[{"id": "p1", "category": "c", "exact": False, "divergence": "near-tie", "stop": None}])
    report = RunnerReport(**base)
    assert _json.loads(report.model_dump_json())["logits"]["extra_figure"] == 3.5  # extras kept
    for bad in ({"greedy": [{"id": "p1", "divergence": "maybe"}]},  # neither near-tie nor genuine
                {"greedy": [{"category": "c"}]},  # a row without its prompt's id
                {"logits": {"positions": "many"}}, {"perplexity": {"tokens": "all"}}):
        with pytest.raises(ValidationError):
            RunnerReport(**(base | bad))


def test_the_floor_comparison_spread_samples_and_rounding_basis_are_typed():
    from llm_adapt.accuracy.result import RunnerReport
    from llm_adapt.accuracy.verdict import roundoff_basis

    base = dict(label="cpu:bf16", device="cpu", dtype="bf16", load_seconds=1.0, run_seconds=2.0, layers=ROWS,
                depth_fit={}, first_local_excess=None, first_nonfinite=None, greedy_by_category={},
                logits={"positions": 10, "kl_mean": 0.01, "same_top1": 0.9},
                perplexity={"ref": 10.0, "target": 10.5, "ln_ratio": 0.049, "ln_ratio_sem": 0.01, "tokens": 100},
                greedy=[])
    clean = RunnerReport(**base, vs_floor={"kl_ratio": 1.2, "kl_allowed": 1.5, "kl_spread": 0.1,
                                           "kl_spread_bootstrap": 0.08, "kl_spread_kernel": 0.05, "k": 5.0},
                         spread={"method": "an older file's words", "kl_mean": 0.05},  # no variant: kept as written
                         samples={"kl_by_prompt": [0.1, 0.2]}, roundoff_basis=roundoff_basis("bf16", 4096))
    again = RunnerReport.model_validate(json.loads(clean.model_dump_json()))
    assert again.roundoff_basis["dtype"] == "bf16" and again.roundoff_basis["contraction"] == 4096
    assert again.vs_floor["kl_ratio"] == 1.2 and again.samples["kl_by_prompt"] == [0.1, 0.2]
    for bad in ({"vs_floor": {"kl_ratio": 1.2}},  # the ratio without what chance allows
                {"spread": {"variant": "cpu:bf16 eager"}},  # a spread without its figure
                {"samples": {"kl_by_prompt": ["a"]}},
                {"roundoff_basis": {"basis": "4 x bf16 unit roundoff", "kind": "floor", "factor": 4.0, "dtype": "bf16",
                                    "contraction": None, "allowed": 0.03}}):  # a floor is not a rounding basis
        with pytest.raises(ValidationError):
            RunnerReport(**(base | bad))


def test_endpoint_sections_are_typed_and_keep_their_reason_as_a_message():
    from llm_adapt.accuracy.endpoint import EndpointAccuracyResult
    from llm_adapt.messages import Reason, message, reason

    def result(sections):
        return EndpointAccuracyResult(endpoint={}, model="m", reference="cpu:fp32", floor=None, settings={},
                                      sections=sections)

    clean = result({"tokenization": {"status": "done", "checked": 3, "mismatches": []},
                    "greedy": {"status": "not run", "reason": reason("es_not_reached")}})
    saved = json.loads(clean.to_json())["sections"]
    assert saved["tokenization"] == {"status": "done", "checked": 3, "mismatches": []}  # figures as written
    assert saved["greedy"]["reason"]["key"] == "es_not_reached"
    kept = clean.sections["greedy"]["reason"]
    assert isinstance(kept, Reason) and message(kept, "zh") != str(kept)  # validation kept its key
    for bad in ({"greedy": {"status": "maybe"}}, {"greedy": {"reason": "no status"}},
                {"greedy": {"status": "not run", "reason": 3}}):
        with pytest.raises(ValidationError):
            result(bad)
