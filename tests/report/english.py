"""Finding English sentences left in a Chinese report. A test helper: the report's own words must be
Chinese; what a model or a server wrote is quoted (「…」), and code, commands and identifiers stay as they are."""

from __future__ import annotations

import re

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_QUOTED = re.compile(r"「[^」]*」")
_URL = re.compile(r"https?://\S+")
# words and identifiers, and every other character on its own (a CJK character ends a run); spaces and
# the light punctuation of an English sentence between words do not
_TOKEN = re.compile(r"[A-Za-z0-9_'’.+=:-]+|[^\s,;()/*\"]")
_LATIN = re.compile(r"^[A-Za-z][\w'’.+=-]*$")  # a word or an identifier (vision_config, nn.Linear, --flag stays out)
# the words that make a run a sentence rather than a name ("vLLM CPU build", "LlamaForCausalLM"): plain
# lower-case words of two letters or more
_PLAIN = re.compile(r"^[a-z][a-z'’-]+$")


def english_sentences(markdown: str, plain_words: int = 3) -> list[str]:
    """The lines of `markdown` that hold a run of Latin-script words (outside code, quotations and URLs)
    with at least `plain_words` plain lower-case words in it. Pure."""
    text = _URL.sub(" ", _QUOTED.sub(" ", _CODE.sub(" ", markdown)))
    return [line.strip() for line in text.splitlines()
            if max(map(_longest_plain_run, line.split("|"))) >= plain_words]  # each table cell on its own


def _longest_plain_run(cell: str) -> int:
    best = plain = 0
    for token in _TOKEN.findall(cell):
        token = token.rstrip(".,:;!?")  # "cpu:bf16" is one identifier; "registration:" a word
        if _LATIN.match(token):
            plain += 1 if _PLAIN.match(token) else 0
            best = max(best, plain)
        else:
            plain = 0
    return best
