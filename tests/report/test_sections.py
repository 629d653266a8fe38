"""A new report section is its template, with its words in both languages, and its name in
page.SECTIONS: nothing else changes (shown with a section the report does not have)."""

import json

import jinja2

from llm_adapt.report import context, page, render

STATUS = {"kind": "status", "schema_version": 1, "model": "m", "platform": "cpu", "stages": {}, "finished": True,
          "dummy": False, "workload": {"prompts": "quick", "max_new_tokens": 16, "latency_iterations": 3,
                                       "input_len": 32, "output_len": 16, "throughput_prompts": 4, "sweep": [1],
                                       "sweep_prompts": 4, "quants": [], "corpus_tokens": None}}
POWER = """{% set W = {"en": {"title": "Power draw", "body": "Measured at the wall socket."},
                      "zh": {"title": "功耗", "body": "在墙上插座处测量。"}}[S.lang] %}
## {{ n }}. {{ W.title }}

{{ W.body }}
"""


def test_a_new_section_needs_its_template_and_its_name_only(tmp_path, monkeypatch):
    original = render.environment

    def with_power(lang):
        env = original(lang)
        env.loader = jinja2.ChoiceLoader([jinja2.DictLoader({"sections/power.md.j2": POWER}), env.loader])
        return env

    monkeypatch.setattr(render, "environment", with_power)
    monkeypatch.setattr(context, "SECTIONS", (*page.SECTIONS, "power"))
    (tmp_path / "status.json").write_text(json.dumps(STATUS))
    render.render_report(tmp_path, "en")
    render.render_report(tmp_path, "zh")
    n = len(page.SECTIONS) + 1
    en, zh = (tmp_path / "report.md").read_text(), (tmp_path / "report.zh.md").read_text()
    assert f"## {n}. Power draw\n\nMeasured at the wall socket." in en and "功耗" not in en
    assert f"## {n}. 功耗\n\n在墙上插座处测量。" in zh and "Power draw" not in zh


def test_a_section_with_its_own_words_renders_them_in_each_language(tmp_path):
    (tmp_path / "status.json").write_text(json.dumps(STATUS))
    render.render_report(tmp_path, "en")
    render.render_report(tmp_path, "zh")
    n = page.SECTION["notes"]
    assert f"## {n}. Notes and troubleshooting" in (tmp_path / "report.md").read_text()
    assert f"## {n}. 注意事项与故障排查" in (tmp_path / "report.zh.md").read_text()
