"""The run's stage table: the order and flags the pipeline loops over, and each rule that leaves a stage
out, judged on plain configs (no engine, no model)."""

import types

from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.run import stages
from llm_adapt.run.config import RunConfig
from llm_adapt.run.pipeline import _blocked, _left_out, new_status
from llm_adapt.run.state import RunState
from llm_adapt.run.table import SKIPPABLE, STAGES, TABLE, engine_needed_after
from tests.conftest import table_stage


def parts(tmp_path, **cfg):
    config = RunConfig(out=tmp_path, model_arg="m", plan_options_for=lambda s: None, log=lambda m: None, **cfg)
    return config, RunState(status=new_status(config))


def test_the_table_keeps_the_runs_order_and_what_may_be_skipped():
    assert STAGES == ("inspect", "accuracy", "serve", "probes", "endpoint_accuracy", "eager_check", "layers", "eval",
                      "bench", "settings", "adaptation", "report")
    assert SKIPPABLE == ("accuracy", "serve", "probes", "endpoint_accuracy", "eager_check", "layers", "eval", "bench",
                         "settings")
    assert [s.name for s in TABLE if s.after_engine] == ["report"]  # the engine is stopped before it
    assert [s.name for s in TABLE if s.ends_the_run] == ["inspect"]


def test_each_rule_leaves_out_the_stages_it_names_and_no_other(tmp_path):
    cfg, state = parts(tmp_path)
    left = {s.name: _left_out(cfg, state, s) for s in TABLE}
    assert left["eval"][0] == "skipped" and "--tasks" in left["eval"][1]  # opt-in, not asked
    assert left["layers"][0] == "skipped"  # an escalation with no endpoint verdict yet
    assert left["eager_check"][0] == "skipped" and "serves eager" in left["eager_check"][1]  # no graph mode here
    assert left["settings"][0] == "skipped" and "--settings" in left["settings"][1]  # opt-in, not asked
    assert {n for n, why in left.items() if why} == {"eval", "eager_check", "layers", "settings"}

    skipping, state = parts(tmp_path, skip=frozenset({"bench"}), tasks=("gsm8k",))
    assert _left_out(skipping, state, table_stage("bench"))[0] == "skipped"
    assert _left_out(skipping, state, table_stage("eval")) is None

    from llm_adapt.deploy_settings import parse_settings

    dummy, state = parts(tmp_path, dummy=True, tasks=("gsm8k",), settings=parse_settings("eager,tp2"))
    applicable = {s.name for s in TABLE if (_left_out(dummy, state, s) or ("",))[0] != "not applicable"}
    assert applicable == {"inspect", "serve", "probes", "eager_check", "layers", "bench", "adaptation", "report"}


def test_an_external_endpoint_stands_in_for_serve_even_when_serve_is_skipped(tmp_path):
    url = Endpoint(base_url="http://127.0.0.1:9/v1")
    for skip in (frozenset(), frozenset({"serve"})):
        cfg, state = parts(tmp_path, endpoint=url, skip=skip)
        status, why = _left_out(cfg, state, table_stage("serve"))
        assert status == "skipped" and "external endpoint" in why
    assert _left_out(*parts(tmp_path), table_stage("serve")) is None


def test_a_stage_that_talks_to_the_engine_does_not_run_without_one(tmp_path):
    cfg, state = parts(tmp_path)
    for name in ("probes", "endpoint_accuracy", "eval", "bench"):
        status, why = _blocked(cfg, state, table_stage(name))
        assert status == "not run" and "no endpoint" in why
    assert _blocked(cfg, state, table_stage("accuracy")) is None
    served, state = parts(tmp_path, endpoint=Endpoint(base_url="http://127.0.0.1:9/v1"))
    assert _blocked(served, state, table_stage("bench")) is None
    state.engine.server = types.SimpleNamespace(spec=types.SimpleNamespace(engine="transformers"))
    status, why = _blocked(cfg, state, table_stage("layers"))  # the escalation needs vLLM: skipped, not a failure
    assert status == "skipped" and "no escalation" in why
    on, state = parts(tmp_path, layers="on")
    assert _blocked(on, state, table_stage("layers"))[0] == "not run"  # asked for, and cannot run: said so


def test_the_eager_check_runs_only_for_a_graph_deployment_out_of_line(tmp_path, monkeypatch):
    """The first step of a graph-mode deployment's layers escalation: left out, with the reason, for an eager
    deployment, a skipped or turned-off escalation, no verdict, or a verdict in line; run on a WARN or FAIL."""
    verdicts = {"value": None}
    monkeypatch.setattr(stages, "endpoint_verdict", lambda out: verdicts["value"])
    check = table_stage("eager_check")

    def why(**cfg):
        left = _left_out(*parts(tmp_path, **cfg), check)
        return left and (left[0], left[1])

    assert why() == ("skipped", "the deployment serves eager: no graph mode to tell apart")
    assert why(graph=True, skip=frozenset({"layers"}))[1].startswith("--skip layers")
    assert why(graph=True, layers="off")[1].endswith("--no-escalate")
    assert why(graph=True) == ("skipped", "no endpoint accuracy verdict for the graph-mode deployment")
    for verdict in ("PASS", "SKIP"):
        verdicts["value"] = verdict
        assert why(graph=True, layers="on")[1] == f"endpoint accuracy {verdict}: the graph-mode deployment is not out of line"
    for verdict in ("WARN", "FAIL"):
        verdicts["value"] = verdict
        assert why(graph=True) is None and why(graph=True, layers="on") is None
    assert stages.graph_modes(tmp_path) is None  # the layers stage without an eager check: no modes to show


def test_the_engine_is_kept_after_layers_only_for_a_later_stage_that_uses_it(tmp_path):
    assert engine_needed_after(stages.layers, parts(tmp_path)[0])  # bench
    assert not engine_needed_after(stages.layers, parts(tmp_path, skip=frozenset({"bench"}))[0])
    assert engine_needed_after(stages.layers, parts(tmp_path, skip=frozenset({"bench"}), tasks=("gsm8k",))[0])
    assert not engine_needed_after(stages.layers, parts(tmp_path, skip=frozenset({"bench", "eval"}),
                                                        tasks=("gsm8k",))[0])


def test_the_dummy_weight_stage_leaves_out_what_is_not_its_job():
    assert [s.name for s in TABLE if not s.in_dummy_stage] == ["bench", "settings"]


def test_the_engine_slot_starts_restarts_and_always_stops(tmp_path, monkeypatch):
    import contextlib

    import pytest

    from llm_adapt.engines import session
    from llm_adapt.errors import AdaptError

    events = []

    @contextlib.contextmanager
    def fake(inspected, engine, out, mode="eager", **kwargs):
        if mode == "broken":
            raise AdaptError("vllm exited with code 1 during start-up")
        events.append(f"start {engine} {mode}")
        yield types.SimpleNamespace(spec=types.SimpleNamespace(engine=engine)), f"serve.json {mode}"
        events.append(f"stop {mode}")

    monkeypatch.setattr(session, "started_engine", fake)
    with session.EngineSlot() as slot:
        slot.start(None, "vllm", tmp_path, mode="eager")
        assert slot.started == "serve.json eager"
        slot.restart(None, mode="graph")  # the same engine, the first one stopped first
        assert events == ["start vllm eager", "stop eager", "start vllm graph"]
        with pytest.raises(AdaptError):
            slot.restart(None, mode="broken")
        assert slot.server is None and slot.started is None  # a failed restart leaves no dead server behind
        slot.restart(None, mode="graph")  # the last start's engine, after a failed start too
        assert events[-1] == "start vllm graph"
        slot.start(None, "vllm", tmp_path, mode="eager")
    assert events[-2:] == ["start vllm eager", "stop eager"]  # stopped when the slot closes
