"""`llm-adapt run` end to end against the session's vLLM server, the report, and the browser check."""

import json
import shutil

import pytest

from llm_adapt.cli import main
from tests.report.english import english_sentences
from tests.report.one_verdict import assert_one_verdict, verdicts_of

pytestmark = pytest.mark.slow

SECRET = "sk-test-DO-NOT-LEAK-42"
SCRIPT_ID = "<script>window.__pwned = 1</script>"


@pytest.fixture(scope="module")
def quick_run(vllm_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    prompts = out.parent / "prompts.jsonl"
    rows = [{"id": "capital", "category": "knowledge", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
            {"id": SCRIPT_ID, "category": "injection",
             "messages": [{"role": "user", "content": "Repeat exactly: <script>alert(1)</script>"}]}]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["run", "default", "--endpoint", vllm_server.endpoint.base_url, "--api-key", SECRET, "--quick",
                 "--prompts", str(prompts), "--out", str(out), "--kv-cache-space", "2", "--max-model-len", "2048",
                 "--dtype", vllm_server.dtype])  # the session server's dtype
    return code, out


def test_every_stage_lands_as_valid_json(quick_run):
    code, out = quick_run
    assert code == 0
    status = json.loads((out / "status.json").read_text())
    assert status["finished"]
    assert {k: v["status"] for k, v in status["stages"].items()} == {
        "inspect": "done", "accuracy": "done", "serve": "skipped", "probes": "done", "endpoint_accuracy": "done",
        "eager_check": "skipped", "layers": "skipped", "eval": "skipped", "bench": "done", "settings": "skipped", "adaptation": "done",
        "report": "done"}
    adaptation = json.loads((out / "adaptation.json").read_text())
    rows = {f["feature"]: f for f in adaptation["features"]}
    assert rows["EP"]["status"] == "not-applicable" and "expert tensors" in rows["EP"]["evidence"]["text"]
    for name in ("environment", "inspect", "accuracy", "probes", "endpoint_accuracy", "bench-latency",
                 "bench-throughput", "bench-sweep", "adaptation", "hardware"):
        json.loads((out / f"{name}.json").read_text())


def test_report_has_no_empty_table_and_every_section(quick_run):
    _, out = quick_run
    text = (out / "report.md").read_text()
    for heading in ("## 1. Summary", "## 5. Deployment", "## 7. Feature-support matrix",
                    "## 8. vLLM-Ascend adaptation gates", "## 9. Accuracy", "## 10. Performance", "## 11. Resource use",
                    "## 13. Conclusion"):
        assert heading in text
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            assert i + 1 < len(lines) and lines[i + 1].startswith("|"), f"empty table above line {i}"
    assert "<script>" not in text


def test_api_key_never_written(quick_run):
    _, out = quick_run
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_report_rerenders_in_chinese_from_json_alone(quick_run, tmp_path):
    _, out = quick_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for old in copy.glob("report*"):
        old.unlink()
    # a floor with its kernel-spread rerun, as a run with a separate floor writes it (this run's target is its own)
    accuracy = json.loads((copy / "accuracy.json").read_text())
    floor = json.loads(json.dumps(accuracy["targets"][0])) | {
        "label": "cpu:bf16", "spread": {"variant": "eager-attention", "method": "kernel", "kl_mean": 0.012}}
    accuracy["floors"] = [floor]
    (copy / "accuracy.json").write_text(json.dumps(accuracy))
    assert main(["report", str(copy), "--lang", "zh"]) == 0 and main(["report", str(copy)]) == 0
    text = (copy / "report.zh.md").read_text()
    assert "## 4. 精度评测" in text or "精度评测" in text
    assert (copy / "report.zh.html").read_text().startswith("<!DOCTYPE html>")
    # the floor's kernel-spread rerun and the feature rows' evidence in Chinese, not in the English words
    assert "重跑基线：相对差异" in text and "the floor rerun as" not in text
    assert "纯文本模型：配置中没有" in text and "text-only: the config has none of" not in text
    assert "the floor rerun as" in (copy / "report.md").read_text()  # the English report keeps its words


def test_the_chinese_report_has_no_english_sentence_of_its_own(quick_run, tmp_path):
    """Every sentence the tool writes in the Chinese report is Chinese: what remains in English is quoted
    from the model or the server (「…」), code, commands and names."""
    _, out = quick_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert main(["report", str(copy), "--lang", "zh"]) == 0
    assert english_sentences((copy / "report.zh.md").read_text()) == []
    assert english_sentences((out / "report.md").read_text())  # the check finds the English report's sentences
    # the upstream deliverables in Chinese (export's default language) too
    assert main(["export", str(copy), "--to", "vllm-ascend", "--plan-for", "npu", "--model-id",
                 "HuggingFaceTB/SmolLM2-135M-Instruct", "--out", str(tmp_path / "up")]) == 0
    docs = sorted((tmp_path / "up/docs/source/tutorials/models").glob("*-*.md"))
    assert {d.name.rsplit("-", 1)[-1] for d in docs} >= {"report.md", "runbook.md"}
    for doc in docs:
        if doc.name.endswith(("-report.md", "-runbook.md")):
            assert english_sentences(doc.read_text()) == [], doc.name


def test_one_verdict_everywhere(quick_run):
    """The exit code, status.json, report.md, the page and accuracy.json's judged target say one verdict."""
    code, out = quick_run
    found = verdicts_of(out)
    assert len(set(found.values())) == 1, found
    assert_one_verdict(out, code, found["status.json"])


def test_a_failing_int8_row_is_informational_and_leaves_the_verdict_alone(quick_run, tmp_path):
    """`--quant int8-tensor`'s row, failing, beside the run's target: in its own block, never under the
    deciding checks, and every output's verdict unchanged."""
    from llm_adapt.accuracy.verdict import accuracy_verdict

    code, out = quick_run
    before = verdicts_of(out)["report.md"]
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    accuracy = json.loads((copy / "accuracy.json").read_text())
    main_row = accuracy["targets"][0]
    int8 = json.loads(json.dumps(main_row)) | {"label": main_row["label"] + "+int8-tensor", "quant": "int8-tensor"}
    int8["verdict"] = {**int8["verdict"], "status": "FAIL", "reasons": ["mean KL / floor: 40.0"],
                       "checks": [{"name": "mean KL / floor", "value": 40.0, "status": "fail", "threshold": "<= 2",
                                   "source": None, "key": "kl_ratio", "args": {}}]}
    accuracy["targets"].append(int8)
    accuracy["verdict"] = accuracy_verdict([(t["label"], t["quant"], t["verdict"]["status"]) for t in accuracy["targets"]])
    (copy / "accuracy.json").write_text(json.dumps(accuracy))
    assert main(["report", str(copy)]) == 0
    assert accuracy["verdict"]["status"] == main_row["verdict"]["status"]
    assert verdicts_of(copy)["report.md"] == verdicts_of(copy)["report.html"] == before
    page = (copy / "report.html").read_text()
    deciding = page[page.index('class="deciding"'):page.index('class="informational"')]
    assert "int8" not in deciding and "int8-tensor" in page[page.index('class="informational"'):]


def test_a_located_part_reaches_both_reports(quick_run, tmp_path):
    """The part pass's result as compare writes it (layer, part, the parts table), rendered from the JSON."""
    _, out = quick_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    accuracy = json.loads((copy / "accuracy.json").read_text())
    parts = [{"name": "input norm", "rel_l2": 3.3e-3, "floor_rel_l2": 3.3e-3, "ratio": 1.0, "allowed": 1.1,
              "basis": "noise floor", "excess": False, "cos_min": 0.99999, "max_abs": 0.01},
             {"name": "attention", "rel_l2": 0.54, "floor_rel_l2": 4.0e-3, "ratio": 135.8, "allowed": 1.1,
              "basis": "noise floor", "excess": True, "cos_min": 0.84, "max_abs": 2.5,
              "channels": {"count": 5, "of": 576, "share": 0.93, "concentrated": True, "top": [5, 17]},
              "heads": {"heads": [3, 4, 5], "of": 9, "share": 0.97, "concentrated": True, "kv_head": 1, "group": 3}}]
    accuracy["targets"][0]["first_local_excess"] = {"name": "layer 2", "local_rel_l2": 0.3, "ratio": 60.3,
                                                    "basis": "noise floor", "part": "attention", "parts": parts}
    (copy / "accuracy.json").write_text(json.dumps(accuracy))
    assert main(["report", str(copy)]) == 0 and main(["report", str(copy), "--lang", "zh"]) == 0
    en, zh = (copy / "report.md").read_text(), (copy / "report.zh.md").read_text()
    assert "**layer 2, attention**" in en and "| attention | 54.000% |" in en and "| **yes** |" in en
    assert "**layer 2, 注意力**" in zh and "| 注意力 | 54.000% |" in zh and "| 输入归一化 |" in zh
    assert "93.0% (5, 17)" in en and "**3, 4, 5 / 9 (KV 1) · 97%**" in en and "**3, 4, 5 / 9 (KV 1) · 97%**" in zh
    # a run written before the part pass existed (no part, no parts) still renders
    accuracy["targets"][0]["first_local_excess"] = {"name": "layer 2", "local_rel_l2": 0.3, "ratio": 60.3,
                                                    "basis": "noise floor"}
    (copy / "accuracy.json").write_text(json.dumps(accuracy))
    assert main(["report", str(copy)]) == 0 and "**layer 2**:" in (copy / "report.md").read_text()


def test_html_in_a_real_browser(quick_run, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make setup` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    _, out = quick_run
    page_url = (out / "report.html").resolve().as_uri()
    errors = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(page_url)
        images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.src.slice(0, 22), i.naturalWidth])")
        scripts = page.eval_on_selector_all("script", "s => s.length")
        pwned = page.evaluate("() => window.__pwned === 1")
        banner = page.inner_text(".banner .status")
        cards = page.locator(".cards .card").count()
        index = page.locator("nav.index li").count()
        page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        browser.close()
    from llm_adapt.judged.data import load_run
    from llm_adapt.judged.verdict import overall_verdict

    assert banner.strip() == overall_verdict(load_run(out))["status"]  # the verdict is what the reader sees first
    headings = [line for line in (out / "report.md").read_text().splitlines() if line.startswith("## ")]
    assert cards >= 3 and index == len(headings)  # one index entry per section, none lost
    assert not errors, errors
    assert images and all(src.startswith("data:image/png;base64") and width > 0 for src, width in images), images
    assert scripts == 0 and not pwned
    assert (tmp_path / "report.png").stat().st_size > 10_000


FOLD = {"width": 1280, "height": 800}


def test_the_first_screen_stands_above_the_fold(quick_run, tmp_path):
    """At 1280x800 the title, the verdict and its why, what was verified, the figure cards with their
    provenance and the deciding checks are all in view before any scrolling."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make setup` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    _, out = quick_run
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport=FOLD)
        page.goto((out / "report.html").resolve().as_uri())
        boxes = {sel: page.locator(sel).first.bounding_box() for sel in (
            ".first-screen h1", ".first-screen .facts", ".banner .status", ".banner .why", ".scope",
            ".cards .card:last-child .source", ".deciding tr:last-child")}
        title = page.inner_text(".first-screen h1")
        page.screenshot(path=str(tmp_path / "fold.png"))
        browser.close()
    below = {sel: box for sel, box in boxes.items() if box is None or box["y"] + box["height"] > FOLD["height"]}
    assert not below, below
    assert title.startswith("SmolLM2-135M-Instruct on ")


# Each character drawn alone on a canvas in the page's own font, as RGBA bytes: with no CJK font,
# Chromium draws every one of them as the same empty box.
GLYPHS_JS = """chars => chars.map(ch => {
  const canvas = document.createElement("canvas"); canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext("2d");
  ctx.font = "32px " + getComputedStyle(document.body).fontFamily;
  ctx.fillText(ch, 4, 36);
  return Array.from(ctx.getImageData(0, 0, 48, 48).data).join(",");
})"""


def test_chinese_report_draws_chinese_glyphs_in_a_real_browser(quick_run, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make setup` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    _, out = quick_run
    copy = tmp_path / "zh"
    shutil.copytree(out, copy)
    assert main(["report", str(copy), "--lang", "zh"]) == 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((copy / "report.zh.html").resolve().as_uri())
        text = page.inner_text("body")
        chars = sorted({ch for ch in text if "\u4e00" <= ch <= "\u9fff"})[:12]
        drawn = page.evaluate(GLYPHS_JS, chars)
        browser.close()
    assert len(chars) >= 6, "the zh report shows next to no Chinese text"
    blank = ",".join(["0"] * (48 * 48 * 4))
    assert blank not in drawn
    assert len(set(drawn)) == len(chars), ("Chinese characters render as identical boxes: no CJK font "
                                           "(`make setup` installs Debian's fonts-noto-cjk)")


def test_resume_keeps_finished_stages(quick_run, vllm_server, tmp_path):
    _, out = quick_run
    copy = tmp_path / "resumed"
    shutil.copytree(out, copy)
    stamp = (copy / "accuracy.json").stat().st_mtime_ns
    code = main(["run", "default", "--endpoint", vllm_server.endpoint.base_url, "--quick", "--out", str(copy),
                 "--prompts", str(out.parent / "prompts.jsonl"),  # the options the run started with
                 "--resume", "--kv-cache-space", "2", "--max-model-len", "2048", "--dtype", vllm_server.dtype])
    assert code == 0
    assert (copy / "accuracy.json").stat().st_mtime_ns == stamp  # not measured again
    assert json.loads((copy / "status.json").read_text())["finished"]


def test_diff_of_two_real_runs_that_differ_in_the_engine(quick_run, transformers_server, tmp_path):
    """The same model and workload served by vLLM and by `transformers serve`: the diff names the
    features the second engine lacks and calls it a regression."""
    from llm_adapt.report.diff import diff_runs

    _, vllm_run = quick_run
    other = tmp_path / "tserve"
    code = main(["run", "default", "--endpoint", transformers_server.endpoint.base_url,
                 "--model", transformers_server.spec.served_model, "--quick", "--skip", "accuracy",
                 "--prompts", str(vllm_run.parent / "prompts.jsonl"), "--out", str(other), "--dtype", transformers_server.dtype])
    assert code == 0 and (other / "report.md").exists()
    assert main(["diff", str(vllm_run), str(other), "--out", str(tmp_path / "d")]) == 1  # FAIL exits 1
    result = diff_runs(vllm_run, other)
    lost = {f["name"] for f in result.features if f["change"] == "lost"}
    assert "logprobs" in " ".join(lost) and result.verdict["status"] == "FAIL"
    assert any(m["group"] == "performance" for m in result.metrics)
    assert (tmp_path / "d" / "diff.html").exists() and (tmp_path / "d" / "diff.json").exists()


def test_a_run_directory_holds_one_run(quick_run, tmp_path, capsys):
    """`--out` of an earlier run is refused (exit 2) unless --resume of the same model and options; and a result
    file whose stage did not run in the run (planted here: the bench files of a run that skipped bench) shows no
    figure on the first screen, and is named in the notes."""
    _, out = quick_run
    assert main(["run", "default", "--quick", "--skip", "bench", "--out", str(out)]) == 2
    assert "holds an earlier run of 'default'" in capsys.readouterr().err
    assert main(["run", "default", "--resume", "--out", str(out)]) == 2  # not --quick: other options
    assert "--resume finishes a run with the options it started with" in capsys.readouterr().err
    planted = tmp_path / "planted"
    shutil.copytree(out, planted)
    status = json.loads((planted / "status.json").read_text())
    status["stages"]["bench"] = {"status": "skipped", "reason": "--skip bench"}
    (planted / "status.json").write_text(json.dumps(status))
    assert main(["report", str(planted)]) == 0
    first_screen = (planted / "report.md").read_text().split("## 2.")[0]
    assert "TTFT" not in first_screen and "output throughput" not in first_screen
    assert "bench-latency: a result file from outside this run" in (planted / "report.md").read_text()
    assert "TTFT" in (out / "report.md").read_text().split("## 2.")[0]  # the run's own first screen has it
