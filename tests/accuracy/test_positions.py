"""Positions as units with shared prefixes counted once, and the spread it gives the served-layer ratio."""

import numpy as np
import pytest

from llm_adapt.accuracy.layers_served import against_floor
from llm_adapt.accuracy.verdict import locate_and_judge
from llm_adapt.accuracy.positions import chance_spread, effective_count, effective_elements, prefix_units, unit_values

# Six prompts that open with the same three template tokens, then differ: the suite's shape.
SEQUENCES = [[1, 2, 3] + [10 + p * 7 + t for t in range(7)] for p in range(6)]


def test_a_shared_prefix_is_one_unit_and_what_follows_is_not():
    units, count = prefix_units([[1, 2, 3, 4], [1, 2, 5, 4], [9, 2]])
    assert list(units[0][:2]) == list(units[1][:2])  # tokens 1, 2 in both
    assert units[0][2] != units[1][2] and units[0][3] != units[1][3]  # "4" after another prefix is another state
    assert units[2][1] != units[0][1]  # the same token after another first token
    assert count == 4 + 2 + 2


def test_unit_values_average_the_copies():
    units, count = prefix_units([[1, 2], [1, 3]])
    values = unit_values([np.array([4.0, 1.0]), np.array([6.0, 2.0])], units, count)
    assert list(values) == [5.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="3 values for a sequence of 2"):
        unit_values([np.ones(3), np.ones(2)], units, count)


def test_effective_count():
    assert effective_count(np.array([1.0] * 8)) == pytest.approx(8)
    assert effective_count(np.array([1000.0] + [0.01] * 50)) == pytest.approx(1, abs=0.01)
    assert effective_count(np.zeros(3)) == 0.0


def test_effective_elements_and_the_chance_they_leave():
    assert effective_elements(np.array([1.0] * 10), np.array([0.01] * 10)) == pytest.approx(1000)  # 100 equal per unit
    assert effective_elements(np.array([4.0]), np.array([16.0])) == pytest.approx(1)  # one element
    assert chance_spread(1000, 1000) == pytest.approx(np.sqrt(1 / 1000))
    assert chance_spread(2, 2) == pytest.approx(np.sqrt(0.5))
    assert chance_spread(2, 800) == pytest.approx(np.sqrt(1 / 800))  # the larger estimate: not the null's spread
    assert chance_spread(0, 10) == pytest.approx(np.sqrt(0.1))
    assert np.isnan(chance_spread(0, float("nan")))


CHANNELS = np.array([2] + [200] * 9)  # how many elements share each position's error: few where it is massive


def rows(per_position: dict[str, tuple[np.ndarray, np.ndarray]], channels: np.ndarray = CHANNELS):
    """Served and floor rows from per-position squared errors of SEQUENCES (the same for every prompt),
    each position's error spread evenly over `channels` elements."""
    def row(name, values):
        by_position = [values.copy() for _ in SEQUENCES]
        total = sum(float(v.sum()) for v in by_position)
        return {"name": name, "rel_l2": total**0.5 / 100, "cos_min": 0.9999, "max_abs": 0.01, "nan_mismatch": False,
                "diff_sq_by_prompt": [float(v.sum()) for v in by_position], "diff_sq_by_position": by_position,
                "diff_4th_by_position": [v**2 / channels for v in by_position]}
    served = [row(n, t) for n, (t, _) in per_position.items()]
    floor = [row(n, f) for n, (_, f) in per_position.items()]
    return served, floor


def position_errors(first: float, rest: float, ratio_first: float, ratio_rest: float):
    floor = np.array([first, 0.1, 0.1] + [rest] * 7)
    target = floor * np.array([ratio_first**2, 1, 1] + [ratio_rest**2] * 7)
    return target, floor


def test_error_in_the_shared_first_position_is_one_draw_and_passes():
    # Layer 1: the template's first token carries the error (a massive activation), 1.9x the floor's
    # there, at the floor everywhere else. Six prompts share that position: one sample, not six.
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0),
                          "layer 1": position_errors(400.0, 1.0, 1.9, 1.0)})
    checked = against_floor(served, floor, {}, SEQUENCES)
    assert checked[1]["ratio"] == pytest.approx(1.85, abs=0.05)
    assert checked[1]["effective_positions"] < 1.2 and checked[1]["effective_elements"] < 3
    assert checked[1]["spread"]["elements"] > 0.5 > checked[1]["spread"]["prompts"]
    assert locate_and_judge(checked, "f", "bf16", 2.0, False)[1]["status"] == "PASS"
    # Resampling prompts alone (the sequences not given) sees a constant and flags it.
    assert locate_and_judge(against_floor(served, floor, {}), "f", "bf16", 2.0, False)[1]["status"] == "WARN"


def test_the_same_ratio_in_one_massive_position_spread_over_many_channels_is_not_chance():
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0),
                          "layer 1": position_errors(400.0, 1.0, 1.9, 1.0)}, channels=np.array([200] * 10))
    checked = against_floor(served, floor, {}, SEQUENCES)
    assert checked[1]["spread"]["elements"] < 0.1
    assert locate_and_judge(checked, "f", "bf16", 2.0, False)[1]["status"] in ("WARN", "FAIL")


def test_the_same_ratio_on_every_position_is_not_chance():
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0),
                          "layer 1": position_errors(1.0, 1.0, 1.9, 1.9)}, channels=np.array([200] * 10))
    checked = against_floor(served, floor, {}, SEQUENCES)
    assert max(checked[1]["spread"][k] for k in ("prompts", "elements")) < 0.05
    assert locate_and_judge(checked, "f", "bf16", 2.0, False)[1]["status"] in ("WARN", "FAIL")


def test_a_fault_on_the_prompts_own_positions_fails():
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0),
                          "layer 1": position_errors(1.0, 1.0, 1.0, 6.0)})
    excess, verdict = locate_and_judge(against_floor(served, floor, {}, SEQUENCES), "f", "bf16", 2.0, False)
    assert verdict["status"] == "FAIL" and excess["name"] == "layer 1"


def test_per_position_arrays_stay_out_of_the_result_rows():
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0)})
    assert "diff_sq_by_position" not in against_floor(served, floor, {}, SEQUENCES)[0]


def test_a_fault_spread_over_many_elements_where_the_floor_is_concentrated_fails():
    # The floor's error sits in the massive position's two channels; the fault adds error on every
    # element of the prompts' own positions. One distribution cannot give both: no chance excuse.
    served, floor = rows({"layer 0": position_errors(1.0, 1.0, 1.0, 1.0),
                          "layer 1": position_errors(400.0, 1.0, 1.0, 30.0)})
    for row in served:
        row["diff_4th_by_position"] = [v**2 / 200 for v in row["diff_sq_by_position"]]
    checked = against_floor(served, floor, {}, SEQUENCES)
    assert checked[1]["floor_effective_elements"] < 3 < 1000 < checked[1]["effective_elements"]
    excess, verdict = locate_and_judge(checked, "f", "bf16", 2.0, False)
    assert verdict["status"] == "FAIL" and excess["name"] == "layer 1"
