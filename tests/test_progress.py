"""Progress labels are text: a runner label in brackets shows as written, never read as rich markup."""

import io

from rich.console import Console

from llm_adapt.progress import progress_bar


def test_a_bracketed_label_is_shown_as_written():
    out = io.StringIO()
    with progress_bar(Console(file=out, width=120, force_terminal=False)) as report:
        report("floor spread cpu:bf16[emulated, eager]", 1, 2)
    assert "cpu:bf16[emulated, eager]" in out.getvalue()
