"""A task whose dataset is neither cached nor reachable is one skip line naming the dataset and the fetch
command; unknown task names are one-line usage errors. (Slow only because lm-eval indexes its task tree.)"""

import pytest

from llm_adapt.errors import UsageError
from llm_adapt.evaluation.tasks import check_known, load, task_manager

pytestmark = [pytest.mark.inprocess, pytest.mark.slow]


@pytest.fixture(scope="module")
def tm(tmp_path_factory):
    return task_manager(tmp_path_factory.mktemp("tasks"), ["gsm8k"])


def test_uncached_dataset_offline_is_a_skip(tm, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    loaded = load("gsm8k", tm)
    assert loaded.skip and "\n" not in loaded.skip
    assert "openai/gsm8k" in loaded.skip and "datasets.load_dataset('openai/gsm8k', 'main')" in loaded.skip


def test_builtin_tasks_load_offline(tm, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    mc, arith = load("builtin-mc", tm), load("builtin-arith", tm)
    assert mc.skip is None and not mc.generative
    assert arith.skip is None and arith.generative


def test_unknown_task_is_a_usage_error(tm):
    with pytest.raises(UsageError, match="unknown task 'no-such-task'"):
        check_known(["builtin-mc", "no-such-task"], tm)


def test_built_in_tasks_alone_do_not_index_lm_evals_registry(tmp_path):
    tm = task_manager(tmp_path, ["builtin-mc", "builtin-arith"])  # the whole registry took 22 s to index here
    assert {"builtin-mc", "builtin-arith"} <= set(tm.all_tasks) and "gsm8k" not in tm.all_tasks
    check_known(["builtin-mc"], tm)
