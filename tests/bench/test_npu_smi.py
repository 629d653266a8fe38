"""npu-smi parsing on the sample outputs of Huawei's published reference, and the resource sampler
end to end against a fake `npu-smi` that prints them (tests/fixtures/npu_smi/SOURCE.md)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.fake_npu_smi import write_fake_npu_smi

from llm_adapt.bench import load
from llm_adapt.bench.load import ResourceSampler
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.engines.server import free_port
from llm_adapt.platforms.npu import (
    MIB,
    atlas_series,
    parse_key_values,
    parse_memory,
    parse_table,
    parse_usages,
    visible_ids,
)

SAMPLES = Path(__file__).parents[1] / "fixtures" / "npu_smi"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_usages_hbm_device_reads_hbm_not_the_zeroed_ddr():
    [chip] = parse_usages(sample("usages_atlas350.txt"))
    assert (chip.npu_id, chip.memory_kind, chip.capacity_mb, chip.usage_pct) == (0, "HBM", 131072, 3)
    assert chip.used_bytes == int(131072 * 0.03 * MIB)
    assert (chip.aicore_pct, chip.npu_util_pct) == (0, 0)


def test_usages_of_a_chip_group_without_hbm_reads_the_chip_memory():
    [chip] = parse_usages(sample("usages_atlas200i_a2.txt"))
    assert (chip.npu_id, chip.chip_id, chip.memory_kind) == (0, 0, "DDR")
    assert (chip.capacity_mb, chip.usage_pct) == (10810, 35)
    [one] = parse_usages(sample("usages_chip_atlas200i_a2.txt"))  # -c 0: tab-indented, no ids
    assert (one.npu_id, one.capacity_mb, one.usage_pct, one.used_bytes) == (None, 10810, 46, int(10810 * 0.46 * MIB))


def test_usages_two_chips_in_one_device_are_two_entries():
    # the 200I A2 sample's chip group, twice, as a two-chip card prints it
    body = sample("usages_atlas200i_a2.txt").split("\n\n", 1)[1]
    text = "NPU ID : 3\nChip Count : 2\n\n" + body + "\n" + body.replace("Chip ID                        : 0",
                                                                          "Chip ID                        : 1")
    chips = parse_usages(text)
    assert [(c.npu_id, c.chip_id) for c in chips] == [(3, 0), (3, 1)]


@pytest.mark.parametrize("text", ["", "npu-smi: command failed\n", "HBM Usage Rate(%) : NA\n",
                                  "Aicore Usage Rate(%) : 12\n"])
def test_usages_without_memory_fields_yield_nothing_or_no_bytes(text):
    chips = parse_usages(text)
    assert all(c.used_bytes is None for c in chips)


def test_memory_capacity_hbm_and_ddr():
    [hbm] = parse_memory(sample("memory_atlas350.txt"))
    assert (hbm.memory_kind, hbm.capacity_mb, hbm.clock_mhz) == ("HBM", 131072, 3200)
    [ddr] = parse_memory(sample("memory_atlas200i_a2.txt"))
    assert (ddr.memory_kind, ddr.capacity_mb, ddr.chip_id) == ("DDR", 10810, 0)  # the usable capacity, not the total


def test_table_version_and_device_memory():
    table = parse_table(sample("info_atlas200i_a2.txt"))
    assert (table.npu_smi_version, table.driver_version) == ("25.2.0", "25.2.0")
    [device] = table.devices
    assert (device.npu_id, device.name, device.health, device.chip_id) == (0, "xxx", "OK", 0)
    assert (device.memory_used_mb, device.memory_total_mb) == (957, 10810)


def test_table_stops_at_the_process_table_and_survives_garbage():
    text = sample("info_atlas200i_a2.txt") + ("| NPU     Chip  | Process id    | Process name | Process memory(MB) |\n"
                                               "| 0       0     | 1234          | python       | 177                |\n")
    assert len(parse_table(text).devices) == 1
    assert parse_table("no table here").devices == () and parse_table("").npu_smi_version is None


def test_key_values_ignore_lines_without_a_key():
    assert parse_key_values(" : 3\nplain line\nA : 1\n") == [{"A": "1"}]


def test_visible_ids():
    assert visible_ids([0, 1, 2], {}) == [0, 1, 2]
    assert visible_ids([0, 1, 2], {"ASCEND_RT_VISIBLE_DEVICES": "2,0"}) == [0, 2]
    assert visible_ids([0, 1], {"ASCEND_RT_VISIBLE_DEVICES": "5"}) == []


@pytest.fixture
def fake_npu_smi(tmp_path, monkeypatch) -> Path:
    """A fake `npu-smi` alone on PATH (no nvidia-smi can shadow it), printing the docs' samples."""
    bin_dir = tmp_path / "bin"
    script = write_fake_npu_smi(bin_dir)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    return script


async def _sample_for(sampler: ResourceSampler, seconds: float) -> None:
    task = asyncio.create_task(sampler.run())
    await asyncio.sleep(seconds)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


def _sampler() -> ResourceSampler:
    # nothing listens on the port: /metrics fails quietly, the device memory is still read
    return ResourceSampler(Endpoint(base_url=f"http://127.0.0.1:{free_port()}/v1"), pid=os.getpid(), interval_s=0.2)


def test_sampler_reads_npu_memory_through_npu_smi(fake_npu_smi):
    sampler = _sampler()
    asyncio.run(_sample_for(sampler, 1.0))
    summary = sampler.summary()
    assert summary["samples"] >= 2 and summary["device_memory_tool"] == "npu-smi"
    assert summary["device_memory_bytes_max"] == int(131072 * 0.03 * MIB)


def test_sampler_skips_npus_outside_the_visible_devices(fake_npu_smi, monkeypatch):
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "1")
    sampler = _sampler()
    asyncio.run(_sample_for(sampler, 0.6))
    assert sampler.summary()["device_memory_bytes_max"] is None


def memory_used():
    """One reading of the accelerators' memory in use, as the sampler makes it."""
    async def read():
        reader = await load.device_memory_reader()
        return await reader() if reader else None

    return asyncio.run(read())


def test_device_memory_is_none_without_any_smi_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load.device_tool() is None
    assert memory_used() is None


def test_npu_smi_that_fails_gives_no_memory(tmp_path, monkeypatch):
    script = tmp_path / "npu-smi"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert memory_used() is None


def test_nvidia_smi_memory_is_summed_over_the_gpus(tmp_path, monkeypatch):
    nvidia = tmp_path / "nvidia-smi"
    nvidia.write_text("#!/bin/sh\necho 1024\necho 2048\n")
    nvidia.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load.device_tool() == "nvidia-smi"
    assert memory_used() == 3072 * MIB


def test_the_first_platform_in_detection_order_with_its_tool_answers(fake_npu_smi):
    """Both tools on PATH: the platform detected first (npu, as detect_platform orders them) reads."""
    nvidia = fake_npu_smi.parent / "nvidia-smi"
    nvidia.write_text("#!/bin/sh\necho 1024\n")
    nvidia.chmod(0o755)
    assert load.device_tool() == "npu-smi"


def test_a_registered_platform_reads_its_own_device_memory(tmp_path, monkeypatch):
    from dataclasses import replace

    from llm_adapt.platforms import register, unregister
    from tests.platforms.test_registry import XPU

    tool = tmp_path / "xpu-smi"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    async def reader():
        async def used():
            return 7 * MIB
        return used

    register(replace(XPU, smi="xpu-smi", memory_reader=reader, describe_devices=lambda: [{"kind": "xpu"}]))
    try:
        assert load.device_tool() == "xpu-smi" and memory_used() == 7 * MIB
        from llm_adapt.environment import accelerators

        assert accelerators() == [{"kind": "xpu"}]
    finally:
        unregister("xpu")


# The two-chip Atlas A2 (910B) layout with an HBM-Usage column and no-space "used/ total" pairs, as
# vLLM-Ascend users' environment dumps print it (not one of Huawei's doc samples: those are above).
TABLE_910B = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc2.1               Version: 24.1.rc2.1                                           |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 121.6       40                0    / 0             |
| 0                         | 0000:C1:00.0  | 10          0    / 0          57895/ 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 116.4       39                0    / 0             |
| 0                         | 0000:C2:00.0  | 10          0    / 0          57898/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 2471          | python3                  | 54400                   |
+===========================+===============+====================================================+
"""


def test_table_of_a_910b_reads_hbm_usage_per_device_and_skips_processes():
    table = parse_table(TABLE_910B)
    assert table.npu_smi_version == "24.1.rc2.1"
    assert [(d.npu_id, d.name, d.memory_used_mb, d.memory_total_mb) for d in table.devices] == [
        (0, "910B3", 57895, 65536), (1, "910B3", 57898, 65536)]


def test_chip_names_map_to_the_atlas_series_vllm_ascend_builds_for():
    for chip, series in (("910B3", "Atlas A2 Series"), ("Ascend910B4", "Atlas A2 Series"), ("910B1", "Atlas A2 Series"),
                         ("Ascend910_9391", "Atlas A3 Series"), ("Ascend910_9362", "Atlas A3 Series"),
                         ("310P3", "Atlas 300I Series"), ("Ascend950PR", "Atlas A5 Series")):
        assert atlas_series(chip) == series, chip
    # the 310B of an Atlas 200I A2, the first-generation 910, a name the docs hide: no series claimed
    for chip in ("310B1", "Ascend910", "910A", "xxx", ""):
        assert atlas_series(chip) is None, chip
