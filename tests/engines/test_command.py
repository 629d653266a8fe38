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


SERVE = ["vllm", "serve", "/m", "--served-model-name", "m", "--port", "8000", "--enforce-eager"]


def test_the_served_model_in_either_form():
    assert Command.from_argv(SERVE).model == "/m" and Command.from_argv(ARGV).model == "/m"


def test_a_plan_is_started_as_the_api_server_module_with_the_same_arguments():
    """`vllm serve MODEL` and the module form take the same arguments; this interpreter starts the module
    (vllm-cpu's `vllm` script does not start), the model given as --model."""
    import sys

    from llm_adapt.engines.vllm import launched

    for argv in (SERVE, ARGV):
        started = launched(Command.from_argv(argv))
        assert started.program == (sys.executable, "-m", "vllm.entrypoints.openai.api_server")
        assert started.get("--model") == "/m" and [o for o in started.options if o[0] == "--model"] == [("--model", "/m")]
        assert started.get("--served-model-name") == "m" and started.has("--enforce-eager")


def test_gpu_and_npu_plans_say_vllm_serve_and_the_cpu_plan_the_module_it_starts():
    from tests.inspect.test_plan import plan_for

    for platform in ("npu", "cuda"):
        plan = plan_for("llama-3.2-3b", platform, device_memory_gib=64)
        assert plan.command("eager").program == ("vllm", "serve", "/models/m") and not plan.command("eager").has("--model")
        assert "\nvllm serve /models/m \\\n" in plan.commands["eager"]
    cpu = plan_for("llama-3.2-3b", "cpu", device_memory_gib=64).command("eager")
    assert cpu.program == ("python", "-m", "vllm.entrypoints.openai.api_server") and cpu.get("--model") == "/models/m"
