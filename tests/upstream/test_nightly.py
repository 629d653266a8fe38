"""The nightly AISBench config form an AISBench eval exports: upstream's loader fields, the served accuracy as
the baseline, the plan's options as server_cmd with the port as $SERVER_PORT; and no lm_eval e2e config from it."""

import json

import yaml

from llm_adapt.cli import main
from llm_adapt.upstream import formats
from llm_adapt.upstream.template_rules import layer_matrix_rule

from .test_export import npu_run

AIS = {"dataset_conf": "gsm8k/gsm8k_gen_0_shot_cot_chat_prompt", "request_conf": "vllm_api_general_chat",
       "data": "given", "max_out_len": 512, "batch_size": 4, "generation_kwargs": {"temperature": 0, "ignore_eos": False},
       "accuracy": {"served": 41.666, "gold": 43.75}, "failed_requests": [], "version": "3.1.20260630", "threshold": 1.0}


def test_nightly_config_in_upstreams_form():
    argv = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--served-model-name", "x",
            "--host", "0.0.0.0", "--port", "8000", "--dtype", "bfloat16", "--enforce-eager"]
    config = formats.nightly_config(AIS, name="tiny-acc", model_id="acme/tiny", argv=argv)
    (case,) = config["test_cases"]
    assert case["model"] == "acme/tiny" and case["envs"] == {"SERVER_PORT": "DEFAULT_PORT"}
    assert case["server_cmd"] == ["--port", "$SERVER_PORT", "--dtype", "bfloat16", "--enforce-eager"]
    acc = case["benchmarks"]["acc"]
    assert acc == {"case_type": "accuracy", "dataset_path": "vllm-ascend/gsm8k-lite", "request_conf": "vllm_api_general_chat",
                   "dataset_conf": "gsm8k/gsm8k_gen_0_shot_cot_chat_prompt", "max_out_len": 512, "batch_size": 4,
                   "baseline": 41.67, "threshold": 1.0}
    assert formats.nightly_problems(config) == []
    assert formats.nightly_problems({"test_cases": [{"name": "x"}]})  # a broken one is refused


def test_an_aisbench_eval_exports_the_nightly_form_and_no_e2e_config(tmp_path, tiny_llama):
    ev = tmp_path / "eval.json"
    ev.write_text(json.dumps({"kind": "eval", "schema_version": 2, "model": "tiny", "backend": "aisbench",
                              "endpoint": {"base_url": "http://127.0.0.1:1/v1", "model": "tiny-llama", "api_key": None},
                              "settings": {"limit": 4}, "scores": [{"task": "gsm8k", "metric": "accuracy", "served": 0.4167,
                                                                    "gold": 0.4375, "served_stderr": None, "num_fewshot": 0,
                                                                    "chat": True}],
                              "paired": [{"task": "gsm8k", "metric": "accuracy", "n": 48}], "baseline": [], "skipped": [],
                              "seconds": {}, "verdict": {"status": "PASS", "reasons": [], "skipped": []}, "aisbench": AIS}))
    run_dir = npu_run(tmp_path / "run", tiny_llama, eval_json=ev)
    dest = tmp_path / "upstream"
    assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(dest)]) == 0
    text = (dest / formats.NIGHTLY_DIR / "tiny-llama.yaml").read_text()
    assert "over 48 items of a local copy of the dataset" in text
    (case,) = yaml.safe_load(text)["test_cases"]
    assert case["benchmarks"]["acc"]["baseline"] == 41.67 and "$SERVER_PORT" in case["server_cmd"]
    assert not (dest / "tests/e2e/models/configs/tiny-llama.yaml").exists()
    # the same export's adaptation report holds the skill's layer-by-layer matrix, a row per decoder layer
    (report,) = dest.rglob("*-adaptation-report.md")
    layers = json.loads((tiny_llama / "config.json").read_text())["num_hidden_layers"]
    assert layer_matrix_rule(report.read_text(), layers) == []
