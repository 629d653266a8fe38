"""The process manager: fail fast on a dying engine, stop every descendant."""

import sys
import time

import psutil
import pytest

from llm_adapt.engines.server import EngineStartError, LaunchSpec, ManagedServer, free_port

CHILDREN = """
import http.server, subprocess, sys, threading
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def spec(argv, port, timeout=30.0):
    return LaunchSpec(engine="fake", argv=argv, env={}, host="127.0.0.1", port=port, served_model="m",
                      startup_timeout_s=timeout)


def test_engine_dying_at_start_fails_at_once_with_its_log(tmp_path):
    argv = [sys.executable, "-c", "import sys; print('CUDA out of memory, pretend'); sys.exit(3)"]
    started = time.monotonic()
    with pytest.raises(EngineStartError, match="exited with code 3") as info:
        with ManagedServer(spec(argv, free_port()), tmp_path / "log"):
            pass
    assert "CUDA out of memory" in str(info.value)
    assert time.monotonic() - started < 10


def test_never_ready_times_out_and_is_stopped(tmp_path):
    argv = [sys.executable, "-c", "import time; time.sleep(600)"]
    server = ManagedServer(spec(argv, free_port(), timeout=2), tmp_path / "log")
    with pytest.raises(EngineStartError, match="not ready after"):
        with server:
            pass
    assert server.proc.poll() is not None


def test_stop_reaches_grandchildren(tmp_path):
    port = free_port()
    with ManagedServer(spec([sys.executable, "-c", CHILDREN, str(port)], port), tmp_path / "log") as server:
        family = psutil.Process(server.proc.pid).children(recursive=True)
        assert family, "the fake engine should have spawned a child"
    time.sleep(0.5)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family)
    assert server.proc.poll() is not None
