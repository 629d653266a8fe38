"""The environment a deployment plan exports: the platform's own rows (`Platform.env_rows`,
platforms/env.py) applied to one node of one deployment form, and explained for the report.

The plan's `env` on Ascend and CUDA is generated from those rows (`env_for`), and `explain`
turns any plan environment into rows the report prints in its language. CPU keeps its own rules
in plan.py (cores to bind, KV space, preloads); its rows only explain what plan.py set.
"""

from __future__ import annotations

from llm_adapt.platforms import PLATFORMS
from llm_adapt.platforms.env import (  # noqa: F401  the names the plan and multi-node forms read from here
    FORMS,
    FROM_DOCS,
    HEAD_IP,
    IFNAME,
    NODE_IP,
    ON_CI,
    RULES,
    EnvContext,
    EnvRow,
)


def table(platform: str) -> tuple[EnvRow, ...]:
    return PLATFORMS[platform].env_rows if platform in PLATFORMS else ()



def env_for(platform: str, ctx: EnvContext) -> dict[str, str]:
    """The variables whose rule holds for this node, in table order."""
    return {row.name: row.value(ctx) for row in table(platform)
            if row.value is not None and RULES[row.rule].holds(ctx)}


def explain(platform: str, env: dict[str, str]) -> list[dict[str, str]]:
    """One row per variable of `env`: its value, rule, explanation (en, zh), source and how it was checked.
    A variable no table knows gets empty text, which the plan's tests forbid."""
    rows = {row.name: row for row in table(platform)}
    out = []
    for name, value in env.items():
        row = rows.get(name)
        rule = RULES[row.rule] if row else None
        out.append({"name": name, "value": value,
                    "rule_en": rule.en if rule else "", "rule_zh": rule.zh if rule else "",
                    "en": row.en if row else "", "zh": row.zh if row else "",
                    "source": row.source if row else "", "verified": row.verified if row else ""})
    return out


def note_lines(notes: list[dict[str, str]], lang: str = "en") -> list[str]:
    """One line per variable for a terminal: name=value, what it does, when it is set, where it comes from."""
    return [f"  {n['name']}={n['value']}: {n[lang] or '?'} ({n[f'rule_{lang}'] or '?'}; {n['source'] or 'no source'})"
            for n in notes]
