"""benchmarks/tool_speed.py writes its table into docs/measurements.md between its markers, stamped with the
date and the machine; the README holds no measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.scripts import load_script

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def tool_speed():
    return load_script("tool_speed")


def test_the_markers_are_in_docs_measurements_and_not_in_the_readme(tool_speed):
    assert tool_speed.MEASUREMENTS == ROOT / "docs" / "measurements.md"
    text = tool_speed.MEASUREMENTS.read_text()
    assert text.count(tool_speed.BEGIN) == 1 and text.count(tool_speed.END) == 1
    assert tool_speed.BEGIN not in (ROOT / "README.md").read_text()


def test_write_docs_replaces_the_block_between_the_markers_with_date_and_machine(tool_speed, tmp_path, monkeypatch):
    monkeypatch.setattr(tool_speed, "machine", lambda: "Test CPU, 2 cores, no native bf16")
    page = tmp_path / "measurements.md"
    page.write_text(f"# M\n\nbefore\n{tool_speed.BEGIN}\nold table\n{tool_speed.END}\nafter\n")
    tool_speed.write_docs(["| a |", "|---|"], "python benchmarks/tool_speed.py --only probe", page)
    text = page.read_text()
    assert "old table" not in text and text.startswith("# M\n\nbefore\n") and text.endswith("after\n")
    assert "on Test CPU, 2 cores, no native bf16 with `python benchmarks/tool_speed.py --only probe`:" in text
    assert "| a |" in text and text.count(tool_speed.BEGIN) == 1
