"""adaptation.json from a run directory's results, and the report section that shows it (en, zh)."""

import shutil
from dataclasses import asdict

import pytest

from llm_adapt import rundir
from llm_adapt.environment import collect
from llm_adapt.inspect.plan import PlanOptions
from llm_adapt.inspect.stage import run_inspect
from llm_adapt.models.source import resolve_model
from llm_adapt.probes.run import ProbesResult
from llm_adapt.report.render import render_report
from llm_adapt.run.config import QUICK
from llm_adapt.run_status import RunStatus
from llm_adapt.rundir import DUMMY_DIR
from llm_adapt.upstream.adaptation import AdaptationResult, build, dummy_vs_real, stage_facts
from tests.records import run_data

ENDPOINT = {"base_url": "http://127.0.0.1:8000/v1", "model": "m", "api_key": None}
CHAT_OK = {"name": "chat completion", "status": "supported", "evidence": "answer: 'Paris'", "latency_ms": 10}
STREAM = {"name": "streaming", "status": "supported", "evidence": "4 chunks", "latency_ms": 10}
CN = {"name": "Chinese prompt answered in Chinese", "status": "not applicable", "evidence": "random weights",
      "latency_ms": None}


def write_run(out, model, *, dummy=False, served=True, verdict="PASS"):
    source = resolve_model(str(model))
    inspected = run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="m",
                                                kv_cache_space_gib=1, max_model_len=512), "cpu")
    inspected.save(out / rundir.INSPECT)
    collect([]).save(out / rundir.ENVIRONMENT)
    stages = {"inspect": {"status": "done"}, "serve": {"status": "done" if served else "failed"},
              "probes": {"status": "done"}, "endpoint_accuracy": {"status": "not applicable" if dummy else "done"}}
    RunStatus(model=str(model), platform="cpu", stages=stages, workload=asdict(QUICK), dummy=dummy).save(out / rundir.STATUS)
    ProbesResult(endpoint=ENDPOINT, model="m", rows=[CHAT_OK, STREAM, CN], summary={}, complete=True).save(out / rundir.PROBES)
    if not dummy:
        from llm_adapt.accuracy.endpoint import SECTIONS, EndpointAccuracyResult

        sections = {name: {"status": "not run", "reason": "not part of this test"} for name in SECTIONS}
        EndpointAccuracyResult(endpoint=ENDPOINT, model="m", reference="cpu:fp32", floor=None, settings={}, sections=sections,
                               verdict={"status": verdict, "reasons": ["top-k KL / noise floor: 40.1"],
                                        "checks": []}).save(out / rundir.ENDPOINT_ACCURACY)
    return source


@pytest.fixture()
def model(tiny_llama, tmp_path):
    return shutil.copytree(tiny_llama, tmp_path / "model")


def test_a_dense_model_gets_every_row_with_evidence_and_the_capacity_verdict(model, tmp_path):
    out = tmp_path / "run"
    source = write_run(out, model)
    result = build(out, source.path)
    rows = {f["feature"]: f for f in result.features}
    assert rows["EP"]["status"] == rows["sequence parallelism"]["status"] == "not-applicable"
    assert rows["flashcomm1 (deprecated)"]["status"] == "not-applicable"  # the plan's release still has it
    assert "expert tensors" in rows["EP"]["evidence"] and "tensors read" in rows["EP"]["evidence"]
    assert rows["MTP"]["status"] == "not-applicable" and rows["multimodal"]["status"] == "not-applicable"
    assert rows["ACLGraph"]["status"] == "not verified"  # served without a serve.json: no graph mode seen
    assert result.capacity["status"] == "not applicable" and result.capacity["feasible"] is None  # 2,048 positions
    assert "own limit (max_position_embeddings) is 2,048" in result.capacity["reasons"][0]
    assert result.operators["applies"] is False and result.false_ready["false_ready"] is False
    assert result.max_model_len["config"] == 2048 and result.max_model_len["planned"] == 512
    assert result.stages is None  # no dummy stage in this run


def test_a_wrong_answer_is_false_ready_and_the_two_stages_make_the_matrix(model, tmp_path):
    out = tmp_path / "run"
    source = write_run(out, model, verdict="FAIL")
    (out / DUMMY_DIR).mkdir()
    write_run(out / DUMMY_DIR, model, dummy=True)
    result = build(out, source.path)
    result.save(out / rundir.ADAPTATION)
    assert result.false_ready["false_ready"] is True
    matrix = {r["row"]: r for r in result.stages["rows"]}
    assert matrix["engine starts"]["dummy"] is True and matrix["engine starts"]["real"] is True
    assert matrix["first request answers (chat, HTTP 200, text)"]["dummy"] is True
    weights = matrix["checkpoint weights load (names, shapes, dequantization)"]
    assert weights["dummy"] is None and weights["real"] is True and weights["real_only"]
    assert matrix["served output against the fp32 gold"]["real"] == "FAIL"
    assert matrix["API features that do not judge content"]["dummy"] == "2 of 2"  # the Chinese probe is not counted
    for lang, words in (("en", ("vLLM-Ascend adaptation gates", "false-ready", "only real weights can show it",
                                "not-applicable", "(131,072 × 16): not-applicable: the model's own limit")),
                        ("zh", ("vLLM-Ascend 适配关卡", "false-ready", "仅真实权重能证明", "不适用",
                                "(131,072 × 16): 不适用: 模型自身的上限"))):
        paths = render_report(out, lang)
        text = paths[0].read_text()
        assert all(w in text for w in words), (lang, [w for w in words if w not in text])
    assert AdaptationResult.load(out / rundir.ADAPTATION).stages["dummy_dir"] == DUMMY_DIR


def test_stage_facts_and_the_matrix_on_plain_data():
    real = stage_facts(run_data(status={"stages": {"serve": {"status": "done"}}}, probes={"rows": [CHAT_OK]},
                                endpoint_accuracy={"verdict": {"status": "PASS", "reasons": []}}), dummy=False)
    dummy = stage_facts(run_data(status={"stages": {"serve": {"status": "failed"}}}, probes={"rows": []}), dummy=True)
    assert real["engine_starts"] is True and real["served_accuracy"] == "PASS" and real["checkpoint_loads"] is True
    assert dummy["engine_starts"] is False and dummy["served_accuracy"] is None and dummy["first_request"] is None
    rows = dummy_vs_real(dummy, real)
    assert [r["real_only"] for r in rows].count(True) == 3
