"""The CPU plan refuses, before anything starts, a model the host's free memory cannot hold."""

import json
from types import SimpleNamespace

import psutil
import pytest

from llm_adapt.cli import main
from llm_adapt.errors import UsageError
from llm_adapt.inspect.stage import AVAILABLE_MEMORY_ENV, available_host_memory_gib
from tests.conftest import config_fixture


@pytest.fixture()
def config_only_8b(tmp_path):
    model = tmp_path / "llama-3.1-8b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config_fixture("llama-3.1-8b")))
    return model


@pytest.fixture()
def free_64gib(monkeypatch):
    """This box's free memory varies with whatever else runs; pretend 64 GiB are free."""
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=64 * 1024**3, total=64 * 1024**3))


def test_env_caps_available_memory(monkeypatch, free_64gib):
    assert available_host_memory_gib() == 64
    monkeypatch.setenv(AVAILABLE_MEMORY_ENV, "0.5")
    assert available_host_memory_gib() == 0.5
    monkeypatch.setenv(AVAILABLE_MEMORY_ENV, "100")  # a cap, never more than is free
    assert available_host_memory_gib() == 64
    for bad in ("lots", "-3", "0"):
        monkeypatch.setenv(AVAILABLE_MEMORY_ENV, bad)
        with pytest.raises(UsageError, match=AVAILABLE_MEMORY_ENV):
            available_host_memory_gib()


def test_inspect_refuses_8b_in_12gib_with_the_numbers(monkeypatch, capsys, config_only_8b, free_64gib):
    monkeypatch.setenv(AVAILABLE_MEMORY_ENV, "12")
    assert main(["inspect", str(config_only_8b), "--platform", "cpu", "--dtype", "bf16"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "weights (15.0 GiB in bf16)" in err and "exceed 12.0 GiB of available host memory" in err


def test_inspect_sizes_kv_from_the_cap(monkeypatch, capsys, config_only_8b, free_64gib):
    monkeypatch.setenv(AVAILABLE_MEMORY_ENV, "22")
    assert main(["inspect", str(config_only_8b), "--platform", "cpu", "--dtype", "bf16", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["env"]["VLLM_CPU_KVCACHE_SPACE"] == "3" and plan["longest_max_model_len"] == (3 * 64 - 1) * 128
