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


def test_aisbench_backend_without_aisbench_is_one_line(tmp_path, monkeypatch, capsys):
    from llm_adapt.evaluation.aisbench import install

    monkeypatch.setenv(install.ENV, str(tmp_path / "no-venv"))
    assert main(["eval", "default", "--endpoint", "http://127.0.0.1:9/v1", "--backend", "aisbench"]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds no ais_bench" in err and "llm_adapt.evaluation.aisbench.install" in err and "\n" not in err
    assert not list(tmp_path.iterdir())  # nothing left behind


def test_aisbench_bad_dataset_and_data_dir(tmp_path, capsys):
    assert main(["eval", "default", "--endpoint", "http://x/v1", "--backend", "aisbench", "--aisbench-dataset", "gsm8k"]) == 2
    assert "FAMILY/NAME" in capsys.readouterr().err
    assert main(["eval", "default", "--endpoint", "http://x/v1", "--backend", "aisbench",
                 "--aisbench-data", str(tmp_path / "none")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_detect_must_be_positive(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["eval", "default", "--endpoint", "http://x/v1", "--detect", "0"])
    assert exc.value.code == 2


def test_limit_takes_a_number_or_auto():
    from llm_adapt.commands.eval_cmds import item_limit

    assert item_limit("auto") == "auto" and item_limit("40") == 40
    import argparse

    import pytest

    with pytest.raises(argparse.ArgumentTypeError):
        item_limit("0")


def test_aisbench_refuses_limit_auto(capsys):
    assert main(["eval", "default", "--endpoint", "http://x/v1", "--backend", "aisbench", "--limit", "auto"]) == 2
    assert "--limit auto" in capsys.readouterr().err
