"""The bundled default model becomes a real safetensors directory, once."""

import json

from llm_adapt.models.source import resolve_model


def test_default_materializes_as_hf_directory(default_model):
    path = default_model.path
    assert (path / "config.json").is_file() and default_model.has_weights and default_model.has_tokenizer
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_key_value_heads"]) == (30, 576, 3)


def test_second_resolve_reuses_the_conversion(default_model):
    stamp = (default_model.path / "model.safetensors").stat().st_mtime_ns
    again = resolve_model("default")
    assert again.path == default_model.path
    assert (again.path / "model.safetensors").stat().st_mtime_ns == stamp


def test_converted_model_loads_and_keeps_the_chat_template(default_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(default_model.path)
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert "<|im_start|>user" in text and text.rstrip().endswith("<|im_start|>assistant")
