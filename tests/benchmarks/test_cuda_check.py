"""benchmarks/cuda_check.py on a machine without a GPU: its arguments, the compare command it
builds, and the record it writes when the CUDA device is missing (nothing is run then)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script
import torch


@pytest.fixture(scope="module")
def cuda_check():
    return load_script("cuda_check")


def test_default_command_is_the_issue_s(cuda_check, tmp_path):
    args = cuda_check.parse_args(["--out", str(tmp_path)])
    argv = cuda_check.compare_argv(args, "default")
    assert argv[:4] == ["compare", "default", "--reference", "cpu:fp32"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--target"] == ["cuda:bf16", "cuda:fp16"]
    assert argv[argv.index("--prompts") + 1] == "quick" and "--offline" in argv


def test_a_target_override_replaces_the_cuda_targets(cuda_check, tmp_path, capsys):
    assert cuda_check.main(["--dry-run", "--target", "cpu:bf16", "--out", str(tmp_path)]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert [planned["argv"][i + 1] for i, a in enumerate(planned["argv"]) if a == "--target"] == ["cpu:bf16"]
    assert planned["device_problems"] == []  # the CPU is always there


def test_a_bad_target_is_one_line_and_exit_2(cuda_check, tmp_path, capsys):
    assert cuda_check.main(["--dry-run", "--target", "gpu:bf16", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "gpu:bf16" in err and "DEVICE:DTYPE" in err


def test_tiny_without_a_tokenizer_says_how_to_make_one(cuda_check, tmp_path):
    with pytest.raises(SystemExit, match="--prepare"):
        cuda_check.main(["--dry-run", "--model", "tiny", "--out", str(tmp_path)])


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here: the script would run compare")
def test_without_cuda_the_record_says_so_and_nothing_runs(cuda_check, tmp_path, capsys):
    assert cuda_check.main(["--out", str(tmp_path)]) == 3
    record = json.loads((tmp_path / "cuda_check.json").read_text())
    assert record["machine"]["cuda_available"] is False and record["exit_code"] == 3
    assert len(record["device_problems"]) == 2 and not (tmp_path / "compare.log").exists()
    assert "not run: cuda:bf16" in (tmp_path / "cuda_check.md").read_text()


def test_the_compare_child_refuses_vllm(cuda_check, tmp_path):
    """The child's import blocker works: a path that imported vLLM would fail, not pass."""
    import subprocess
    import sys

    code = cuda_check.BLOCK_VLLM.replace("from llm_adapt.cli import main\nsys.exit(main(sys.argv[1:]))\n",
                                         "import vllm\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and "vllm is blocked" in proc.stderr
