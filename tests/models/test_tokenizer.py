"""A tokenizer is built once per folder and process, and built again when one of its files changes."""

import json
import shutil

from llm_adapt.models.tokenizer import load_tokenizer


def test_the_same_folder_gives_the_same_tokenizer_until_a_file_changes(tiny_llama, tmp_path):
    folder = shutil.copytree(tiny_llama, tmp_path / "m")
    first = load_tokenizer(folder)
    assert load_tokenizer(str(folder)) is first and load_tokenizer(tmp_path / "." / "m") is first
    config = folder / "tokenizer_config.json"
    config.write_text(json.dumps(json.loads(config.read_text()) | {"model_max_length": 77}))
    changed = load_tokenizer(folder)
    assert changed is not first and changed.model_max_length == 77


def test_another_folder_is_another_tokenizer(tiny_llama, tmp_path):
    other = shutil.copytree(tiny_llama, tmp_path / "other")
    assert load_tokenizer(other) is not load_tokenizer(tiny_llama)


def test_a_copy_with_other_weights_shares_the_build_but_names_its_own_folder(tiny_llama, tmp_path):
    from llm_adapt.models import tokenizer as module

    original = load_tokenizer(tiny_llama)
    copy = shutil.copytree(tiny_llama, tmp_path / "copy")
    (copy / "model.safetensors").write_bytes(b"other weights")  # the weights are not the tokenizer's
    shared = load_tokenizer(copy)
    assert shared is not original and shared.name_or_path == str(copy.resolve())
    assert shared._tokenizer is original._tokenizer  # one build (the Rust tokenizer) behind both
    assert shared("Paris is")["input_ids"] == original("Paris is")["input_ids"]
    config = copy / "tokenizer_config.json"  # a tokenizer file that differs: a build of its own
    config.write_text(json.dumps(json.loads(config.read_text()) | {"model_max_length": 55}))
    assert load_tokenizer(copy)._tokenizer is not original._tokenizer and load_tokenizer(copy).model_max_length == 55
    assert len(module._built_by_content) <= module._CONTENT_KEPT


def test_another_family_with_the_same_tokenizer_shares_the_build_where_the_tokenizer_names_its_class(tiny_llama,
                                                                                                   tmp_path):
    folder = shutil.copytree(tiny_llama, tmp_path / "named")
    settings = folder / "tokenizer_config.json"
    settings.write_text(json.dumps(json.loads(settings.read_text()) | {"tokenizer_class": "PreTrainedTokenizerFast"}))
    first = load_tokenizer(folder)
    other = shutil.copytree(folder, tmp_path / "other-family")
    config = other / "config.json"
    config.write_text(json.dumps(json.loads(config.read_text()) | {"model_type": "qwen2"}))
    assert load_tokenizer(other)._tokenizer is first._tokenizer
    unnamed = shutil.copytree(tiny_llama, tmp_path / "unnamed")  # no tokenizer_class: the model type picks the class
    settings = unnamed / "tokenizer_config.json"
    settings.write_text(json.dumps({k: v for k, v in json.loads(settings.read_text()).items() if k != "tokenizer_class"}))
    again = shutil.copytree(unnamed, tmp_path / "unnamed-qwen")
    (again / "config.json").write_text(json.dumps(json.loads((again / "config.json").read_text()) | {"model_type": "qwen2"}))
    assert load_tokenizer(again)._tokenizer is not load_tokenizer(unnamed)._tokenizer
