"""Progress bars for long work (rich), as a plain callback the library code can take."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from llm_adapt import interrupts


@contextmanager
def progress_bar(console: Console | None = None) -> Iterator[Callable[[str, int, int], None]]:
    """Yields report(what, done, total): one bar per distinct `what`. Each report in the main thread
    is also where a swallowed Ctrl-C is raised again (interrupts.py), so long work stops within a
    step of it."""
    tasks: dict[str, int] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console or Console(stderr=True), transient=False) as bar:
        def report(what: str, done: int, total: int) -> None:
            if threading.current_thread() is threading.main_thread():
                interrupts.check()
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done, total=total)

        yield report
