"""Killing servers and interrupting runs: one clear line, finished results kept, no process left behind."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from llm_adapt.cli import main
from tests.conftest import CORPUS_TOKENS, start_mock
from tests.report.one_verdict import verdicts_of


def wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def stage_status(out: Path, stage: str):
    try:
        return json.loads((out / "status.json").read_text())["stages"][stage]["status"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    def running(p: psutil.Process) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [p for p in processes if running(p)]


def is_warm_process(p: psutil.Process) -> bool:
    try:
        return "llm_adapt.engines.warm_start" in p.cmdline()
    except psutil.Error:
        return False


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


@pytest.mark.slow
@pytest.mark.parametrize("sig,code,stage", [(signal.SIGTERM, 143, "serve"), (signal.SIGINT, 130, "accuracy")])
def test_run_interrupted(tmp_path, tiny_llama, sig, code, stage, capsys):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.cli", "run", str(tiny_llama), "--quick", "--out", str(out),
                             "--kv-cache-space", "1", "--max-model-len", "512"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: stage_status(out, stage) == "running")
    if stage == "serve":
        assert wait_for(lambda: len(descendants(proc.pid)) > 0)  # the engine is up and spawning
        time.sleep(2)
    family = descendants(proc.pid)
    proc.send_signal(sig)
    said, err = proc.communicate(timeout=120)
    assert proc.returncode == code and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("llm-adapt run:")
    assert said.strip().splitlines()[-1].startswith("verdict: interrupted: not judged (finish it: llm-adapt run ")
    # every process the run started goes with it: its engine at once; the warm process of the tests'
    # engine starts, where this run was the one to start it, within its poll after its starter is gone
    # (a Python process with vLLM imported takes a few seconds to exit)
    warm = [p for p in family if is_warm_process(p)]
    time.sleep(1)
    assert not alive([p for p in family if p not in warm]), alive(family)
    assert wait_for(lambda: not alive(warm), timeout=30), alive(warm)
    assert stage_status(out, stage) == "interrupted"
    json.loads((out / "inspect.json").read_text())
    # the report of what finished is written on the way out, later stages say why they did not run
    stages = json.loads((out / "status.json").read_text())["stages"]
    assert stages["report"]["status"] == "done", stages["report"]  # its reason, where it could not be drawn
    assert (out / "report.md").exists() and (out / "report.html").exists()
    word = "SIGTERM" if sig == signal.SIGTERM else "Ctrl-C"
    assert stages["bench"]["status"] == "not run" and word in stages["bench"]["reason"]["text"]
    assert main(["report", str(out)]) == 0
    # one verdict everywhere: not judged (status.json, report.md, the page, the computed one; the exit code above)
    assert set(verdicts_of(out).values()) == {"INTERRUPTED"}, verdicts_of(out)
    assert json.loads((out / "status.json").read_text())["stopped_by"] == ("SIGTERM" if sig == signal.SIGTERM else "SIGINT")
    # export asks for --resume; diff against a finished run says what this one did not measure, not "lost"
    assert main(["export", str(out), "--to", "vllm-ascend", "--plan-for", "npu", "--model-id", "acme/tiny",
                 "--out", str(tmp_path / "up")]) == 2
    assert "--resume" in capsys.readouterr().err and not (tmp_path / "up").exists()


@pytest.mark.slow
def test_engine_that_never_gets_ready_still_gives_a_report(tmp_path, tiny_llama):
    out = tmp_path / "run"
    code = main(["run", str(tiny_llama), "--quick", "--out", str(out), "--startup-timeout", "1", "--skip", "accuracy",
                 "--kv-cache-space", "1", "--max-model-len", "512"])
    assert code == 1
    stages = json.loads((out / "status.json").read_text())["stages"]
    assert stages["serve"]["status"] == "failed" and "not ready after" in stages["serve"]["reason"]
    assert stages["probes"]["status"] == "not run" and "engine failed" in stages["probes"]["reason"]["text"]
    report = (out / "report.md").read_text()
    assert "This section could not run" in report and "not ready after" in report


def test_server_killed_mid_probe(tmp_path):
    out = tmp_path / "p"
    with start_mock(tmp_path, "--ttft-ms", "3000") as server:
        proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.cli", "probe", "--endpoint", server.endpoint.base_url,
                                 "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: (out / "probes.json").exists(), 60)
        time.sleep(0.5)
        server.stop(grace_s=0.1)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err
    rows = json.loads((out / "probes.json").read_text())["rows"]
    assert rows[0]["status"] == "supported"
    not_run = [r for r in rows if r["status"] == "not run"]
    assert not_run and all("stopped answering" in r["evidence"]["text"] for r in not_run)


def test_server_killed_mid_compare(tmp_path, default_model):
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.runner import RunnerSpec

    import threading

    import httpx

    def kill_when_busy(server):
        # Stop the server while it is answering the first (slow) completions.
        def busy():
            try:
                found = re.search(r"vllm:num_requests_running (\d+)", httpx.get(server.endpoint.root_url + "/metrics").text)
            except httpx.HTTPError:
                return False
            return bool(found) and int(found.group(1)) > 0
        wait_for(busy, 300)
        server.stop(grace_s=0.1)

    with start_mock(tmp_path, "--ttft-ms", "60000") as server:
        killer = threading.Thread(target=kill_when_busy, args=(server,), daemon=True)
        killer.start()
        # the other served tests' gold settings (tests/accuracy/test_endpoint.py): read back from the session's
        # cache where one measured it, and 8 s rather than 33 s where not (the corpus's first tokens only)
        opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(), prompts="quick", max_new_tokens=24,
                              ppl_window=128, corpus_tokens=CORPUS_TOKENS)
        result = compare_endpoint(default_model, server.endpoint, opts, None, tmp_path)
        killer.join(timeout=10)
    sections = result.sections
    assert sections["tokenization"]["status"] == "done"
    assert all(sections[s]["status"] == "not run" and "stopped answering" in sections[s]["reason"]
               for s in ("teacher_forced", "perplexity", "greedy"))
    saved = json.loads((tmp_path / "endpoint_accuracy.json").read_text())
    assert saved["sections"]["teacher_forced"]["status"] == "not run"


@pytest.mark.parametrize("argv", [
    ["compare", "default", "--out", "FILE/sub"],
    ["probe", "--endpoint", "http://127.0.0.1:9/v1", "--out", "FILE/sub"],
    ["run", "default", "--out", "FILE/sub"],
])
def test_unwritable_output_directory(capsys, tmp_path, argv):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = [a.replace("FILE", str(blocker)) for a in argv]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (1, 2) and ("cannot write results" in err[-1] or "cannot reach" in err[-1])
