"""The one status ordering: FAIL over WARN over PASS, SKIP counts as nothing judged."""

from llm_adapt.status import Status, listing_rank, worse, worst


def test_fail_outranks_warn_outranks_pass_in_either_case():
    assert worst(["PASS", "WARN", "FAIL", "PASS"]) is Status.FAIL
    assert worst(["pass", "warn"]) is Status.WARN  # a check's word gives the verdict's Status


def test_a_pass_beside_nothing_judged_is_a_pass():
    assert worst(["SKIP", "PASS"]) is Status.PASS and worst(["pass", "skip"]) is Status.PASS
    assert worst(["SKIP"]) is Status.SKIP
    assert worst(["unjudged", "pass"]) is Status.PASS and worst(["unjudged"]) is Status.PASS  # decides nothing


def test_all_clean_is_a_pass_and_nothing_is_the_default():
    assert worst(["PASS", "PASS"]) is Status.PASS
    assert worst([]) is Status.PASS
    assert worst([], default=Status.WARN) is Status.WARN


def test_worse_is_strict():
    assert worse("PASS", "WARN") and worse("WARN", "FAIL")
    assert not worse("FAIL", "FAIL") and not worse("FAIL", "PASS") and not worse("PASS", "SKIP")


def test_checks_are_listed_fail_warn_unjudged_then_the_rest():
    words = ["pass", "UNJUDGED", "skip", "WARN", "fail", None]
    assert sorted(words, key=listing_rank)[:3] == ["fail", "WARN", "UNJUDGED"]
    assert listing_rank("PASS") == listing_rank("skip") == listing_rank(None) > listing_rank("unjudged")
