"""The one builder of a comparison's options, as run, tune, layers and compare call it."""

from llm_adapt.accuracy import defaults
from llm_adapt.accuracy.options import CompareOptions, compare_options
from llm_adapt.accuracy.runner import RunnerSpec, parse_runner


def test_the_defaults_are_the_gold_on_the_host_and_no_target():
    assert compare_options() == CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=())


def test_runners_are_parsed_and_each_target_is_then_quantized():
    options = compare_options("cpu:fp32", targets=["cpu:bf16", RunnerSpec("cpu", "fp16")], quants=("int8-tensor",),
                              baseline="cpu:bf16")
    assert [t.label for t in options.targets] == [parse_runner("cpu:bf16").label, "cpu:fp16",
                                                  parse_runner("cpu:bf16").label + "+int8-tensor",
                                                  "cpu:fp16+int8-tensor"]
    assert options.baseline == parse_runner("cpu:bf16")


def test_a_setting_left_as_none_keeps_its_default_and_a_given_one_is_kept():
    options = compare_options(prompts=None, max_new_tokens=None, corpus_tokens=256, local_factor=3.0)
    assert options.prompts == defaults.PROMPTS and options.max_new_tokens == defaults.MAX_NEW_TOKENS
    assert options.corpus_tokens == 256 and options.local_factor == 3.0
