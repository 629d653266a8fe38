"""Which deployment setting moved accuracy: one model served in several settings (eager, graph mode, tensor
parallel, expert parallel), each judged against the same gold and floor, and the setting that separates the
settings out of line from the clean ones named.

vLLM's own tests compare two settings (`compare_two_settings`: TP, PP, eager, chunked prefill; HF against
TP=2 on greedy tokens) and cannot say which side is wrong. Each setting here has its own verdict against
the fp32 gold, so the side that is wrong is known; what is left is which of the setting's features
(deploy_settings.py: tp, ep, graph) it owes that to.

The rule, on the settings that were judged (a setting the engine refused is listed apart, never judged):
- the first setting (the run's own deployment, eager on one rank as a rule) is the baseline;
- baseline out of line and every other setting too: not a setting at all ("everywhere": the weights, or
  the path every setting shares);
- baseline clean, the others clean: "clean";
- baseline clean, some out of line: the features every out-of-line setting has and no clean one has.
  One feature is the cause (tensor parallel, expert parallel, graph mode); none is the combination of two
  (out of line only where both are on); two or more are not separated ("ambiguous": add each alone);
- baseline out of line and some settings clean: the one feature every clean setting has and no out-of-line
  one has names the path at fault, the one that feature replaces ("cured": graph mode clean and eager out of
  line puts it on the eager path, an op vLLM runs as its own kernel there); none or several: not separated;
- the out-of-line setting's layer capture, where it found the MoE router flipping experts beyond rounding,
  names expert routing as the cause instead of the setting's feature: the experts chosen are wrong, and
  the setting only carried the fault there.

Pure: rows in, a record out. Tried on faults it was not tuned on: see tests/accuracy/test_setting_cause.py.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.deploy_settings import SettingRecord
from llm_adapt.messages import Said, reason
from llm_adapt.results import StageResult
from llm_adapt.status import JUDGED, OUT_OF_LINE, Status


@with_config(ConfigDict(extra="allow"))
class KvFigures(TypedDict, total=False):
    """The KV cache a setting's engine started with: predicted against logged, per rank."""
    predicted: int | None
    logged: int | None
    ranks: int | None
    space_by_rank: list[float] | None
    matches: bool | None


@with_config(ConfigDict(extra="allow"))
class ServedFigures(TypedDict, total=False):
    """A setting's accuracy columns (run/differential.served_figures)."""
    kl: float | None
    kl_ratio: float | None
    allowed: float | None
    same_top1: float | None
    greedy: dict[str, int] | None  # genuine divergences, prompts


@with_config(ConfigDict(extra="allow"))
class EngineFigures(TypedDict, total=False):
    """A setting's engine columns (run/differential.engine_figures)."""
    startup_seconds: float | None
    init_seconds: float | None
    compile_cache: Any  # as the engine's log gave it
    kv: KvFigures | None


@with_config(ConfigDict(extra="allow"))
class SettingRow(ServedFigures, EngineFigures, total=False):
    """One setting's row (run/differential.setting_row writes it): what setting_cause judges (label, features,
    status, located, routing) beside the table's figures."""
    setting: SettingRecord
    label: str
    features: list[str]  # of tp, ep, graph
    dir: str  # the setting's folder, relative to the run directory
    error: str | None  # the engine refused the setting: never judged
    status: Status | None  # PASS / WARN / FAIL, None where not judged
    located: Said | None  # located_reason
    routing: str | None  # "wrong" where the capture saw the router choose other experts


@with_config(ConfigDict(extra="allow"))
class Head(TypedDict):
    baseline: str | None
    not_run: list[str]


@with_config(ConfigDict(extra="allow"))
class SettingCause(Head):
    """setting_cause's answer: which setting moved accuracy, and the settings on each side."""
    status: str  # not judged, everywhere, unknown, clean, moved, ambiguous, cured
    out_of_line: list[str]
    clean: list[str]
    feature: str | None  # tp, ep, graph, or two joined by + (a combination)
    cause: str | None
    summary: Said


class SettingsResult(StageResult):
    """settings.json: a differential run's settings, each judged (run/differential.py writes it; the report reads
    it, which is why it lives here, below both)."""

    KIND: ClassVar[str] = "settings"
    FILE: ClassVar[str | None] = rundir.SETTINGS

    rows: list[SettingRow]  # one per setting, the run's own first (run/differential.setting_row)
    cause: SettingCause | None = None  # setting_cause() over the rows, once every setting ran
    seconds: dict[str, float] = {}  # per setting: plan, start, check and layers together

# feature -> the cause's key (messages/accuracy.py: sc_cause_*)
CAUSE_OF = {"tp": "tensor parallel", "ep": "expert parallel", "graph": "graph mode", "chunk": "chunked prefill",
            "noprefix": "no prefix cache", "serial": "one request at a time"}
ROUTING = "expert routing"
# feature -> the path out of line where only settings with that feature are clean (_cured)
WITHOUT = {"tp": "the one-rank path", "ep": "the path with every expert on each rank", "graph": "the eager path",
           "chunk": "whole prefills", "noprefix": "prefix-cache hits", "serial": "batched requests"}


def setting_cause(rows: list[SettingRow]) -> SettingCause:
    """rows: one per setting, the baseline first: {"label", "features": [tp|ep|graph], "status": PASS / WARN /
    FAIL or None (not judged), "located": a Reason or None, "routing": "wrong" where the capture saw the
    router choose other experts, or weigh them, beyond rounding (routing.routing_verdict)}. Pure."""
    judged = [r for r in rows if r.get("status") in JUDGED]
    not_run = [r["label"] for r in rows if r.get("status") not in JUDGED]
    base = rows[0] if rows else None
    head = Head(baseline=base["label"] if base else None, not_run=not_run)
    if not base or base.get("status") not in JUDGED or len(judged) < 2:
        return _result("not judged", head, [], [], None, None, reason("sc_not_judged", not_run=", ".join(not_run)))
    bad = [r for r in judged if r["status"] in OUT_OF_LINE]
    good = [r for r in judged if r["status"] == Status.PASS]
    if base["status"] in OUT_OF_LINE:
        if good and (cured := _cured(head, bad, good)):
            return cured
        key = "sc_everywhere" if not good else "sc_baseline_out"
        return _result("everywhere" if not good else "unknown", head, bad, good, None, None,
                       reason(key, baseline=base["label"], status=base["status"], clean=_labels(good)))
    if not bad:
        return _result("clean", head, bad, good, None, None, reason("sc_clean", settings=_labels(good)))
    return _moved(head, bad, good)


def _moved(head: Head, bad: list[SettingRow], good: list[SettingRow]) -> SettingCause:
    """Baseline clean, some settings out of line: the feature that separates them."""
    common = set.intersection(*(set(r["features"]) for r in bad))
    separating = common - set().union(*(set(r["features"]) for r in good))
    worst, where = _out_of_line(bad)
    if len(separating) == 1:
        feature = next(iter(separating))
        cause = ROUTING if any(r.get("routing") == "wrong" for r in bad) else CAUSE_OF[feature]
    elif not separating and len(common) >= 2 and all(len(r["features"]) >= 2 for r in bad):
        feature, cause = "+".join(sorted(common)), "combination"
    else:
        feature, cause = None, None
    key = "sc_moved" if cause else "sc_ambiguous"
    summary = reason(key, clean=_labels(good), status=worst, settings=_labels(bad),
                     where=reason("sc_where", where=where) if where else "",
                     cause=reason(f"sc_cause_{_cause_key(cause)}", features=_feature_words(common)) if cause else "",
                     candidates=_feature_words(separating or common))
    return _result("moved" if cause else "ambiguous", head, bad, good, feature, cause, summary)


def _cured(head: Head, bad: list[SettingRow], good: list[SettingRow]) -> SettingCause | None:
    """Baseline out of line, some settings clean: the one feature every clean setting has and no out-of-line one
    has. The fault then lives on the path that feature replaces (graph mode clean, eager FAIL: an op eager runs as
    vLLM's own kernel and graph mode compiles from torch code). None where no one feature separates them."""
    cures = set.intersection(*(set(r["features"]) for r in good)) - set().union(*(set(r["features"]) for r in bad))
    if len(cures) != 1:
        return None
    feature = next(iter(cures))
    worst, where = _out_of_line(bad)
    summary = reason("sc_cured", clean=_labels(good), status=worst, settings=_labels(bad),
                     where=reason("sc_where", where=where) if where else "", feature=reason(f"sc_feature_{feature}"),
                     cause=reason(f"sc_cause_without_{feature}"))
    return _result("cured", head, bad, good, feature, WITHOUT[feature], summary)


def _out_of_line(bad: list[SettingRow]) -> tuple[str, Any]:
    """The out-of-line settings' one status (FAIL where they differ) and the first place a capture located."""
    worst = bad[0]["status"] if all(r["status"] == bad[0]["status"] for r in bad) else Status.FAIL
    return worst, next((r["located"] for r in bad if r.get("located")), None)


def _cause_key(cause: str) -> str:
    return {**{words: feature for feature, words in CAUSE_OF.items()}, ROUTING: "routing",
            "combination": "combination"}[cause]


def _feature_words(features) -> str:
    return " + ".join(CAUSE_OF[f] for f in sorted(features)) or "-"


def _labels(rows: list[SettingRow]) -> str:
    return ", ".join(r["label"] for r in rows) or "-"


def _result(status: str, head: Head, bad, good, feature, cause, summary) -> SettingCause:
    return SettingCause(status=status, **head, out_of_line=[r["label"] for r in bad], clean=[r["label"] for r in good],
                        feature=feature, cause=cause, summary=summary)


def located_reason(where: dict[str, Any] | None):
    """Where the capture placed the excess, in words: the router where it chose other experts, else the
    part, else the layer. Pure."""
    if not where:
        return None
    routing = where.get("routing") or {}
    if routing.get("verdict") == "wrong":
        if routing.get("genuine"):
            return reason("sc_located_router", layer=where["name"], flipped=routing["genuine"],
                          tokens=routing["tokens"], near=routing["near_tie"])
        return reason("sc_located_router_weights", layer=where["name"],
                      error=f"{routing.get('weight_error_max') or 0:.3g}")
    part = where.get("part")
    row = next((p for p in where.get("parts") or [] if p.get("name") == part), None)
    if part in ("attention", "MLP") and row and isinstance(row.get("rel_l2"), (int, float)):
        # the part's own error, on the engine's own input to it: a doubled output is off by 100% of its size
        return reason(f"sc_located_{part}", layer=where["name"], rel=f"{row['rel_l2']:.0%}",
                      ratio=_figure(row.get("ratio")))
    return reason("sc_located", layer=where["name"], ratio=_figure(where.get("ratio")))


def _figure(value) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else "?"
