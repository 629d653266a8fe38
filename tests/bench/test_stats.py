import math

import numpy as np
import pytest

from llm_adapt.bench import stats
from llm_adapt.bench.arrivals import schedule
from llm_adapt.bench.client import RequestSpec, payload
from llm_adapt.bench.events import event_text as chunk_text


def rec(ttft=0.1, e2el=1.0, out=10, ok=True, itl=(0.1,), kind=None, lag=0.0, max_tokens=10, chunks=10, client=10,
        start=0.0):
    return {"start": start, "success": ok, "ttft": ttft, "e2el": e2el, "output_tokens": out, "prompt_tokens": 5, "itl": list(itl),
            "error_kind": kind, "dispatch_lag": lag, "max_tokens": max_tokens, "chunks": chunks,
            "client_tokens": client, "usage_reported": True}


def test_tpot_follows_vllm():
    assert stats.tpot(rec(ttft=0.1, e2el=1.0, out=10)) == pytest.approx(0.1)
    assert stats.tpot(rec(out=1)) is None
    # no usage from the server: the client tokenizer's count, as vLLM's tokenizer fallback
    assert stats.tpot(rec(ttft=0.1, e2el=1.0, out=None, client=4)) == pytest.approx(0.3)


def test_goodput_lets_one_token_outputs_pass_the_tpot_slo():
    one = rec(ttft=0.05, e2el=0.05, out=1)
    slow = rec(ttft=0.05, e2el=2.05, out=11)  # TPOT 200 ms
    assert stats.meets_slo(one, {"tpot": 1})  # vLLM: TPOT of a one-token output is 0 for goodput
    assert not stats.meets_slo(slow, {"tpot": 100}) and stats.meets_slo(slow, {"tpot": 200})
    assert not stats.meets_slo(one, {"ttft": 40}) and stats.meets_slo(one, {"ttft": 50, "e2el": 50})
    m = stats.compute_metrics([one, slow], 1.0, {"tpot": 100})
    assert m["good_requests"] == 1 and m["median_tpot_ms"] == pytest.approx(200)  # one-token TPOT not in stats


def test_itl_pools_token_events_and_equals_tpot_when_one_token_each():
    records = [rec(ttft=0.2, e2el=0.2 + 9 * 0.05, out=10, itl=[0.05] * 9),
               rec(ttft=0.1, e2el=0.1 + 9 * 0.03, out=10, itl=[0.03] * 9)]
    m = stats.compute_metrics(records, 1.0)
    assert m["mean_itl_ms"] == pytest.approx(m["mean_tpot_ms"]) == pytest.approx(40)
    assert m["p99_itl_ms"] == pytest.approx(50)


def test_peak_rates_by_hand():
    # A: starts 0, tokens at 0.5, 0.9, 1.2; B: starts 1.1, tokens at 1.2, 1.7; C: starts 2.5, token at 2.6
    a = rec(start=0.0, ttft=0.5, itl=[0.4, 0.3], e2el=1.2, out=3)
    b = rec(start=1.1, ttft=0.1, itl=[0.5], e2el=0.6, out=2)
    c = rec(start=2.5, ttft=0.1, itl=[], e2el=0.1, out=1)
    assert stats.peak_rates([a, b, c]) == (3.0, 2)  # second 1: tokens 1.2, 1.2, 1.7; A and B both active
    assert stats.peak_rates([]) == (0.0, 0)


def test_percentile_keys_follow_vllm():
    m = stats.compute_metrics([rec()], 1.0, pcts=(99.9, 50))
    assert "p99.9_ttft_ms" in m and "p50_e2el_ms" in m and "p99_ttft_ms" not in m


def test_compute_metrics_by_hand():
    records = [rec(), rec(ttft=0.3, e2el=2.0, out=20), rec(ok=False, kind="http_500", ttft=None, out=None)]
    m = stats.compute_metrics(records, duration_s=4.0, slo={"ttft": 200})
    assert m["completed"] == 2 and m["failed"] == 1 and m["errors"] == {"http_500": 1}
    assert m["total_output_tokens"] == 30 and m["output_throughput"] == pytest.approx(7.5)
    assert m["request_throughput"] == pytest.approx(0.5)
    assert m["mean_ttft_ms"] == pytest.approx(200) and m["median_e2el_ms"] == pytest.approx(1500)
    assert m["achieved_concurrency"] == pytest.approx(0.75)
    assert m["good_requests"] == 1 and m["request_goodput"] == pytest.approx(0.25)


def test_latency_summary_and_knee():
    lat = stats.latency_summary([1.0, 2.0, 3.0, 4.0])
    assert lat["avg_latency"] == 2.5 and lat["iterations"] == 4
    points = [{"load": 1, "output_throughput": 10}, {"load": 2, "output_throughput": 19},
              {"load": 4, "output_throughput": 20}, {"load": 8, "output_throughput": 20.5}]
    assert stats.knee(points)["load"] == 2


def test_token_accounting_flags_disagreement_and_wrong_length():
    acc = stats.token_accounting([rec(), rec(out=8, client=12, chunks=8)])
    assert acc["client_vs_server_disagree"] == 1 and acc["wrong_length"] == 1 and not acc["fixed_length_honoured"]


def test_schedule():
    assert schedule(3, math.inf) == [0.0, 0.0, 0.0]
    times = schedule(4000, rate=10.0, burstiness=1.0, seed=1)
    assert np.mean(np.diff(times)) == pytest.approx(0.1, rel=0.05)
    assert times[-1] == pytest.approx(400.0)  # vLLM rescales the sum to n / rate exactly
    assert times[0] > 0  # the first request waits its own interval, as in vLLM
    assert schedule(4, 2.0, burstiness=math.inf) == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert schedule(5, 2.0, seed=3) == schedule(5, 2.0, seed=3)
    bursty = np.diff(schedule(4000, 10.0, burstiness=0.2, seed=1))
    assert np.std(bursty) > np.std(np.diff(times))  # lower shape, burstier arrivals


def test_payload_and_chunk_text():
    path, body = payload(RequestSpec(0, [1, 2, 3], 8), "m")
    assert path == "completions" and body["prompt"] == [1, 2, 3] and body["ignore_eos"] and body["min_tokens"] == 8
    assert body["stream_options"] == {"include_usage": True}
    path, body = payload(RequestSpec(0, None, 8, messages=[{"role": "user", "content": "x"}]), "m")
    assert path == "chat/completions"
    assert chunk_text({"choices": [{"delta": {"role": "assistant"}}]}) == ""  # role-only chunk carries no content
    assert chunk_text({"choices": [{"delta": {"content": "a"}}]}) == "a"
    assert chunk_text({"choices": [{"text": "b"}]}) == "b"


def test_latency_summary_of_no_successful_request_is_nan_not_a_crash():
    import math

    from llm_adapt.bench.stats import latency_summary

    out = latency_summary([])
    assert out["iterations"] == 0 and math.isnan(out["avg_latency"]) and math.isnan(out["p99_latency"])
