"""Pure parsers and metrics reached otherwise only through slow end-to-end runs: coarse-grained KL,
the /metrics gauge parser, the ShareGPT reader."""

import json
import math

import pytest
import torch

from llm_adapt.accuracy.endpoint_metrics import as_server_view, coarse_kl, position_stats
from llm_adapt.bench.load import parse_metrics
from llm_adapt.bench.workload import _sharegpt_pairs
from llm_adapt.errors import UsageError


def test_coarse_kl_by_hand_and_a_lower_bound():
    p = torch.tensor([0.5, 0.3, 0.1, 0.1]).log()
    q = {0: math.log(0.4), 1: math.log(0.4)}  # the server's top-2; rest 0.2
    expected = 0.5 * math.log(0.5 / 0.4) + 0.3 * math.log(0.3 / 0.4) + 0.2 * math.log(0.2 / 0.2)
    assert coarse_kl(p, q) == pytest.approx(expected)
    q_full = torch.tensor([0.4, 0.4, 0.15, 0.05])
    full = float((p.exp() * (p - q_full.log())).sum())
    assert coarse_kl(p, q) <= full + 1e-12  # the log-sum inequality


def test_coarse_kl_of_identical_distributions_is_zero():
    lp = torch.log_softmax(torch.randn(50, dtype=torch.float64), -1)
    view, top1 = as_server_view(lp, actual=3, k=5)
    assert coarse_kl(lp, view) == pytest.approx(0.0, abs=1e-12)
    stats = position_stats(lp, 3, view, top1, 5)
    assert stats["same_top1"] == 1 and stats["topk_agree"] == 1.0 and stats["dlogprob"] == pytest.approx(0.0)


def test_metrics_parser_sums_label_sets_and_skips_nan():
    text = "\n".join([
        "# HELP vllm:num_requests_running Number of requests",
        'vllm:num_requests_running{model_name="a",engine="0"} 2.0',
        'vllm:num_requests_running{model_name="a",engine="1"} 1.0',
        'vllm:kv_cache_usage_perc{model_name="a"} NaN',
        'vllm:num_requests_waiting{model_name="a"} 4',
        "unrelated_metric 9",
    ])
    assert parse_metrics(text) == {"running": 3.0, "waiting": 4.0}


def test_sharegpt_reader(tmp_path):
    rows = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]},
            {"conversations": [{"from": "gpt", "value": "skipped: no human turn first"}]},
            {"no": "conversations"}]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows))
    assert _sharegpt_pairs(path) == [("hi", "hello")]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    assert _sharegpt_pairs(jsonl) == [("hi", "hello")]
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(UsageError, match="not JSON or JSONL"):
        _sharegpt_pairs(bad)
