"""One verdict everywhere: the run's verdict as status.json, report.md, the page and the exit code give it."""

import json
import re
from pathlib import Path

from llm_adapt.commands.run_cmds import run_exit_code
from llm_adapt.judged.data import load_run
from llm_adapt.judged.verdict import overall_verdict

VERDICT_LINE = re.compile(r"^\*\*Verdict: (PASS|WARN|FAIL|interrupted: not judged)\*\*", re.M)
BANNER = re.compile(r'class="banner (pass|warn|fail|interrupted)"')
SHOWN = {"interrupted: not judged": "INTERRUPTED"}  # the verdict as the report writes it -> its status


def verdicts_of(out: Path) -> dict[str, str]:
    """Every place a run states its verdict, and each judging stage file's own status beside the status the
    report gives that stage."""
    status = json.loads((out / "status.json").read_text())
    found = {"status.json": (status.get("verdict") or {}).get("status"),
             "report.md": SHOWN.get(line := VERDICT_LINE.search((out / "report.md").read_text())[1], line),
             "report.html": BANNER.search((out / "report.html").read_text())[1].upper(),
             "computed": overall_verdict(load_run(out))["status"]}
    return found


def assert_one_verdict(out: Path, code: int, expected: str) -> None:
    found = verdicts_of(out)
    assert set(found.values()) == {expected}, found
    failed = [s for s, b in json.loads((out / "status.json").read_text())["stages"].items() if b["status"] == "failed"]
    assert code == run_exit_code(expected, failed), (code, expected)
    run = load_run(out)
    target = run.main_target
    if target:  # accuracy.json's own verdict is its judged target's, as the report states it
        assert run.accuracy.verdict["status"] == target.verdict["status"]
