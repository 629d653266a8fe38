"""benchmarks/differential_time.py's table on plain rounds: the target is judged per round, and a KL that moved
between rounds is said."""

from tests.benchmarks.scripts import load_script


def round_of(plain: float, differential: float, compile_s: float, kl: float = 0.001) -> dict:
    return {"plain": plain, "differential": differential, "compile": compile_s, "target": 2 * plain + compile_s,
            "startup": {"eager": 27.0, "graph": 35.0}, "kl": {"eager": 0.001, "graph": kl}}


def test_each_round_is_judged_against_its_own_target():
    script = load_script("differential_time")
    text = script.summarise([round_of(47.0, 110.0, 20.0), round_of(47.0, 120.0, 20.0)])
    assert "Target per round: met, NOT met." in text
    assert "| plain `run --quick` | 47.0 (47.0-47.0) |" in text
    assert "| graph start-up | 35.0 (35.0-35.0) |" in text


def test_a_served_kl_that_moved_between_rounds_is_said():
    script = load_script("differential_time")
    assert "every round: yes" in script.summarise([round_of(47, 100, 20), round_of(47, 100, 20)])
    assert "every round: no" in script.summarise([round_of(47, 100, 20), round_of(47, 100, 20, kl=0.002)])
