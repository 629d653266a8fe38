"""A task whose dataset is neither cached nor reachable is one skip line naming the dataset and the fetch
command; unknown task names are one-line usage errors. (Slow only because lm-eval indexes its task tree.)"""

import pytest

from llm_adapt.errors import UsageError
from llm_adapt.evaluation.tasks import check_known, load, registry_folders, task_manager

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tm(tmp_path_factory):
    return task_manager(tmp_path_factory.mktemp("tasks"), ["gsm8k"])


def test_uncached_dataset_offline_is_a_skip(tm, monkeypatch, tmp_path):
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # both libraries read these variables when first imported: set as in a process started offline
    # (without it the hub client retried with back-off for about 20 s before giving up)
    for module, name in ((datasets.config, "HF_DATASETS_OFFLINE"), (datasets.config, "HF_HUB_OFFLINE"),
                         (huggingface_hub.constants, "HF_HUB_OFFLINE")):
        monkeypatch.setattr(module, name, True)
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


def test_a_registry_task_is_indexed_from_its_own_folder(tm):
    assert "gsm8k" in tm.all_tasks and "mmlu" not in tm.all_tasks  # not the whole registry


def test_registry_folders_are_found_by_the_task_declaration(tmp_path):
    for rel, text in {"math/gsm.yaml": "task: gsm8k\ndataset_path: openai/gsm8k\n",
                      "math/cot/gsm_cot.yaml": "include: ../gsm.yaml\ntask: 'gsm8k_cot'\n",
                      "other/x.yaml": "task: gsm8k_other\n# mentions gsm8k\n",
                      "groups/g.yaml": "group: mygroup\ntask:\n  - gsm8k\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert registry_folders(["gsm8k"], tmp_path) == [tmp_path / "math"]
    assert registry_folders(["gsm8k_cot", "gsm8k_other"], tmp_path) == [tmp_path / "math", tmp_path / "other"]
    assert registry_folders(["mygroup"], tmp_path) is None  # a group: the whole registry
    assert registry_folders(["no-such-task"], tmp_path) is None
    (tmp_path / "top.yaml").write_text("task: loose\n")
    assert registry_folders(["loose"], tmp_path) is None
