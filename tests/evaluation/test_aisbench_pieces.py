"""The pure parts of the AISBench backend, on plain values and on AISBench 3.1's recorded output
(tests/fixtures/aisbench/: a 4-item gsm8k-format run, the served side a mock server, the gold SmolLM2)."""

import ast
import json
from pathlib import Path

import pytest

from llm_adapt.errors import UsageError
from llm_adapt.evaluation.aisbench import config, install, results
from llm_adapt.evaluation.judge import paired_rows

FIXTURES = Path(__file__).parent.parent / "fixtures" / "aisbench"


def _load(name):
    return json.loads((FIXTURES / name).read_text())


def _models(text):
    """The `models = [dict(...)]` entries of a written config, as {field: source text}."""
    tree = ast.parse(text)
    (assign,) = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "models"]
    return [{kw.arg: ast.unparse(kw.value) for kw in call.keywords} for call in assign.value.elts]


def test_config_is_python_in_the_tutorials_form():
    served = config.Served("http://10.0.0.5:8000/v1", "Qwen3-8B", max_out_len=256, batch_size=8)
    text = config.render(served, data_dir="/data/gsm8k")
    (model,) = _models(text)
    assert model["type"] == "VLLMCustomAPIChat" and model["abbr"] == "'served'" and model["attr"] == "'service'"
    assert model["host_ip"] == "'10.0.0.5'" and model["host_port"] == "8000" and model["model"] == "'Qwen3-8B'"
    assert model["url"] == "''" and model["max_out_len"] == "256" and model["batch_size"] == "8"
    assert ast.literal_eval(model["generation_kwargs"]) == {"temperature": 0, "ignore_eos": False}
    assert "from ais_bench.benchmark.configs.datasets.gsm8k.gsm8k_gen_0_shot_cot_chat_prompt import gsm8k_datasets" in text
    assert "datasets = [dict(d, path='/data/gsm8k') for d in gsm8k_datasets]" in text
    assert "import summarizer" in text


def test_config_for_the_eval_pass_adds_the_gold_and_completions_use_their_class():
    text = config.render(config.Served("http://h:9/v1", "m", api="completions"), with_gold=True)
    served, gold = _models(text)
    assert served["type"] == gold["type"] == "VLLMCustomAPI" and gold["abbr"] == "'gold'"
    assert "path=" not in text.split("datasets = ")[1].split("\n")[0]  # AISBench's own dataset folder


def test_a_server_under_a_path_prefix_is_given_as_its_url():
    (model,) = _models(config.render(config.Served("https://gw.example/prefix/v1", "m")))
    assert model["url"] == "'https://gw.example/prefix/'" and model["enable_ssl"] == "True"


@pytest.mark.parametrize("bad", ["gsm8k", "gsm8k/", "../x/y", "a/b/c", "gsm8k/name with space"])
def test_a_malformed_dataset_conf_is_one_line(bad):
    with pytest.raises(UsageError, match="FAMILY/NAME") as exc:
        config.dataset_module(bad)
    assert "\n" not in str(exc.value)


def test_datasets_variable_is_read_from_the_module_text():
    text = "gsm8k_reader_cfg = dict()\ngsm8k_datasets = [\n    dict(abbr='gsm8k')]\n"
    assert config.datasets_variable(text) == "gsm8k_datasets"
    with pytest.raises(UsageError):
        config.datasets_variable("x = 1\n")


def test_correctness_from_recorded_results():
    served, gold = _load("results-served-gsm8k.json"), _load("results-gold-gsm8k.json")
    assert results.correctness(served) == {0: False, 1: False, 2: False, 3: False}
    assert results.correctness(gold) == {0: False, 1: False, 2: False, 3: False}
    assert results.accuracy(served) == 0.0


def test_correctness_needs_the_details_and_booleans():
    with pytest.raises(ValueError, match="dump-eval-details"):
        results.correctness({"accuracy": 50.0})
    with pytest.raises(ValueError, match="item 1"):
        results.correctness({"details": {"0": {"correct": [True]}, "1": {"correct": ["yes"]}}})
    assert results.correctness({"details": {"0": {"correct": [True, False]}, "1": {"correct": [True]}}}) == {0: False, 1: True}


def test_pairing_aisbench_items_as_the_lm_eval_path_pairs_them():
    served = {"details": {str(i): {"correct": [i >= 20]} for i in range(60)}}
    gold = {"details": {str(i): {"correct": [True]} for i in range(60)}}
    (row,) = paired_rows("gsm8k", {"accuracy": results.correctness(served)}, {"accuracy": results.correctness(gold)})
    assert row["n"] == 60 and row["gold_only"] == 20 and row["status"] == "FAIL"


def test_failed_requests_and_gold_lines_from_recorded_predictions():
    rows = results.predictions((FIXTURES / "predictions-served-gsm8k.jsonl").read_text())
    assert [r["id"] for r in rows] == [0, 1, 2, 3] and results.failed(rows, 4) == []
    assert results.failed([dict(rows[0], success=False)] + rows[1:3], 4) == [0, 3]
    line = json.loads(results.gold_line(rows[0], "answer:307"))
    assert line["prediction"] == "answer:307" and line["origin_prompt"] == rows[0]["origin_prompt"] and line["id"] == 0
    (msg,) = results.chat_messages(rows[0]["origin_prompt"])
    assert msg["role"] == "user" and msg["content"].startswith("Answer the following question.")
    assert results.chat_messages("plain") == "plain"


def test_locate_and_the_one_line_when_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(install, "default_venv", lambda: tmp_path / "none")
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    assert install.locate({}) is None
    with pytest.raises(UsageError) as exc:
        install.require({})
    assert "llm_adapt.evaluation.aisbench.install" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(UsageError, match="holds no ais_bench"):
        install.require({install.ENV: str(tmp_path)})
    exe = tmp_path / "venv" / "bin" / "ais_bench"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert install.locate({install.ENV: str(tmp_path / "venv")}) == exe
    assert install.locate({install.ENV: str(exe)}) == exe
