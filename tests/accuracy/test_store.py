"""The gold and the floors measured once: a changed model, prompt or setting is a miss, never a stale hit."""

import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from llm_adapt.accuracy import store
from llm_adapt.accuracy.measure import measure_floor
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.reference import measure_reference
from llm_adapt.accuracy.runner import RunnerSpec
from llm_adapt.models.source import resolve_model
from llm_adapt.prompts import load_prompts

OPTS = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(), prompts="quick", max_new_tokens=3, ppl_window=64)


def quiet(*_):
    pass


@pytest.fixture()
def model(tiny_llama, tmp_path):
    from transformers import AutoTokenizer

    path = shutil.copytree(tiny_llama, tmp_path / "m")
    return resolve_model(str(path)), AutoTokenizer.from_pretrained(path)


def gold_of(model, opts=OPTS, prompts=None):
    store.forget()  # each call reads the disk, as a later process would
    source, tokenizer = model
    return measure_reference(source, tokenizer, prompts or load_prompts(opts.prompts), opts, quiet)


def test_the_gold_is_measured_once_and_read_back_equal(model):
    first = gold_of(model)
    again = gold_of(model)
    assert first.report.reused is None and again.report.reused.startswith("reused from llm-adapt's measurement cache")
    assert again.key == first.key
    assert [p.generated for p in again.prompts] == [p.generated for p in first.prompts]
    assert all(torch.equal(a.logits, b.logits) and all(torch.equal(x, y) for x, y in zip(a.hidden, b.hidden))
               for a, b in zip(first.prompts, again.prompts))
    assert [n.tolist() for n in again.corpus_nll] == [n.tolist() for n in first.corpus_nll]


def test_a_changed_weight_prompt_or_setting_is_a_new_measurement(model):
    first = gold_of(model)
    source, _ = model
    weights = source.path / "model.safetensors"
    tensors = load_file(weights)
    name = next(n for n in tensors if n.endswith("down_proj.weight"))
    tensors[name] = tensors[name] * 1.01
    save_file(tensors, weights, metadata={"format": "pt"})
    changed = gold_of(model)
    assert changed.key != first.key and changed.report.reused is None
    assert gold_of(model, prompts=load_prompts("quick")[:3]).key != changed.key
    longer = CompareOptions(reference=OPTS.reference, targets=(), prompts="quick", max_new_tokens=4, ppl_window=64)
    assert gold_of(model, opts=longer).key != changed.key


def test_the_floor_is_kept_with_its_endpoint_view(model):
    gold = gold_of(model)
    source, tokenizer = model
    spec = RunnerSpec("cpu", "bf16", emulated=True)
    first = measure_floor(spec, source, gold, tokenizer, OPTS, quiet)
    store.forget()
    again = measure_floor(spec, source, gold, tokenizer, OPTS, quiet)
    assert first.report.reused is None and again.report.reused
    assert again.report.layers == first.report.layers and again.report.spread == first.report.spread
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(first.data.logprobs, again.data.logprobs))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(first.data.variant_logprobs, again.data.variant_logprobs))
    assert again.data.greedy == first.data.greedy
    # another runner is another floor; a prompt the server cannot take has no row
    store.forget()
    other = measure_floor(RunnerSpec("cpu", "fp16"), source, gold, tokenizer, OPTS, quiet)
    assert other.report.reused is None
    only = measure_floor(spec, source, gold, tokenizer, OPTS, quiet, fits=lambda ref: ref is not gold.prompts[0])
    assert only.data.logprobs[0] is None and only.data.greedy[0] is None and only.data.logprobs[1] is not None


def test_a_target_measured_before_as_a_floor_is_read_back_not_measured_again(model, monkeypatch):
    from dataclasses import replace

    from llm_adapt.accuracy import compare as compare_module
    from llm_adapt.accuracy import measure as measure_module

    source, tokenizer = model
    spec = RunnerSpec("cpu", "bf16", emulated=True)
    floor = measure_floor(spec, source, gold_of(model), tokenizer, OPTS, quiet)
    store.forget()
    measured = []

    def evaluate(spec, *args, **kwargs):
        measured.append(spec.label)
        raise LookupError("measured")

    monkeypatch.setattr(measure_module, "evaluate", evaluate)
    opts = replace(OPTS, targets=(spec,))
    result = compare_module.compare(source, opts)
    assert measured == [] and result.targets[0].layers == floor.report.layers
    assert result.targets[0].reused.startswith("reused from llm-adapt's measurement cache")
    other = RunnerSpec("cpu", "fp32", quant="int8-channel")  # never a floor of this gold
    with pytest.raises(LookupError):  # another runner is measured (here: the stub)
        compare_module.compare(source, replace(OPTS, targets=(other,)))
    assert measured == [other.label]


def test_off_measures_afresh_and_writes_nothing(model, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, "off")
    before = set(store.cache_root().iterdir())
    first = gold_of(model)
    assert gold_of(model).report.reused is None and first.report.reused is None
    assert {p for p in store.cache_root().iterdir() if p.name.startswith("gold-")} <= before


def test_least_recently_used_entries_go_first(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    for i, size in enumerate((100, 200, 300)):  # 606 bytes with their meta.json files
        entry = root / f"gold-{i}"
        entry.mkdir()
        (entry / "data").write_bytes(b"x" * size)
        (entry / "meta.json").write_text("{}")
        os.utime(entry / "meta.json", (1000 + i, 1000 + i))
    assert store.evict(550, root) == ["gold-0"]
    assert not (root / "gold-0").exists() and (root / "gold-1").exists() and (root / "gold-2").exists()
    assert store.evict(10**6, root) == []
    assert store.evict(0, root) == ["gold-1", "gold-2"]


def test_a_second_writer_of_the_same_entry_leaves_the_first_in_place(tmp_path, monkeypatch):
    """Two processes measuring the same thing at once (the key is everything the numbers depend on): the one
    to finish second neither fails nor removes the entry the first wrote, which may be being read."""
    monkeypatch.setenv("LLM_ADAPT_HOME", str(tmp_path / "home"))

    def writing(text):
        return lambda directory: (directory / "data.txt").write_text(text)

    first = store.store("gold", "k", writing("first"), {})
    second = store.store("gold", "k", writing("second"), {})
    assert second == first and (first / "data.txt").read_text() == "first"
    assert [p.name for p in store.cache_root().iterdir()] == ["gold-k"]  # the second's temporary directory went
    (first / "meta.json").unlink()  # an entry left incomplete is replaced
    assert (store.store("gold", "k", writing("third"), {}) / "data.txt").read_text() == "third"
