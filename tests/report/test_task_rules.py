"""The report's task section: the three rules side by side, the row where they disagree marked, and what the
items could see, in both languages, from an eval.json the eval stage writes."""

import json

from llm_adapt.evaluation.judge import paired_rows, verdict
from llm_adapt.evaluation.stage import EvalResult
from llm_adapt.report import render

from .test_sections import STATUS


def test_three_rules_and_the_unseen_drop_in_both_languages(tmp_path):
    # 300 items, gold 0.60, served 0.58: six lost and none gained (p = 0.031), inside lm_eval's rtol
    gold = {"acc,none": {i: i < 180 for i in range(300)}}
    served = {"acc,none": {i: i < 174 for i in range(300)}}
    rows = paired_rows("builtin-mc", served, gold)
    EvalResult(model="m", endpoint={"base_url": "http://h/v1", "model": "m", "api_key": None}, settings={}, scores=[],
               paired=rows, baseline=[], skipped=[], seconds={}, verdict=verdict(rows, [], [])).save(tmp_path / "eval.json")
    (tmp_path / "status.json").write_text(json.dumps(STATUS))
    render.render_report(tmp_path, "en")
    render.render_report(tmp_path, "zh")
    en, zh = (tmp_path / "report.md").read_text(), (tmp_path / "report.zh.md").read_text()
    (line,) = [ln for ln in en.splitlines() if ln.startswith("| builtin-mc | acc,none | 300 | FAIL |")]
    assert "| PASS (served 0.580 vs gold 0.600" in line and "| FAIL (served 58.00 vs gold 60.00 points" in line
    assert line.endswith("— **disagree** |")
    # at 2 % discordance 300 items are enough for 3 points (the paired test needs 260)
    assert "- builtin-mc acc,none: 300 items see a drop of 2.6 points (the paired test needs 260 for 3 points" in en
    assert "同一批题目的三种判定" in zh and "**不一致**" in zh and "300 道题可看出 2.6 分的下降" in zh
