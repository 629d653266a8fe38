"""Batched greedy decoding gives the tokens one-prompt-at-a-time decoding gives, on several families."""

import pytest
import torch

from llm_adapt.accuracy.runner import Runner, RunnerSpec, cut_at_stop, length_batches
from llm_adapt.models.synthetic import _spread_weights


def test_length_batches_group_similar_lengths_within_the_padding_budget():
    lengths = [40, 2500, 44, 50, 41, 39]
    batches = length_batches(lengths, batch_size=8, padding_budget=0.25)
    assert sorted(k for b in batches for k in b) == list(range(6))
    assert [1] in batches  # the long prompt alone: padding five short ones to 2,500 would cost 60x
    for batch in batches:
        width, own = max(lengths[k] for k in batch), sum(lengths[k] for k in batch)
        assert width * len(batch) - own <= 0.25 * own
    assert length_batches([10] * 20, batch_size=8) == [list(range(8)), list(range(8, 16)), list(range(16, 20))]
    assert length_batches([]) == []


def test_a_decode_loop_saved_pays_for_some_padding_but_not_for_a_long_prompt():
    lengths = [36, 37, 42, 48, 55, 59, 76, 2504]  # the shape of the default suite
    assert len(length_batches(lengths, padding_budget=0.25)) == 3
    merged = length_batches(lengths, padding_budget=0.25, new_tokens=48)  # 48 steps x 24 tokens of padding allowed
    assert merged == [[0, 1, 2, 3, 4, 5, 6], [7]]
    assert length_batches(lengths, padding_budget=0.25, new_tokens=1) == length_batches(lengths, padding_budget=0.25)


def test_cut_at_stop_keeps_the_stop_and_drops_the_padding():
    assert cut_at_stop([5, 6, 2, 0, 0], [2]) == [5, 6, 2]
    assert cut_at_stop([5, 6, 7], [2]) == [5, 6, 7]
    assert cut_at_stop([2, 0], [9, 2]) == [2]


def _tiny(family: str, out):
    import transformers

    common = dict(vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    config_cls, model_cls = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
                             "mistral": ("MistralConfig", "MistralForCausalLM")}[family]
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**common))
    _spread_weights(model, 0)
    model.save_pretrained(out, safe_serialization=True)
    return out


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])
def test_batched_greedy_equals_one_at_a_time(family, tmp_path):
    path = _tiny(family, tmp_path / family)
    runner = Runner(RunnerSpec("cpu", "fp32", model_path=path), path)
    gen = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 97, (n,), generator=gen).tolist() for n in (9, 12, 11, 30, 10)]
    free = [runner.generate(p, 12, [1]) for p in prompts]
    k = max(range(len(prompts)), key=lambda i: len(free[i]))
    eos = [free[k][2], 1]  # a token prompt k produces mid-way: at least that answer stops early
    alone = [runner.generate(p, 12, eos) for p in prompts]
    batched = runner.generate_all(prompts, 12, eos, batch_size=4)
    assert batched == alone
    assert len(alone[k]) <= 3 and alone[k][-1] == eos[0]
