"""The operator inventory the report shows: ModelFacts rows with the platform's caveats attached. Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.inspect.caveats import Caveat, platform_caveats
from llm_adapt.inspect.inventory import ModelFacts, inventory_rows
from llm_adapt.messages import Said


# inspect.json's forms of Operator and Caveat: typed dicts, so the file keeps its shape and its readers their access
@with_config(ConfigDict(extra="allow"))
class OperatorRecord(TypedDict):
    name: str
    value: Said
    evidence: Said
    caveats: list[Said]


@with_config(ConfigDict(extra="allow"))
class CaveatRecord(TypedDict):
    id: str
    operator: str
    platform: str
    text: Said
    check: Said
    source: Said


@dataclass(frozen=True)
class Operator:
    name: str  # e.g. "norm", "attention"
    value: str  # e.g. "RMSNorm with (1 + w): x / rms(x) * (1 + w) (eps 1e-06)"
    evidence: str = ""  # where the value was read
    caveats: list[str] = field(default_factory=list)  # value, evidence and caveats: Reasons where they have words

    def to_dict(self) -> dict:
        return asdict(self)


def operator_inventory(facts: ModelFacts, platform: str, cpu_flags: set[str] | None = None) -> list[Operator]:
    """Inventory rows in layer order; each caveat joins the row it is about (or gets a row of its own)."""
    caveats = platform_caveats(facts, platform, cpu_flags)
    ops = [Operator(r.name, r.value, r.evidence, [c.text for c in caveats if c.operator == r.name])
           for r in inventory_rows(facts)]
    names = {op.name for op in ops}
    ops += [Operator(c.operator, "-", c.source, [c.text])
            for c in caveats if c.operator not in names]
    return ops


def caveat_dicts(facts: ModelFacts, platform: str, cpu_flags: set[str] | None = None) -> list[CaveatRecord]:
    return [c.to_dict() for c in platform_caveats(facts, platform, cpu_flags)]


__all__ = ["Caveat", "CaveatRecord", "Operator", "OperatorRecord", "caveat_dicts", "operator_inventory"]
