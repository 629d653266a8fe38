"""A platform's knowledge lives in its platform module: a stand-in platform registered here, and nothing else
changed, is taken by the runner's devices, the caveats, the gold's placement and environment.json."""

from dataclasses import replace

import pytest

from llm_adapt import platforms
from llm_adapt.platforms.base import CaveatRule, Fp32Mode


@pytest.fixture()
def toy():
    seen = []
    rule = CaveatRule("toy-rope", "rope", lambda f: True, lambda f: "the toy device has no rotary kernel",
                      "positions", "the toy device's manual")
    platform = replace(platforms.get_platform("cuda"), name="toy", display="Toy accelerator", torch_devices=("toy",),
                       fp32_mode=lambda: seen.append(1) or Fp32Mode("toy", True, {"toy.allow_fast_fp32": False}),
                       caveats=(rule,), host_facts=lambda: {"toy_sdk": "1.2"}, detect=None, missing_here=None)
    platforms.register(platform)
    yield platform, seen
    platforms.unregister("toy")


def test_the_runner_takes_the_stand_ins_device(toy):
    from llm_adapt.accuracy.runner import devices, parse_runner

    assert "toy" in devices() and parse_runner("toy:fp32").device == "toy"
    platforms.unregister("toy")
    assert "toy" not in devices()


def test_the_caveats_are_the_stand_ins_own_and_every_platforms(toy, tmp_path):
    from llm_adapt.inspect.caveats import RULES, platform_caveats
    from llm_adapt.inspect.inventory import ModelFacts

    facts = ModelFacts(**{**{f: None for f in ModelFacts.__dataclass_fields__}, "norm": "rms_1p", "activation": "silu",
                          "embed_scale": None, "attention": "GQA", "experts": 8, "head_dim": 17, "num_kv_heads": 8})
    ids = [c.id for c in platform_caveats(facts, "toy")]
    assert ids[0] == "toy-rope" and "norm-one-plus-w" in ids and {r.id for r in RULES} >= set(ids[1:])
    assert not {"cpu-head-dim", "moe-cpu"} & set(ids)  # the CPU's own rules stay the CPU's
    assert {"cpu-head-dim", "moe-cpu"} <= {c.id for c in platform_caveats(facts, "cpu")}


def test_the_gold_is_placed_by_the_stand_ins_own_fp32_switches(toy):
    from llm_adapt.accuracy.gold_placement import accelerator_fp32_mode, choose_gold

    _, seen = toy
    mode = accelerator_fp32_mode("toy")
    assert mode == Fp32Mode("toy", True, {"toy.allow_fast_fp32": False}) and seen == [1]
    assert choose_gold(mode, 2**30, 8 * 2**30, 64 * 2**30).label == "toy:fp32"
    assert accelerator_fp32_mode("cpu") is None  # the host has no switch: the gold there is plain fp32


def test_environment_json_records_what_the_stand_in_knows_of_this_host(toy):
    from llm_adapt.environment import host_facts

    facts = host_facts()
    assert facts["toy_sdk"] == "1.2" and "cann" in facts
