"""The words the tool writes in the report's language, English and Chinese, kept by their owners: one
module per room (run, inspect, accuracy, evaluation, probes, tune, report, upstream), each holding its keys in both
languages, and the mechanism that stores a message as a key with arguments and renders it (core.py).

Import from here: `from llm_adapt.messages import reason, message, ...`.
"""

from __future__ import annotations

from llm_adapt.messages import accuracy, evaluation, inspect, probes, report, run, tune, upstream
from llm_adapt.messages.accuracy import (
    ARG_WORDS,
    CHECK_FIELDS,
    CHECKS,
    LOCATED,
    PARTS,
    SHAPE_WORDS,
    VALUE_BUILDERS,
    basis_text,
    check_text,
    head_list,
    located_value,
    rendered_check,
    verdict_reasons,
)
from llm_adapt.messages.core import (
    LIST_SEP,
    REASONS,
    Reason,
    Said,
    StoredMessage,
    from_keyed,
    from_schema_1,
    loaded,
    message,
    messages,
    operator_name,
    reason,
    stored,
)
from llm_adapt.messages.probes import PROBE_WORDS, probe_words
from llm_adapt.messages.report import (
    FIRST_SCREEN,
    FIRST_SCREEN_MODES,
    FLOOR_LABEL,
    PAGE_LABELS,
    REPORT_NOTES,
    REPORT_TEXT,
    SECTION_WORDS,
    verdict_shown,
)

OWNERS = (run, inspect, accuracy, evaluation, probes, tune, report, upstream)


def _merged(owners) -> dict[str, dict[str, str]]:
    """Every owner's keys in one table; a key two owners both define is a mistake caught at import."""
    merged: dict[str, dict[str, str]] = {}
    for owner in owners:
        twice = merged.keys() & owner.REASONS.keys()
        if twice:
            raise ValueError(f"message keys defined twice ({owner.__name__}): {sorted(twice)}")
        merged.update(owner.REASONS)
    return merged


REASONS.update(_merged(OWNERS))

__all__ = ["ARG_WORDS", "SHAPE_WORDS", "CHECKS", "CHECK_FIELDS", "FIRST_SCREEN", "FIRST_SCREEN_MODES", "FLOOR_LABEL", "LIST_SEP",
           "LOCATED", "OWNERS", "PAGE_LABELS", "PARTS", "PROBE_WORDS", "REASONS", "REPORT_NOTES", "REPORT_TEXT", "Reason", "SECTION_WORDS", "Said", "StoredMessage",
           "VALUE_BUILDERS", "basis_text", "check_text", "from_keyed", "from_schema_1", "head_list", "loaded",
           "located_value", "message", "messages", "operator_name", "probe_words", "reason", "rendered_check",
           "stored", "verdict_reasons", "verdict_shown"]
