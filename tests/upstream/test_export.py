"""`llm-adapt export --to vllm-ascend`: the upstream files at their paths, in their formats, every number
from the run's JSON."""

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_adapt import rundir
from llm_adapt.cli import main
from llm_adapt.evaluation.stage import EvalResult
from llm_adapt.upstream.adaptation import DUMMY_DIR, build

from .test_adaptation import write_run

TEMPLATES = Path(__file__).parents[2] / "src/llm_adapt/upstream/templates"
TUTORIAL_HEADINGS = ["Introduction", "Supported Features", "Environment Preparation", "Deployment",
                     "Functional Verification", "Accuracy Evaluation", "Performance"]
# the keys tests/e2e/models/test_lm_eval_correctness.py (vllm-project/vllm-ascend) reads
E2E_KEYS = {"model_name", "hardware", "tasks", "num_fewshot"}


@pytest.fixture()
def run_dir(tiny_llama, tmp_path):
    model = shutil.copytree(tiny_llama, tmp_path / "model")
    out = tmp_path / "run"
    source = write_run(out, model, verdict="FAIL")
    (out / DUMMY_DIR).mkdir()
    write_run(out / DUMMY_DIR, model, dummy=True)
    EvalResult(model="m", endpoint={"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": None},
               settings={"limit": 30, "num_fewshot": 2}, skipped=[], seconds={"served_loglikelihood": 12.5},
               scores=[{"task": "builtin-mc", "metric": "acc,none", "served": 0.633333, "gold": 0.7}],
               paired=[{"task": "builtin-mc", "metric": "acc,none", "n": 30, "diff": -0.066667, "ci_low": -0.19,
                        "ci_high": 0.05, "status": "PASS"}], baseline=[],
               verdict={"status": "PASS", "reasons": []}).save(out / rundir.EVAL)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return out


def exported(run_dir, tmp_path, *extra):
    dest = tmp_path / "upstream"
    assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(dest), *extra]) == 0
    return dest


def test_every_file_lands_at_its_upstream_path(run_dir, tmp_path):
    dest = exported(run_dir, tmp_path)
    names = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert names == ["benchmarks/accuracy/model.md", "docs/source/tutorials/models/model-adaptation-report.md",
                     "docs/source/tutorials/models/model-runbook.md", "docs/source/tutorials/models/model.md",
                     "tests/e2e/models/configs/model.yaml"]


def test_the_e2e_config_loads_with_the_keys_the_upstream_test_reads(run_dir, tmp_path):
    dest = exported(run_dir, tmp_path)
    text = (dest / "tests/e2e/models/configs/model.yaml").read_text()
    config = yaml.safe_load(text)
    assert E2E_KEYS <= set(config) and config["model_type"] == "vllm"
    assert config["tasks"] == [{"name": "builtin-mc", "metrics": [{"name": "acc,none", "value": 0.6333}]}]
    assert config["num_fewshot"] == 2 and config["serve"]["max_model_len"] == 512
    assert "built-in task" in text  # labelled: no public dataset was run


def test_the_tutorial_has_the_template_headings_in_order(run_dir, tmp_path):
    text = (exported(run_dir, tmp_path) / "docs/source/tutorials/models/model.md").read_text()
    headings = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    assert headings == TUTORIAL_HEADINGS
    assert "not verified in this run" in text  # no engine started here: no command is called verified


def test_the_report_is_chinese_by_default_and_names_what_the_run_showed(run_dir, tmp_path):
    dest = exported(run_dir, tmp_path)
    report = (dest / "docs/source/tutorials/models/model-adaptation-report.md").read_text()
    for words in ("## 特性矩阵", "## Dummy 与真实权重验证矩阵", "**false-ready**", "## max-model-len", "## 回退阶梯",
                  "未测量", "| MTP | N/A 不适用 | 该架构没有 MTP 层", "基线 | N/A 不适用 | 模型自身的上限"):
        assert words in report, words
    english = exported(run_dir, tmp_path / "en", "--lang", "en")
    assert "## Feature matrix" in (english / "docs/source/tutorials/models/model-adaptation-report.md").read_text()


def test_every_number_in_the_exported_files_is_in_the_runs_json(run_dir, tmp_path):
    dest = exported(run_dir, tmp_path)
    known = run_json_numbers(run_dir)
    known += [k / 2**30 for k in known] + [k * 100 for k in known]  # GiB of a byte count, a share as a percentage
    constants = {n for path in TEMPLATES.glob("*.j2") for n in numbers_in(path.read_text())}
    constants |= {n for n in numbers_in(Path(__file__).parents[2].joinpath(
        "src/llm_adapt/upstream/export.py").read_text())}
    unexplained = []
    for path in dest.rglob("*"):
        if path.is_file():
            for number in numbers_in(path.read_text()):
                if number not in constants and not explained(number, known):
                    unexplained.append((path.name, number))
    assert not unexplained, unexplained[:20]


def test_a_run_without_adaptation_json_is_one_line(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "status.json").write_text(json.dumps({"kind": "status", "schema_version": 1, "model": "m",
                                                             "platform": "cpu", "stages": {}, "workload": {}}))
    assert main(["export", str(tmp_path / "r"), "--to", "vllm-ascend", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "adaptation.json" in err[0]


def test_the_number_check_can_fail():
    assert explained("0.6333", [0.633333]) and explained("1,024", [1024.0]) and not explained("0.64", [0.633333])
    # numbers glued to letters are names (v0.23.0, bf16, H200), not figures
    assert numbers_in("TP 1, 2,048 tokens, v0.23.0 in bf16 on H200, 12.5 s") == ["1", "2,048", "12.5"]
    assert re.search(r"\d", "no digits") is None


# The check that exported files invent no figure: every number they print is one of the run's JSON.
def run_json_numbers(run_dir: Path) -> list[float]:
    """Every number in a run directory's JSON files (for the check that exported files invent none)."""
    import json

    found: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            found.append(float(value))
        elif isinstance(value, str):
            found.extend(float(x.replace(",", "")) for x in NUMBER.findall(value))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
            for k in value:
                walk(k)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in sorted(Path(run_dir).rglob("*.json")):
        try:
            walk(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return found


NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[str]:
    """The figures a reader sees in an exported file (digits, with thousands separators); digits glued
    to a letter or a dot are part of a name (v0.23.0, bf16, H200)."""
    return NUMBER.findall(text)


def explained(number: str, known: list[float]) -> bool:
    """Whether a printed number is one of the run's, as printed: rounded to its decimals (the sign is
    read apart from the digits, so magnitudes are compared)."""
    value = float(number.replace(",", ""))
    decimals = len(number.split(".")[1]) if "." in number else 0
    step = 0.5 * 10 ** -decimals + 1e-12
    return any(abs(abs(k) - value) <= step for k in known)
