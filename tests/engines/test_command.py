"""The typed vLLM command line: parse, read and change options, render argv and shell text."""

from llm_adapt.command import Command
from llm_adapt.engines.vllm import argv_max_model_len, with_max_model_len
from llm_adapt.tune.grid import Trial, apply_trial

ARGV = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--served-model-name", "m",
        "--max-model-len", "2048", "--host", "127.0.0.1", "--port", "8000", "--enforce-eager"]


def test_round_trip_and_reads():
    cmd = Command.from_argv(ARGV)
    assert cmd.argv() == ARGV
    assert cmd.get("--port") == "8000" and cmd.get("--enforce-eager") is None and cmd.has("--enforce-eager")
    assert cmd.program == ("python", "-m", "vllm.entrypoints.openai.api_server")


def test_changes_keep_the_order_and_never_touch_the_original():
    cmd = Command.from_argv(ARGV)
    changed = cmd.with_option("--port", "9000").with_option("--kv-cache-dtype", "fp8").without("--enforce-eager")
    assert changed.get("--port") == "9000" and changed.argv()[-2:] == ["--kv-cache-dtype", "fp8"]
    assert not changed.has("--enforce-eager") and cmd.get("--port") == "8000"


def test_shell_text_one_option_per_line_and_quoted():
    text = Command.from_argv(ARGV).with_option("--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}').shell(
        {"VLLM_CPU_KVCACHE_SPACE": "4"})
    lines = text.splitlines()
    assert lines[0] == "export VLLM_CPU_KVCACHE_SPACE=4"
    assert lines[1] == "python -m vllm.entrypoints.openai.api_server \\"
    assert "--compilation-config '{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}'" in text


def test_max_model_len_helpers_and_tune_trials_go_through_it():
    assert argv_max_model_len(ARGV) == 2048 and argv_max_model_len(ARGV[:3]) is None
    assert argv_max_model_len(with_max_model_len(ARGV, 1024)) == 1024
    cmd, env = apply_trial(Command.from_argv(ARGV), {"A": "1", "B": "2"},
                           Trial("graph + seqs", "x", graph=True, env={"C": "3"}, args=("--max-num-seqs", "64"),
                                 unset_env=("B",)))
    assert not cmd.has("--enforce-eager") and cmd.get("--max-num-seqs") == "64" and env == {"A": "1", "C": "3"}
