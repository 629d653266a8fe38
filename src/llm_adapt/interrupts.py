"""Ctrl-C and SIGTERM that are never lost.

A signal handler's exception can be swallowed: when it is raised inside a finalizer or a weakref
callback, CPython prints "Exception ignored" and carries on. So the handler also records the
signal, and the run checks the record at every stage boundary: an interrupt is at worst late by
one stage, never lost. The swallowed copy is not printed (it would show the user a traceback for
their own Ctrl-C); any other unraisable exception still is.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Callable


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every `with` block (servers above all) unwinds."""


received: int | None = None


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def on_signal(signum, frame) -> None:
    global received
    received = signum
    raise _interrupt(signum)


def check() -> None:
    """Raise the interrupt a handler recorded, if its own raise was swallowed."""
    if received is not None:
        raise _interrupt(received)


@contextlib.contextmanager
def deferred():
    """For the work after a stop (the report of what finished): the stop already taken is cleared,
    and a further signal during the block is recorded rather than raised; the caller raises the stop."""
    global received
    received = None
    previous = {sig: signal.signal(sig, _record) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _record(signum, frame) -> None:
    global received
    received = signum


def forget_escaped() -> None:
    """Call once an interrupt is caught for good. CPython run with `-m` remembers a KeyboardInterrupt that
    escaped any exec() of a string (dataclasses and namedtuples are made that way, so a Ctrl-C during an
    import lands there) and, at exit, kills itself with SIGINT whatever the exit code: the caller's 130 or
    143 would become -2. Evaluating a string clears that record."""
    exec("None")


def install() -> Callable[[], None]:
    """Handle SIGINT and SIGTERM from now on (the record cleared); returns what restores the previous."""
    global received
    received = None
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook = sys.unraisablehook

    def hook(unraisable) -> None:
        if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and received is not None):
            previous_hook(unraisable)

    sys.unraisablehook = hook

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook

    return restore
