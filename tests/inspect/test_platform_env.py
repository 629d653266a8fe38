"""The per-platform environment tables: which variable each rule sets, and that every variable a plan
exports is explained with a source."""

from dataclasses import replace

import pytest

from llm_adapt.inspect import platform_env as penv
from llm_adapt.inspect.platform_env import EnvContext, env_for, explain
from llm_adapt.platforms import PLATFORMS
from tests.inspect.test_plan import plan_for, smollm2_spec

HCCL = {"HCCL_OP_EXPANSION_MODE", "HCCL_BUFFSIZE"}
INTERFACES_ASCEND = {"HCCL_IF_IP", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"}


def test_ascend_one_card_sets_the_routine_variables_and_no_collective_tuning():
    env = env_for("npu", EnvContext(devices=1))
    assert env == {"ASCEND_RT_VISIBLE_DEVICES": "0", "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
                   "TASK_QUEUE_ENABLE": "1", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1"}


def test_ascend_two_cards_add_hccl_aiv_and_buffer():
    env = env_for("npu", EnvContext(devices=2))
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert env["HCCL_OP_EXPANSION_MODE"] == "AIV" and env["HCCL_BUFFSIZE"] == "1024"
    assert not INTERFACES_ASCEND & env.keys()


def test_one_card_per_node_on_two_nodes_still_communicates():
    env = env_for("npu", EnvContext(devices=1, nodes=2, form="ray"))
    assert HCCL <= env.keys()


def test_ascend_ray_node_exports_interfaces_and_keeps_its_visible_devices():
    env = env_for("npu", EnvContext(devices=8, nodes=2, form="ray", node_ip=penv.NODE_IP))
    assert env["HCCL_IF_IP"] == "<NODE_IP>" and env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "<IFNAME>"
    assert env["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] == "1"
    assert "HCCL_SOCKET_IFNAME" not in env  # the Ray tutorial does not set it


def test_ascend_data_parallel_node_sets_hccl_socket_but_not_the_ray_switch():
    env = env_for("npu", EnvContext(devices=8, nodes=2, form="data_parallel", node_ip=penv.HEAD_IP))
    assert env["HCCL_IF_IP"] == "<HEAD_IP>" and env["HCCL_SOCKET_IFNAME"] == "<IFNAME>"
    assert "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES" not in env


def test_cuda_single_node_sets_only_the_visible_devices():
    assert env_for("cuda", EnvContext(devices=1)) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert env_for("cuda", EnvContext(devices=4)) == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}  # no NCCL tuning invented


def test_cuda_multinode_sets_nccl_and_gloo_interfaces_and_ray_the_host_ip():
    dp = env_for("cuda", EnvContext(devices=2, nodes=2, form="data_parallel"))
    assert dp["NCCL_SOCKET_IFNAME"] == dp["GLOO_SOCKET_IFNAME"] == "<IFNAME>" and "VLLM_HOST_IP" not in dp
    ray = env_for("cuda", EnvContext(devices=2, nodes=2, form="ray", node_ip=penv.NODE_IP))
    assert ray["VLLM_HOST_IP"] == "<NODE_IP>"
    assert not any(name.startswith(("HCCL", "ASCEND")) for name in ray)


def test_cpu_table_sets_nothing_itself():
    assert env_for("cpu", EnvContext(devices=1)) == {}


@pytest.mark.parametrize("platform", ["npu", "cuda"])
def test_visible_devices_row_is_the_platforms_variable(platform):
    assert penv.table(platform)[0].name == PLATFORMS[platform].visible_devices_env


def test_every_row_has_a_known_rule_both_languages_and_a_source():
    for platform in ("npu", "cuda", "cpu"):
        rows = PLATFORMS[platform].env_rows
        assert rows, platform
        assert len({row.name for row in rows}) == len(rows), platform
        for row in rows:
            assert row.rule in penv.RULES and row.en and row.zh and row.source, row.name
            assert row.verified in (penv.FROM_DOCS, penv.ON_CI)
            assert ("vLLM-Ascend" in row.source) == (platform == "npu"), row.name


def test_a_registered_platform_exports_its_own_rows():
    from tests.platforms.test_registry import XPU
    from llm_adapt.platforms import register, unregister
    from llm_adapt.platforms.env import EnvRow, const

    register(replace(XPU, env_rows=(EnvRow("ZE_AFFINITY_MASK", const("0"), "always", "the GPUs", "GPU", "its docs"),)))
    try:
        assert env_for("xpu", EnvContext(devices=1)) == {"ZE_AFFINITY_MASK": "0"}
        assert explain("xpu", {"ZE_AFFINITY_MASK": "0"})[0]["source"] == "its docs"
    finally:
        unregister("xpu")
    assert env_for("xpu", EnvContext(devices=1)) == {}  # gone with its platform


def test_explain_marks_an_unknown_variable_with_empty_text():
    rows = explain("cuda", {"CUDA_VISIBLE_DEVICES": "0", "MADE_UP": "1"})
    assert rows[0]["en"] and rows[0]["zh"] and rows[0]["source"] and rows[0]["rule_en"] == "always"
    assert rows[1] == {"name": "MADE_UP", "value": "1", "rule_en": "", "rule_zh": "", "en": "", "zh": "",
                       "source": "", "verified": ""}


def _plans():
    from llm_adapt.inspect import memory as mem
    from llm_adapt.inspect.plan import PlanOptions, make_plan
    from llm_adapt.platforms import get_platform

    spec = smollm2_spec()
    cpu = make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"),
                    PlanOptions(model_path="/m", served_model_name="m", kv_cache_space_gib=2, cpu_cores=2,
                                device_memory_gib=24))
    return [cpu, plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8),
            plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8, max_nodes=2),
            plan_for("llama-3.1-70b", "cuda", device_memory_gib=24, devices_per_node=2)]


def test_every_variable_a_plan_exports_is_explained_with_its_source():
    assert all(note["en"] and note["source"] for note in explain("cpu", {"LD_PRELOAD": "/lib/libtcmalloc.so.4"}))
    for plan in _plans():
        notes = plan.env_notes + (plan.multinode["env_notes"] if plan.multinode else [])
        assert [n["name"] for n in plan.env_notes] == list(plan.env)
        for note in notes:
            assert note["en"] and note["zh"] and note["source"] and note["rule_en"], (plan.platform, note["name"])


def test_plan_env_follows_the_tables_tp1_vs_tp4():
    one = plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8)
    four = plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8)
    assert one.tensor_parallel == 1 and not HCCL & one.env.keys()
    assert four.tensor_parallel == 4 and HCCL <= four.env.keys() and four.env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    assert four.commands["graph"].startswith("export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3\n")
