"""A warm `inspect` does not instantiate the model again: its facts are kept per config, code and versions."""

import json
import shutil

from llm_adapt.inspect import model_walk
from llm_adapt.inspect.inventory import FROM_CONFIG, FROM_MODEL
from llm_adapt.models.spec import load_spec


def test_facts_are_read_once_per_config(tiny_llama, tmp_path, monkeypatch):
    model = shutil.copytree(tiny_llama, tmp_path / "m")
    spec = load_spec(model)
    first = model_walk.read_facts(model, spec)
    assert first.source == FROM_MODEL

    def must_not_run(*args, **kwargs):
        raise AssertionError("instantiated again")

    monkeypatch.setattr(model_walk, "instantiate_on_meta", must_not_run)
    assert model_walk.read_facts(model, spec) == first  # from the cache
    config = json.loads((model / "config.json").read_text())
    config["rms_norm_eps"] = 1e-3
    (model / "config.json").write_text(json.dumps(config))
    changed = model_walk.read_facts(model, load_spec(model))  # a new config: walked again (and refused here)
    assert changed.source == FROM_CONFIG and "AssertionError" in changed.source_note
    assert model_walk.facts_key(model, False) != model_walk.facts_key(model, True)
