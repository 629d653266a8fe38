"""Tool calling in the plan. vLLM turns a model's tool-call text into OpenAI `tool_calls` only when it
starts with `--enable-auto-tool-choice --tool-call-parser NAME` (vLLM 0.32 refuses a named or "auto"
tool_choice without them: vllm/renderers/online_renderer.py), and NAME must match the format the
model's chat template teaches it. The format is read from the template's own text (its tool-call
markers), not from the architecture name: a fine-tune may change the template. `tool_calling` is
pure; `read_chat_template` reads the model directory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_adapt.messages import reason

# (vLLM --tool-call-parser, patterns that must all be found in the template, the family it is written for).
# First match wins: the more specific formats come before the ones they contain (Qwen3-Coder's and
# GLM-4.5's <tool_call> bodies before Hermes' JSON one). Names from vllm/tool_parsers/__init__.py (0.32).
TOOL_PARSERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("mistral", (r"\[TOOL_CALLS\]",), "Mistral"),
    ("qwen3_coder", (r"<tool_call>", r"<function=", r"<parameter="), "Qwen3-Coder"),
    ("glm45", (r"<tool_call>", r"<arg_key>"), "GLM-4.5 / 4.6"),
    ("hermes", (r"<tool_call>",), "Hermes 2 Pro / 3, Qwen2.5, Qwen3"),
    ("llama3_json", (r'"parameters"', r"<\|python_tag\|>|ipython"), "Llama 3.1 / 3.2 / 3.3"),
    ("deepseek_v3", (r"<｜tool▁calls▁begin｜>", r"```json"), "DeepSeek-V3 / R1"),
    ("deepseek_v31", (r"<｜tool▁calls▁begin｜>",), "DeepSeek-V3.1"),
    ("internlm", (r"<\|plugin\|>",), "InternLM2 / 2.5"),
    ("granite", (r"<\|tool_call\|>",), "Granite 3.0"),
)
DECLARES_TOOLS = re.compile(r"\btools\b")  # the template reads the request's `tools` (Jinja variable)
ENABLE = "--enable-auto-tool-choice --tool-call-parser {parser}"


@dataclass(frozen=True)
class ToolCalling:
    """The plan's tool-calling decision: the parser it starts vLLM with (None: not enabled), why, and the
    flags that enable it (where it is not enabled: what a user would add)."""

    parser: str | None
    evidence: Any  # a Reason (messages/)
    flags: str

    @property
    def enabled(self) -> bool:
        return self.parser is not None

    def options(self) -> list[tuple[str, str | None]]:
        """vLLM's options for this decision (none when not enabled)."""
        if self.parser is None:
            return []
        return [("--enable-auto-tool-choice", None), ("--tool-call-parser", self.parser)]

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "parser": self.parser, "flags": self.flags,
                "evidence": self.evidence}


def tool_calling(template: str | None) -> ToolCalling:
    """The parser for a chat template: enabled where the template declares tools and writes tool calls in
    a format a vLLM parser reads. Pure."""
    placeholder = ENABLE.format(parser="NAME")
    if not template:
        return ToolCalling(None, reason("tc_no_template"), f"{placeholder} --chat-template FILE")
    if not DECLARES_TOOLS.search(template):
        return ToolCalling(None, reason("tc_no_tools"), f"{placeholder} --chat-template FILE")
    for parser, patterns, family in TOOL_PARSERS:
        if all(re.search(p, template) for p in patterns):
            marker = re.search(patterns[0], template).group(0)
            return ToolCalling(parser, reason("tc_enabled", marker=marker, family=family, parser=parser),
                               ENABLE.format(parser=parser))
    return ToolCalling(None, reason("tc_unknown_format", parsers=", ".join(p for p, _, _ in TOOL_PARSERS)),
                       placeholder)


def read_chat_template(model_dir: str | Path) -> str | None:
    """Every chat template a model directory ships, joined (vLLM picks a named "tool_use" template when a
    request has tools): chat_template.jinja, additional_chat_templates/*.jinja, chat_template.json and
    tokenizer_config.json's "chat_template" (a string, or a list of named templates). None without any."""
    folder = Path(model_dir)
    if not folder.is_dir():
        return None
    texts = [p.read_text(errors="replace") for p in
             [folder / "chat_template.jinja", *sorted((folder / "additional_chat_templates").glob("*.jinja"))]
             if p.is_file()]
    for name in ("chat_template.json", "tokenizer_config.json"):
        texts += _templates_in(folder / name)
    return "\n".join(texts) or None


def _templates_in(path: Path) -> list[str]:
    if not path.is_file():
        return []
    try:
        value = json.loads(path.read_text(errors="replace")).get("chat_template")
    except (json.JSONDecodeError, AttributeError):
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t["template"] for t in value if isinstance(t, dict) and isinstance(t.get("template"), str)]
    return []
