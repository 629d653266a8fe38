"""vLLM's architecture registry read from its source, without importing vLLM."""

import importlib.util
from types import SimpleNamespace

import pytest

from llm_adapt.inspect.support import imported_registry, registry_from_source


def fake_vllm(tmp_path, body: str):
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "registry.py").write_text(body)
    return SimpleNamespace(submodule_search_locations=[str(tmp_path / "vllm")])


def test_the_spread_tables_are_read(tmp_path):
    spec = fake_vllm(tmp_path, '_A = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM"), "X": ("x", "X")}\n'
                               '_B = {"Qwen2ForCausalLM": ("qwen2", "Qwen2ForCausalLM")}\n'
                               '_VLLM_MODELS = {**_A, **_B}\n')
    assert registry_from_source(spec) == {"LlamaForCausalLM", "X", "Qwen2ForCausalLM"}


@pytest.mark.parametrize("body", ["_VLLM_MODELS = build()\n", "_A = {}\n_VLLM_MODELS = {**_A, **_MISSING}\n",
                                  "def broken(:\n", "_OTHER = {'a': 1}\n"])
def test_another_shape_means_asking_vllm(tmp_path, body):
    assert registry_from_source(fake_vllm(tmp_path, body)) is None


@pytest.mark.slow
def test_the_source_gives_what_the_installed_vllm_says():
    spec = importlib.util.find_spec("vllm")
    if spec is None:
        pytest.skip("vLLM is not installed")
    assert registry_from_source(spec) == imported_registry()
