"""A target's greedy tokens read off its teacher-forced pass over the gold, decoded by the target from
the first departure on: on plain data, and against the target's own free decoding on tiny models."""

import pytest
import torch

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.greedy import greedy_from_teacher_forcing as read
from llm_adapt.accuracy.measure import evaluate
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.reference import Gold, RefPrompt
from llm_adapt.accuracy.runner import Runner, RunnerSpec, tensor_names
from llm_adapt.models.source import resolve_model
from llm_adapt.prompts import Prompt

from .test_batched_greedy import _tiny


def test_a_target_that_follows_the_gold_to_its_budget_is_complete():
    assert read([5, 6, 7, 8], [5, 6, 7], [2], 3) == ([5, 6, 7], True)


def test_a_target_that_follows_the_gold_to_its_stop_is_complete():
    assert read([5, 6, 2, 9], [5, 6, 2], [2], 8) == ([5, 6, 2], True)


def test_the_first_different_token_is_kept_and_the_rest_is_left_to_decode():
    assert read([5, 4, 7, 8], [5, 6, 7], [2], 8) == ([5, 4], False)
    assert read([4, 6, 7, 8], [5, 6, 7], [2], 8) == ([4], False)


def test_a_departure_on_the_last_budgeted_token_is_complete():
    assert read([5, 6, 9, 1], [5, 6, 7], [2], 3) == ([5, 6, 9], True)


def test_a_target_that_stops_where_the_gold_goes_on_is_complete():
    # its own stop list has "." (30): it stops on the gold's "."
    assert read([5, 30, 7, 8], [5, 30, 7], [2, 30], 8) == ([5, 30], True)
    # it chooses its stop token where the gold chose another
    assert read([5, 2, 7, 8], [5, 6, 7], [2], 8) == ([5, 2], True)


def test_a_target_that_does_not_stop_on_the_golds_stop_goes_on_past_it():
    # the gold stopped on 2; the target's stop list lacks it, so it reads its top-1 after the gold's end
    assert read([5, 6, 2, 11], [5, 6, 2], [9], 8) == ([5, 6, 2, 11], False)
    assert read([5, 6, 2, 11], [5, 6, 2], [9], 4) == ([5, 6, 2, 11], True)


def test_an_empty_gold_continuation_reads_one_token():
    assert read([7], [], [2], 5) == ([7], False)
    assert read([2], [], [2], 5) == ([2], True)


def _gold(reference: Runner, prompts, max_new, eos):
    refs = []
    generated = reference.generate_all(prompts, max_new, eos)
    for i, (ids, gen) in enumerate(zip(prompts, generated)):
        capture = reference.capture(ids + gen)
        refs.append(RefPrompt(Prompt(id=f"p{i}", category="c", messages=[{"role": "user", "content": "x"}]), ids, gen,
                              capture.hidden, capture.logits))
    window = prompts[0] + prompts[1]
    nll = m.nll(reference.capture(window).logits[:-1], torch.tensor(window[1:]))
    return Gold(refs, corpus=[window], corpus_nll=[nll], eos_ids=eos, names=tensor_names(len(refs[0].hidden) - 2))


TARGETS = {"int8": RunnerSpec("cpu", "fp32", quant="int8-tensor"), "bf16": RunnerSpec("cpu", "bf16", emulated=True)}


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_read_off_greedy_equals_the_targets_own_decoding(family, target, tmp_path):
    """The gold in fp32, the target the same weights rounded: some prompts follow the gold for a while
    and depart, and every target row must carry the target's own free greedy tokens up to its departure."""
    path = _tiny(family, tmp_path / family)
    gen = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 97, (n,), generator=gen).tolist() for n in (9, 12, 11, 30, 10, 14, 8, 20, 16, 13)]
    eos = [1]
    gold = _gold(Runner(RunnerSpec("cpu", "fp32"), path), prompts, 24, eos)
    spec = TARGETS[target]
    report = evaluate(spec, resolve_model(str(path)), gold, _Tokenizer(), CompareOptions(
        reference=RunnerSpec("cpu", "fp32"), targets=(spec,), prompts="quick", max_new_tokens=24), lambda *a: None)
    own = Runner(spec, path).generate_all(prompts, 24, eos)
    for row, tokens in zip(report.greedy, own):
        # up to and including its departing token, the target's own free greedy tokens; a row that ends
        # there, before the target's own stop or the budget, says so
        shown = tokens[: row["matched_tokens"] + 1]
        assert row["target_text"] == " ".join(map(str, shown)), row
        assert bool(row.get("target_cut")) == (len(shown) < len(tokens)), row
    matched = [row["matched_tokens"] for row in report.greedy]
    assert 24 in matched and any(0 < k < 24 for k in matched), matched  # read off whole, and departed mid-way
    assert any(row.get("target_cut") for row in report.greedy)  # a departure early enough to be cut


class _Tokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def _logits_choosing(tokens: list[int], vocab: int = 12) -> torch.Tensor:
    """Logits whose top-1 at each position is the given token, by a clear margin."""
    logits = torch.zeros(len(tokens), vocab)
    logits[torch.arange(len(tokens)), torch.tensor(tokens)] = 5.0
    return logits


def test_the_greedy_row_read_off_a_pass_ends_where_the_target_leaves_the_gold():
    """teacher_forced_greedy on plain logits: the tokens a target's pass chooses after the prompt, compared
    with the gold's; cut at its first departure, which a decisive gold names genuine; a target that
    follows the gold to its stop is exact and not cut."""
    from llm_adapt.accuracy.greedy import teacher_forced_greedy

    prompt, gold_tokens = [3, 4], [5, 6, 2]  # position 1 (the prompt's last) chose the gold's first token
    sequence = prompt + gold_tokens
    gold_logits = _logits_choosing(sequence[1:] + [2])
    ref = RefPrompt(Prompt(id="p", category="c"), prompt, gold_tokens, [], gold_logits)

    departs = _logits_choosing([4, 5, 9, 2, 2])  # at gold token 1 it chooses 9, not 6
    row = teacher_forced_greedy(ref, departs, _Tokenizer(), 3, 0.1, 8, [2], [2])
    assert row["target_cut"] and row["first_divergence"] == 1 and row["target_tokens"] == 2
    assert row["divergence"] == "genuine" and row["ref_token_id"] == 6 and row["target_token_id"] == 9

    follows = _logits_choosing([4, 5, 6, 2, 2])
    row = teacher_forced_greedy(ref, follows, _Tokenizer(), 3, 0.1, 8, [2], [2])
    assert row["exact"] and row["target_tokens"] == 3 and "target_cut" not in row
