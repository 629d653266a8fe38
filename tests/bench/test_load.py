"""The load generator on plain data: what its event loop prints when streams are cut, and its /metrics
gauge parser."""

import asyncio
import logging

from llm_adapt.bench.load import parse_metrics, quiet_transport_errors


def test_a_cut_stream_prints_no_transport_traceback_but_other_errors_still_show(caplog):
    loop = quiet_transport_errors(asyncio.new_event_loop())
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.call_exception_handler({"message": "Fatal error on transport TCPTransport",
                                         "exception": ConnectionResetError(104, "reset"), "transport": object()})
            loop.call_exception_handler({"message": "socket gone", "exception": BrokenPipeError()})
            # a Ctrl-C that landed inside a request's task (seen once in a bench interrupted mid-write)
            loop.call_exception_handler({"message": "Task exception was never retrieved",
                                         "exception": KeyboardInterrupt()})
            assert not caplog.records  # a request's error: its record keeps it; the stop: the run says it
            loop.call_exception_handler({"message": "a bug", "exception": ValueError("boom")})
            assert [r.getMessage() for r in caplog.records] == ["a bug"]
    finally:
        loop.close()


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
