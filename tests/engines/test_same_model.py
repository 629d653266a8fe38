"""The gold and the server are the same model: the judgement on plain data, and the check against a mock
server whose tokenizer differs from the gold's."""

from types import SimpleNamespace

import pytest

from llm_adapt.engines.same_model import Identity, gold_max_len, mismatch

GOLD = Identity("SmolLM2-135M-Instruct", [504, 3575, 282, 4649], 8192)


def test_the_same_ids_and_a_length_within_the_gold_pass():
    assert mismatch(Identity("/models/smollm2", [504, 3575, 282, 4649], 2048), GOLD) is None
    assert mismatch(Identity("x", [504, 3575, 282, 4649], None), GOLD) is None  # no max length listed


def test_other_ids_are_another_model_named_on_both_sides():
    line = mismatch(Identity("llama", [128000, 791, 6864, 315, 9822], 8192), GOLD)
    assert line and "'llama'" in line and "'SmolLM2-135M-Instruct'" in line and "\n" not in line


def test_a_longer_served_length_than_the_gold_allows_is_another_model():
    line = mismatch(Identity("qwen", [504, 3575, 282, 4649], 32768), GOLD)
    assert line and "32,768" in line and "8,192" in line


def test_a_server_without_tokenize_is_not_refused_on_it():
    assert mismatch(Identity("transformers-serve", None, None), GOLD) is None


def test_rope_scaling_that_extends_the_length_leaves_the_length_uncompared():
    spec = lambda kind: SimpleNamespace(rope=SimpleNamespace(scaling_type=kind), max_position_embeddings=32768)
    assert gold_max_len(spec("yarn")) is None and gold_max_len(spec("dynamic")) is None
    assert gold_max_len(spec("llama3")) == 32768 and gold_max_len(SimpleNamespace(rope=None, max_position_embeddings=8)) == 8


def _serve(routes, ids, max_len=8192, name="llama"):
    import json

    routes["/v1/models"] = (200, "application/json", json.dumps({"data": [{"id": name, "max_model_len": max_len}]}))
    routes["/tokenize"] = (200, "application/json", json.dumps({"tokens": ids, "count": len(ids)}))


@pytest.mark.parametrize("command", [["run", "default"], ["compare", "default"]])
def test_a_server_of_another_model_is_refused_before_anything_is_measured(command, stub_server, tmp_path, capsys,
                                                                         default_model):
    from llm_adapt.cli import main

    url, routes = stub_server
    _serve(routes, [128000, 791, 6864, 315, 9822, 374, 12366])  # Llama 3's ids, not SmolLM2's
    out = tmp_path / "out"
    assert main([*command, "--endpoint", f"{url}/v1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not the same model" in err[0] and "'llama'" in err[0], err
    assert not out.exists()  # nothing measured, nothing left behind


def test_a_server_of_the_gold_passes_the_check(stub_server, default_model):
    from llm_adapt.cli_common import require_served_gold
    from llm_adapt.engines.endpoint import endpoint_from_url
    from llm_adapt.engines.same_model import PROBE_TEXT
    from llm_adapt.models.tokenizer import load_tokenizer

    url, routes = stub_server
    source = default_model
    _serve(routes, load_tokenizer(source.path)(PROBE_TEXT)["input_ids"], max_len=2048, name="smollm2")
    assert require_served_gold(endpoint_from_url(f"{url}/v1"), source) == "smollm2"
