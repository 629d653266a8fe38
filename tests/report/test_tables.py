"""Every table of the report renders as a table, in both languages: report.md read by markdown-it-py (GitHub's
table rule, tests/upstream/markdown_tables.py) and the page drawn by Python-Markdown; a heading never swallows
the table under it (§9.2 did: "### 9.2 Hidden states layer by layer — cpu:bf16| tensor | rel L2 | ..."); a
column whose every cell would be "-" is left out, with a line saying why."""

import json
import re
import shutil

import pytest

from llm_adapt import rundir
from llm_adapt.accuracy.compare import compare
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.runner import RunnerSpec
from llm_adapt.models.source import resolve_model
from llm_adapt.report.render import render_report
from llm_adapt.upstream.adaptation import build
from tests.upstream.markdown_tables import table_problems
from tests.upstream.test_adaptation import write_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_llama):
    """A run with every section's tables: the plan, the probes, the served and the in-process accuracy (per layer)."""
    from llm_adapt import platforms

    out = tmp_path_factory.mktemp("tables") / "run"
    with pytest.MonkeyPatch.context() as patch:  # an AVX-512 host: an AVX2 one adds its ISA caveat to the inventory
        patch.setattr(platforms, "cpu_flags", lambda: {"avx2", "avx512f"})
        source = write_run(out, shutil.copytree(tiny_llama, out.parent / "model"))
    prompts = out.parent / "prompts.jsonl"  # two prompts: the tables need rows, not statistics
    prompts.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "a", "category": "knowledge", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
        {"id": "b", "category": "greeting", "prompt": "Hello there, how are"})))
    options = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(RunnerSpec("cpu", "bf16"),),
                             prompts=str(prompts), max_new_tokens=2, ppl_window=16, corpus_tokens=32)
    compare(resolve_model(str(source.path)), options).save(out / rundir.ACCURACY)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return out


@pytest.fixture(scope="module")
def rendered(run_dir):
    for lang in ("en", "zh"):
        render_report(run_dir, lang)
    return {lang: {kind: (run_dir / rundir.report(lang, kind)).read_text() for kind in ("md", "html")}
            for lang in ("en", "zh")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_table_of_the_report_renders_as_one(rendered, lang):
    text = rendered[lang]["md"]
    assert table_problems(text) == []
    tables = sum(line.startswith("|---") for line in text.splitlines())
    assert tables >= 10  # the check saw the report's tables, not an empty page
    page = rendered[lang]["html"]
    body = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", page, flags=re.S)
    assert "|---" not in body and not re.search(r"<p>\s*\|", body)  # no table left as a paragraph of pipes
    assert page.count("<table") >= tables - 2  # the page draws the summary's two tables itself, above the body


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_layer_table_stands_under_its_heading(rendered, lang):
    text = rendered[lang]["md"]
    heading = next(line for line in text.splitlines() if re.match(r"### 9\.\d+ .* — cpu:bf16$", line))
    after = text[text.index(heading) + len(heading):]
    assert after.startswith("\n\n| "), after[:80]


def test_the_checker_finds_a_table_glued_to_its_heading():
    glued = "### 9.2 Hidden states layer by layer — cpu:bf16| tensor | rel L2 |\n|---|---|\n| layer 0 | 0.1% |\n"
    assert table_problems(glued)
    assert table_problems("text\n| a | b |\n|---|---|\n| 1 | 2 |\n")  # Python-Markdown needs the blank line
    assert table_problems("text\n\n| a | b |\n|---|---|\n| 1 | 2 |\n") == []


@pytest.mark.parametrize("lang,why", [("en", "so the table has no caveats column"), ("zh", "因此表中不列")])
def test_an_inventory_without_caveats_has_no_caveats_column_and_says_why(rendered, lang, why):
    text = rendered[lang]["md"]
    header = next(line for line in text.splitlines() if line.startswith("| ") and ("read from" in line or "读取自" in line))
    assert header.count("|") == 4, header  # operator, value, read from
    assert why in text


def test_an_operator_with_a_caveat_keeps_the_column(run_dir, tmp_path):
    copy = shutil.copytree(run_dir, tmp_path / "run")
    inspected = json.loads((copy / rundir.INSPECT).read_text())
    inspected["operators"][0]["caveats"] = ["a caveat of this platform"]
    (copy / rundir.INSPECT).write_text(json.dumps(inspected))
    render_report(copy, "en")
    text = (copy / "report.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| ") and "read from" in line)
    assert header.rstrip().endswith("| caveats |") and "a caveat of this platform" in text
    assert "so the table has no caveats column" not in text and table_problems(text) == []


def test_the_chinese_report_says_gold_in_one_word(rendered):
    """金标准 throughout: no "Gold Reference" or "Gold" beside it."""
    text = rendered["zh"]["md"]
    assert "金标准" in text and "Gold" not in text


def test_the_conclusion_keeps_its_sentences_apart(rendered):
    """The verdict's sentence and the verified command's are two sentences ("change.Recommended" before)."""
    text = rendered["en"]["md"]
    conclusion = text[text.index("## 13. Conclusion"):]
    assert not re.search(r"\.[A-Z]", conclusion.replace("e.g.", "")), conclusion[:400]
