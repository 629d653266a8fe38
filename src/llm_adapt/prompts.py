"""Prompt suites (shipped or the user's JSONL) and the perplexity corpus.

A JSONL line is {"id": ..., "category": ..., "messages": [{"role", "content"}, ...]}
(rendered through the model's chat template) or {"id", "category", "prompt": "plain text"}.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path

from llm_adapt.errors import UsageError

SUITES = ("default", "quick")
ROLES = {"system", "user", "assistant"}


@dataclass(frozen=True)
class Prompt:
    id: str
    category: str
    messages: tuple[tuple[str, str], ...] = ()
    text: str | None = None  # plain prompt, no chat template

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


def load_prompts(suite: str) -> list[Prompt]:
    """A shipped suite by name, or a JSONL file path."""
    if suite in SUITES:
        text = importlib.resources.files("llm_adapt.data").joinpath(f"prompts/{suite}.jsonl").read_text()
        return parse_jsonl(text, f"suite {suite}")
    path = Path(suite)
    if not path.is_file():
        raise UsageError(f"--prompts {suite}: not a suite ({', '.join(SUITES)}) nor an existing JSONL file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text; prompts must be JSONL") from None
    return parse_jsonl(text, str(path))


def parse_jsonl(text: str, where: str) -> list[Prompt]:
    prompts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where} line {number}: not JSON ({exc.msg}); each line must be one JSON object") from None
        prompts.append(_prompt(row, f"{where} line {number}", number))
    if not prompts:
        raise UsageError(f"{where}: no prompts; add lines like {{\"category\": \"x\", \"messages\": [...]}}")
    return prompts


def _prompt(row, where: str, number: int) -> Prompt:
    if not isinstance(row, dict):
        raise UsageError(f"{where}: expected a JSON object")
    pid, category = str(row.get("id", f"prompt-{number}")), str(row.get("category", "user"))
    if isinstance(row.get("prompt"), str):
        return Prompt(pid, category, text=row["prompt"])
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise UsageError(f"{where}: needs 'messages' (a list of {{role, content}}) or 'prompt' (a string)")
    pairs = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES or not isinstance(message.get("content"), str):
            raise UsageError(f"{where}: each message needs a role ({', '.join(sorted(ROLES))}) and string content")
        pairs.append((message["role"], message["content"]))
    return Prompt(pid, category, messages=tuple(pairs))


def render(tokenizer, prompt: Prompt) -> list[int]:
    """Token ids the model sees: the chat template with the generation prompt, or the plain text."""
    if prompt.text is not None:
        return tokenizer(prompt.text)["input_ids"]
    if not tokenizer.chat_template:
        return tokenizer(plain_text(prompt))["input_ids"]
    out = tokenizer.apply_chat_template(prompt.as_messages(), add_generation_prompt=True, tokenize=True)
    return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)


def plain_text(prompt: Prompt) -> str:
    """A chat prompt as the text a base model (one without a chat template) is given: its messages'
    contents, a line each. Pure."""
    return prompt.text if prompt.text is not None else "\n".join(content for _, content in prompt.messages)


def corpus_texts() -> dict[str, str]:
    """The perplexity corpus: English and Chinese passages written for this project."""
    root = importlib.resources.files("llm_adapt.data").joinpath("corpus")
    return {lang: root.joinpath(f"{lang}.txt").read_text() for lang in ("en", "zh")}


def corpus_windows(tokenizer, window: int, limit: int | None = None) -> list[list[int]]:
    """Each corpus text cut into windows of at most `window` tokens (the last one may be shorter);
    `limit`: only the first `limit` tokens of each text (a short perplexity check)."""
    windows = []
    for text in corpus_texts().values():
        ids = tokenizer(text)["input_ids"][:limit]
        windows += [ids[i:i + window] for i in range(0, len(ids), window) if len(ids[i:i + window]) > 8]
    return windows
