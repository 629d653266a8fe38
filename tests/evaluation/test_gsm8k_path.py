"""gsm8k at a path given (--gsm8k-data): its files found in either layout, a bad folder refused in one line, and
lm-eval's own gsm8k task built offline on those files under its own name."""

import json

import pytest

from llm_adapt.cli import main
from llm_adapt.errors import UsageError
from llm_adapt.evaluation.tasks import default_run_tasks, gsm8k_files, load, local_gsm8k_task, task_manager, validate

from .gsm8k_cache import problem, write_repository


def write_jsonl(folder, train=2, test=3):
    """AISBench's layout: train.jsonl and test.jsonl of {question, answer}."""
    folder.mkdir(parents=True)
    for split, rows in (("train", [problem(i) for i in range(train)]), ("test", [problem(100 + i) for i in range(test)])):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_both_layouts_are_found_split_by_split(tmp_path):
    files = gsm8k_files(write_jsonl(tmp_path / "ais"))
    assert [f.rsplit("/", 1)[-1] for f in files["train"] + files["test"]] == ["train.jsonl", "test.jsonl"]
    repo = write_repository(tmp_path / "hub")  # a copy of openai/gsm8k: main/{split}-*.parquet
    files = gsm8k_files(repo)
    assert files["test"][0].endswith("main/test-00000-of-00001.parquet") and files["train"][0].endswith(".parquet")


@pytest.mark.parametrize("remove, words", [("test.jsonl", "no test split"), ("train.jsonl", "no train split")])
def test_a_folder_without_a_split_is_refused_naming_it(tmp_path, remove, words):
    folder = write_jsonl(tmp_path / "d")
    (folder / remove).unlink()
    with pytest.raises(UsageError, match=words):
        gsm8k_files(folder)


def test_mixed_formats_and_a_missing_folder_are_refused(tmp_path):
    folder = write_repository(tmp_path / "hub")
    (folder / "train.jsonl").write_text(json.dumps(problem(0)) + "\n")  # train as jsonl, test as parquet
    with pytest.raises(UsageError, match="different formats"):
        gsm8k_files(folder)
    with pytest.raises(UsageError, match="no such directory"):
        gsm8k_files(tmp_path / "absent")


def test_the_local_task_is_lm_evals_gsm8k_reading_the_files(tmp_path):
    files = {"train": ["/d/train.jsonl"], "test": ["/d/test.jsonl"]}
    task = local_gsm8k_task(files, tmp_path / "registry")
    assert task["task"] == "gsm8k" and task["include"] == str(tmp_path / "registry" / "gsm8k" / "gsm8k.yaml")
    assert (task["dataset_path"], task["dataset_name"], task["dataset_kwargs"]) == ("json", None, {"data_files": files})
    parquet = {"train": ["/d/main/train-0.parquet"], "test": ["/d/main/test-0.parquet"]}
    assert local_gsm8k_task(parquet, tmp_path)["dataset_path"] == "parquet"


def test_data_given_makes_the_gate_runs_default_even_quick(tmp_path):
    env = {"HF_DATASETS_CACHE": str(tmp_path / "empty")}
    assert default_run_tasks(True, env) == () and default_run_tasks(False, env) == ()
    assert default_run_tasks(True, env, gsm8k_data=tmp_path) == ("gsm8k",)


def test_data_given_for_tasks_without_gsm8k_is_refused(tmp_path):
    with pytest.raises(UsageError, match="add gsm8k to --tasks"):
        validate(["builtin-mc"], write_jsonl(tmp_path / "d"))


@pytest.mark.parametrize("layout", ["jsonl", "parquet"])
def test_lm_evals_gsm8k_loads_the_given_files_offline(tmp_path, monkeypatch, layout):
    import datasets.config

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    folder = write_jsonl(tmp_path / "d", test=3) if layout == "jsonl" else write_repository(tmp_path / "hub", test=3)
    tm = task_manager(tmp_path / "work", ["gsm8k"], folder)
    loaded = load("gsm8k", tm)
    assert loaded.skip is None and loaded.generative and loaded.items == 3, loaded


@pytest.mark.parametrize("argv, words", [
    (["run", "default", "--gsm8k-data", "{tmp}/absent"], "--gsm8k-data {tmp}/absent: no such directory"),
    (["run", "default", "--tasks", "builtin-mc", "--gsm8k-data", "{data}"], "add gsm8k to --tasks"),
    (["eval", "default", "--backend", "aisbench", "--gsm8k-data", "{data}"], "--aisbench-data DIR"),
])
def test_bad_gsm8k_data_is_one_line_and_exit_2(tmp_path, capsys, argv, words):
    data = write_jsonl(tmp_path / "d")
    fill = lambda text: text.format(tmp=tmp_path, data=data)  # noqa: E731
    assert main([fill(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fill(words) in err[0], err
