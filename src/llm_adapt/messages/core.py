"""The mechanism of keyed words: a message stored as a key with arguments, rendered in the report's language.

A `Reason` is the English sentence (what the log prints and what the JSON keeps as before, so older
readers and the tests read it unchanged) carrying its key and arguments; the JSON stores those beside it
(a stage in status.json: "reason_key", "reason_args"; a plan warning: `DeployPlan.warning_keys`) and the
report renders the key in its own language from REASONS. A message without a key (an engine's own
error, say) is shown as it was written. REASONS is filled by the package from its owners' modules.
"""

from __future__ import annotations

import re
from typing import Any

REASONS: dict[str, dict[str, str]] = {}  # every owner's keys, merged by llm_adapt.messages


class Reason(str):
    """The English sentence of a keyed reason, with `key` and `args` (arguments may be Reasons)."""

    key: str
    args: dict[str, Any]


LIST_SEP = {"en": "; ", "zh": "；"}  # an argument that is a list of reasons reads as them joined


def reason(key: str, **args: Any) -> Reason:
    words = {k: LIST_SEP["en"].join(map(str, v)) if isinstance(v, list) else v for k, v in args.items()}
    text = Reason(REASONS[key]["en"].format(**words))
    text.key, text.args = key, args
    return text


def stored(value: Any) -> dict[str, Any]:
    """The fields a stage's entry in status.json keeps for `value` (a Reason, or any other text)."""
    if isinstance(value, Reason):
        return {"reason": str(value), "reason_key": value.key,
                "reason_args": {k: _stored_arg(v) for k, v in value.args.items()}}
    return {"reason": value}


def _stored_arg(value: Any) -> Any:
    if isinstance(value, Reason):
        return stored(value)
    if isinstance(value, list):
        return [stored(v) if isinstance(v, (Reason, str)) else v for v in value]
    return value


def keyed(value: Any) -> dict[str, Any] | None:
    """A plan warning's key and arguments ({"key", "args"}), None for a warning without one."""
    if not isinstance(value, Reason):
        return None
    entry = stored(value)
    return {"key": entry["reason_key"], "args": entry["reason_args"]}


def restored(text: str, key: dict[str, Any] | None) -> Any:
    """A text stored with its key ({"key", "args"}, as keyed() gives) as a Reason again, to be an argument of
    another; the text itself without a key. Pure."""
    if not key or key.get("key") not in REASONS:
        return text
    value = Reason(text)
    value.key, value.args = key["key"], dict(key.get("args") or {})
    return value


def operator_name(name: str, lang: str) -> str:
    """An inventory row's name (inspect/inventory.py) in `lang`, from its "op_" key; as written where the table
    has none. Pure."""
    entry = REASONS.get("op_" + re.sub(r"[ -]", "_", name.lower()))
    return entry.get(lang, name) if entry and entry["en"] == name else name


def in_lang_all(texts: list[str] | None, keys: list[dict[str, Any] | None] | None, lang: str) -> list[str]:
    """Texts stored beside a list of their keys (one per text, None for a text without one) in `lang`. Pure."""
    keys = keys or []
    return [in_lang(text, keys[i] if i < len(keys) else None, lang) for i, text in enumerate(texts or [])]


def rendered_warnings(plan: dict[str, Any], lang: str) -> list[str]:
    """A plan's warnings (inspect.json) in `lang`: each keyed one from the table, the others as written. Pure."""
    keys = plan.get("warning_keys") or []
    out = []
    for i, text in enumerate(plan.get("warnings") or []):
        k = keys[i] if i < len(keys) and keys[i] else {}
        out.append(rendered({"reason": text, "reason_key": k.get("key"), "reason_args": k.get("args")}, lang))
    return out


def rendered(entry: dict[str, Any], lang: str) -> str:
    """A stage entry's reason in `lang`: its key's sentence where the key is known, else its words. Pure."""
    key = entry.get("reason_key")
    if key not in REASONS:
        return entry.get("reason") or ""
    args = {k: _rendered_arg(v, lang) for k, v in (entry.get("reason_args") or {}).items()}
    try:
        return REASONS[key].get(lang, REASONS[key]["en"]).format(**args)
    except (KeyError, IndexError):  # arguments of another version's sentence: its own words
        return entry.get("reason") or ""


def _rendered_arg(value: Any, lang: str) -> Any:
    if isinstance(value, dict) and "reason" in value:
        return rendered(value, lang)
    if isinstance(value, list) and all(isinstance(v, dict) and "reason" in v for v in value):
        return LIST_SEP.get(lang, LIST_SEP["en"]).join(rendered(v, lang) for v in value)
    return value


def message(value: Any, lang: str) -> Any:
    """A Reason in `lang` (from its key); anything else as it is. Pure."""
    return rendered(stored(value), lang) if isinstance(value, Reason) else value


def in_lang(text: str, key: dict[str, Any] | None, lang: str) -> str:
    """A text stored with its key ({"key", "args"}, as keyed() gives) in `lang`; as written without one. Pure."""
    return rendered({"reason": text, "reason_key": (key or {}).get("key"), "reason_args": (key or {}).get("args")}, lang)
