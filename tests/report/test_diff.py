"""llm-adapt diff: the judgement on plain numbers, and two run directories built from plain dicts."""

import json


from llm_adapt.report.diff import Metric, compare_metric, diff_runs, diff_verdict, feature_changes, write_diff
from llm_adapt.bench.modes import BenchResult
from llm_adapt.run_status import RunStatus
from tests.records import record, run_data


def test_a_change_within_the_spread_is_the_same():
    a = Metric("performance", "tput", 100.0, 2.0, True)
    b = Metric("performance", "tput", 97.0, 2.0, True)  # 3 < 3 x 2.83
    assert compare_metric(a, b)["change"] == "same"


def test_a_drop_beyond_the_spread_is_a_regression_and_a_rise_an_improvement():
    a = Metric("performance", "tput", 100.0, 1.0, True)
    assert compare_metric(a, Metric("performance", "tput", 80.0, 1.0, True))["change"] == "regression"
    assert compare_metric(a, Metric("performance", "tput", 120.0, 1.0, True))["change"] == "improvement"
    kl = Metric("accuracy", "kl", 1e-3, 1e-5, False)
    assert compare_metric(kl, Metric("accuracy", "kl", 5e-3, 1e-5, False))["change"] == "regression"


def test_tiny_relative_changes_never_count_even_with_tiny_errors():
    a = Metric("performance", "ttft", 100.0, 0.001, False)
    assert compare_metric(a, Metric("performance", "ttft", 101.0, 0.001, False))["change"] == "same"


def test_without_a_standard_error_only_large_changes_count():
    a = Metric("resources", "rss", 1.0, None, False)
    assert compare_metric(a, Metric("resources", "rss", 1.05, None, False))["change"] == "same"
    assert compare_metric(a, Metric("resources", "rss", 1.2, None, False))["change"] == "regression"


def test_a_figure_from_a_busy_host_is_never_called_a_regression():
    a = Metric("performance", "tput", 100.0, 1.0, True)
    slow_busy = Metric("performance", "tput", 60.0, 1.0, True, busy=True)
    row = compare_metric(a, slow_busy)
    assert row["change"] == "not judged (busy host)" and row["busy"] == [False, True]
    assert diff_verdict([row], [], ("PASS", "PASS"))["status"] == "PASS"
    assert compare_metric(a, Metric("performance", "tput", 99.5, 1.0, True, busy=True))["change"] == "same"
    # a quiet pair with the same drop is a regression
    assert compare_metric(a, Metric("performance", "tput", 60.0, 1.0, True))["change"] == "regression"


def test_a_non_finite_value_in_b_is_a_regression():
    a = Metric("accuracy", "kl", 1e-3, 1e-5, False)
    assert compare_metric(a, Metric("accuracy", "kl", float("nan"), None, False))["change"] == "regression"


def test_verdict():
    acc = {"group": "accuracy", "name": "kl", "a": 1e-3, "b": 5e-3, "unit": "", "change": "regression"}
    perf = {"group": "performance", "name": "tput", "a": 100, "b": 80, "unit": "tok/s", "change": "regression"}
    same = {**perf, "change": "same"}
    assert diff_verdict([same], [], ("PASS", "PASS"))["status"] == "PASS"
    assert diff_verdict([perf], [], ("PASS", "PASS"))["status"] == "WARN"
    assert diff_verdict([acc, perf], [], ("PASS", "PASS"))["status"] == "FAIL"
    assert diff_verdict([same], [{"name": "logprobs", "a": "supported", "b": "unsupported", "change": "lost"}],
                        ("PASS", "PASS"))["status"] == "FAIL"
    assert diff_verdict([same], [], ("PASS", "FAIL"))["status"] == "FAIL"


def test_feature_changes():
    a = run_data(**{"probes": {"rows": [{"name": "x", "status": "supported"}, {"name": "y", "status": "unsupported"}]}})
    b = run_data(**{"probes": {"rows": [{"name": "x", "status": "unsupported"}, {"name": "y", "status": "supported"}]}})
    changes = {c["name"]: c["change"] for c in feature_changes(a, b)}
    assert changes == {"x": "lost", "y": "gained"}


def test_a_feature_one_run_did_not_measure_is_not_lost():
    """An interrupted run B never reached its probes: A's supported features are "not measured in B", a WARN,
    not "lost" and a FAIL; a row not run is not measured either, and a real loss beside them still FAILs."""
    a = run_data(**{"probes": {"rows": [{"name": "x", "status": "supported"},
                                                     {"name": "y", "status": "supported"},
                                                     {"name": "z", "status": "not run"}]}})
    interrupted = run_data()
    changes = feature_changes(a, interrupted)
    assert {c["name"]: c["change"] for c in changes} == {"x": "not measured in B", "y": "not measured in B"}
    verdict = diff_verdict([], changes, ("PASS", "INTERRUPTED"))
    assert verdict["status"] == "WARN" and not any("lost" in r or "went from" in r for r in verdict["reasons"])
    assert any("run B was interrupted: not judged" in r for r in verdict["reasons"])
    b = run_data(**{"probes": {"rows": [{"name": "x", "status": "unsupported"},
                                                     {"name": "z", "status": "supported"}]}})
    changes = {c["name"]: c["change"] for c in feature_changes(a, b)}
    assert changes == {"x": "lost", "y": "not measured in B", "z": "not measured in A"}
    assert diff_verdict([], feature_changes(a, b), ("PASS", "PASS"))["status"] == "FAIL"  # x is lost
    assert diff_verdict([], feature_changes(b, a), ("PASS", "PASS"))["status"] == "WARN"  # x gained; y, z unmeasured


def _run_dir(path, tput, ttft):
    path.mkdir()
    metrics = {"output_throughput": tput, "mean_ttft_ms": ttft, "std_ttft_ms": 5.0, "mean_tpot_ms": 20.0,
               "std_tpot_ms": 1.0, "mean_e2el_ms": 1000.0, "std_e2el_ms": 50.0, "completed": 32}
    record(BenchResult, mode="throughput", runs=[{"metrics": metrics}]).save(path / "bench-throughput.json")
    record(RunStatus, stages={}).save(path / "status.json")
    return path


def test_diff_of_two_run_directories_writes_json_markdown_and_html(tmp_path):
    a, b = _run_dir(tmp_path / "a", 300.0, 100.0), _run_dir(tmp_path / "b", 200.0, 100.0)
    result = diff_runs(a, b)
    by_name = {m["name"]: m for m in result.metrics}
    assert by_name["throughput output throughput"]["change"] == "regression"
    assert by_name["throughput mean TTFT"]["change"] == "same"
    assert result.verdict["status"] == "WARN"
    paths = write_diff(result, tmp_path / "out")
    assert all(p.exists() for p in paths)
    assert "Regression verdict: WARN" in paths[1].read_text()
    assert "<html" in paths[2].read_text()


def test_a_result_of_another_schema_version_is_named_not_misread(tmp_path):
    from llm_adapt.judged.data import load_run

    run = _run_dir(tmp_path / "a", 300.0, 100.0)
    (run / "probes.json").write_text(json.dumps({"schema_version": 0, "rows": []}))
    (run / "serve.json").write_text("{not json")
    data = load_run(run)
    assert "probes" not in data.parts and "schema version 0 is not 2" in data.unreadable["probes"]
    assert "serve" in data.unreadable


def test_report_warns_of_an_unreadable_result_on_the_console_and_names_it_among_the_verdict_reasons(tmp_path, capsys):
    from llm_adapt.cli import main
    from tests.report.test_troubleshooting import STATUS

    run = tmp_path / "a"
    run.mkdir()
    (run / "status.json").write_text(json.dumps(STATUS))
    (run / "probes.json").write_text(json.dumps({"schema_version": 99, "rows": []}))
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"warning: {run / 'probes.json'}: schema version 99 is not 2; rerun the stage with this llm-adapt version"]
    page = (run / "report.md").read_text()
    assert "**Verdict: WARN**" in page and "probes: result file unreadable, not judged (see the notes)" in page
