"""Published baselines in vLLM-Ascend's tests/e2e/models/configs format:

    model_name: "LLM-Research/Llama-3.2-3B-Instruct"
    tasks:
    - name: "gsm8k"
      metrics:
      - name: "exact_match,strict-match"
        value: 0.71
    num_fewshot: 5
    rtol: 0.05            # optional; their CI's default is 0.05
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from llm_adapt.errors import UsageError
from llm_adapt.evaluation.stats import DEFAULT_RTOL


@dataclass(frozen=True)
class Baseline:
    source: str
    model_name: str
    rtol: float = DEFAULT_RTOL
    num_fewshot: int | None = None
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # task -> 'metric,filter' -> value


def parse_baseline(data: object, source: str) -> Baseline:
    """Validate the YAML's content; every problem is one line naming the file and the field."""
    def bad(what: str) -> UsageError:
        return UsageError(f"--baseline-file {source}: {what}; see vLLM-Ascend's tests/e2e/models/configs for the format")

    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list) or not data["tasks"]:
        raise bad("needs a non-empty 'tasks' list")
    values: dict[str, dict[str, float]] = {}
    for task in data["tasks"]:
        if not isinstance(task, dict) or not isinstance(task.get("name"), str) or not isinstance(task.get("metrics"), list):
            raise bad("each task needs 'name' and a 'metrics' list")
        for metric in task["metrics"]:
            if not isinstance(metric, dict) or not isinstance(metric.get("name"), str) \
                    or not isinstance(metric.get("value"), (int, float)) or isinstance(metric.get("value"), bool):
                raise bad(f"task {task['name']}: each metric needs 'name' and a numeric 'value'")
            values.setdefault(task["name"], {})[metric["name"]] = float(metric["value"])
    rtol = data.get("rtol", DEFAULT_RTOL)
    if not isinstance(rtol, (int, float)) or isinstance(rtol, bool) or not 0 <= rtol < 1:
        raise bad(f"rtol {rtol!r} is not a number in [0, 1)")
    shots = data.get("num_fewshot")
    if shots is not None and (not isinstance(shots, int) or shots < 0):
        raise bad(f"num_fewshot {shots!r} is not a non-negative integer")
    return Baseline(source, str(data.get("model_name", "")), float(rtol), shots, values)


def load_baseline(path: Path) -> Baseline:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"--baseline-file {path}: no such file") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"--baseline-file {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    return parse_baseline(data, str(path))
