"""Every subcommand, and each of its backends and modes, runs once in the suite through the entry point (the
console script's `main([...])`, or `python -m llm_adapt.cli` in a child): the table below names the test that
does, this test holds each row to its test's source, and docs/cli/README.md shows the table.

    LLM_ADAPT_WRITE_DOCS=1 .venv/bin/python -m pytest tests/test_entry_points.py    # rewrite the docs' table
"""

import ast
import os
import re
from pathlib import Path

import pytest

from llm_adapt.cli import build_parser
from llm_adapt.docs_gen import KEPT, subcommands

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs" / "cli" / "README.md"

# (subcommand, backend or mode, a word of its argv that selects it, "file::test") -- the test calls the
# subcommand from the entry point with that word, on the default model or a tiny one, with its real engine
ENTRY_POINTS = [
    ("models", "-", None, "tests/commands/test_model_cmds.py::test_models_lists_the_default_model"),
    ("inspect", "-", None, "tests/tune/test_grid.py::test_inspect_shows_a_tune_recommendation"),
    ("compare", "in process", None, "tests/commands/test_accuracy_cmds.py::test_compare_writes_accuracy_json"),
    ("compare", "--target-model", "--target-model",
     "tests/commands/test_accuracy_cmds.py::test_compare_of_a_planted_fault_exits_1_and_of_an_identical_copy_0"),
    ("compare", "--endpoint", "--endpoint", "tests/accuracy/test_faults_served.py::test_served_fault_is_caught"),
    ("layers", "--endpoint", "--endpoint",
     "tests/accuracy/test_faults_served.py::test_layers_against_an_endpoint_runs_from_the_entry_point"),
    ("eval", "lm-eval", "--tasks", "tests/evaluation/test_served.py::test_clean_server_matches_gold"),
    ("eval", "aisbench", "aisbench",
     "tests/evaluation/test_aisbench_served.py::test_eval_backend_aisbench_from_the_entry_point_pairs_the_served_model_with_the_gold"),
    ("serve", "vllm", "serve", "tests/engines/test_die_with_parent.py::test_sigkilled_serve_takes_its_engine_along"),
    ("probe", "--endpoint", "--endpoint", "tests/probes/test_probes.py::test_vllm_feature_matrix"),
    *[("bench", mode, mode, "tests/bench/test_modes.py::test_every_bench_mode_runs_from_the_entry_point")
      for mode in ("serve", "latency", "throughput", "sweep", "sla")],
    ("mock-server", "-", None, "tests/bench/test_modes.py::test_every_bench_mode_runs_from_the_entry_point"),
    ("run", "engine (vLLM)", "--quick", "tests/models/test_zoo.py::test_a_random_moe_base_model_is_served_judged_and_named_flat"),
    ("run", "--endpoint", "--endpoint", "tests/run/test_run_report.py::test_every_stage_lands_as_valid_json"),
    ("run", "--settings", "--settings", "tests/run/test_settings_served.py::test_the_differential_run_names_tensor_parallel"),
    ("run", "--stages dummy,real", "dummy,real",
     "tests/engines/test_dummy.py::test_two_stage_run_dummy_then_real_gives_the_matrix"),
    ("report", "-", None, "tests/report/test_diff.py::test_diff_of_two_run_directories_writes_json_markdown_and_html"),
    ("diff", "-", None, "tests/run/test_settings_served.py::test_diff_of_the_eager_run_and_its_tp2_setting_says_the_same"),
    ("export", "-", None, "tests/upstream/test_export.py::test_plan_for_npu_writes_every_file_at_its_upstream_path_labelled_planned"),
    ("tune", "-", None, "tests/tune/test_tune_live.py::test_tune_default_model_tries_thread_binding"),
]

# the modes a subcommand must have a row for: its choices in the parser, or its ways of reaching a model
REQUIRED = {"bench": {"serve", "latency", "throughput", "sweep", "sla"}, "eval": {"lm-eval", "aisbench"},
            "compare": {"in process", "--endpoint", "--target-model"}, "run": {"engine (vLLM)", "--endpoint"}}


def entry_calls(source: str, command: str) -> bool:
    """Whether `source` calls `command` from the entry point: main([...]), the tests' run_cli, or a child
    `python -m llm_adapt.cli`."""
    if command == "mock-server" and "start_mock(" in source:  # conftest.start_mock: the child it starts (below)
        return True
    quoted = re.escape(f'"{command}"')
    return bool(re.search(rf'main\(\[\s*{quoted}|run_cli\(capsys,\s*{quoted}|"llm_adapt\.cli",\s*{quoted}|'
                          rf'"llm_adapt\.cli",\s*\*?\w*\s*\]?,?\s*{quoted}', source))


def test_start_mock_starts_the_mock_server_from_the_entry_point():
    source = (ROOT / "tests" / "conftest.py").read_text()
    assert entry_calls(source.split("def start_mock", 1)[1].split("\ndef ", 1)[0], "mock-server")


def test_every_subcommand_and_mode_has_a_row():
    commands = set(subcommands(build_parser()))
    assert commands == {row[0] for row in ENTRY_POINTS}
    for command, modes in REQUIRED.items():
        assert modes <= {row[1] for row in ENTRY_POINTS if row[0] == command}, command
    bench = next(a for a in subcommands(build_parser())["bench"][1]._actions if a.dest == "mode")
    assert set(bench.choices) == REQUIRED["bench"]


@pytest.mark.parametrize("command,mode,word,node", ENTRY_POINTS, ids=[f"{r[0]} {r[1]}" for r in ENTRY_POINTS])
def test_each_row_names_a_test_that_calls_it_from_the_entry_point(command, mode, word, node):
    path, name = node.split("::")
    source = (ROOT / path).read_text()
    names = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert name in names, f"{node}: no such test"
    assert entry_calls(source, command), f"{path} never calls `llm-adapt {command}` from the entry point"
    assert word is None or f'"{word}"' in source, f"{path}: no {word!r} for {command} {mode}"


def table() -> str:
    lines = ["## Every subcommand from the entry point", "",
             "Each subcommand, and each of its backends and modes, runs once in `make test` as a user types it "
             "(tests/test_entry_points.py holds each row to its test):", "",
             "| subcommand | backend / mode | the test |", "|---|---|---|"]
    lines += [f"| `{command}` | {mode} | `{node}` |" for command, mode, _, node in ENTRY_POINTS]
    return "\n".join(lines) + "\n"


def test_the_docs_show_the_table():
    text = INDEX.read_text()
    if os.environ.get("LLM_ADAPT_WRITE_DOCS") == "1":
        head = text.split(f"\n{KEPT}\n", 1)[0]
        INDEX.write_text(f"{head}\n{KEPT}\n{table()}")
        text = INDEX.read_text()
    assert text.endswith(f"\n{KEPT}\n{table()}"), "docs/cli/README.md: run LLM_ADAPT_WRITE_DOCS=1 pytest tests/test_entry_points.py"
