"""One KV-cache figure per set of settings, across the export. Pure.

The sequences of full length the KV cache holds depend on the length and also on the activation reserve, which
grows with --max-num-seqs and --max-num-batched-tokens: two plans at the same max-model-len can hold 313 and 314.
Every file says the figure through kv_holds, which names beside it the settings that set it apart from another
plan's figure at the same length; where no other plan at that length differs, the figure stands alone.
"""

from __future__ import annotations

from typing import Any

# The settings besides the length that move the figure, as the commands spell them.
MOVERS = ("--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization")


def fit(plan: Any) -> int:
    """Sequences of full length the plan's KV cache holds."""
    return int(plan.max_concurrency)


def setting(plan: Any, flag: str) -> str | None:
    """A plan's value of one of MOVERS, as its graph-mode command gives it (None: the engine's default)."""
    if flag == "--max-num-seqs":
        return str(plan.max_num_seqs)
    if flag == "--gpu-memory-utilization":
        return str(plan.memory_utilization)
    value = plan.command("graph").get(flag)
    return None if value is None else str(value)


def movers(plan: Any, plans: list[Any]) -> list[str]:
    """The settings that differ between `plan` and another of `plans` at its length whose figure differs."""
    rivals = [p for p in plans if p.max_model_len == plan.max_model_len and fit(p) != fit(plan)]
    return [f"`{flag} {setting(plan, flag)}`" if setting(plan, flag) else f"`{flag}` at its default" for flag in MOVERS
            if any(setting(p, flag) != setting(plan, flag) for p in rivals)]


def kv_holds(plan: Any, plans: list[Any], lang: str = "en") -> str:
    """"the KV cache holds N sequences of L tokens", with the settings that move N where another plan differs."""
    named = movers(plan, plans)
    if lang == "zh":
        text = f"KV cache 可容纳 {fit(plan):,} 条 {plan.max_model_len:,} token 的序列"
        return text + (f"（在 {'、'.join(named)} 下：它们占用的激活预留改变这个数）" if named else "")
    text = f"the KV cache holds {fit(plan):,} sequences of {plan.max_model_len:,} tokens"
    return text + (f" (at {' and '.join(named)}: the activation reserve they take moves this figure)" if named else "")
