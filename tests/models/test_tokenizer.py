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
