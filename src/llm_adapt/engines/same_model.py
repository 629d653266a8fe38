"""Before an endpoint is judged against a gold: is the server serving the gold's model at all? A server of
another model judged against the default model's gold fails late, or passes by chance on a shared
tokenizer; this check fails it first, in one line, before anything is measured.

What is compared: the token ids the server's /tokenize gives a probe text against the gold tokenizer's
(the tokenizer and its vocabulary), and the length the server serves against the gold's own limit. A
server without /tokenize (transformers serve) is not refused on it: the check says what it could not see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_adapt.errors import UsageError

# Words, digits, CJK and rare pieces: two different tokenizers almost never give the same ids for it.
PROBE_TEXT = "The capital of France is Paris; 巴黎 1234567 naïve tokenization_check ✓"


@dataclass(frozen=True)
class Identity:
    """What one side says of its model: the probe text's ids, and the longest sequence it takes."""

    name: str
    ids: list[int] | None  # None: not known (a server without /tokenize)
    max_len: int | None


def mismatch(served: Identity, gold: Identity) -> str | None:
    """One line naming both sides where the server cannot be serving the gold's model; None when nothing
    seen says so. Pure."""
    if served.ids is not None and gold.ids is not None and served.ids != gold.ids:
        return (f"the server's model {served.name!r} tokenizes a probe text into {len(served.ids)} tokens "
                f"{_head(served.ids)}, the gold {gold.name!r} into {len(gold.ids)} {_head(gold.ids)}: they are "
                "not the same model; judge the server against its own checkpoint (llm-adapt run MODEL --endpoint URL)")
    if served.max_len and gold.max_len and served.max_len > gold.max_len:
        return (f"the server's model {served.name!r} serves {served.max_len:,} tokens, more than the gold "
                f"{gold.name!r} supports ({gold.max_len:,}): not the same model; judge it against its own checkpoint")
    return None


def bare_name(model_id: str) -> str:
    """A served model id as a checkpoint's name: the last part of a path or hub id, without transformers
    serve's "@revision" ("/models/SmolLM2-135M-Instruct@main" -> "SmolLM2-135M-Instruct"). Pure."""
    return model_id.split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def other_served_name(served: str | None, gold: str | None) -> bool:
    """Whether the server's model id names another checkpoint than the gold's (compared as bare names, in either
    case); False where either is unknown. The tokenizer check already refused a server of another vocabulary,
    so a differing name is the likely cause of a difference, not proof of one. Pure."""
    if not served or not gold:
        return False
    return bare_name(served).casefold() != bare_name(gold).casefold()


def _head(ids: list[int]) -> str:
    return "[" + ", ".join(map(str, ids[:6])) + (", ...]" if len(ids) > 6 else "]")


def served_identity(endpoint, model: str, listed: list[dict[str, Any]] | None, timeout_s: float) -> Identity:
    """The served side: /tokenize's ids (vLLM's default adds the special tokens) and the model card's
    max_model_len (vLLM lists it in /v1/models)."""
    import httpx

    from llm_adapt.engines.client import http_client, url

    card = next((m for m in listed or [] if m.get("id") == model), {})
    ids = None
    try:
        with http_client(endpoint, timeout_s) as http:
            reply = http.post(url(endpoint, "/tokenize"), json={"model": model, "prompt": PROBE_TEXT})
        if reply.status_code == 200:
            ids = [int(t) for t in reply.json().get("tokens") or []] or None
    except (httpx.HTTPError, ValueError, TypeError):
        ids = None
    return Identity(model, ids, card.get("max_model_len"))


def gold_max_len(spec) -> int | None:
    """The longest sequence the gold's config allows; None where a rope scaling lets a server go further
    (yarn, dynamic: vLLM derives its own limit from the factor), so the length is not compared. Pure."""
    rope = spec.rope
    if rope is not None and rope.scaling_type not in (None, "default", "llama3", "linear"):
        return None
    return spec.max_position_embeddings


def gold_identity(name: str, tokenizer, max_positions: int | None) -> Identity:
    return Identity(name, list(tokenizer(PROBE_TEXT, add_special_tokens=True)["input_ids"]), max_positions)


def require_same_model(endpoint, model: str, listed, source, timeout_s: float) -> Identity:
    """Raise a one-line UsageError (exit 2) when the server is not serving `source`'s model."""
    from llm_adapt.models.spec import load_spec
    from llm_adapt.models.tokenizer import load_tokenizer

    spec = load_spec(source.path)
    gold = gold_identity(source.name, load_tokenizer(source.path), gold_max_len(spec))
    served = served_identity(endpoint, model, listed, timeout_s)
    problem = mismatch(served, gold)
    if problem:
        raise UsageError(problem)
    return served
