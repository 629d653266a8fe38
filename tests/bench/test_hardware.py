import pytest

from llm_adapt.bench.hardware import decode_roofline
from llm_adapt.platforms.host_perf import copy_bandwidth


def test_decode_roofline_by_hand():
    # Llama-3.2-3B in bf16 (about 6.4 GB of weights) at 117 ms per token on a 43 GB/s host
    r = decode_roofline(6.4e9, 0, 0, 117.0, 43.0)
    assert r.floor_ms == pytest.approx(6.4e9 / 43e9 * 1000) and r.achieved_gb_per_s == pytest.approx(6.4 / 0.117)
    # reads faster than the given bandwidth moves data: that limit is wrong, and no share above 100% is given
    assert r.share_of_bandwidth_limit is None and "cannot be" in r.unreliable
    # SmolLM2-135M: 270 MB of weights, 23,040 KV bytes per token, 160 tokens of context, 20 ms per token
    small = decode_roofline(270e6, 23040, 160, 20.0, 43.0)
    assert small.bytes_per_token == 270e6 + 23040 * 160
    assert small.share_of_bandwidth_limit == pytest.approx((270e6 + 23040 * 160) / 43e9 * 1000 / 20.0)
    assert small.share_of_bandwidth_limit < 0.5  # far from the limit: overheads dominate
    assert small.unreliable is None


def test_copy_bandwidth_measures_something_plausible():
    r = copy_bandwidth(size_mib=64, repeats=3)
    assert 0.5 < r["gb_per_s"] < 5000 and r["median_gb_per_s"] <= r["gb_per_s"]
    assert r["gb_per_s"] == max(r["copy_gb_per_s"], r["read_gb_per_s"])


def test_matmul_limit_is_the_faster_dtype():
    from llm_adapt.platforms.host_perf import matmul_limit

    limit = matmul_limit(("bf16", "fp32"), size=128, repeats=2)
    assert limit["tflops"] == max(limit["by_dtype"].values()) and limit["dtype"] in ("bf16", "fp32")
    assert "left_out" not in limit


def test_without_native_bf16_the_limit_times_fp32_only_and_says_so(monkeypatch):
    from llm_adapt.platforms import host_perf as hardware

    timed = []
    real = hardware.matmul_rate
    monkeypatch.setattr(hardware, "matmul_rate", lambda d, *a: timed.append(d) or real(d, *a))
    limit = hardware.matmul_limit(("bf16", "fp32"), size=128, repeats=2, native_bf16=False)
    assert timed == ["fp32"] and limit["dtype"] == "fp32" and limit["by_dtype"] == {"fp32": limit["tflops"], "bf16": None}
    assert "no native bf16" in limit["left_out"]["bf16"] and "bf16" not in limit["source"]
    timed.clear()
    hardware.matmul_limit(("bf16", "fp32"), size=128, repeats=2, native_bf16=True)
    assert timed == ["bf16", "fp32"]


def test_batch_roofline_names_the_bound_that_binds():
    from llm_adapt.bench.hardware import batch_roofline

    # 1 GB of weights, 100 GB/s: 10 ms per step whatever the batch; 1e9 params at 1 TFLOP/s: 2 ms per stream
    one = batch_roofline(10**9, 0, 0, 10**9, 1, 50.0, 100.0, 1.0)
    assert one.bound == "memory" and one.limit_tok_s == pytest.approx(100.0)
    assert one.share_of_limit == pytest.approx(0.5)
    many = batch_roofline(10**9, 0, 0, 10**9, 16, 400.0, 100.0, 1.0)  # 32 ms of arithmetic > 10 ms of reading
    assert many.bound == "compute" and many.limit_tok_s == pytest.approx(500.0)
    assert many.share_of_limit == pytest.approx(0.8)
    beyond = batch_roofline(10**9, 0, 0, 10**9, 1, 258.0, 100.0, 1.0)  # 258% of a limit: the limit is unreliable
    assert beyond.share_of_limit is None and "258%" in beyond.unreliable
    kv = batch_roofline(10**9, 10**6, 1000, 10**6, 8, 1.0, 100.0, 1000.0)  # KV of 8 streams: 8 GB more per step
    assert kv.bound == "memory" and kv.limit_tok_s == pytest.approx(8 / 0.09)


def test_best_level_is_the_fastest_sweep_level():
    from llm_adapt.bench.hardware import BestLevel, best_level

    runs = [{"load": 1, "metrics": {"output_throughput": 30.0}}, {"load": 4, "metrics": {"output_throughput": 90.0}},
            {"load": 8, "metrics": {"output_throughput": float("nan")}}]
    assert best_level(runs) == BestLevel(output_tok_s=90.0, concurrency=4)
    assert best_level([{"load": "all", "metrics": {"output_throughput": 5.0}}]) is None


def test_published_limits_match_the_driver_name_most_specific_first():
    from llm_adapt.platforms.cuda import published_limits

    assert published_limits("NVIDIA H100 PCIe")["gb_per_s"] == 2000.0
    assert published_limits("NVIDIA H100 80GB HBM3")["gb_per_s"] == 3350.0
    assert published_limits("NVIDIA H200")["source"].startswith("published: NVIDIA H200")
    assert published_limits("NVIDIA A100-SXM4-80GB")["gb_per_s"] == 2039.0
    assert published_limits("Ascend910B3") is None  # no citable figure: left out, never assumed


def test_matmul_rate_is_measured():
    from llm_adapt.platforms.host_perf import matmul_rate

    rate = matmul_rate("fp32", size=256, repeats=2)
    assert rate["tflops"] > 0 and rate["source"].startswith("measured")
