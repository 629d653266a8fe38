"""`python -m llm_adapt.engines.watchdog PARENT_PID ENGINE_PID [LEFTOVER_DIR]`: stop the engine when its parent
dies, and remove LEFTOVER_DIR (the engine's socket directory, engines/server.py), which the parent would have.
`die_with_parent` is the engine process's own half: its kernel death signal, set before it executes.

PR_SET_PDEATHSIG reaches only the engine's own process; vLLM's engine core and workers are
its children. This process polls twice a second: while the engine runs it remembers the
engine's descendants; once the parent (llm-adapt) is gone, whatever the signal, it sends
SIGTERM to the engine's process group and every remembered descendant, waits a grace
period, then SIGKILLs what is left. It exits on its own when the engine ends.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import time

import psutil

POLL_S = 0.5
GRACE_S = 10.0
PR_SET_PDEATHSIG = 1


def _load_prctl():
    # Looked up once here: a preexec_fn runs between fork and exec, where loading a library can deadlock.
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def die_with_parent(parent_pid: int):
    """A preexec_fn: SIGTERM this child when the thread that started it ends (kill included)."""

    def set_signal() -> None:
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return set_signal


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop_engine(group: int, family: list[psutil.Process], grace_s: float = GRACE_S) -> None:
    """SIGTERM the group and family, wait up to grace_s, then SIGKILL both."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for proc in family:
            try:
                if alive(proc):
                    proc.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline and any(alive(p) for p in family):
            time.sleep(0.2)


def watch(parent_pid: int, engine_pid: int, leftover: str | None = None) -> int:
    try:
        engine = psutil.Process(engine_pid)
    except psutil.Error:
        return 0
    family: dict[int, psutil.Process] = {engine_pid: engine}
    while alive(engine):
        if os.getppid() != parent_pid:  # reparented: llm-adapt is gone
            stop_engine(engine_pid, list(family.values()))
            _remove(leftover)
            return 0
        try:
            for child in engine.children(recursive=True):
                family.setdefault(child.pid, child)  # psutil.Process checks pid reuse by create time
        except psutil.Error:
            pass
        time.sleep(POLL_S)
    if os.getppid() != parent_pid:  # the engine died first (its death signal), its children may remain
        stop_engine(engine_pid, list(family.values()))
        _remove(leftover)
    return 0


def _remove(leftover: str | None) -> None:
    if leftover:
        shutil.rmtree(leftover, ignore_errors=True)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for llm-adapt; it stops the engine itself
    return watch(int(argv[0]), int(argv[1]), argv[2] if len(argv) > 2 else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
