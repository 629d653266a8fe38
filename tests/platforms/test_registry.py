"""A new platform is one Platform registered: detection, planning and the device check follow it."""

from dataclasses import replace

import pytest

from llm_adapt import platforms
from llm_adapt.accuracy.runner import check_device
from llm_adapt.errors import UsageError
from llm_adapt.platforms import (
    Platform,
    detect_platform,
    get_platform,
    register,
    unregister,
)
from tests.inspect.test_plan import plan_for

XPU = Platform(name="xpu", display="Intel GPU (vLLM XPU)", engine="vLLM (xpu)", torch_module="xpu", block_size=64,
               graph_mode="none", visible_devices_env="ZE_AFFINITY_MASK", assumed_device_memory_gib=48.0,
               runtime_overhead_gib=1.5, startup_prior_s={"eager": 60.0, "graph": 90.0},
               detect=lambda: True,
               torch_extension=("llm_adapt_no_such_xpu_extension", "install the XPU build of torch"))


@pytest.fixture
def xpu():
    register(XPU)
    yield XPU
    unregister("xpu")


def test_a_registered_platform_is_detected_and_planned(xpu):
    assert detect_platform() == "xpu" and get_platform("xpu") is xpu
    register(replace(xpu, detect=lambda: False))  # planned for without one here
    assert detect_platform() != "xpu"
    plan = plan_for("llama-3.2-1b", "xpu")
    assert plan.platform == "xpu" and plan.block_size == 64 and not plan.kv_pool_exact
    assert plan.device_memory_assumed and plan.device_memory_gib == 48.0  # no such device here
    assert "--gpu-memory-utilization" in plan.command("eager").argv() and "VLLM_CPU_KVCACHE_SPACE" not in plan.env
    assert plan.max_num_seqs == 256 and plan.kv_margin == platforms.DEVICE_KV_MARGIN
    assert plan_for("llama-3.2-1b", "xpu", max_nodes=2).multinode is not None


def test_its_torch_extension_is_asked_for_by_name(xpu):
    with pytest.raises(UsageError, match="device xpu needs llm_adapt_no_such_xpu_extension: install the XPU build"):
        check_device("xpu")


def test_unregistered_it_is_gone_and_cpu_is_the_fallback(xpu):
    unregister("xpu")
    with pytest.raises(UsageError, match="unknown platform 'xpu'"):
        get_platform("xpu")
    assert detect_platform() in ("cpu", "cuda", "npu")
    assert [p.name for p in platforms.PLATFORMS.values()][-1] == "cpu"


def test_the_cpu_plan_is_one_replica_per_host_in_host_memory():
    cpu = get_platform("cpu")
    assert cpu.host_memory and cpu.multinode_forms == ("data_parallel",) and cpu.kv_margin == 0.0 and cpu.detect is None
    plan = plan_for("llama-3.2-1b", "cpu", max_nodes=2, device_memory_gib=64)
    assert plan.nodes == 1 and plan.kv_pool_exact and plan.memory_utilization == 1.0
    assert [f["name"] for f in plan.multinode["forms"]] == ["data_parallel"]  # one replica per host, --nodes of them


def test_each_platform_says_where_its_hardware_limits_come_from(xpu, monkeypatch):
    from llm_adapt.platforms import cuda

    assert get_platform("npu").hardware_limits is None  # no citable Ascend figure: the section is left out
    assert xpu.hardware_limits is None  # a new platform has none until it says where one comes from
    monkeypatch.setattr("llm_adapt.platforms.cuda.describe_gpus", lambda: [{"kind": "cuda", "name": "NVIDIA H100 PCIe"}])
    bandwidth, compute = get_platform("cuda").hardware_limits()
    assert bandwidth["gb_per_s"] == 2000.0 and compute["tflops"] == 756.0 and bandwidth["source"].startswith("published")
    monkeypatch.setattr("llm_adapt.platforms.cuda.describe_gpus", lambda: [{"kind": "cuda", "name": "Some Future GPU"}])
    assert cuda.datasheet_limits() is None  # an unknown GPU: no figure assumed
    with_limits = replace(xpu, hardware_limits=lambda: ({"gb_per_s": 1.0, "source": "s"}, {"tflops": 1.0, "source": "s"}))
    register(with_limits)
    assert get_platform("xpu").hardware_limits()[0]["gb_per_s"] == 1.0
