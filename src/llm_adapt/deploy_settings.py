"""Deployment settings a differential run serves in turn (`run MODEL --settings eager,graph,tp2,ep2`): each
a way vLLM runs the same weights (graph mode or eager, tensor parallel, expert parallel), written in one
short word so a list of them fits one option. Pure: parsing and naming; run/differential.py starts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only


@with_config(ConfigDict(extra="allow"))
class SettingRecord(TypedDict):
    """A setting as settings.json writes it (Setting.to_dict)."""
    name: str
    label: str
    tp: int
    ep: bool
    graph: bool
    features: list[str]

# What a setting turns on, each a class of accuracy bug vLLM-Ascend has had in that setting alone:
# a reduction applied twice or a partial output normalised before it (tensor parallel), tokens routed to
# the wrong rank's experts (expert parallel), a compiled or captured graph (graph mode).
TP, EP, GRAPH = "tp", "ep", "graph"
EXAMPLE = "eager,graph,tp2,ep2"
_PARALLEL = re.compile(r"^(tp|ep)(\d+)$")


@dataclass(frozen=True)
class Setting:
    """One deployment setting: `tp` tensor-parallel ranks, expert parallelism over them, graph mode."""

    name: str  # as the user wrote it, normalised: "eager", "graph", "tp2", "ep2", "tp2+graph"
    tp: int = 1
    ep: bool = False
    graph: bool = False

    @property
    def features(self) -> frozenset[str]:
        """What this setting turns on beyond eager on one rank (TP, EP, GRAPH)."""
        return frozenset(f for f, on in ((TP, self.tp > 1), (EP, self.ep), (GRAPH, self.graph)) if on)

    @property
    def mode(self) -> str:
        return "graph" if self.graph else "eager"

    @property
    def label(self) -> str:
        """How the report names it, in either language: 'eager', 'graph', 'TP=2', 'EP=2', 'TP=2 + graph'."""
        parts = [f"EP={self.tp}" if self.ep else f"TP={self.tp}"] if self.tp > 1 else []
        if self.graph:
            parts.append("graph")
        return " + ".join(parts) or "eager"

    def to_dict(self) -> SettingRecord:
        return {"name": self.name, "label": self.label, "tp": self.tp, "ep": self.ep, "graph": self.graph,
                "features": sorted(self.features)}


def parse_setting(word: str) -> Setting:
    """'eager', 'graph', 'tp2', 'ep2' or a '+' of them ('tp2+graph'); ValueError naming the expected form.
    'epN' is expert parallelism over N tensor-parallel ranks (vLLM's EP size is TP x DP). Pure."""
    tp, ep, graph, eager = 1, False, False, False
    parts = [p.strip().lower() for p in word.split("+") if p.strip()]
    if not parts:
        raise ValueError(f"an empty setting; expected e.g. {EXAMPLE}")
    for part in parts:
        found = _PARALLEL.match(part)
        if part == "eager":
            eager = True
        elif part == "graph":
            graph = True
        elif found and int(found[2]) >= 2 and tp == 1:
            tp, ep = int(found[2]), found[1] == "ep"
        else:
            raise ValueError(f"{word!r}: expected eager, graph, tpN or epN (N >= 2), or two joined by '+', e.g. "
                             f"tp2+graph")
    if eager and graph:
        raise ValueError(f"{word!r}: eager and graph exclude each other")
    order = ([f"{'ep' if ep else 'tp'}{tp}"] if tp > 1 else []) + (["graph"] if graph else [])
    return Setting("+".join(order) or "eager", tp, ep, graph)


def parse_settings(text: str) -> tuple[Setting, ...]:
    """A comma-separated list of settings, the first the run's own deployment, each once, at least two
    (one setting is a plain run). Pure."""
    settings = tuple(parse_setting(word) for word in text.split(","))
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise ValueError(f"{text!r}: a setting is named twice")
    if len(settings) < 2:
        raise ValueError(f"{text!r}: a differential run compares two settings or more, e.g. {EXAMPLE}")
    return settings


def served_setting(argv: list[str] | None) -> Setting | None:
    """The setting a vLLM command line (serve.json's argv) served in, or None without one. Pure."""
    if not argv:
        return None
    from llm_adapt.command import Command

    command = Command.from_argv(list(argv))
    tp = int(command.get("--tensor-parallel-size") or 1)
    ep, graph = command.has("--enable-expert-parallel"), not command.has("--enforce-eager")
    name = "+".join(([f"{'ep' if ep else 'tp'}{tp}"] if tp > 1 else []) + (["graph"] if graph else [])) or "eager"
    return Setting(name, tp, bool(ep and tp > 1), graph)
