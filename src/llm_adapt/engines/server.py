"""Start, watch and stop a model server process.

The server runs in its own session (process group) so that stopping it reaches every
process it spawned (vLLM's engine core, its workers); anything that escaped the group is
found through the process tree and stopped too. Start-up fails at once when the process
dies, with the log's root-cause line, instead of waiting for a timeout.

The engine also dies with us: the kernel sends it SIGTERM when the thread that started it
ends (PR_SET_PDEATHSIG, Linux), and a small watchdog process stops its whole group and tree
when our pid disappears (SIGKILL, OOM killer), since the death signal reaches only the
direct child and not vLLM's engine core.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from llm_adapt.engines import warm_start
from llm_adapt.engines.client import http_client
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.engines.logcause import root_cause
from llm_adapt.engines.watchdog import die_with_parent
from llm_adapt.errors import EngineStartError  # noqa: F401 - raised here, and its users import it from here

RPC_ENV = "VLLM_RPC_BASE_PATH"


@dataclass
class LaunchSpec:
    engine: str  # "vllm" | "transformers"
    argv: list[str]
    env: dict[str, str]
    host: str
    port: int
    served_model: str
    ready_paths: tuple[str, ...] = ("/health",)
    startup_timeout_s: float = 900.0
    unset_env: tuple[str, ...] = ()  # variables removed from the inherited environment
    extra: dict[str, str] = field(default_factory=dict)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def log_cause(path: Path) -> str | None:
    try:
        return root_cause(Path(path).read_text(errors="replace"))
    except OSError:
        return None


class ManagedServer:
    """Context manager: `with ManagedServer(spec, log) as server: server.endpoint ...`."""

    def __init__(self, spec: LaunchSpec, log_path: Path):
        self.spec = spec
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None
        self.watchdog: subprocess.Popen | None = None
        self.startup_seconds: float | None = None
        self.rpc_dir: str | None = None

    @property
    def endpoint(self) -> Endpoint:
        host = "127.0.0.1" if self.spec.host in ("0.0.0.0", "::") else self.spec.host
        return Endpoint(base_url=f"http://{host}:{self.spec.port}/v1", model=self.spec.served_model)

    def __enter__(self) -> "ManagedServer":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in self.spec.unset_env} | self.spec.env
        if self.spec.engine == "vllm" and RPC_ENV not in env:
            # vLLM's inter-process sockets go to the temp directory, and an engine stopped by a signal leaves
            # them there: a directory of this server's own, removed when it stops, keeps them from piling up.
            self.rpc_dir = env[RPC_ENV] = tempfile.mkdtemp(prefix="llm-adapt-rpc-")  # short: 107-byte socket paths
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.proc = self._forked_warm(env, log) or subprocess.Popen(
                self.spec.argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=die_with_parent(os.getpid()))
        self.watchdog = start_watchdog(self.proc.pid, self.rpc_dir)
        self._wait_ready(started)
        self.startup_seconds = round(time.monotonic() - started, 2)

    def _forked_warm(self, env: dict[str, str], log):
        """The tests' vLLM servers, forked from a process that has imported vLLM (engines/warm_start.py)."""
        directory = env.get(warm_start.ENV_DIR)
        if not directory or self.spec.engine != "vllm" or warm_start.module_of(self.spec.argv) is None:
            return None
        try:
            return warm_start.launch(directory, self.spec.argv, env, log.fileno())
        except warm_start.Refused as why:
            log.write(f"[llm-adapt] started the ordinary way, not from a warm process: {why}\n".encode())
            log.flush()
            return None

    def _wait_ready(self, started: float) -> None:
        deadline = started + self.spec.startup_timeout_s
        root = self.endpoint.root_url
        with http_client(self.endpoint, 5.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise EngineStartError(exit_summary(self.spec.engine, self.proc.returncode),
                                           log_cause(self.log_path), self.log_path)
                if all(_answers(client, root + path) for path in self.spec.ready_paths):
                    return
                time.sleep(0.5)
        raise EngineStartError(f"{self.spec.engine} not ready after {self.spec.startup_timeout_s:.0f} s",
                               log_cause(self.log_path), self.log_path)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM the whole group, wait, then SIGKILL whatever is left (descendants included)."""
        if self.proc is None:
            self._remove_rpc_dir()
            return
        family = _descendants(self.proc.pid)
        _signal_group(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        for child in family:
            _kill_quietly(child)
        psutil.wait_procs(family, timeout=5)
        self._stop_watchdog()
        self._remove_rpc_dir()

    def _remove_rpc_dir(self) -> None:
        if self.rpc_dir is not None:
            shutil.rmtree(self.rpc_dir, ignore_errors=True)
            self.rpc_dir = None

    def _stop_watchdog(self) -> None:
        if self.watchdog is None:
            return
        if self.watchdog.poll() is None:
            self.watchdog.terminate()
        try:
            self.watchdog.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
            self.watchdog.wait(timeout=5)


def exit_summary(engine: str, returncode: int) -> str:
    text = f"{engine} exited with code {returncode} during start-up"
    if returncode == -signal.SIGKILL:
        text += " (killed: out of host memory?)"
    return text


def start_watchdog(engine_pid: int, leftover: str | None = None) -> subprocess.Popen:
    """A process of ours, in its own session, that stops the engine's group and tree when we die, and removes
    `leftover` (the engine's socket directory) then."""
    argv = [sys.executable, "-m", "llm_adapt.engines.watchdog", str(os.getpid()), str(engine_pid),
            *([leftover] if leftover else [])]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _answers(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the group id is the leader's pid: start_new_session=True
    except (ProcessLookupError, PermissionError):
        pass


def _kill_quietly(proc: psutil.Process) -> None:
    try:
        if proc.is_running():
            proc.kill()
    except psutil.Error:
        pass
