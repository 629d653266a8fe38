"""The pure pieces of the entry-point contract, on plain data: the exit code of a verdict, a run directory that
holds one run, the served model named by its id, TPOT from too few token events, a share of a hardware limit
computed one way round, the shards an index lists, a model_type no engine can read."""

import json

import pytest

from llm_adapt.bench.hardware import bounded_share, decode_roofline
from llm_adapt.bench.stats import tpot
from llm_adapt.cli import build_parser
from llm_adapt.docs_gen import subcommands
from llm_adapt.engines.same_model import bare_name, other_served_name
from llm_adapt.models.source import missing_shards
from llm_adapt.models.spec import unknown_model_type
from llm_adapt.run.identity import reuse_problem
from llm_adapt.status import EXIT_CODES_HELP, exit_code


@pytest.mark.parametrize("status,failed,code", [
    ("PASS", False, 0), ("WARN", False, 0), ("FAIL", False, 1), ("fail", False, 1), (None, False, 0),
    ("PASS", True, 1), ("WARN", True, 1), ("SKIP", False, 0), ("unjudged", False, 0)])
def test_exit_code_of_a_verdict(status, failed, code):
    assert exit_code(status, failed) == code


def test_every_help_states_the_exit_codes():
    for name, (_, parser) in subcommands(build_parser()).items():
        assert EXIT_CODES_HELP in parser.format_help(), name


WORKLOAD = {"prompts": "quick", "max_new_tokens": 12, "sweep": [1, 2]}


def test_a_new_or_empty_directory_takes_a_run():
    assert reuse_problem([], {}, "default", WORKLOAD, resume=False) is None


def test_an_earlier_run_is_refused_without_resume_and_names_its_model():
    problem = reuse_problem(["status.json", "bench-latency.json"], {"model": "other", "workload": WORKLOAD},
                            "default", WORKLOAD, resume=False)
    assert "an earlier run of 'other'" in problem and "--resume" in problem


def test_results_without_a_run_are_refused_too():
    assert "earlier results (accuracy.json)" in reuse_problem(["accuracy.json"], {}, "default", WORKLOAD, resume=False)
    assert "needs an earlier run" in reuse_problem(["accuracy.json"], {}, "default", WORKLOAD, resume=True)


def test_resume_goes_on_only_with_the_same_model_and_workload():
    earlier = {"model": "default", "workload": WORKLOAD}
    assert reuse_problem(["status.json"], earlier, "default", WORKLOAD, resume=True) is None
    assert "not 'x'" in reuse_problem(["status.json"], earlier, "x", WORKLOAD, resume=True)
    moved = reuse_problem(["status.json"], earlier, "default", {**WORKLOAD, "sweep": [1, 2, 4]}, resume=True)
    assert "other options (sweep)" in moved


@pytest.mark.parametrize("served,gold,other", [
    ("SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct", False),
    ("/models/SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct", False),
    ("HuggingFaceTB/smollm2-135m-instruct", "SmolLM2-135M-Instruct", False),
    ("/srv/SmolLM2-135M-Instruct@main", "SmolLM2-135M-Instruct", False),
    ("Qwen2.5-0.5B-Instruct", "SmolLM2-135M-Instruct", True),
    ("fault", "SmolLM2-135M-Instruct", True),
    ("", "SmolLM2-135M-Instruct", False), ("m", None, False)])
def test_a_served_id_of_another_checkpoint_is_told(served, gold, other):
    assert other_served_name(served, gold) is other
    assert bare_name("/a/b/c@rev") == "c"


def test_tpot_is_not_measured_from_one_token_event():
    record = {"output_tokens": 16, "ttft": 0.1, "e2el": 0.1001, "chunks": 1}
    assert tpot(record) is None  # every token in one event: no time between tokens was seen
    assert tpot({**record, "chunks": 16, "e2el": 0.4}) == pytest.approx(0.3 / 15)
    assert tpot({"output_tokens": 1, "ttft": 0.1, "e2el": 0.1, "chunks": 1}) is None


def test_a_share_is_the_measured_rate_over_the_limit_and_above_100_percent_names_the_measurement():
    slow = decode_roofline(270e6, 0, 0, 20.0, 43.0)  # 20 ms a token against a 6.3 ms floor
    assert slow.share_of_bandwidth_limit == pytest.approx(270e6 / 43e9 * 1000 / 20.0)
    fast = decode_roofline(270e6, 0, 0, 0.0214, 43.0)  # TPOT from tokens that arrived together
    assert fast.share_of_bandwidth_limit is None and "measurement is suspect" in fast.unreliable
    assert f"{(270e6 / 43e9 * 1000) / 0.0214:.0%}" in fast.unreliable  # measured rate / limit, not its inverse
    none = decode_roofline(270e6, 0, 0, 0.0, 43.0)
    assert none.share_of_bandwidth_limit is None and none.unreliable == "TPOT not measured"
    assert bounded_share(float("nan"), 10.0) == (None, "no rate measured")


def test_missing_shards_are_named(tmp_path):
    assert missing_shards(tmp_path) == []
    (tmp_path / "a.safetensors").write_bytes(b"")
    index = {"weight_map": {"x": "a.safetensors", "y": "b.safetensors", "z": "b.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert missing_shards(tmp_path) == ["b.safetensors"]
    (tmp_path / "model.safetensors.index.json").write_text("{cut")
    assert missing_shards(tmp_path) == []  # unreadable: the loader says what is wrong


def test_a_model_type_transformers_does_not_know_is_named():
    assert unknown_model_type({"model_type": "llama"}) is None
    assert unknown_model_type({"model_type": "olmo2"}) is None
    assert "'zoo-unknown'" in unknown_model_type({"model_type": "zoo-unknown"})
    assert unknown_model_type({"model_type": "zoo-unknown", "auto_map": {"AutoConfig": "x.Y"}}) is None
    assert unknown_model_type({}) is None
