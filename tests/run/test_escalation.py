"""One command from symptom to location: a run whose endpoint accuracy fails captures inside its engine.

The fault is planted inside the engine (engines/fault_plugin.py: layer 12's output 10% too large on
every token), the checkpoint untouched; the run starts the engine itself, judges it FAIL, restarts
it with the layer capture plugin and names the layer."""

import json

import pytest

from llm_adapt.cli import main

pytestmark = pytest.mark.slow


def test_a_failing_run_captures_inside_its_engine_and_names_the_layer(tmp_path, monkeypatch):
    from llm_adapt.report.render import render_report

    monkeypatch.setenv("LLM_ADAPT_ENGINE_FAULT", "scaled:12:1.1")  # inherited by each engine the run starts
    out = tmp_path / "run"
    code = main(["run", "default", "--quick", "--skip", "accuracy", "--skip", "probes", "--skip", "bench",
                 "--out", str(out), "--kv-cache-space", "1", "--max-model-len", "1024", "--dtype", "fp32"])
    assert code == 0
    stages = json.loads((out / "status.json").read_text())["stages"]
    assert stages["endpoint_accuracy"]["status"] == stages["layers"]["status"] == "done"
    endpoint = json.loads((out / "endpoint_accuracy.json").read_text())
    assert endpoint["verdict"]["status"] == "FAIL"
    layers = json.loads((out / "layers.json").read_text())
    assert layers["capture"]["escalated_from"] == "endpoint accuracy FAIL"
    assert layers["first_local_excess"]["name"] == "layer 12", layers["first_local_excess"]
    assert layers["first_local_excess"]["part"] == "MLP", layers["first_local_excess"]["parts"]  # the fault scales the MLP
    assert (out / "engine.log").read_text().count("engine fault planted") == 2  # the first engine, and the restart
    text = render_report(out, "en")[0].read_text()
    assert "Escalated: endpoint accuracy was FAIL" in text and "Likely cause" in text and "**layer 12, MLP**" in text

