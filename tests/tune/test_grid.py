import pytest

from llm_adapt.command import Command
from llm_adapt.inspect.plan import DeployPlan
from llm_adapt.tune.grid import Trial, apply_trial, build_grid, cut_to_budget
from llm_adapt.tune.run import recommend
from llm_adapt.tune.stats import ratio_with_uncertainty, summary

# the fields of a plan the grid reads (model_construct: a partial plan, as plain data)
PLAN = DeployPlan.model_construct(
    max_num_seqs=16, tensor_parallel=1, env={"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_CPU_OMP_THREADS_BIND": "0-1"},
    mode_commands={"eager": Command.from_argv(["python", "-m", "vllm", "--max-num-seqs", "16", "--port", "8000",
                                               "--enforce-eager"])})


def test_cpu_grid_starts_from_engine_defaults_and_tries_binding():
    grid = build_grid(PLAN, "cpu", cores=2)
    assert grid[0].knob == "baseline" and "VLLM_CPU_OMP_THREADS_BIND" in grid[0].unset_env
    assert any(t.knob == "VLLM_CPU_OMP_THREADS_BIND" and t.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-1" for t in grid)
    assert any(t.graph for t in grid)


def test_cpu_grid_measures_the_preload_alone_and_with_binding():
    preload = "/usr/lib/libtcmalloc_minimal.so.4:/venv/lib/libiomp5.so"
    plan = PLAN.with_env({"LD_PRELOAD": preload})
    grid = build_grid(plan, "cpu", cores=2)
    envs = {t.knob: apply_trial(plan.command(), plan.env, t)[1] for t in grid}
    assert "LD_PRELOAD" not in envs["baseline"] and "VLLM_CPU_OMP_THREADS_BIND" not in envs["baseline"]
    assert "LD_PRELOAD" not in envs["VLLM_CPU_OMP_THREADS_BIND"]  # binding alone
    assert envs["LD_PRELOAD"]["LD_PRELOAD"] == preload and "VLLM_CPU_OMP_THREADS_BIND" not in envs["LD_PRELOAD"]
    assert envs["bind + LD_PRELOAD"]["LD_PRELOAD"] == preload and envs["bind + LD_PRELOAD"]["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    assert envs["graph mode"]["LD_PRELOAD"] == preload  # the other knobs start from the plan


def test_cpu_grid_without_preload_has_no_preload_trial():
    assert "LD_PRELOAD" not in {t.knob for t in build_grid(PLAN, "cpu", cores=2)}


def test_npu_grid_has_graph_variants_and_tp_when_devices_allow():
    plan = PLAN.model_copy(update={"tensor_parallel": 1})
    knobs = {t.knob for t in build_grid(plan, "npu", devices=2)}
    assert {"cudagraph_mode", "--tensor-parallel-size", "--gpu-memory-utilization"} <= knobs
    assert "--tensor-parallel-size" not in {t.knob for t in build_grid(plan, "cuda", devices=1)}


def test_apply_trial():
    command, env = apply_trial(PLAN.command(), PLAN.env,
                            Trial("x", "k", env={"A": "1"}, unset_env=("VLLM_CPU_OMP_THREADS_BIND",),
                                  args=("--max-num-seqs", "32"), remove_args=("--max-num-seqs",), graph=True))
    assert command.argv() == ["python", "-m", "vllm", "--port", "8000", "--max-num-seqs", "32"]
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "4", "A": "1"}


def test_budget_cutter_keeps_baseline_and_orders_by_value():
    trials = [Trial("base", "baseline"), Trial("cheap-good", "a", prior=0.5), Trial("graph", "g", graph=True, prior=0.3),
              Trial("cheap-meh", "b", prior=0.01)]
    startup = {"eager": 60.0, "graph": 240.0}
    chosen, skipped = cut_to_budget(trials, budget_s=3 * 80, startup_s=startup, run_s=10, repeats=2)
    assert [t.name for t in chosen] == ["base", "cheap-good", "cheap-meh"]
    assert skipped == [{"name": "graph", "knob": "g", "estimated_s": 260.0, "reason": "over the budget"}]
    assert skipped[0]["reason"].key == "tn_over_budget"


def test_max_trials_keeps_the_most_promising_within_the_budget():
    trials = [Trial("base", "baseline"), Trial("cheap-good", "a", prior=0.5), Trial("graph", "g", graph=True, prior=0.3),
              Trial("cheap-meh", "b", prior=0.01)]
    startup = {"eager": 60.0, "graph": 240.0}
    chosen, skipped = cut_to_budget(trials, budget_s=3 * 80, startup_s=startup, run_s=10, repeats=2, max_trials=1)
    assert [t.name for t in chosen] == ["base", "cheap-good"]
    assert {s["name"]: s["reason"] for s in skipped} == {"graph": "over --max-trials 1", "cheap-meh": "over --max-trials 1"}
    chosen, _ = cut_to_budget(trials, budget_s=3 * 80, startup_s=startup, run_s=10, repeats=2, max_trials=5)
    assert [t.name for t in chosen] == ["base", "cheap-good", "cheap-meh"]  # the budget still binds


def test_noise_rules():
    a, b = summary([52.0, 53.0]), summary([30.0, 31.0])
    ratio, err = ratio_with_uncertainty(a, b)
    assert ratio == pytest.approx(52.5 / 30.5) and err > 0


def row(name, values, status="done"):
    return {"name": name, "status": status, "output_throughput": summary(values), "argv": ["python", name],
            "env": {}, "unset_env": []}


def test_recommendation_only_outside_the_noise():
    rec = recommend([row("base", [30, 31]), row("bind", [52, 53])], "output_throughput", True)
    assert rec["name"] == "bind" and rec["significant"] and rec["gain"] == pytest.approx(52.5 / 30.5, rel=1e-3)
    rec = recommend([row("base", [30, 33]), row("noise", [31, 34])], "output_throughput", True)
    assert rec["name"] == "base" and not rec["significant"] and "keep the defaults" in rec["note"]
    assert recommend([row("base", [], status="failed")], "output_throughput", True) is None


def test_repeated_baseline_widens_its_spread():
    from llm_adapt.tune.run import _merge_runs

    base = {"runs": [{"output_throughput": 30.0}, {"output_throughput": 31.0}]}
    again = {"runs": [{"output_throughput": 36.0}, {"output_throughput": 37.0}]}
    _merge_runs(base, again)
    assert base["output_throughput"]["n"] == 4 and base["output_throughput"]["max"] == 37.0
    rows = [dict(row("base", []), **base), dict(row("x", [35, 35.5])), dict(row("again", [36, 37]), merged_into_baseline=True)]
    rec = recommend(rows, "output_throughput", True)
    assert rec["name"] == "base" and not rec["significant"]  # drift swallowed the apparent gain


# what a tune run records of its options (TuneResult.settings)
SETTINGS = {"budget_minutes": 10.0, "max_trials": 1, "repeats": 2, "num_prompts": 8, "input_len": 32, "output_len": 16,
            "slo": None, "accuracy_check": "off"}


def test_inspect_shows_a_tune_recommendation(capsys, tmp_path, default_model):
    import json

    from llm_adapt.cli import main
    from llm_adapt.tune.run import TuneResult

    rec = recommend([row("base", [30, 31]), row("bind", [52, 53])], "output_throughput", True)
    TuneResult(platform="cpu", objective="throughput", metric="output_throughput", settings=SETTINGS, trials=[],
               skipped=[], recommendation=rec).save(tmp_path / "tune.json")
    assert main(["inspect", "default", "--tuned", str(tmp_path / "tune.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["tuned"]["name"] == "bind"


def test_a_faster_setting_that_fails_its_accuracy_check_is_never_recommended():
    fast_but_wrong = row("graph", [52, 53]) | {"accuracy": {"status": "FAIL", "reasons": ["top-k KL / noise floor: 20"]}}
    rec = recommend([row("base", [30, 31]), fast_but_wrong], "output_throughput", True)
    assert rec["name"] == "base" and not rec["significant"] and rec["rejected_for_accuracy"] == ["graph"]
    fast_and_right = row("bind", [52, 53]) | {"accuracy": {"status": "PASS", "reasons": []}}
    rec = recommend([row("base", [30, 31]), fast_but_wrong, fast_and_right], "output_throughput", True)
    assert rec["name"] == "bind" and rec["accuracy_verified"] and rec["rejected_for_accuracy"] == ["graph"]
    rec = recommend([row("base", [30, 31]), row("bind", [52, 53])], "output_throughput", True)
    assert rec["significant"] and not rec["accuracy_verified"]  # no check ran: said so


def test_a_graph_trial_out_of_line_beside_a_passing_eager_baseline_names_graph_mode(tmp_path, tiny_llama):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.report.render import render_report
    from llm_adapt.tune.run import TuneResult, name_graph_causes

    def checked(name, status, kl, graph=False):
        return row(name, [30, 31]) | {"graph": graph, "accuracy": {"status": status, "reasons": [], "kl": kl,
                                                                   "decode_kl": kl}}

    trials = [checked("base", "PASS", 1e-6), checked("bind", "PASS", 1e-6), checked("graph mode", "FAIL", 0.01, True),
              checked("graph mode + seqs", "PASS", 1e-6, True)]
    name_graph_causes(trials)
    assert [t["name"] for t in trials if t["accuracy"].get("cause")] == ["graph mode"]
    assert trials[2]["accuracy"]["cause"]["signature"] == "graph"
    failing_base = [checked("base", "FAIL", 0.01), checked("graph mode", "FAIL", 0.01, True)]
    name_graph_causes(failing_base)  # both modes out of line: not graph mode's alone
    assert not failing_base[1]["accuracy"].get("cause")
    unchecked = [row("base", [30, 31]) | {"graph": False}, checked("graph mode", "FAIL", 0.01, True)]
    name_graph_causes(unchecked)  # no eager check to stand against
    assert not unchecked[1]["accuracy"].get("cause")
    TuneResult(platform="cpu", objective="throughput", metric="output_throughput",
               settings=SETTINGS, trials=trials,
               skipped=[], recommendation=recommend(trials, "output_throughput", True)).save(tmp_path / "tune.json")
    source = resolve_model(str(tiny_llama))  # a run directory the report can render
    run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="m", kv_cache_space_gib=1,
                                    max_model_len=512), "cpu").save(tmp_path / "inspect.json")
    text = render_report(tmp_path, "en")[0].read_text()
    assert "graph mode: Verdict FAIL, base PASS" in text and "Graph mode: the compiled or captured graph" in text
    assert "图模式：编译或捕获的计算图" in render_report(tmp_path, "zh")[0].read_text()
