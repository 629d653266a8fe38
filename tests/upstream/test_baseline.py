"""export --baseline-file: the published score of the same model and size, gsm8k preferred (upstream/baseline.py).
The checks on plain data, then the export that names it in the report and the e2e config."""

import json
import math

import pytest
import yaml

from llm_adapt.errors import UsageError
from llm_adapt.upstream.baseline import beside_measured, parse_baseline

from .test_export import DOCS, exported, npu_run

GOOD = {"model": "acme/tiny-llama", "dataset": "gsm8k", "metric": "accuracy", "score": 40.5,
        "source": "https://modelscope.cn/models/acme/tiny-llama"}


def test_a_published_gsm8k_score_of_the_same_model_is_taken():
    b = parse_baseline(GOOD, "b.json", "acme/tiny-llama")
    assert b.score == 40.5 and not b.fallback
    assert b.words() == ("gsm8k accuracy 40.5 points for acme/tiny-llama, published at "
                         "https://modelscope.cn/models/acme/tiny-llama")
    other_org = parse_baseline({**GOOD, "model": "mirror/Tiny-Llama"}, "b.json", "acme/tiny-llama")
    assert other_org.model == "mirror/Tiny-Llama"  # the same model and size under another organization


def test_another_dataset_is_named_as_the_fallback():
    b = parse_baseline({**GOOD, "dataset": "mmlu", "fallback_reason": "no gsm8k score published"}, "b", "acme/tiny-llama")
    assert b.fallback and "(a fallback: gsm8k preferred; no gsm8k score published)" in b.words()


@pytest.mark.parametrize("change,words", [
    ({"model": "acme/tiny-llama-2x"}, "is not the exported"), ({"score": 140}, "not a number of points"),
    ({"score": math.nan}, "not a number of points"), ({"score": True}, "not a number of points"),
    ({"score": "40"}, "not a number of points"), ({"source": ""}, "missing source"), ({"dataset": None}, "missing dataset")])
def test_a_baseline_that_is_not_one_is_refused_in_one_line(change, words):
    with pytest.raises(UsageError) as err:
        parse_baseline({**GOOD, **change}, "b.json", "acme/tiny-llama")
    assert words in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UsageError, match="expected a JSON or YAML file"):
        parse_baseline([GOOD], "b.json", "acme/tiny-llama")


def test_the_served_score_of_the_same_dataset_is_held_beside_it():
    b = parse_baseline(GOOD, "b", "acme/tiny-llama")
    scores = [{"task": "gsm8k", "metric": "exact_match,strict-match", "served": 0.4123}]
    beside = beside_measured(b, scores)
    assert beside is not None and beside.served == 41.23 and beside.difference == pytest.approx(0.73)
    assert beside_measured(b, [{"task": "mmlu", "metric": "acc", "served": 0.3}]) is None
    assert beside_measured(b, [{"task": "gsm8k", "metric": "exact_match,strict-match", "served": None}]) is None
    assert beside_measured(b, [{"task": "gsm8k", "metric": "exact_match,strict-match", "served": math.nan}]) is None


def test_the_export_names_the_published_baseline_in_the_report_and_the_e2e_config(model, tmp_path, capsys):
    out = npu_run(tmp_path / "run", model)
    given = tmp_path / "published.yaml"
    given.write_text(yaml.safe_dump(GOOD))
    files = exported(out, tmp_path / "upstream", "--baseline-file", str(given), "--lang", "en")
    report = files[f"{DOCS}/tiny-llama-adaptation-report.md"]
    assert "Published baseline: gsm8k accuracy 40.5 points for acme/tiny-llama, published at " \
           "https://modelscope.cn/models/acme/tiny-llama. The served model on `gsm8k` in this run: 41.23 points, " \
           "+0.73 against it." in report
    config = files["tests/e2e/models/configs/tiny-llama.yaml"]
    assert "# Published baseline: gsm8k accuracy 40.5 points for acme/tiny-llama" in config
    assert yaml.safe_load(config)["tasks"][0]["name"] == "gsm8k"  # the comment leaves upstream's keys as they were
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({**GOOD, "model": "acme/huge-llama"}))
    capsys.readouterr()
    from llm_adapt.cli import main

    assert main(["export", str(out), "--to", "vllm-ascend", "--out", str(tmp_path / "up2"), "--baseline-file",
                 str(bad)]) == 2
    assert "is not the exported" in capsys.readouterr().err and not (tmp_path / "up2").exists()
