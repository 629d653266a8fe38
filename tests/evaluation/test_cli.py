"""`llm-adapt eval` bad input: one line naming the problem, exit 2, before any model or engine is touched."""

from llm_adapt.cli import main


def test_malformed_baseline_file(tmp_path, capsys):
    bad = tmp_path / "b.yaml"
    bad.write_text("tasks: [gsm8k\n")
    assert main(["eval", "default", "--endpoint", "http://127.0.0.1:9/v1", "--baseline-file", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llm-adapt eval: error: --baseline-file") and "not valid YAML" in err and "\n" not in err


def test_missing_baseline_file(tmp_path, capsys):
    assert main(["eval", "default", "--endpoint", "http://x/v1", "--baseline-file", str(tmp_path / "no.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_empty_task_list(capsys):
    assert main(["eval", "default", "--endpoint", "http://x/v1", "--tasks", ","]) == 2
    assert "--tasks is empty" in capsys.readouterr().err
