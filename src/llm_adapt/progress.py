"""Progress bars for long work (rich), as a plain callback the library code can take.

With LLM_ADAPT_EVENTS=FILE every report is also appended to FILE as one JSON line
({"t": unix seconds, "what", "done", "total"}): benchmarks/tool_speed.py breaks a command's time
down by these, the tool's own account of what it was doing."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from llm_adapt import interrupts

EVENTS_ENV = "LLM_ADAPT_EVENTS"


@contextmanager
def progress_bar(console: Console | None = None) -> Iterator[Callable[[str, int, int], None]]:
    """Yields report(what, done, total): one bar per distinct `what`, with the time it has taken and
    the time it still needs at its rate so far. Each report in the main thread is also where a
    swallowed Ctrl-C is raised again (interrupts.py), so long work stops within a step of it."""
    tasks: dict[str, int] = {}
    events = _events_file()
    lock = threading.Lock()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("left"), TimeRemainingColumn(), console=console or Console(stderr=True),
                  transient=False) as bar:
        def report(what: str, done: int, total: int) -> None:
            if threading.current_thread() is threading.main_thread():
                interrupts.check()
            with lock:
                if what not in tasks:
                    tasks[what] = bar.add_task(escape(what), total=total)  # a label is text, not rich markup
                bar.update(tasks[what], completed=done, total=total)
                if events is not None:
                    events.write(json.dumps({"t": round(time.time(), 3), "what": what, "done": done, "total": total}) + "\n")

        try:
            yield report
        finally:
            if events is not None:
                events.close()


def _events_file():
    path = os.environ.get(EVENTS_ENV)
    return open(path, "a", buffering=1) if path else None
