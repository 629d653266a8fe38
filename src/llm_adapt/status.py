"""The one vocabulary of judged statuses (Status) and its one ordering, in either case: PASS (and SKIP,
nothing judged) < WARN < FAIL.

A verdict's status is a Status everywhere: every stage's JSON, status.json, the report, the console and the
exit code. A check inside a verdict carries the same word in lower case (`Status.PASS.check` is "pass"),
as the checks' JSON has always had it.

A check may also be UNJUDGED: it had too little evidence to decide (one decisive position, two greedy
prompts) or its figure could not be computed by our own arithmetic (a ratio of 0 to 0). It decides
nothing: `worst` passes over it, and a verdict whose every check is unjudged is WARN (accuracy/verdict/checks.py)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Status(StrEnum):
    """A verdict's status. A StrEnum: it is written, compared and shown as its word ("PASS")."""

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"  # nothing to judge (said in the notes)
    INTERRUPTED = "INTERRUPTED"  # a run stopped by Ctrl-C or SIGTERM judges nothing ("interrupted: not judged")

    @property
    def check(self) -> str:
        """The same status as a check inside a verdict writes it: "pass", "warn", "fail"."""
        return self.value.lower()

    @classmethod
    def of(cls, word: str) -> Status:
        """The status a check's or a verdict's word names, in either case ("fail" or "FAIL")."""
        return cls(word.upper())


UNJUDGED = "unjudged"
SEVERITY = {"pass": 0, "skip": 0, "warn": 1, "fail": 2}
JUDGED = (Status.PASS, Status.WARN, Status.FAIL)  # the statuses a verdict can have (SKIP is said in the notes)
OUT_OF_LINE = (Status.FAIL, Status.WARN)  # a verdict that asks why: escalation, the settings' cause, diagnosis
NOTED = (Status.WARN.check, Status.FAIL.check, UNJUDGED)  # a check with one of these gives a reason in its verdict


def severity(status: str | None) -> int:
    """0 for pass, skip, unjudged or an unknown status, 1 for warn, 2 for fail."""
    return SEVERITY.get((status or "").lower(), 0)


def decides(status: str | None) -> bool:
    """Whether a check's status counts toward its verdict: every status but UNJUDGED."""
    return (status or "").lower() != UNJUDGED


def worst(statuses: Iterable[str], default: Status = Status.PASS) -> Status:
    """The most severe of the statuses that decide (see `decides`), given in either case, as a Status;
    `default` when none does. PASS beside SKIP is a PASS: something was judged, and it passed."""
    decided = [s for s in statuses if decides(s)]
    return Status.of(max(decided, key=lambda s: (severity(s), s.upper() == Status.PASS), default=default))


LISTED = (Status.FAIL.check, Status.WARN.check, UNJUDGED)  # a report lists checks in this order, the rest after


def listing_rank(status: str | None) -> int:
    """Where a check of this status is listed, in either case: FAIL, WARN, unjudged (it decided nothing,
    and says why), then PASS and the rest."""
    word = (status or "").lower()
    return LISTED.index(word) if word in LISTED else len(LISTED)


def worse(a: str, b: str) -> bool:
    """Whether `b` is strictly more severe than `a`."""
    return severity(b) > severity(a)


# The one exit-code contract of every subcommand (cli.main adds the last three): a CI step gates on the same
# verdict the report shows.
EXIT_OK = 0  # PASS or WARN (a WARN names what to look at), or a command that judges nothing and succeeded
EXIT_FAIL = 1  # FAIL, a stage or measurement that failed, an engine that did not start
EXIT_BAD_INPUT = 2  # bad input: one line naming the problem and the fix, nothing left behind
EXIT_SIGINT = 130  # stopped by Ctrl-C: not judged
EXIT_SIGTERM = 143  # stopped by SIGTERM: not judged
EXIT_CODES_HELP = """exit codes (every subcommand):
  0    PASS or WARN (WARN names what to look at)
  1    FAIL, a stage or measurement that failed, or an engine that did not start
  2    bad input: one line naming the problem and the fix, nothing left behind
  130  stopped by Ctrl-C, 143 stopped by SIGTERM: not judged"""


def exit_code(status: str | None, failed: bool = False) -> int:
    """The exit code of a command whose result has verdict `status` (either case; None: nothing judged):
    1 for FAIL or when something it ran `failed`, else 0. Pure."""
    return EXIT_FAIL if failed or severity(status) >= SEVERITY["fail"] else EXIT_OK
