"""The load generator's event loop on plain data: what it prints when streams are cut."""

import asyncio
import logging

from llm_adapt.bench.load import quiet_transport_errors


def test_a_cut_stream_prints_no_transport_traceback_but_other_errors_still_show(caplog):
    loop = quiet_transport_errors(asyncio.new_event_loop())
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.call_exception_handler({"message": "Fatal error on transport TCPTransport",
                                         "exception": ConnectionResetError(104, "reset"), "transport": object()})
            loop.call_exception_handler({"message": "socket gone", "exception": BrokenPipeError()})
            assert not caplog.records  # a request's error: its record keeps it
            loop.call_exception_handler({"message": "a bug", "exception": ValueError("boom")})
            assert [r.getMessage() for r in caplog.records] == ["a bug"]
    finally:
        loop.close()
