"""The process manager: fail fast on a dying engine, stop every descendant, die with llm-adapt."""

import os
import signal
import subprocess
import sys
import tempfile
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
    error = info.value
    assert error.cause == "CUDA out of memory, pretend" and error.log_path == tmp_path / "log"
    assert str(error) == f"fake exited with code 3 during start-up: CUDA out of memory, pretend (full log: {tmp_path / 'log'})"
    assert time.monotonic() - started < 10


def test_start_error_names_the_root_cause_once_on_one_line(tmp_path):
    script = ("import sys\n"
              "print('(EngineCore_DP0 pid=1) ERROR 11-30 08:00:00 [core.py:1] ValueError: no room for KV')\n"
              "print('(APIServer pid=2) RuntimeError: Engine core initialization failed. See root cause above.')\n"
              "sys.exit(1)")
    with pytest.raises(EngineStartError) as info:
        with ManagedServer(spec([sys.executable, "-c", script], free_port()), tmp_path / "log"):
            pass
    assert info.value.cause == "ValueError: no room for KV"
    assert "\n" not in str(info.value) and str(info.value).count("no room for KV") == 1


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


# A vLLM stand-in that leaves an inter-process socket where vLLM puts its own, as a signalled engine does.
LEAVES_A_SOCKET = CHILDREN.replace("import http.server,", """import os, socket, uuid
socket.socket(socket.AF_UNIX).bind(os.path.join(os.environ["VLLM_RPC_BASE_PATH"], str(uuid.uuid4())))
import http.server,""")


def test_a_vllm_servers_sockets_go_with_it(tmp_path):
    port = free_port()
    fake_vllm = replace_engine(spec([sys.executable, "-c", LEAVES_A_SOCKET, str(port)], port), "vllm")
    with ManagedServer(fake_vllm, tmp_path / "log") as server:
        rpc_dir = server.rpc_dir
        assert len(os.listdir(rpc_dir)) == 1 and os.path.dirname(rpc_dir) == tempfile.gettempdir()
    assert not os.path.exists(rpc_dir)


def test_a_vllm_server_that_fails_to_start_leaves_no_socket_directory(tmp_path, monkeypatch):
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(real_mkdtemp(**kw)) or made[-1])
    argv = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with pytest.raises(EngineStartError, match="exited with code 3"):
        with ManagedServer(replace_engine(spec(argv, free_port()), "vllm"), tmp_path / "log"):
            pass
    assert made and not any(os.path.exists(path) for path in made)


def replace_engine(launch: LaunchSpec, engine: str) -> LaunchSpec:
    from dataclasses import replace

    return replace(launch, engine=engine)


# A stand-in for `llm-adapt serve`: starts a fake engine whose children include one that left the
# group (setsid), prints every pid, and waits to be killed.
PARENT = """
import sys, time, psutil
from pathlib import Path
from llm_adapt.engines.server import LaunchSpec, ManagedServer, free_port
port = free_port()
child = ("import http.server, subprocess, sys\\n"
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\n"
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\\n"
         "class H(http.server.BaseHTTPRequestHandler):\\n"
         "    def do_GET(self): self.send_response(200); self.end_headers()\\n"
         "    def log_message(self, *a): pass\\n"
         "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\\n")
spec = LaunchSpec(engine="vllm", argv=[sys.executable, "-c", child, str(port)], env={}, host="127.0.0.1", port=port,
                  served_model="m", startup_timeout_s=30)  # "vllm": it gets a socket directory of its own
with ManagedServer(spec, Path(sys.argv[1])) as server:
    while len(psutil.Process(server.proc.pid).children()) < 2:
        time.sleep(0.1)
    time.sleep(1.5)  # the watchdog polls twice a second: let it see the family
    family = [server.proc.pid] + [p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)]
    print(" ".join(map(str, family + [server.watchdog.pid])), flush=True)
    print(server.rpc_dir, flush=True)
    time.sleep(600)
"""


def running(pids):
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_engine_and_its_escaped_children_die_with_a_killed_parent(tmp_path, sig):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "log")], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        rpc_dir = parent.stdout.readline().strip()
        assert len(pids) == 4 and len(running(pids)) == 4  # engine, two children, watchdog
        assert os.path.isdir(rpc_dir)
        os.kill(parent.pid, sig)
        deadline = time.monotonic() + 30
        while (running(pids) or os.path.exists(rpc_dir)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert running(pids) == []
        assert not os.path.exists(rpc_dir)  # the watchdog removed what the killed parent could not
    finally:
        parent.kill()
        parent.wait()
