"""The notes section's troubleshooting: an engine warning the table knows becomes symptom, cause and fix with
the raw line as evidence under it; the rest is one line; both languages render, the Chinese one without an
English sentence of the tool's own."""

import json
import re

from llm_adapt.engines.session import KvPrediction, ServeResult
from llm_adapt.report import page, render
from tests.records import run_data
from llm_adapt.report.findings import notes, troubleshooting
from llm_adapt.results import SCHEMA_VERSION
from tests.engines.test_troubleshoot import SAMPLES
from tests.report.english import english_sentences

STATUS = {"kind": "status", "schema_version": SCHEMA_VERSION, "model": "m", "platform": "cpu", "stages": {},
          "finished": True, "dummy": False,
          "workload": {"prompts": "quick", "max_new_tokens": 16, "latency_iterations": 3, "input_len": 32,
                       "output_len": 16, "throughput_prompts": 4, "sweep": [1], "sweep_prompts": 4, "quants": [],
                       "corpus_tokens": None}}
PRELOAD = SAMPLES["preload_missing"][0].split("] ", 1)[1]  # as engine_facts keeps it: without the log header
TRITON = "Triton is not installed. triton-cpu is expected on x86 CPUs."
UNKNOWN = ["Some warning <b>no</b> row explains", "Another one", "A third", "A fourth"]


def serve(warnings, attempts=()):
    return ServeResult(engine="vllm", endpoint={}, host="127.0.0.1", argv=["vllm"], env={}, mode="eager",
                       startup_seconds=70.0, log="/runs/x/engine.log", engine_facts={"warnings": warnings},
                       predicted=KvPrediction(kv_cache_tokens=4096, max_concurrency=2.0, max_model_len=2048, exact=True,
                                              ranks=1, kv_space_gib_per_rank=1.0),
                       prediction_matches=None, attempts=list(attempts))


def rendered(tmp_path, warnings, attempts=()):
    (tmp_path / "status.json").write_text(json.dumps(STATUS))
    serve(warnings, attempts).save(tmp_path / "serve.json")
    for lang in ("en", "zh"):
        render.render_report(tmp_path, lang)
    return {name: (tmp_path / name).read_text() for name in ("report.md", "report.zh.md", "report.html")}


def notes_section(markdown):
    n = page.SECTION["notes"]
    return re.search(rf"^## {n}\. .*?(?=^## )", markdown, re.S | re.M).group(0)


def test_a_known_warning_shows_cause_and_fix_with_its_line_as_evidence(tmp_path):
    warnings = [{"message": TRITON, "count": 1}, {"message": PRELOAD, "count": 2},
                *({"message": m, "count": 3 if i == 0 else 1} for i, m in enumerate(UNKNOWN))]
    docs = rendered(tmp_path, warnings)
    en = notes_section(docs["report.md"])
    assert f"### {page.SECTION['notes']}.1 Troubleshooting" in en
    assert "1. **tcmalloc or Intel OpenMP is not preloaded**" in en and "2. **Triton is not installed**" in en
    assert "    - Cause: vLLM-CPU's worker looks for libtcmalloc" in en
    assert "    - Fix: install tcmalloc (Debian: apt-get install libtcmalloc-minimal4)" in en
    assert "    - Fix: no action needed on CPU" in en
    assert f"    - Engine log: `{TRITON}`\n" in en
    assert "    - Engine log: `libtcmalloc is not found in LD_PRELOAD." in en and "` (x2)" in en  # backticks made safe
    unknown = [line for line in en.splitlines() if "match no known cause" in line]
    assert len(unknown) == 1 and unknown[0].startswith("4 other engine warning(s)")
    assert "`Some warning <b>no</b> row explains` (x3); `Another one`; `A third`; and 1 more" in unknown[0]
    assert "A fourth" not in en and "Engine warning (x" not in en  # the raw list is gone from the notes
    zh = notes_section(docs["report.zh.md"])
    assert "原因：vLLM-CPU 的 worker" in zh and "处理：CPU 上无需处理" in zh and "另有 4 条引擎告警" in zh
    html = docs["report.html"]
    assert "<li>Fix: no action needed on CPU</li>" in html
    assert "<code>Some warning &lt;b&gt;no&lt;/b&gt; row explains</code>" in html  # engine text stays inert


def test_every_row_renders_in_chinese_without_an_english_sentence(tmp_path):
    warnings = [{"message": lines[0], "count": 1} for lines in SAMPLES.values()] + [{"message": "x y z", "count": 1}]
    docs = rendered(tmp_path, warnings, [{"max_model_len": 37376, "outcome": "refused",
                                          "cause": SAMPLES["kv_cache_too_small"][0], "log": "x"}])
    zh, en = notes_section(docs["report.zh.md"]), notes_section(docs["report.md"])
    assert zh.count("\n    - 原因：") == len(SAMPLES) and en.count("\n    - Fix: ") == len(SAMPLES)
    assert f"出现于：一次被拒绝的启动（见第 {page.SECTION['resources']} 节）" in zh
    assert english_sentences(zh) == []
    assert english_sentences(en)  # the detector does find the English report's sentences


def test_a_failed_start_and_a_failed_feature_are_explained_without_quoting_them():
    cause = ("vllm exited with code 1 during start-up: " + SAMPLES["kv_cache_too_small"][0].split("] ", 1)[1]
             + " (full log: /runs/x/engine.log)")
    stages = {"serve": {"status": "failed", "reason": cause}}
    run = run_data(status={"platform": "cpu", "stages": stages})
    found = troubleshooting(run)
    assert [m.key for m in found.matched] == ["kv_cache_too_small"]
    assert [s.where for s in found.matched[0].seen] == ["start_failure"] and found.matched[0].evidence == ()
    assert not any("37248" in n for n in notes(run))  # the cause is said once, in the summary
    chat = {"name": "chat completion", "status": "error", "evidence": SAMPLES["chat_template_missing"][0]}
    found = troubleshooting(run_data(probes={"rows": [chat]}), "zh")
    assert found.matched[0].key == "chat_template_missing" and "--chat-template" in found.matched[0].fix
    assert found.matched[0].seen[0].name == "chat completion"


def test_a_run_without_engine_warnings_has_no_troubleshooting():
    found = troubleshooting(run_data(serve={"engine_facts": {"warnings": []}}))
    assert found.matched == () and found.unmatched == ()
