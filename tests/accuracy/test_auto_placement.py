"""--reference auto:fp32: accelerate's big-model placement. On this CPU-only box, a memory cap splits the
model between the host and the disk; its logits must equal the unsplit fp32 run's."""

import pytest
import torch

from llm_adapt.accuracy.runner import AUTO_MAX_MEMORY_ENV, Runner, RunnerSpec, auto_max_memory, parse_runner
from llm_adapt.errors import UsageError


def test_max_memory_caps_are_parsed():
    assert auto_max_memory("cuda:0=70GiB, cuda:1=70GiB,cpu=200GiB") == {0: "70GiB", 1: "70GiB", "cpu": "200GiB"}
    assert auto_max_memory("") is None
    with pytest.raises(UsageError, match=AUTO_MAX_MEMORY_ENV):
        auto_max_memory("cpu")
    assert parse_runner("auto:fp32") == RunnerSpec("auto", "fp32")


@pytest.fixture(scope="module")
def layered(default_model, tmp_path_factory):
    """A tiny Llama whose decoder layers outweigh its (tied) embeddings, so a cap can fall between them."""
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("layered") / "m", tokenizer_from=default_model.path,
                            num_hidden_layers=6, intermediate_size=2048)


def test_a_model_split_by_a_memory_cap_gives_the_unsplit_logits(layered, monkeypatch):
    tiny_llama = layered
    ids = list(range(3, 40))
    whole = Runner(RunnerSpec("cpu", "fp32"), tiny_llama)
    expected = whole.capture(ids, keep_kwargs=True)
    expected_tokens = whole.generate_all([ids[:9], ids[:6]], 5, eos_ids=[])
    # 12 MiB of embeddings and 6 layers of 1.6 MiB: the embeddings and a few layers fit, the rest goes to disk
    monkeypatch.setenv(AUTO_MAX_MEMORY_ENV, "cpu=17MiB")
    split = Runner(RunnerSpec("auto", "fp32"), tiny_llama)
    placed = set(split.placement.values())
    assert "disk" in placed and "cpu" in placed, split.placement
    got = split.capture(ids, keep_kwargs=True)
    assert torch.equal(got.logits, expected.logits)
    assert all(torch.equal(a, b) for a, b in zip(got.hidden, expected.hidden))
    assert split.generate_all([ids[:9], ids[:6]], 5, eos_ids=[]) == expected_tokens
    shadow = split.shadow(got, expected.hidden)
    assert all(torch.equal(a, b) for a, b in zip(shadow, whole.shadow(expected, expected.hidden)))
    offload = split._offload
    split.close()
    import os

    assert not os.path.exists(offload)


def test_a_runner_used_as_a_context_manager_removes_its_offload_folder_on_an_error(layered, monkeypatch):
    """A measuring error inside `with Runner(...)` (how every stage holds one) still removes the folder
    accelerate offloads to; without __exit__ closing it, the folder outlived the run."""
    import os

    monkeypatch.setenv(AUTO_MAX_MEMORY_ENV, "cpu=17MiB")
    with pytest.raises(RuntimeError, match="a measuring error"):
        with Runner(RunnerSpec("auto", "fp32"), layered) as runner:
            offload = runner._offload
            assert os.path.isdir(offload)
            raise RuntimeError("a measuring error")
    assert not os.path.exists(offload)
