"""The one ordering of judged statuses, in either case: PASS (and SKIP, nothing judged) < WARN < FAIL.

A check may also be UNJUDGED: it had too little evidence to decide (one decisive position, two greedy
prompts) or its figure could not be computed by our own arithmetic (a ratio of 0 to 0). It decides
nothing: `worst` passes over it, and a verdict whose every check is unjudged is WARN (verdict.py)."""

from __future__ import annotations

from collections.abc import Iterable

UNJUDGED = "unjudged"
SEVERITY = {"pass": 0, "skip": 0, "warn": 1, "fail": 2}
JUDGED = ("PASS", "WARN", "FAIL")  # the statuses a verdict can have (SKIP is said in the notes)
NOTED = ("warn", "fail", UNJUDGED)  # a check with one of these gives a reason in its verdict
# A run stopped by Ctrl-C or SIGTERM judges nothing: its verdict, everywhere ("interrupted: not judged").
INTERRUPTED = "INTERRUPTED"


def severity(status: str | None) -> int:
    """0 for pass, skip, unjudged or an unknown status, 1 for warn, 2 for fail."""
    return SEVERITY.get((status or "").lower(), 0)


def decides(status: str | None) -> bool:
    """Whether a check's status counts toward its verdict: every status but UNJUDGED."""
    return (status or "").lower() != UNJUDGED


def worst(statuses: Iterable[str], default: str = "PASS") -> str:
    """The most severe of the statuses that decide (see `decides`), in the case it was given; `default`
    when none does."""
    return max((s for s in statuses if decides(s)), key=severity, default=default)


def worse(a: str, b: str) -> bool:
    """Whether `b` is strictly more severe than `a`."""
    return severity(b) > severity(a)
