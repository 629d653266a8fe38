"""The one ordering of judged statuses, in either case: PASS (and SKIP, nothing judged) < WARN < FAIL."""

from __future__ import annotations

from collections.abc import Iterable

SEVERITY = {"pass": 0, "skip": 0, "warn": 1, "fail": 2}
JUDGED = ("PASS", "WARN", "FAIL")  # the statuses a verdict can have (SKIP is said in the notes)


def severity(status: str | None) -> int:
    """0 for pass, skip or an unknown status, 1 for warn, 2 for fail."""
    return SEVERITY.get((status or "").lower(), 0)


def worst(statuses: Iterable[str], default: str = "PASS") -> str:
    """The most severe status, in the case it was given; `default` when there is none."""
    return max(statuses, key=severity, default=default)


def worse(a: str, b: str) -> bool:
    """Whether `b` is strictly more severe than `a`."""
    return severity(b) > severity(a)
