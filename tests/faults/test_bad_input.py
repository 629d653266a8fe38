"""Every subcommand against bad input: one line naming the problem and the fix, a defined exit code; and every
bad input of a new user's trial (benchmarks/bad_inputs.py, whose table docs/limits.md shows): one line, exit 2,
nothing left behind."""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from llm_adapt.cli import main
from tests.benchmarks.scripts import load_script

CASES = [
    # (argv, exit code, words the one line must contain)
    (["inspect", "MISSING"], 2, "no such file or directory"),
    (["inspect", "TEXTFILE"], 2, "not a model"),
    (["inspect", "BADCFG"], 2, "malformed JSON"),
    (["inspect", "CORRUPT.gguf"], 2, "cannot read this GGUF"),
    (["inspect", "default", "--device-memory", "12XB"], 2, "'12XB' is not a memory size"),
    (["inspect", "default", "--max-num-seqs", "0"], 2, "greater than 0"),
    (["compare", "MISSING"], 2, "no such file or directory"),
    (["compare", "default", "--prompts", "BADJSONL"], 2, "not JSON"),
    (["compare", "default", "--reference", "gpu:fp32"], 2, "DEVICE:DTYPE"),
    (["compare", "default", "--tie-margin", "-1"], 2, "greater than 0"),
    (["serve", "MISSING"], 2, "no such file or directory"),
    (["serve", "BADCFG", "--out", "OUT"], 2, "malformed JSON"),
    (["probe", "--endpoint", "not-a-url"], 2, "not an http(s) URL"),
    (["probe", "--endpoint", "STUB", "--model", "wrong", "--out", "OUT"], 2, "not served"),
    (["probe", "--endpoint", "STUBAUTH", "--api-key", "bad", "--out", "OUT"], 2, "API key"),
    (["bench", "--endpoint", "STUB", "--model", "wrong", "--out", "OUT"], 2, "not served"),
    (["bench", "--endpoint", "STUB", "--request-rate", "fast"], 2, "not a number"),
    (["bench", "--endpoint", "STUB", "--slo", "ttft=abc"], 2, "not a number"),
    (["bench", "--endpoint", "STUB", "--concurrencies", "1,x"], 2, "whole numbers"),
    (["bench", "--endpoint", "STUB", "--dataset", "BADJSONL", "--out", "OUT"], 2, "not JSON or JSONL"),
    (["run", "MISSING", "--out", "OUT"], 2, "no such file or directory"),
    (["run", "default", "--prompts", "BADJSONL", "--out", "OUT"], 2, "not JSON"),
    (["run", "default", "--resume"], 2, "--resume needs --out"),
    (["run", "default", "--endpoint", "http://127.0.0.1:9/v1", "--out", "OUT"], 2, "connection refused"),
    (["report", "MISSING"], 2, "no such run directory"),
    (["report", "OUT"], 2, "not a run directory"),
    (["mock-server", "--error-rate", "2"], 2, "must be in [0, 1]"),
]


@pytest.fixture()
def places(tmp_path, stub_server):
    url, routes = stub_server
    routes["/v1/models"] = (200, "application/json", json.dumps({"data": [{"id": "served"}]}))
    routes["/tokenize"] = (404, "text/plain", "no")
    (tmp_path / "text.txt").write_text("hello")
    (tmp_path / "badcfg").mkdir()
    (tmp_path / "badcfg" / "config.json").write_text("{oops")
    (tmp_path / "corrupt.gguf").write_bytes(b"GGUF" + b"\0" * 32)
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    (tmp_path / "out").mkdir()
    return {"MISSING": str(tmp_path / "missing"), "TEXTFILE": str(tmp_path / "text.txt"),
            "BADCFG": str(tmp_path / "badcfg"), "CORRUPT.gguf": str(tmp_path / "corrupt.gguf"),
            "BADJSONL": str(tmp_path / "bad.jsonl"), "OUT": str(tmp_path / "out"), "STUB": url + "/v1",
            "STUBAUTH": url + "/auth/v1"}, routes


@pytest.mark.parametrize("argv,code,needle", CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_bad_input(capsys, places, default_model, argv, code, needle):
    names, routes = places
    routes["/auth/v1/models"] = (401, "application/json", "{}")
    argv = [names.get(a, a) for a in argv]
    try:
        got = main(argv)
    except SystemExit as exc:
        got = exc.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert got == code, err
    assert len(err) == 1 or "warning" in " ".join(err[:-1]), err
    assert needle in err[-1] and "Traceback" not in "\n".join(err)


# --- the trial's bad inputs (benchmarks/bad_inputs.py) ----------------------------------------------------------

BAD = load_script("bad_inputs")
# Cases a test process can run in itself: no read-only directory (root writes there; those run as a child
# without CAP_DAC_OVERRIDE below), no signal.
IN_PROCESS = [c for c in BAD.CASES if c.stop is None and not any(a.startswith(("READONLY", "RORUN")) for a in c.argv)]
AS_A_USER = [c for c in BAD.CASES if c not in IN_PROCESS and c.stop is None]


@pytest.fixture(scope="module")
def trial(tmp_path_factory, tiny_llama):
    """The places the trial's cases name, and a server whose every POST fails (HTTP 501, /v1/models answering)."""
    fixtures = tmp_path_factory.mktemp("bad-inputs") / "fixtures"
    places = BAD.prepare(fixtures, tiny=tiny_llama)
    with BAD.StubServer() as failing:
        yield {**places, "POSTFAIL": failing}
    for path in (fixtures / "readonly", fixtures / "rorun"):
        path.chmod(0o755)


@pytest.fixture()
def sandbox(tmp_path, monkeypatch):
    """An empty working directory with its own temporary directory: a runs/ or a scratch left behind shows."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path.parent / "hub-cache"))
    return tmp_path


def skip_where_the_host_has_it(case):
    if not BAD.host_lacks(case.needs):
        pytest.skip(f"this host has the device: {case.needs}")


@pytest.mark.parametrize("case", IN_PROCESS, ids=[c.name for c in IN_PROCESS])
def test_a_bad_input_of_the_trial_is_one_line_exit_2_and_leaves_nothing(case, trial, sandbox, capsys):
    skip_where_the_host_has_it(case)
    argv = [trial.get(a, next((a.replace(k, v, 1) for k, v in trial.items() if a.startswith(k + "/")), a))
            for a in case.argv]
    before = BAD.files_under(sandbox)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == case.code == 2 and len(err) == 1, err
    assert case.needle in err[0] and "Traceback" not in err[0]
    assert BAD.leftovers(before, BAD.files_under(sandbox)) == []


def dac_override_can_be_dropped() -> bool:
    """Whether a child can run as a user whom file modes bind: not root, or root able to drop CAP_DAC_OVERRIDE."""
    try:
        return subprocess.run([sys.executable, "-c", "pass"], preexec_fn=BAD.as_a_user).returncode == 0
    except subprocess.SubprocessError:
        return False


@pytest.mark.skipif(not dac_override_can_be_dropped(), reason="root here cannot drop CAP_DAC_OVERRIDE: a read-only "
                                                            "directory would not refuse it")
@pytest.mark.parametrize("case", AS_A_USER, ids=[c.name for c in AS_A_USER])
def test_a_read_only_directory_refuses_a_user_in_one_line(case, trial, tmp_path):
    """The read-only cases as the user meets them: a child process that file modes bind (as root, one without
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; chmod alone does not stop root). Exit 2, one line, nothing left,
    and the read-only directory as it was."""
    readonly_before = sorted(os.listdir(trial["READONLY"])), sorted(os.listdir(trial["RORUN"]))
    row = BAD.measure(case, trial, tmp_path / "case")
    assert row.ok and row.code == 2 and row.lines == 1, row
    assert row.leaves == [] and (sorted(os.listdir(trial["READONLY"])), sorted(os.listdir(trial["RORUN"]))) == readonly_before


def test_report_out_renders_a_read_only_run_elsewhere(trial, tmp_path):
    """`report --out` is the way on from a read-only run directory: the report and its plots go there."""
    out = tmp_path / "report"
    assert main(["report", trial["RORUN"], "--out", str(out), "--lang", "zh"]) == 0
    assert (out / "report.zh.md").exists() and (out / "report.zh.html").exists()
    assert not any(name.startswith("report") for name in os.listdir(trial["RORUN"]))


def test_sigterm_during_probe_without_out_leaves_nothing(trial, tmp_path):
    """A stop is 143 and one closing line; probe without --out leaves neither runs/ nor its scratch directory."""
    case = next(c for c in BAD.CASES if c.stop == "SIGTERM")
    with BAD.servers(tmp_path) as urls:
        row = BAD.measure(case, {**trial, **urls}, tmp_path / "case")
    assert row.ok and row.code == 143 and row.lines == 1 and row.leaves == [], row


@pytest.mark.slow  # a `run` process and a mock server: 4 s on an idle box, 15 s on a busy one
def test_ctrl_c_during_run_is_130_and_one_verdict_everywhere(trial, tmp_path, capsys):
    """Ctrl-C while a run's probes run (against a slow mock server): exit 130, the run directory kept for
    --resume, and one verdict, "interrupted: not judged", in status.json, report.md, the page and the computed
    one; export asks for --resume and writes nothing; diff against a finished run says what the stopped one did
    not measure instead of calling it lost."""
    from tests.report.one_verdict import verdicts_of

    case = next(c for c in BAD.CASES if c.stop == "SIGINT")
    with BAD.servers(tmp_path) as urls:
        row = BAD.measure(case, {**trial, **urls}, tmp_path / "case")
    assert row.ok and row.code == 130 and row.leaves == ["out/"], row
    out = tmp_path / "case" / "out"
    assert set(verdicts_of(out).values()) == {"INTERRUPTED"}, verdicts_of(out)
    assert "**结论: 已中断：未评判**" in _rendered_zh(out, tmp_path)
    assert main(["export", str(out), "--to", "vllm-ascend", "--plan-for", "npu", "--model-id", "acme/m",
                 "--out", str(tmp_path / "up")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and not (tmp_path / "up").exists()
    finished = tmp_path / "finished"  # the same model, its probes measured
    finished.mkdir()
    (finished / "inspect.json").write_text((out / "inspect.json").read_text())
    probes = {"schema_version": 2, "kind": "probes", "endpoint": {}, "model": "m", "summary": {}, "complete": True,
              "rows": [{"name": "chat completion", "status": "supported"}, {"name": "streaming", "status": "supported"}]}
    (finished / "probes.json").write_text(json.dumps(probes))
    (finished / "status.json").write_text(json.dumps({"schema_version": 2, "kind": "status", "model": "default",
                                                      "platform": "cpu", "stages": {}, "workload": {}}))
    assert main(["diff", str(finished), str(out), "--out", str(tmp_path / "d"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {f["change"] for f in result["features"]} <= {"not measured in B"} and result["verdict"]["status"] == "WARN"


def _rendered_zh(out, tmp_path):
    assert main(["report", str(out), "--lang", "zh", "--out", str(tmp_path / "zh")]) == 0
    return (tmp_path / "zh" / "report.zh.md").read_text()


def test_the_table_writes_each_row_and_flags_what_breaks_the_rule():
    good = BAD.Row("x", "inspect ./x", 2, 1, "llm-adapt inspect: error: x", [], 2, True)
    two_lines = BAD.Row("y", "y", 2, 2, "e", [], 2, True)
    left = BAD.Row("z", "z", 2, 1, "e", ["runs/"], 2, True)
    lines = BAD.table([good, left])
    assert lines[2] == "| x | `inspect ./x` | 2 | 1 | nothing | - | llm-adapt inspect: error: x |"
    assert "`runs/`" in lines[3]
    assert BAD.problems([good]) == []
    assert BAD.problems([two_lines]) == ["y: 2 lines on stderr"] and BAD.problems([left]) == ["z: left ['runs/']"]
    assert BAD.leftovers({"a"}, {"a", "runs", "runs/x", "runs/x/y.json"}) == ["runs/"]


def test_the_docs_table_is_the_measured_one():
    """docs/limits.md holds the script's table between its markers, stamped with a date and a CPU."""
    text = BAD.LIMITS.read_text()
    assert text.count(BAD.BEGIN) == 1 and text.count(BAD.END) == 1
    block = text[text.index(BAD.BEGIN):text.index(BAD.END)]
    assert "Measured 20" in block and " cores with `python benchmarks/bad_inputs.py --docs`" in block
    named = {line.split(" | ")[0].lstrip("| ") for line in block.splitlines() if line.startswith("| ")}
    assert {c.name for c in BAD.CASES if BAD.host_lacks(c.needs)} <= named
