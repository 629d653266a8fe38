"""The tests' warm start (engines/warm_start.py): a server forked from a warm process behaves as one
executed afresh for everything ManagedServer relies on, and never outlives whoever started it."""

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from llm_adapt.engines import warm_start
from llm_adapt.engines.server import free_port

PY = sys.executable


def test_only_this_interpreters_python_m_can_be_forked():
    assert warm_start.module_of([PY, "-m", "vllm.entrypoints.openai.api_server", "--port", "1"]) == \
        "vllm.entrypoints.openai.api_server"
    assert warm_start.module_of(["/usr/bin/env", "-m", "x"]) is None
    assert warm_start.module_of([PY, "script.py"]) is None
    assert warm_start.module_of([PY, "-m"]) is None


def test_a_launch_with_other_load_time_variables_is_refused():
    argv = [PY, "-m", "http.server"]
    assert warm_start.refusal(argv, {"LD_PRELOAD": "a.so", "X": "1"}, "http.server", {"LD_PRELOAD": "a.so"}) is None
    why = warm_start.refusal(argv, {"LD_PRELOAD": "b.so", "OMP_NUM_THREADS": "2"}, "http.server", {"LD_PRELOAD": "a.so"})
    assert why == "load-time variables differ: LD_PRELOAD, OMP_NUM_THREADS"
    assert warm_start.refusal(argv, {}, "json.tool", {}).startswith("not ")


def test_each_module_and_set_of_load_time_variables_has_its_own_warm_process():
    path = warm_start.socket_path
    assert path("d", "m", {"X": "1"}) == path("d", "m", {"X": "2"})  # not a load-time variable
    assert path("d", "m", {}) != path("d", "m", {"LD_PRELOAD": "libtcmalloc.so"})
    assert path("d", "m", {}) != path("d", "n", {})
    assert len(path("/tmp/llm-adapt-warm-abcdefgh", "m", {})) < 107  # a unix socket's limit


@pytest.fixture()
def warm_dir():
    import tempfile

    from tests.conftest import stop_warm_processes

    directory = tempfile.mkdtemp(prefix="llm-adapt-warm-")
    yield directory
    stop_warm_processes(directory, signal.SIGKILL)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_forked_server_runs_its_argv_in_its_own_cwd_session_and_log(warm_dir, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "hello.txt").write_text("forked")
    monkeypatch.chdir(site)
    port = free_port()
    with open(tmp_path / "server.log", "ab") as log:
        proc = warm_start.launch(warm_dir, [PY, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                                 dict(os.environ), log.fileno())
    assert os.getpgid(proc.pid) == proc.pid and psutil.Process(proc.pid).ppid() != os.getpid()
    deadline = time.monotonic() + 30
    while True:
        try:
            reply = httpx.get(f"http://127.0.0.1:{port}/hello.txt")
            break
        except httpx.HTTPError:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    assert reply.text == "forked"
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM and proc.poll() == -signal.SIGTERM
    assert "GET /hello.txt" in (tmp_path / "server.log").read_text()


def test_an_exit_code_and_its_message_come_back_as_from_the_executed_process(warm_dir, tmp_path):
    argv = [PY, "-m", "json.tool", str(tmp_path / "missing.json")]
    executed = subprocess.run(argv, capture_output=True, text=True)
    with open(tmp_path / "tool.log", "ab") as log:
        proc = warm_start.launch(warm_dir, argv, dict(os.environ), log.fileno())
    assert executed.returncode != 0 and proc.wait(timeout=30) == executed.returncode
    assert executed.stderr.strip().splitlines()[-1] in (tmp_path / "tool.log").read_text()


STARTER = """
import json, os, sys
from llm_adapt.engines import warm_start
proc = warm_start.launch(sys.argv[1], [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", sys.argv[2]],
                         dict(os.environ), 1)
print(json.dumps({"pid": proc.pid}), flush=True)
sys.stdin.read()
"""


def test_the_server_stops_when_its_starter_is_killed(warm_dir):
    # The warm process is ours and lives on: only the closed connection can tell it the starter is gone.
    first = warm_start.launch(warm_dir, [PY, "-m", "http.server", "--bind", "127.0.0.1", str(free_port())],
                              dict(os.environ), 1)
    os.killpg(first.pid, signal.SIGTERM)
    first.wait(timeout=10)
    starter = subprocess.Popen([PY, "-c", STARTER, warm_dir, str(free_port())], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        pid = json.loads(starter.stdout.readline())["pid"]
        assert not gone(pid)
        starter.kill()
        starter.wait()
        deadline = time.monotonic() + 30
        while not gone(pid):
            assert time.monotonic() < deadline, "the forked server outlived its starter"
            time.sleep(0.2)
    finally:
        if starter.poll() is None:
            starter.kill()


def test_a_launch_that_cannot_be_forked_is_refused_before_any_warm_process_starts(warm_dir):
    with pytest.raises(warm_start.Refused):
        warm_start.launch(warm_dir, ["/bin/echo", "hi"], {}, 1)
    assert os.listdir(warm_dir) == []


def test_a_server_started_from_a_thread_that_ends_keeps_running(warm_dir):
    """The warm process lives as long as the process that started it, not the thread."""
    import threading

    started = []
    thread = threading.Thread(target=lambda: started.append(warm_start.launch(
        warm_dir, [PY, "-m", "http.server", "--bind", "127.0.0.1", str(free_port())], dict(os.environ), 1)))
    thread.start()
    thread.join()
    (proc,) = started
    time.sleep(1.5)
    assert proc.poll() is None and not gone(proc.pid)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM
