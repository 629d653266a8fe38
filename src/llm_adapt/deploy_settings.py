"""Deployment settings a differential run serves in turn (`run MODEL --settings eager,graph,tp2,ep2`): each
a way vLLM runs the same weights (graph mode or eager, tensor parallel, expert parallel) or schedules the same
requests (a small chunked-prefill budget, the prefix cache off, one request at a time), written in one short
word so a list of them fits one option. Pure: parsing and naming; run/differential.py starts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only


@with_config(ConfigDict(extra="allow"))
class SettingRecord(TypedDict):
    """A setting as settings.json writes it (Setting.to_dict)."""
    name: str
    label: str
    tp: int
    ep: bool
    graph: bool
    features: list[str]
    chunk: NotRequired[int]  # absent in a settings.json written before the scheduler's settings
    prefix_cache: NotRequired[bool]
    serial: NotRequired[bool]

# What a setting turns on, each a class of accuracy bug vLLM-Ascend has had in that setting alone:
# a reduction applied twice or a partial output normalised before it (tensor parallel), tokens routed to
# the wrong rank's experts (expert parallel), a compiled or captured graph (graph mode).
TP, EP, GRAPH = "tp", "ep", "graph"
# And the scheduler's, each a class of bug that hits only some requests (vLLM-Ascend #11508: state counted twice
# when a prompt is prefilled in several chunks; a kernel wrong only for batched or prefix-cached requests):
# a prefill budget of N tokens per step (a prompt longer than N is prefilled in chunks), the prefix cache off (no
# request reuses another's cached blocks), one request at a time (never batched with another).
CHUNK, NOPREFIX, SERIAL = "chunk", "noprefix", "serial"
SMALLEST_CHUNK = 16
EXAMPLE = "eager,graph,tp2,ep2"
_PARALLEL = re.compile(r"^(tp|ep)(\d+)$")
_CHUNK = re.compile(r"^chunk(\d+)$")


@dataclass(frozen=True)
class Setting:
    """One deployment setting: `tp` tensor-parallel ranks, expert parallelism over them, graph mode."""

    name: str  # as the user wrote it, normalised: "eager", "graph", "tp2", "ep2", "tp2+graph", "chunk64+serial"
    tp: int = 1
    ep: bool = False
    graph: bool = False
    chunk: int = 0  # --max-num-batched-tokens: the prefill budget per step (0: the plan's)
    prefix_cache: bool = True  # False: --no-enable-prefix-caching
    serial: bool = False  # the accuracy requests sent one at a time instead of several in flight

    @property
    def features(self) -> frozenset[str]:
        """What this setting turns on beyond eager on one rank with the plan's scheduling (TP, EP, GRAPH, CHUNK,
        NOPREFIX, SERIAL)."""
        return frozenset(f for f, on in ((TP, self.tp > 1), (EP, self.ep), (GRAPH, self.graph), (CHUNK, self.chunk > 0),
                                         (NOPREFIX, not self.prefix_cache), (SERIAL, self.serial)) if on)

    @property
    def mode(self) -> str:
        return "graph" if self.graph else "eager"

    @property
    def label(self) -> str:
        """How the report names it, in either language: 'eager', 'graph', 'TP=2', 'EP=2', 'TP=2 + graph',
        'chunk=64 + prefix-cache=off + serial'."""
        parts = [f"EP={self.tp}" if self.ep else f"TP={self.tp}"] if self.tp > 1 else []
        if self.graph:
            parts.append("graph")
        parts += _scheduling_words(self.chunk, self.prefix_cache, self.serial, label=True)
        return " + ".join(parts) or "eager"

    def to_dict(self) -> SettingRecord:
        return {"name": self.name, "label": self.label, "tp": self.tp, "ep": self.ep, "graph": self.graph,
                "features": sorted(self.features), "chunk": self.chunk, "prefix_cache": self.prefix_cache,
                "serial": self.serial}


def _scheduling_words(chunk: int, prefix_cache: bool, serial: bool, *, label: bool) -> list[str]:
    """The scheduling part of a setting's name ("chunk64", "noprefix", "serial") or label."""
    if label:  # as "TP=2" is: the same in either language
        return ([f"chunk={chunk}"] if chunk else []) + ([] if prefix_cache else ["prefix-cache=off"]) + (
            ["serial"] if serial else [])
    return ([f"chunk{chunk}"] if chunk else []) + ([] if prefix_cache else [NOPREFIX]) + ([SERIAL] if serial else [])


def parse_setting(word: str) -> Setting:
    """'eager', 'graph', 'tp2', 'ep2' or a '+' of them ('tp2+graph'); ValueError naming the expected form.
    'epN' is expert parallelism over N tensor-parallel ranks (vLLM's EP size is TP x DP). Pure."""
    tp, ep, graph, eager, chunk, prefix_cache, serial = 1, False, False, False, 0, True, False
    parts = [p.strip().lower() for p in word.split("+") if p.strip()]
    if not parts:
        raise ValueError(f"an empty setting; expected e.g. {EXAMPLE}")
    for part in parts:
        found, budget = _PARALLEL.match(part), _CHUNK.match(part)
        if part == "eager":
            eager = True
        elif part == "graph":
            graph = True
        elif found and int(found[2]) >= 2 and tp == 1:
            tp, ep = int(found[2]), found[1] == "ep"
        elif budget and int(budget[1]) >= SMALLEST_CHUNK and not chunk:
            chunk = int(budget[1])
        elif part == NOPREFIX:
            prefix_cache = False
        elif part == SERIAL:
            serial = True
        else:
            raise ValueError(f"{word!r}: expected eager, graph, tpN or epN (N >= 2), chunkN (N >= {SMALLEST_CHUNK}), "
                             f"noprefix or serial, or several joined by '+', e.g. tp2+graph")
    if eager and graph:
        raise ValueError(f"{word!r}: eager and graph exclude each other")
    order = ([f"{'ep' if ep else 'tp'}{tp}"] if tp > 1 else []) + (["graph"] if graph else []) + _scheduling_words(
        chunk, prefix_cache, serial, label=False)
    return Setting("+".join(order) or "eager", tp, ep, graph, chunk, prefix_cache, serial)


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
    prefix_cache = not command.has("--no-enable-prefix-caching")
    name = "+".join(([f"{'ep' if ep else 'tp'}{tp}"] if tp > 1 else []) + (["graph"] if graph else [])
                    + _scheduling_words(0, prefix_cache, False, label=False)) or "eager"
    return Setting(name, tp, bool(ep and tp > 1), graph, prefix_cache=prefix_cache)
