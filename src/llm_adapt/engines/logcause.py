"""The one line of an engine's log that says why it failed to start. Pure functions of the text.

vLLM prints the same exception several times (the engine core's logged traceback, its own
traceback, then the API server's wrapper "Engine core initialization failed. See root cause
above"), each line prefixed with the process name and a log header. The root cause is the
first exception line once those prefixes are gone; wrapper exceptions that only point
elsewhere are skipped. Without any exception line, the last ERROR line is the best we have.
INFO / WARNING lines are never a cause: after a kill (OOM) they only say how far it got.
"""

from __future__ import annotations

import re

# "(EngineCore_DP0 pid=123) " and "ERROR 11-30 05:00:00 [core.py:708] " (either, both, repeated).
PROCESS_PREFIX = re.compile(r"^\(\w[\w.-]* pid=\d+\)\s*")
LOG_HEADER = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:.]+ \[[^\]]*\]\s?")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "ValueError: msg", "torch.OutOfMemoryError: msg", "AssertionError", "ImportError: msg"; any *Error / *Exception.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<msg>.*))?$")
# Exceptions that only say "the cause is above / elsewhere".
WRAPPERS = ("See root cause above", "Engine core initialization failed", "Engine process failed to start")
MAX_CHARS = 600
# A native crash (torch's fault handler, as vLLM's workers print it): the banner, then the C++ frames from
# the signal handler down. The first frame past the handler is where it crashed.
CRASH_BANNER = re.compile(r"!+ (?P<what>Segfault|Bus error|Illegal instruction|Aborted)\w* encountered !+")
FRAME = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.*)$')
HANDLER_FRAMES = ("sigaction", "signal", "<unknown>")


def strip_prefixes(line: str) -> tuple[str, str | None]:
    """A log line without process prefix and log header: (message, level or None)."""
    text, level = ANSI.sub("", line).rstrip(), None
    while True:
        before = text
        text = PROCESS_PREFIX.sub("", text)
        if match := LOG_HEADER.match(text):
            level, text = match["level"], text[match.end():]
        if text == before:
            return text.strip(), level


def exception_line(message: str) -> str | None:
    """The message when it is an exception line that names a cause, else None."""
    match = EXCEPTION_LINE.match(message)
    if not match or any(w in message for w in WRAPPERS):
        return None
    return message


def root_cause(log_text: str) -> str | None:
    """The first exception line; else the last ERROR line; else the last line printed outside the
    logger (an engine without vLLM's log format); None when there is nothing of the kind."""
    if crash := native_crash(log_text):  # a dead worker: the exceptions after it only say the engine stopped
        return crash
    last_error = last_plain = None
    for raw in log_text.splitlines():
        message, level = strip_prefixes(raw)
        if not message:
            continue
        if found := exception_line(message):
            return _clip(found)
        if level in ("ERROR", "CRITICAL") and not _traceback_noise(message):
            last_error = message
        elif level is None and not _traceback_noise(message):
            last_plain = message
    found = last_error or last_plain
    return _clip(found) if found else None


def native_crash(log_text: str) -> str | None:
    """'a worker crashed (Segfault) in cpu_fused_moe.cpp line 242 (fused_moe_impl)': the first frame after a
    native crash banner that is not the signal handler's own; None without a banner. Pure."""
    lines = [strip_prefixes(raw)[0] for raw in log_text.splitlines()]
    for i, line in enumerate(lines):
        banner = CRASH_BANNER.search(line)
        if not banner:
            continue
        for frame in lines[i + 1:i + 40]:
            found = FRAME.match(frame)
            if found and not any(h in found["file"] for h in HANDLER_FRAMES):
                func = found["func"].split("<")[0].split("(")[0].strip()
                where = f"{found['file'].rsplit('/', 1)[-1]} line {found['line']}"
                return _clip(f"a worker crashed ({banner['what']}) in {where} ({func})")
        return _clip(f"a worker crashed ({banner['what']})")
    return None


def _traceback_noise(message: str) -> bool:
    # The body of a logged traceback: headers, frames, source lines, carets.
    return (message.startswith(("Traceback (most recent call last)", "File \"", "^", "~"))
            or message.startswith(("During handling", "The above exception")) or "%|" in message)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 3] + "..."
