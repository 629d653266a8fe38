"""The command line's edges: help for every option, one default per concept, no empty directory after a
failure, the plan's verdict on an unknown architecture, --timeout on every wait, the /v1 hint only where it
helps, and diff's refusal of two different models. Errors are one line, a non-zero exit, no traceback."""

import argparse
import json
import socket
import time
from types import SimpleNamespace

import pytest

from llm_adapt.cli import build_parser, main
from llm_adapt.docs_gen import subcommands
from llm_adapt.engines.endpoint import endpoint_from_url
from llm_adapt.engines.preflight import not_found
from tests.conftest import config_fixture


def run_cli(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, [line for line in err.splitlines() if line.strip()]


def one_line_error(err: list[str], needle: str) -> None:
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0], err


# --- help ---------------------------------------------------------------------------------------------------

def test_every_subcommand_and_every_option_has_help():
    missing = []
    for name, (summary, parser) in subcommands(build_parser()).items():
        if not summary or not parser.description:
            missing.append(f"{name}: no summary or description")
        missing += [f"{name} {', '.join(a.option_strings) or a.dest}" for a in parser._actions
                    if not a.help or a.help == argparse.SUPPRESS]
    assert missing == []


# --- one default per concept ----------------------------------------------------------------------------------

def test_compare_layers_and_run_share_the_prompt_suite_and_the_greedy_tokens():
    from llm_adapt.accuracy import defaults
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.run.config import RunSizes

    parser = build_parser()
    compare, layers = parser.parse_args(["compare", "m"]), parser.parse_args(["layers", "m"])
    options = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=())
    for prompts, tokens in ((compare.prompts, compare.max_new_tokens), (layers.prompts, layers.max_new_tokens),
                            (RunSizes().prompts, RunSizes().max_new_tokens), (options.prompts, options.max_new_tokens)):
        assert (prompts, tokens) == (defaults.PROMPTS, defaults.MAX_NEW_TOKENS)


@pytest.mark.parametrize("extra,prompts,tokens", [
    ([], "default", 48),
    (["--max-new-tokens", "16"], "default", 16),
    (["--quick"], "quick", 12),
    (["--quick", "--max-new-tokens", "20", "--prompts", "default"], "default", 20),
])
def test_run_exposes_prompts_and_greedy_tokens(monkeypatch, capsys, tmp_path, default_model, extra, prompts, tokens):
    import llm_adapt.run.pipeline as pipeline

    seen = []

    def fake_pipeline(cfg, state):
        seen.append(cfg.sizes)
        return SimpleNamespace(verdict={"status": "PASS", "reasons": []}, stages={})

    monkeypatch.setattr(pipeline, "run_pipeline", fake_pipeline)
    code, _, _ = run_cli(capsys, "run", "default", "--out", tmp_path / "r", *extra)
    assert code == 0 and (seen[0].prompts, seen[0].max_new_tokens) == (prompts, tokens)


# --- no empty directory -----------------------------------------------------------------------------------------

def refused_url() -> str:
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("argv,needle", [
    (["compare", "default", "--target", "npu:bf16", "--prompts", "quick"], "torch_npu"),
    (["probe", "--endpoint", "REFUSED"], "connection refused"),
    (["bench", "--endpoint", "REFUSED"], "connection refused"),
])
@pytest.mark.parametrize("with_out", [True, False])
def test_a_failed_command_leaves_no_directory(capsys, monkeypatch, tmp_path, default_model, argv, needle, with_out):
    monkeypatch.chdir(tmp_path)
    argv = [refused_url() if a == "REFUSED" else a for a in argv]
    out = tmp_path / "deep" / "out"
    code, _, err = run_cli(capsys, *argv, *(["--out", out] if with_out else []))
    assert code != 0
    one_line_error(err, needle)
    assert list(tmp_path.iterdir()) == []  # neither --out (with its parents) nor runs/


def test_a_directory_that_existed_is_kept_and_one_written_in_stays(tmp_path):
    from llm_adapt.rundir import ensure_writable, no_empty_dirs

    kept = tmp_path / "there"
    kept.mkdir()
    with pytest.raises(RuntimeError), no_empty_dirs():
        ensure_writable(kept)
        written = ensure_writable(tmp_path / "a" / "b")
        (written / "status.json").write_text("{}")
        ensure_writable(tmp_path / "empty" / "c")
        raise RuntimeError("a failed stage")
    assert kept.is_dir() and (tmp_path / "a" / "b" / "status.json").exists() and not (tmp_path / "empty").exists()


def test_a_parent_we_made_is_kept_when_another_directory_lives_in_it(tmp_path):
    from llm_adapt.rundir import ensure_writable, no_empty_dirs

    with no_empty_dirs():
        ensure_writable(tmp_path / "runs" / "ours")
        (tmp_path / "runs" / "theirs").mkdir()  # another command's run directory, still empty
    assert not (tmp_path / "runs" / "ours").exists() and (tmp_path / "runs" / "theirs").is_dir()


# --- an unknown architecture ---------------------------------------------------------------------------------

@pytest.fixture()
def unknown_arch(tmp_path):
    path = tmp_path / "unknown"
    path.mkdir()
    config = config_fixture("llama-3.2-1b") | {"architectures": ["NoSuchForCausalLM"]}
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_an_unknown_architecture_gets_the_plans_verdict_in_a_few_lines(capsys, unknown_arch):
    code, out, err = run_cli(capsys, "inspect", unknown_arch, "--platform", "cuda", "--device-memory", "80")
    lines = out.strip().splitlines()
    assert code == 1 and err == [] and len(lines) <= 15, out
    assert lines[-1].startswith("verdict: unsupported: NoSuchForCausalLM is in neither")
    assert "error" not in out and "port required" not in out and "Deployment plan" not in out


@pytest.mark.parametrize("kv_gib", [None, 4096])
def test_an_unknown_architecture_is_one_line_where_an_engine_would_start(capsys, unknown_arch, tmp_path, kv_gib):
    """Said before the plan sizes memory: with a KV cache no host holds (or a host short of memory, as when another
    test's engines filled it) the answer is still that no engine serves it, not to free memory."""
    extra = ["--kv-cache-space", kv_gib] if kv_gib else []
    code, _, err = run_cli(capsys, "serve", unknown_arch, "--dummy", "--platform", "cpu", *extra, "--out", tmp_path / "o")
    assert code == 2 and not (tmp_path / "o").exists()  # what the plan knows is the user's to change
    one_line_error(err, "unsupported: NoSuchForCausalLM")


# --- --timeout governs every wait -----------------------------------------------------------------------------

def test_bench_timeout_governs_the_pre_check(capsys, tmp_path):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        start = time.monotonic()
        code, _, err = run_cli(capsys, "bench", "--endpoint", url, "--timeout", "1", "--out", tmp_path / "o")
        waited = time.monotonic() - start
    assert code == 1 and waited < 5, waited
    one_line_error(err, "did not answer within 1 s")


# --- the /v1 hint -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("given,hint", [
    ("http://h:8000/v1", False),
    ("http://h:8000", False),  # made .../v1 already: the hint would repeat the URL that failed
    ("http://h:8000/api", True),
    ("http://h:8000/v1/chat/completions", True),
])
def test_the_v1_hint_only_where_the_url_is_not_the_servers_v1_base(given, hint):
    endpoint = endpoint_from_url(given)
    text = not_found(endpoint, endpoint.base_url + "/models")
    assert ("e.g. http://h:8000/v1" in text) is hint and "answered 404" in text


def test_a_404_at_v1_names_the_server_not_the_path(capsys, stub_server, tmp_path):
    url, _ = stub_server
    code, _, err = run_cli(capsys, "probe", "--endpoint", url + "/v1", "--out", tmp_path / "o")
    assert code == 2
    one_line_error(err, "not an OpenAI-compatible server at")
    assert "ending in /v1" not in err[0] and "e.g." not in err[0]


# --- diff refuses different models -------------------------------------------------------------------------

def run_dir(path, model: str, architecture: str = "LlamaForCausalLM"):
    path.mkdir()
    metrics = {"output_throughput": 300.0, "mean_ttft_ms": 100.0, "std_ttft_ms": 5.0, "completed": 32}
    from llm_adapt.bench.modes import BenchResult
    from llm_adapt.inspect.stage import InspectResult
    from llm_adapt.run_status import RunStatus
    from tests.records import record

    record(BenchResult, mode="throughput", runs=[{"metrics": metrics}]).save(path / "bench-throughput.json")
    record(RunStatus, model=f"./{model}", stages={}).save(path / "status.json")
    record(InspectResult, architecture=architecture, model={"name": model}).save(path / "inspect.json")
    return path


def test_diff_of_two_models_is_one_line_and_exit_2_unless_forced(capsys, tmp_path):
    a, b = run_dir(tmp_path / "a", "SmolLM2-135M-Instruct"), run_dir(tmp_path / "b", "Llama-3.2-3B-Instruct")
    code, _, err = run_cli(capsys, "diff", a, b)
    assert code == 2 and not (b / "diff.json").exists()
    one_line_error(err, "measured different models (name 'SmolLM2-135M-Instruct' against 'Llama-3.2-3B-Instruct')")
    code, out, _ = run_cli(capsys, "diff", a, b, "--force")
    assert code == 0 and (b / "diff.json").exists()


def test_diff_of_one_model_twice_runs(capsys, tmp_path):
    a, b = run_dir(tmp_path / "a", "m"), run_dir(tmp_path / "b", "m")
    code, out, _ = run_cli(capsys, "diff", a, b)
    assert code == 0 and "Regression verdict" in out


def test_model_mismatch_is_silent_where_a_run_does_not_say():
    from llm_adapt.run.identity import model_mismatch

    assert model_mismatch({"name": "a"}, {}) is None and model_mismatch({"name": "a"}, {"name": "a"}) is None
    assert model_mismatch({"name": "a", "architecture": "X"}, {"name": "a", "architecture": "Y"}) == "architecture 'X' against 'Y'"


# --- values quoted as given ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["64XB", "lots", "GiB", "-3G"])
def test_a_bad_memory_size_is_quoted_as_the_user_typed_it(text):
    import argparse

    from llm_adapt.cli_args import memory_gib

    with pytest.raises(argparse.ArgumentTypeError) as refused:
        memory_gib(text)
    assert str(refused.value).startswith(repr(text))


def test_memory_sizes_in_every_unit():
    from llm_adapt.cli_args import memory_gib

    assert memory_gib("64") == memory_gib("64GiB") == memory_gib("64G") == 64.0
    assert memory_gib("512MiB") == 0.5 and memory_gib("1TB") == 1024.0


# --- results that cannot be written ----------------------------------------------------------------------------

def test_a_result_under_a_regular_file_is_one_line_and_exit_2(tmp_path):
    from llm_adapt.errors import UsageError
    from llm_adapt.results import write_text_atomic

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match="cannot write results there .*; choose another --out"):
        write_text_atomic(blocker / "sub" / "inspect.json", "{}")


def test_a_full_disk_is_the_machines_not_the_users():
    import errno

    from llm_adapt.errors import AdaptError, UsageError, cannot_write

    full = cannot_write("/x", OSError(errno.ENOSPC, "No space left on device"))
    assert type(full) is AdaptError and full.exit_code == 1
    assert isinstance(cannot_write("/x", OSError(errno.EROFS, "Read-only file system")), UsageError)


# --- measuring commands write only where asked -------------------------------------------------------------------

def test_without_out_the_scratch_goes_and_with_out_the_results_stay(tmp_path, monkeypatch):
    import tempfile

    from llm_adapt.rundir import kept_or_scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with kept_or_scratch(None) as scratch:
        (scratch / "probes.json").write_text("{}")
    assert not scratch.exists()
    with kept_or_scratch(tmp_path / "out") as kept:
        (kept / "probes.json").write_text("{}")
    assert (tmp_path / "out" / "probes.json").exists()


def test_a_scratch_whose_engine_failed_is_kept_for_its_log(tmp_path, monkeypatch):
    """The engine's error names its log in the scratch directory: that one stays."""
    import tempfile

    from llm_adapt.engines.server import EngineStartError
    from llm_adapt.rundir import kept_or_scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(EngineStartError), kept_or_scratch(None) as scratch:
        (scratch / "engine.log").write_text("boom")
        raise EngineStartError("vllm exited", "boom", scratch / "engine.log")
    assert (scratch / "engine.log").exists()
    with pytest.raises(ValueError), kept_or_scratch(None) as other:
        raise ValueError("any other failure")
    assert not other.exists()
