import pytest

from llm_adapt.bench.hardware import copy_bandwidth, decode_roofline


def test_decode_roofline_by_hand():
    # Llama-3.2-3B in bf16 (about 6.4 GB of weights) at 117 ms per token on a 43 GB/s host
    r = decode_roofline(6.4e9, 0, 0, 117.0, 43.0)
    assert r["floor_ms"] == pytest.approx(6.4e9 / 43e9 * 1000) and r["achieved_gb_per_s"] == pytest.approx(6.4 / 0.117)
    assert r["share_of_bandwidth_limit"] > 1.0  # reads faster than a copy moves data: at the limit
    # SmolLM2-135M: 270 MB of weights, 23,040 KV bytes per token, 160 tokens of context, 20 ms per token
    small = decode_roofline(270e6, 23040, 160, 20.0, 43.0)
    assert small["bytes_per_token"] == 270e6 + 23040 * 160
    assert small["share_of_bandwidth_limit"] == pytest.approx((270e6 + 23040 * 160) / 43e9 * 1000 / 20.0)
    assert small["share_of_bandwidth_limit"] < 0.5  # far from the limit: overheads dominate


def test_copy_bandwidth_measures_something_plausible():
    r = copy_bandwidth(size_mib=64, repeats=3)
    assert 0.5 < r["gb_per_s"] < 5000 and r["median_gb_per_s"] <= r["gb_per_s"]
