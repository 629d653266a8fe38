"""The mechanism of keyed words: a message kept as a key with arguments, rendered in the report's language.

In memory a message is a `Reason`: the English sentence (what the log prints and what code compares)
carrying its key and arguments. Every JSON result stores it in one shape, {"text", "key", "args"}
(`stored`), with any argument that is itself a message stored the same way; reading a result turns
that shape back into a Reason (`loaded`), so the report renders it in its own language (`message`). A
message without a key (an engine's own error, say) is plain text, stored and shown as written.
REASONS is filled by the package from its owners' modules.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypedDict

from pydantic import WrapValidator

REASONS: dict[str, dict[str, str]] = {}  # every owner's keys, merged by llm_adapt.messages


class Reason(str):
    """The English sentence of a keyed reason, with `key` and `args` (arguments may be Reasons)."""

    key: str
    args: dict[str, Any]


class StoredMessage(TypedDict):
    """A Reason as every JSON result stores it."""

    text: str
    key: str
    args: dict[str, Any]


# A pydantic field that holds text or a Reason and keeps the Reason (a plain `str` field would drop its key).
Said = Annotated[str, WrapValidator(lambda value, handler: value if isinstance(value, Reason) else handler(value))]

LIST_SEP = {"en": "; ", "zh": "；"}  # an argument that is a list of reasons reads as them joined
STORED_FIELDS = frozenset(StoredMessage.__annotations__)


def reason(key: str, **args: Any) -> Reason:
    words = {k: LIST_SEP["en"].join(map(str, v)) if isinstance(v, list) else v for k, v in args.items()}
    return _reason(REASONS[key]["en"].format(**words), key, args)


def _reason(text: str, key: str, args: dict[str, Any]) -> Reason:
    value = Reason(text)
    value.key, value.args = key, args
    return value


def stored(value: Any) -> Any:
    """`value` with every Reason in it, at any depth, in the stored shape {"text", "key", "args"}. Pure."""
    if isinstance(value, Reason):
        return {"text": str(value), "key": value.key, "args": stored(value.args)}
    if isinstance(value, dict):
        return {k: stored(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [stored(v) for v in value]
    return value


def loaded(value: Any) -> Any:
    """`value` read from JSON, with every stored message in it a Reason again (the inverse of `stored`). Pure."""
    if isinstance(value, dict):
        if value.keys() == STORED_FIELDS and isinstance(value["text"], str):
            return _reason(value["text"], value["key"], loaded(value["args"] or {}))
        return {k: loaded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [loaded(v) for v in value]
    return value


def message(value: Any, lang: str) -> Any:
    """A Reason in `lang`, from its key (its English where the key or its arguments are another version's);
    anything else as it is. Pure."""
    if not isinstance(value, Reason) or value.key not in REASONS:
        return value
    args = {k: _argument(v, lang) for k, v in value.args.items()}
    try:
        return REASONS[value.key].get(lang, REASONS[value.key]["en"]).format(**args)
    except (KeyError, IndexError):
        return str(value)


def messages(values: list[Any] | None, lang: str) -> list[Any]:
    """Each of a list of messages in `lang`. Pure."""
    return [message(v, lang) for v in values or []]


def _argument(value: Any, lang: str) -> Any:
    if isinstance(value, list):
        return LIST_SEP.get(lang, LIST_SEP["en"]).join(str(message(v, lang)) for v in value)
    return message(value, lang)


def from_keyed(text: Any, key: dict[str, Any] | None) -> Any:
    """A text stored with its key beside it the way results before schema 2 did ({"key", "args"}), as a
    Reason; the text itself without a known key. Pure."""
    if not isinstance(text, str) or not key or key.get("key") not in REASONS:
        return text
    return _reason(text, key["key"], {k: _old_argument(v) for k, v in (key.get("args") or {}).items()})


def _old_argument(value: Any) -> Any:
    """An argument as schema 1 stored it: a reason was {"reason", "reason_key", "reason_args"}."""
    if isinstance(value, list):
        return [_old_argument(v) for v in value]
    if isinstance(value, dict) and "reason" in value:
        return from_keyed(value["reason"], {"key": value.get("reason_key"), "args": value.get("reason_args")})
    return value


# Schema 1 kept a list's keys in a list beside it, under these names.
OLD_KEY_LISTS = {"warnings": "warning_keys", "reasons": "reason_keys", "evidence": "evidence_keys",
                 "caveats": "caveat_keys"}


def from_schema_1(value: Any) -> Any:
    """A result written by schema 1, its messages as Reasons: a stage's {"reason", "reason_key",
    "reason_args"}, a text with "<field>_key" ({"key", "args"}) beside it, a list with its keys in a list
    beside it, the inventory's "keys" by dotted name ("evidence.norm"). Pure."""
    if isinstance(value, list):
        return [from_schema_1(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: from_schema_1(v) for k, v in value.items()}
    if isinstance(out.get("reason_key"), str) or "reason_args" in out:
        out["reason"] = from_keyed(out.get("reason"), {"key": out.pop("reason_key", None),
                                                        "args": out.pop("reason_args", None)})
    for field, keys in OLD_KEY_LISTS.items():
        if isinstance(out.get(field), list) and isinstance(out.get(keys), list):
            found = out.pop(keys)
            out[field] = [from_keyed(t, found[i] if i < len(found) else None) for i, t in enumerate(out[field])]
    for name in [k for k in out if k.endswith("_key") and k[:-4] in out]:
        if out[name] is None or (isinstance(out[name], dict) and "key" in out[name]):
            out[name[:-4]] = from_keyed(out[name[:-4]], out.pop(name))
    if "source_note" in out and isinstance(out.get("keys"), dict):  # the inventory kept its keys by dotted name
        for name, key in out.pop("keys").items():
            *path, last = name.split(".")
            into = out
            for step in path:
                into = into.get(step) if isinstance(into, dict) else None
            if isinstance(into, dict) and last in into:
                into[last] = from_keyed(into[last], key)
    return out


def operator_name(name: str, lang: str) -> str:
    """An inventory row's name (inspect/inventory.py) in `lang`, from its "op_" key; as written where the table
    has none. Pure."""
    entry = REASONS.get("op_" + re.sub(r"[ -]", "_", name.lower()))
    return entry.get(lang, name) if entry and entry["en"] == name else name
