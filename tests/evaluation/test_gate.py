"""`run`'s default tasks: upstream's gate (gsm8k) where its dataset is in the local HF datasets cache, found
without the network; and the first screen's task lines (what the items could see, what did not run)."""

from llm_adapt.evaluation.judge import paired_rows
from llm_adapt.evaluation.tasks import datasets_cache, default_run_tasks, gate_cached
from llm_adapt.messages import reason
from tests.records import run_data, screen_of


def test_the_cache_is_found_as_datasets_finds_it(tmp_path):
    assert datasets_cache({"HF_DATASETS_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    assert datasets_cache({"HF_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "datasets"


def test_the_gate_runs_by_default_only_where_its_data_is_here(tmp_path):
    env = {"HF_DATASETS_CACHE": str(tmp_path)}
    assert not gate_cached(env) and default_run_tasks(False, env) == ()
    (tmp_path / "openai___gsm8k").mkdir()
    assert not gate_cached(env)  # an empty folder is not a dataset
    (tmp_path / "openai___gsm8k" / "main").mkdir()
    assert gate_cached(env) and default_run_tasks(False, env) == ("gsm8k",)
    assert default_run_tasks(True, env) == ()  # a --quick smoke run stays quick


def _run(**parts):
    return run_data(**parts)


def test_first_screen_says_what_the_items_could_see_and_what_did_not_run():
    rows = paired_rows("builtin-mc", {"acc,none": {i: i >= 2 for i in range(60)}}, {"acc,none": {i: True for i in range(60)}})
    ev = {"paired": rows, "skipped": [], "verdict": {"status": "PASS", "reasons": []}}
    screen = screen_of(_run(eval=ev))
    (line,) = [v for v in screen.verified if v.startswith("task accuracy:")]
    assert "with 60 items, a drop smaller than" in line and "would go unseen" in line
    zh = screen_of(_run(eval=ev), "zh")
    assert any(v.startswith("任务精度：") and "看不出来" in v for v in zh.verified)

    status = {"stages": {"eval": {"status": "skipped", "reason": reason("eval_opt_in")}}}
    (missing,) = [p for p in screen_of(_run(status=status)).planned if p.startswith("task accuracy:")]
    assert "upstream's gate, gsm8k" in missing and "load_dataset('openai/gsm8k', 'main')" in missing
