"""Every subcommand against bad input: one line naming the problem and the fix, a defined exit code."""

import json

import pytest

from llm_adapt.cli import main

CASES = [
    # (argv, exit code, words the one line must contain)
    (["inspect", "MISSING"], 2, "no such file or directory"),
    (["inspect", "TEXTFILE"], 2, "not a model"),
    (["inspect", "BADCFG"], 2, "malformed JSON"),
    (["inspect", "CORRUPT.gguf"], 2, "cannot read this GGUF"),
    (["inspect", "default", "--device-memory", "12XB"], 2, "not a number"),
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
    (["run", "default", "--endpoint", "http://127.0.0.1:9/v1", "--out", "OUT"], 1, "connection refused"),
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
