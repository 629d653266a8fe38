"""The accuracy baseline a reviewer holds the served score against: the published score of the same model and
size, gsm8k preferred, any other dataset named as the fallback it is (vLLM-Ascend's model-adapter skill, PR #9065's
rework). `export --baseline-file FILE` reads it from a JSON or YAML file:

    model: Qwen/Qwen3-8B          # the same model and size as the export's --model-id
    dataset: gsm8k                # gsm8k preferred; another is the fallback
    metric: accuracy
    score: 89.8                   # points, 0-100
    source: https://modelscope.cn/models/Qwen/Qwen3-8B   # where it was published
    fallback_reason: ...          # optional: why not gsm8k

Reading the file is the edge (read_baseline); the checks and the comparison with what the run measured are pure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_adapt.errors import UsageError

PREFERRED = "gsm8k"
REQUIRED = ("model", "dataset", "score", "source")
FORM = "a JSON or YAML file with model, dataset, metric, score (points, 0-100) and source"


@dataclass(frozen=True)
class PublishedBaseline:
    model: str
    dataset: str
    metric: str
    score: float  # points, 0-100
    source: str  # where it was published
    fallback_reason: str | None = None

    @property
    def fallback(self) -> bool:
        return self.dataset.lower() != PREFERRED

    def words(self) -> str:
        """One line for the report and a YAML comment. Pure."""
        fallback = "" if not self.fallback else (
            f" (a fallback: {PREFERRED} preferred" + (f"; {self.fallback_reason}" if self.fallback_reason else "")
            + ")")
        return f"{self.dataset} {self.metric} {self.score:g} points for {self.model}{fallback}, published at {self.source}"


@dataclass(frozen=True)
class BesideMeasured:
    """The published score beside the served model's on the same dataset, where this run measured it."""
    task: str
    served: float  # points
    difference: float  # served - published, points


def same_model(named: str, model_id: str) -> bool:
    """The baseline's model and the export's are the same model and size: their names (the part after the
    organization) match, case aside. Pure."""
    return named.strip().split("/")[-1].lower() == model_id.strip().split("/")[-1].lower()


def parse_baseline(data: Any, where: str, model_id: str) -> PublishedBaseline:
    """The baseline from a file's parsed content, or one line (UsageError) naming what is wrong and the fix."""
    if not isinstance(data, dict):
        raise UsageError(f"--baseline-file {where}: expected {FORM}")
    missing = [k for k in REQUIRED if data.get(k) in (None, "")]
    if missing:
        raise UsageError(f"--baseline-file {where}: missing {', '.join(missing)}; give {FORM}")
    score = data["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not 0 <= score <= 100:
        raise UsageError(f"--baseline-file {where}: score {score!r} is not a number of points from 0 to 100")
    if not same_model(str(data["model"]), model_id):
        raise UsageError(f"--baseline-file {where}: its model {data['model']!r} is not the exported {model_id!r}; "
                         "a baseline is the published score of the same model and size")
    reason = data.get("fallback_reason")
    return PublishedBaseline(model=str(data["model"]), dataset=str(data["dataset"]),
                             metric=str(data.get("metric") or "accuracy"), score=float(score),
                             source=str(data["source"]), fallback_reason=str(reason) if reason else None)


def read_baseline(path: Path, model_id: str) -> PublishedBaseline:
    """--baseline-file: JSON, or YAML (a .yaml or .yml file)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--baseline-file {path}: no such file; give {FORM}")
    text = path.read_text(errors="replace")
    try:
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"--baseline-file {path}: not readable ({str(exc).splitlines()[0]}); give {FORM}") from None
    return parse_baseline(data, str(path), model_id)


def beside_measured(baseline: PublishedBaseline, scores: list[dict[str, Any]]) -> BesideMeasured | None:
    """The served score of the baseline's dataset and metric, where the run's eval measured it (a score is a
    fraction there; the baseline is in points). None where it did not, or its score is not a finite number. Pure."""
    for s in scores:
        task, served = str(s.get("task", "")), s.get("served")
        if task.lower() == baseline.dataset.lower() and isinstance(served, (int, float)) and math.isfinite(served) and \
                str(s.get("metric", "")).split(",")[0] in (baseline.metric, "exact_match", "accuracy", "acc"):
            points = 100.0 * float(served)
            return BesideMeasured(task, round(points, 2), round(points - baseline.score, 2))
    return None
