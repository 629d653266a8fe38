"""The one status ordering: FAIL over WARN over PASS, SKIP counts as nothing judged."""

from llm_adapt.status import worse, worst


def test_fail_outranks_warn_outranks_pass_in_either_case():
    assert worst(["PASS", "WARN", "FAIL", "PASS"]) == "FAIL"
    assert worst(["pass", "warn"]) == "warn"
    assert worst(["SKIP", "PASS"]) in ("SKIP", "PASS")


def test_all_clean_is_a_pass_and_nothing_is_the_default():
    assert worst(["PASS", "PASS"]) == "PASS"
    assert worst([]) == "PASS"
    assert worst([], default="pass") == "pass"


def test_worse_is_strict():
    assert worse("PASS", "WARN") and worse("WARN", "FAIL")
    assert not worse("FAIL", "FAIL") and not worse("FAIL", "PASS") and not worse("PASS", "SKIP")
