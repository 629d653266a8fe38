"""benchmarks/gpu_matrix.py: its rows and judgement on plain data, and its CPU analogue run for real (the same
code path the GPU machine runs, CPU devices, a deeper-than-wide random body)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script


@pytest.fixture(scope="module")
def matrix():
    return load_script("gpu_matrix")


def test_the_rows_are_the_issue_s_table_on_the_device_under_test(matrix):
    rows = {r.name: r for r in matrix.rows("cuda")}
    assert (rows["shared"].reference, rows["shared"].targets) == ("cuda:fp32", ("cuda:bf16",))
    assert (rows["fp32"].reference, rows["fp32"].targets) == ("cpu:fp32", ("cuda:fp32",))
    assert rows["auto"].reference == "auto" and rows["split"].env["LLM_ADAPT_AUTO_MAX_MEMORY"].startswith("cuda:0=4GiB")
    assert "split" not in {r.name for r in matrix.rows("cpu")}  # accelerate's placement needs an accelerator


def record(*statuses, code=0):
    return {"rows": [{"exit_code": code, "targets": {f"t{i}": s for i, s in enumerate(statuses)}}]}


def test_every_clean_row_must_pass(matrix):
    assert matrix.all_pass(record("PASS", "PASS"))
    assert not matrix.all_pass(record("PASS", "WARN"))
    assert not matrix.all_pass(record("PASS", code=124))  # stopped by the time limit
    assert not matrix.all_pass({"rows": []}) and not matrix.all_pass({"rows": [{"exit_code": 0, "targets": {}}]})


def test_the_table_replaces_its_block_in_the_docs_page(matrix, tmp_path):
    rec = {"machine": {"date": "2026-12-04T00:00:00+00:00", "device": "NVIDIA H200", "torch": "2.11",
                       "torch_cuda": "13.0", "transformers": "5.17"}, "body": "3b", "model_seconds": {"tiny": 1.0},
           "seconds": 200.0, "rows": [{"name": "shared", "rule": "1", "reference": "cuda:fp32", "exit_code": 0,
                                        "seconds": 25.0, "targets": {"cuda:bf16": "PASS"}}]}
    (tmp_path / "m.json").write_text(json.dumps(rec))
    page = tmp_path / "platforms.md"
    page.write_text(f"# Platforms\n\n{matrix.BEGIN}\nstale table\n{matrix.END}\n")
    matrix.write_docs(tmp_path / "m.json", page)
    text = page.read_text()
    assert "stale table" not in text and "NVIDIA H200" in text and "| shared | 1 | cuda:fp32 | cuda:bf16 | PASS |" in text


@pytest.mark.slow
def test_the_cpu_analogue_passes_every_clean_row(matrix, default_model, tmp_path):
    # On a CPU the rows host, shared and auto all put the gold and the target on the host: one of them (auto,
    # the rule that chooses) stands for the three, beside the tiny model's path; the GPU machine runs every row,
    # with the whole corpus (here its first 256 tokens per text, as run --quick reads it).
    code = matrix.main(["--device", "cpu", "--tokenizer", str(default_model.path), "--body", "small", "--only", "tiny,auto",
                        "--max-new-tokens", "8", "--corpus-tokens", "256", "--out", str(tmp_path / "m")])
    result = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert code == 0 and result["all_pass"], (tmp_path / "m" / "matrix.md").read_text()
    assert {r["name"] for r in result["rows"]} == {"tiny", "auto"}
    assert (tmp_path / "m" / "matrix.md").read_text().count("| PASS |") == 3
