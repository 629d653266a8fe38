"""`llm-adapt inspect` and `models` end to end, and every bad input named in one line."""

import json
import subprocess
import sys

import pytest

from llm_adapt.cli import main
from tests.conftest import config_fixture


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_default_json_has_the_documented_keys(capsys, default_model):
    code, out, _ = run_cli(capsys, "inspect", "default", "--platform", "cpu", "--kv-cache-space", "2", "--dtype", "bf16",
                           "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("architecture", "parameters", "weight_bytes", "kv_cache_bytes_per_token", "support", "operators", "plan"):
        assert key in data
    assert data["support"]["vllm"] == "native"
    assert data["parameters"]["from_config"] == data["parameters"]["from_weights"] == 134_515_008
    assert data["kv_cache_bytes_per_token"] == 23_040
    plan = data["plan"]
    assert plan["kv_cache_tokens"] == 93_184
    for key in ("kv_cache_tokens", "max_concurrency", "max_model_len", "env"):
        assert key in plan
    assert set(plan["commands"]) == {"eager", "graph"}


def test_inspect_human_output_and_out_dir(capsys, default_model, tmp_path):
    code, out, _ = run_cli(capsys, "inspect", "default", "--platform", "npu", "--device-memory", "64GiB",
                           "--out", str(tmp_path))
    assert code == 0
    assert "Deployment plan" in out and "ASCEND_RT_VISIBLE_DEVICES" in out and "ACLGraph" in out
    saved = json.loads((tmp_path / "inspect.json").read_text())
    assert saved["kind"] == "inspect" and saved["plan"]["platform"] == "npu"


def test_config_only_directory_is_inspectable(capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(config_fixture("llama-3.1-8b")))
    code, out, _ = run_cli(capsys, "inspect", str(tmp_path), "--platform", "cuda", "--device-memory", "80", "--json")
    data = json.loads(out)
    assert code == 0 and data["parameters"]["from_weights"] is None and data["parameters"]["from_config"] == 8_030_261_248


def test_weights_disagreeing_with_config_are_reported(capsys, tiny_llama, tmp_path):
    import shutil

    broken = tmp_path / "m"
    shutil.copytree(tiny_llama, broken)
    cfg = json.loads((broken / "config.json").read_text())
    cfg["intermediate_size"] = 256
    (broken / "config.json").write_text(json.dumps(cfg))
    code, out, _ = run_cli(capsys, "inspect", str(broken), "--platform", "cpu", "--json")
    assert json.loads(out)["parameters"]["agree"] is False


def bad_dir(tmp_path, name, content):
    path = tmp_path / name
    path.mkdir()
    if content is not None:
        (path / "config.json").write_text(content)
    return str(path)


@pytest.mark.parametrize("make_args,code,needle", [
    (lambda t: ["inspect", str(t / "nope")], 2, "no such file or directory"),
    (lambda t: ["inspect", bad_dir(t, "empty", None)], 2, "no config.json"),
    (lambda t: ["inspect", bad_dir(t, "broken", "{not json")], 2, "malformed JSON"),
    (lambda t: ["inspect", bad_dir(t, "noarch", json.dumps({"hidden_size": 8}))], 2, "architectures"),
    # an unknown architecture is the plan's verdict on stdout, not an error: tests/test_cli.py
    (lambda t: ["inspect", _write(t / "fake.gguf", b"not a gguf at all")], 2, "not a GGUF"),
    (lambda t: ["inspect", _write(t / "weights.bin", b"\x00" * 16)], 2, "not a model"),
    (lambda t: ["inspect", _write(t / "corrupt.gguf", b"GGUF" + b"\x00" * 64)], 2, "cannot read this GGUF"),
    (lambda t: ["inspect", "default", "--platform", "cpu", "--device-memory", "0.2"], 1, "exceed"),
    (lambda t: ["inspect", "default", "--max-model-len", "-5"], 2, "must be greater than 0"),
    (lambda t: ["inspect", "default", "--device-memory", "lots"], 2, "'lots' is not a memory size"),
    (lambda t: ["inspect", "default", "--gpu-memory-utilization", "1.5"], 2, "(0, 1]"),
    (lambda t: ["inspect", "default", "--platform", "tpu"], 2, "invalid choice"),
    (lambda t: ["inspect", "default", "--max-model-len", "100000"], 2, "max_position_embeddings"),
])
def test_bad_input_is_one_line_with_exit_code(capsys, tmp_path, default_model, make_args, code, needle):
    args = make_args(tmp_path)
    try:
        got = main(args)
    except SystemExit as exc:  # argparse's own errors
        got = exc.code
    out, err = capsys.readouterr()
    assert got == code
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and needle in lines[-1], err
    assert "Traceback" not in err


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_console_script_runs_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "llm_adapt.cli", "inspect", str(tmp_path / "missing")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such file" in proc.stderr


def test_models_lists_default_and_cache(capsys, default_model):
    code, out, _ = run_cli(capsys, "models", "--json")
    data = json.loads(out)
    assert code == 0 and data["default"]["installed"]
    assert any(row["path"] == str(default_model.path) for row in data["cached"])


def test_models_lists_the_default_model(capsys, default_model):
    """`llm-adapt models` from the entry point: exit 0, the default model installed, in text and JSON."""
    assert main(["models"]) == 0
    assert capsys.readouterr().out.startswith("default  SmolLM2-135M-Instruct")
    assert main(["models", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["default"]["installed"] is True
