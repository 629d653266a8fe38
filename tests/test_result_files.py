"""A result file is declared once, by its record: a StageResult with a KIND and a FILE is read by load_run, kept
in RunData.parts under its kind, counted among a run directory's results (a reused --out is checked against it)
and found by read_checked through its kind. Adding a result is that one class; this test adds one."""

from typing import ClassVar

import pytest

from llm_adapt import results
from llm_adapt.judged.data import RunData, load_run, result_files
from llm_adapt.results import StageResult, read_checked
from llm_adapt.run.identity import earlier_results
from llm_adapt.run_status import RunStatus


@pytest.fixture()
def extra_result(monkeypatch):
    """A new stage's result, as a stage module would declare it; the registries are put back afterwards."""
    monkeypatch.setattr(results, "KINDS", dict(results.KINDS))
    monkeypatch.setattr(results, "RUN_FILES", dict(results.RUN_FILES))
    monkeypatch.setattr("llm_adapt.judged.data.RUN_FILES", results.RUN_FILES)

    class ExtraResult(StageResult):
        KIND: ClassVar[str] = "extra"
        FILE: ClassVar[str | None] = "extra.json"

        figure: float

    return ExtraResult


def a_run(tmp_path):
    RunStatus(model="m", platform="cpu", stages={}, workload={}).save(tmp_path / "status.json")
    return tmp_path


def test_a_result_declared_by_its_record_is_read_listed_and_found(extra_result, tmp_path):
    run_dir = a_run(tmp_path)
    extra_result(figure=1.5).save(run_dir / "extra.json")
    assert result_files()["extra"] == "extra.json"
    run = load_run(run_dir)
    assert isinstance(run.parts["extra"], extra_result) and run.parts["extra"].figure == 1.5
    assert earlier_results(run_dir) == ["status.json", "extra.json"]
    assert isinstance(read_checked(run_dir / "extra.json"), extra_result)  # by its kind alone


def test_a_damaged_new_result_is_named_not_misread(extra_result, tmp_path):
    run_dir = a_run(tmp_path)
    (run_dir / "extra.json").write_text("{not json")
    run = load_run(run_dir)
    assert "extra" not in run.parts and "not valid JSON" in run.unreadable["extra"]


def test_every_result_the_run_data_types_is_a_declared_run_file():
    typed = {name for name, value in vars(RunData).items() if type(value).__name__ == "Result"}
    assert typed == set(result_files()) and {"status", "inspect", "accuracy", "layers", "settings"} <= typed
    for name in typed:
        assert getattr(RunData, name) is None  # read on the class: no run, no result
