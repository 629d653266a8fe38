"""What a differential run (`run --settings`) showed of the deployment features vLLM-Ascend's documents list:
tensor parallelism, expert parallelism and graph mode (ACLGraph on the NPU, torch.compile on CPU), each
checked against the fp32 gold in the setting that turns it on. The feature rows keep their NPU status (no NPU
ran them); the check is their evidence, with the platform it ran on. Pure functions of settings.json.
"""

from __future__ import annotations

from typing import TypedDict

from llm_adapt.accuracy.setting_cause import SettingRow
from llm_adapt.inspect.ascend_features import FeatureRow
from llm_adapt.messages import Reason, reason

FEATURE_ROWS = {"graph": "ACLGraph", "ep": "EP"}  # feature -> the row it is the evidence of (tp: the model table)


class SettingCheck(TypedDict):
    """One feature's check (check_of): the setting that ran it, its verdict (None: the engine refused it)."""
    label: str
    status: str | None
    dir: str  # relative to the run directory ("." for the run's own setting)
    words: Reason  # the verdict with its figures, or the engine's refusal, as the export's tables say it


def setting_checks(rows: list[SettingRow], platform: str) -> dict[str, SettingCheck]:
    """Per feature (tp, ep, graph): the setting of the run that checked it (the one turning on the fewest
    other features), its verdict or the engine's refusal, its figures and folder, and the check in words.
    `rows`: settings.json's rows (none without a differential run)."""
    out: dict[str, SettingCheck] = {}
    for row in sorted(rows, key=lambda r: len(r.get("features") or [])):
        for feature in row.get("features") or []:
            out.setdefault(feature, check_of(row, platform))
    return out


def check_of(row: SettingRow, platform: str) -> SettingCheck:
    """One setting's check: {label, status, dir, words}; the words say the verdict with its figures, or that
    the engine refused the setting, with its own line. Pure."""
    where = row.get("dir") or "."
    if not row.get("status"):
        words = reason("ev_setting_refused", platform=platform.upper(), setting=setting_words(row),
                       error=row.get("error") or "-", dir=where)
    else:
        words = reason("ev_setting_checked", platform=platform.upper(), setting=setting_words(row),
                       status=row["status"], figures=figures(row), dir=where)
    return {"label": row["label"], "status": row.get("status"), "dir": where, "words": words}


def setting_words(row: SettingRow) -> Reason:
    """'at TP=2', 'in graph mode', 'at TP=2 in graph mode': the setting as the sentence says it. Pure."""
    graph = "graph" in (row.get("features") or [])
    parallel = row["label"].replace(" + graph", "").replace("graph", "").strip()
    if graph and parallel:
        return reason("ev_at_setting_graph", setting=parallel)
    return reason("ev_in_graph_mode") if graph else reason("ev_at_setting", setting=parallel or row["label"])


def figures(row: SettingRow) -> str:
    """'KL/floor 1.02 (allowed 1.3), same top-1 98.7%': the row's accuracy figures, those it has. Pure."""
    out = []
    if isinstance(row.get("kl_ratio"), (int, float)):
        allowed = f" (allowed {row['allowed']:.3g})" if isinstance(row.get("allowed"), (int, float)) else ""
        out.append(f"KL/floor {row['kl_ratio']:.3g}{allowed}")
    elif isinstance(row.get("kl"), (int, float)):
        out.append(f"KL {row['kl']:.2e}")
    if isinstance(row.get("same_top1"), (int, float)):
        out.append(f"same top-1 {row['same_top1']:.1%}")
    return ", ".join(out) or "-"


def with_checks(features: list[FeatureRow], checks: dict[str, SettingCheck]) -> list[FeatureRow]:
    """The feature rows, the ACLGraph and EP rows with their setting's check added as `setting_check`. Pure."""
    by_row = {row: checks[f] for f, row in FEATURE_ROWS.items() if f in checks}
    return [r | {"setting_check": by_row[r["feature"]]["words"]} if r.get("feature") in by_row else r for r in features]
