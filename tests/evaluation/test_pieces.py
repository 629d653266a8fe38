"""The pure pieces around lm-eval: samples to per-item correctness, pairing, baselines, backends, shipped tasks."""

import json
import random

import pytest

from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.errors import UsageError
from llm_adapt.evaluation import builtin
from llm_adapt.evaluation.baseline import parse_baseline
from llm_adapt.evaluation.harness import (
    Settings,
    aggregates,
    stderrs,
    gold_backend,
    per_item,
    served_backend,
)
from llm_adapt.evaluation.judge import baseline_rows, paired_rows, verdict
from llm_adapt.evaluation.tasks import parse_tasks


def _sample(doc_id, value, metric="exact_match", filt="first-number"):
    return {"doc_id": doc_id, "filter": filt, "metrics": [metric], metric: value}


def test_per_item_keys_by_metric_and_filter():
    samples = [_sample(0, 1.0), _sample(1, 0.0), _sample(0, 1, "acc", "none")]
    assert per_item(samples) == {"exact_match,first-number": {0: True, 1: False}, "acc,none": {0: True}}


def test_per_item_drops_non_binary_metrics():
    assert per_item([_sample(0, 0.37, "bleu")]) == {}


def test_aggregates_drop_stderr_and_names():
    res = {"results": {"t": {"alias": "t", "acc,none": 0.5, "acc_stderr,none": 0.1}}}
    assert aggregates(res, "t") == {"acc,none": 0.5}


def test_stderrs_keep_numbers_under_the_metric_name_and_drop_na():
    res = {"results": {"t": {"alias": "t", "acc,none": 0.5, "acc_stderr,none": 0.1, "em_stderr,strict": "N/A"}}}
    assert stderrs(res, "t") == {"acc,none": 0.1}
    assert stderrs({"results": {}}, "t") == {}


def test_paired_rows_pair_by_doc_id_only():
    served = {"acc,none": {i: i % 2 == 0 for i in range(30)}}
    gold = {"acc,none": {i: True for i in range(5, 40)}}
    (row,) = paired_rows("t", served, gold)
    assert row["n"] == 25  # ids 5..29
    assert row["gold_only"] == 13 and row["served_only"] == 0  # the odd ids 5..29
    assert row["status"] == "FAIL"


def test_paired_rows_clean_pass():
    items = {"acc,none": {i: i % 3 == 0 for i in range(60)}}
    (row,) = paired_rows("t", items, items)
    assert row["status"] == "PASS" and row["diff"] == 0.0


BASELINE = {"model_name": "LLM-Research/Llama-3.2-3B-Instruct", "num_fewshot": 5,
            "tasks": [{"name": "gsm8k", "metrics": [{"name": "exact_match,strict-match", "value": 0.71},
                                                   {"name": "exact_match,flexible-extract", "value": 0.76}]}]}


def test_baseline_in_vllm_ascend_format():
    b = parse_baseline(BASELINE, "b.yaml")
    assert b.rtol == 0.05 and b.num_fewshot == 5
    assert b.values == {"gsm8k": {"exact_match,strict-match": 0.71, "exact_match,flexible-extract": 0.76}}


@pytest.mark.parametrize("data,needle", [
    ([1, 2], "'tasks'"),
    ({"tasks": []}, "'tasks'"),
    ({"tasks": [{"name": "gsm8k"}]}, "'metrics'"),
    ({"tasks": [{"name": "gsm8k", "metrics": [{"name": "acc", "value": "high"}]}]}, "numeric"),
    ({**BASELINE, "rtol": 2}, "rtol"),
    ({**BASELINE, "num_fewshot": -1}, "num_fewshot"),
])
def test_bad_baselines_are_one_line_usage_errors(data, needle):
    with pytest.raises(UsageError) as exc:
        parse_baseline(data, "b.yaml")
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_baseline_rows_judge_with_rtol_and_say_what_is_missing():
    b = parse_baseline(BASELINE, "b.yaml")
    rows = baseline_rows("gsm8k", {"exact_match,strict-match": 0.60}, b)
    by = {r["metric"]: r["status"] for r in rows}
    assert by == {"exact_match,strict-match": "WARN", "exact_match,flexible-extract": "SKIP"}
    assert baseline_rows("gsm8k", {"exact_match,strict-match": 0.70}, b)[0]["status"] == "PASS"


def test_verdict_takes_the_worst_and_skips_alone_are_skip():
    rows = [{"task": "t", "metric": "m", "status": "PASS", "reason": "ok"},
            {"task": "t", "metric": "n", "status": "FAIL", "reason": "drop"}]
    v = verdict(rows, [], [])
    assert v["status"] == "FAIL" and v["reasons"] == ["t n: drop"]
    assert verdict([], [], ["gsm8k: not cached"])["status"] == "SKIP"


def test_backends():
    ep = Endpoint("http://h:8000/v1", "m")
    kind, args = served_backend(ep, "m", "/tok", generative=True, s=Settings(num_concurrent=8))
    assert kind == "local-chat-completions" and args["base_url"] == "http://h:8000/v1/chat/completions"
    assert args["num_concurrent"] == 8
    assert "batch_size" not in args  # lm-eval sends non-tokenized chat one request at a time
    kind, args = served_backend(ep, "m", "/tok", generative=False, s=Settings())
    assert kind == "local-completions" and args["base_url"].endswith("/v1/completions")
    assert args["batch_size"] == Settings().served_batch_size and args["tokenized_requests"]
    assert served_backend(ep, "m", "/tok", generative=False, s=Settings(served_batch_size=8))[1]["batch_size"] == 8
    assert gold_backend("/m", Settings(batch_size=8))[1]["dtype"] == "float32"


def test_parse_tasks():
    assert parse_tasks("builtin-mc, gsm8k,builtin-mc") == ["builtin-mc", "gsm8k"]
    with pytest.raises(UsageError):
        parse_tasks(" , ")


def test_shipped_tasks_are_what_the_seed_writes(tmp_path):
    builtin.write(tmp_path)
    for name in ("arith_test.jsonl", "arith_fewshot.jsonl"):
        assert (tmp_path / name).read_text() == (builtin.task_dir() / name).read_text()


def test_builtin_items_are_consistent():
    rows = builtin.items(200, random.Random(1))
    for r in rows:
        assert r["choices"][r["label"]] == r["answer"]
        assert len(set(r["choices"])) == 4 and all(int(c) > 0 for c in r["choices"])


def test_render_fills_the_data_dir(tmp_path):
    out = builtin.render(tmp_path)
    text = (out / "builtin-mc.yaml").read_text()
    assert "{data_dir}" not in text and str(builtin.task_dir()) in text
    assert json.loads((builtin.task_dir() / "arith_test.jsonl").read_text().splitlines()[0])["id"] == 0


def test_eval_reasons_keep_their_english_and_render_in_chinese():
    from llm_adapt.messages import loaded, message, stored
    from llm_adapt.judged.verdict import _task_detail

    gold = {"acc": {i: True for i in range(40)}}
    served = {"acc": {i: i >= 15 for i in range(40)}}  # 15 items lost: a significant drop
    v = verdict(paired_rows("arc", served, gold), [], [])
    assert v["status"] == "FAIL"
    assert v["reasons"][0].startswith("arc acc: significant drop: served 0.625 vs gold 1.000 on 40 items, diff -0.375")
    zh = message(v["reasons"][0], "zh")
    assert zh.startswith("arc acc：显著下降：服务端 0.625，金标准 1.000（40 道题），差值 -0.375") and "discordant" not in zh
    detail = _task_detail(loaded(json.loads(json.dumps(stored(v)))))  # as read back from eval.json
    assert str(detail) == f" ({v['reasons'][0]})" and message(detail, "zh") == f"（{zh}）"
    # a verdict of an older version (no keys) keeps its words
    assert message(_task_detail({"reasons": ["t n: drop"]}), "zh") == "（t n: drop）"
