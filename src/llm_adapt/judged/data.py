"""Everything the report shows, read from a run directory's JSON files and nothing else: each file as the
record its stage wrote (results.read_checked), one typed attribute per result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from llm_adapt import rundir
from llm_adapt.accuracy.result import AccuracyResult, EndpointAccuracyResult, LayersResult, RunnerReport
from llm_adapt.accuracy.setting_cause import SettingsResult
from llm_adapt.bench.hardware import HardwareResult
from llm_adapt.bench.modes import BenchResult
from llm_adapt.engines.same_model import other_served_name
from llm_adapt.engines.session import ServeResult
from llm_adapt.environment import EnvironmentResult
from llm_adapt.errors import UsageError
from llm_adapt.evaluation.stage import EvalResult
from llm_adapt.inspect.gates import AdaptationResult
from llm_adapt.inspect.stage import InspectResult
from llm_adapt.probes.context import ProbeRow, core_broken, core_features
from llm_adapt.probes.run import ProbesResult
from llm_adapt.results import RUN_FILES, StageResult, UnreadableResult, read_checked
from llm_adapt.run_status import RunStatus, StageRecord, StageStatus
from llm_adapt.tune.run import TuneResult

T = TypeVar("T", bound=StageResult)


class Result(Generic[T]):
    """A RunData attribute that is one result, typed as its record: RunData.parts under the record's kind."""

    def __init__(self, model: type[T]) -> None:
        self.model = model

    def __get__(self, run: RunData | None, owner: type | None = None) -> T | None:
        if run is None:
            return None
        found = run.parts.get(self.model.KIND)
        return found if isinstance(found, self.model) else None


def result_files() -> dict[str, str]:
    """Every result a run directory holds, kind -> file name, from the records that declare a FILE
    (results.RUN_FILES: the ones imported above and any other defined since). Pure."""
    return {kind: model.FILE for kind, model in RUN_FILES.items() if model.FILE}


@dataclass
class RunData:
    """A run's results by name (`parts`, the templates' `p`), each also a typed attribute (None where the run
    has no such file, or it could not be read: `unreadable` says why)."""

    dir: Path | None
    parts: dict[str, StageResult] = field(default_factory=dict)
    bench: dict[str, BenchResult] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    outside: dict[str, str] = field(default_factory=dict)  # result name -> its stage's status: a file not of this run

    def get(self, name: str) -> Any:
        return self.parts.get(name)

    # each result as its record, None where the run has no such file or it could not be read
    status = Result(RunStatus)
    environment = Result(EnvironmentResult)
    inspect = Result(InspectResult)
    accuracy = Result(AccuracyResult)
    serve = Result(ServeResult)
    probes = Result(ProbesResult)
    endpoint_accuracy = Result(EndpointAccuracyResult)
    tune = Result(TuneResult)
    hardware = Result(HardwareResult)
    eval = Result(EvalResult)
    layers = Result(LayersResult)
    adaptation = Result(AdaptationResult)
    settings = Result(SettingsResult)

    @property
    def main_target(self) -> RunnerReport | None:
        """The in-process target the verdict judges: the first one at its own weights (not an emulated
        quantization), else the first; None without accuracy.json or a target in it."""
        acc = self.accuracy
        if not acc or not acc.targets:
            return None
        return next((t for t in acc.targets if not t.quant), acc.targets[0])

    @property
    def quant_targets(self) -> list[RunnerReport]:
        """The emulated weight quantizations measured beside it (informational)."""
        return [t for t in self.accuracy.targets if t.quant] if self.accuracy else []

    @property
    def probe_rows(self) -> dict[str, ProbeRow]:
        """probes.json's rows by the feature's name ({} without probes)."""
        return {r["name"]: r for r in self.probes.rows} if self.probes else {}

    @property
    def core_features(self) -> tuple[str, ...]:
        """The features the engine must serve (probes/context.core_features: chat completion, or the completions
        API of a base model); () without probes."""
        rows = self.probe_rows
        return core_features(rows) if rows else ()

    @property
    def core_broken(self) -> list[str]:
        """The core features the engine failed ([] without probes)."""
        rows = self.probe_rows
        return core_broken(rows) if rows else []

    @property
    def other_served(self) -> dict[str, str] | None:
        """{served, gold} where the server answered as another checkpoint's id than the gold's
        (engines/same_model.py), else None."""
        ep = self.endpoint_accuracy
        if ep is None or not other_served_name(ep.model, ep.gold_model):
            return None
        return {"served": ep.model, "gold": ep.gold_model or "?"}

    @property
    def stages(self) -> dict[str, StageRecord]:
        """status.json's stages by name (none without a status.json)."""
        return self.status.stages if self.status else {}


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run directory")
    data = RunData(run_dir)
    for name, model in list(RUN_FILES.items()):
        _read(data, name, run_dir / str(model.FILE), data.parts, model)
    for mode in rundir.BENCH_MODES:
        _read(data, mode, run_dir / rundir.bench(mode), data.bench, BenchResult)
    if "bench" not in data.bench and (run_dir / rundir.bench()).exists():
        _read(data, "bench", run_dir / rundir.bench(), data.bench, BenchResult)
        if "bench" in data.bench and data.bench["bench"].mode == "sla":  # `bench --mode sla --out RUN_DIR`: beside the sweep
            data.bench.setdefault("sla", data.bench.pop("bench"))
    if "status" in data.unreadable:  # without it the stages' outcomes, and so the verdict, cannot be told
        raise UsageError(f"{run_dir / rundir.STATUS}: unreadable ({data.unreadable['status']}); this run's record is "
                         "damaged: run the model again into a new --out")
    if not data.inspect and not data.status:
        raise UsageError(f"{run_dir}: not a run directory (no inspect.json or status.json); run `llm-adapt run` first")
    _leave_out_stages_not_run(data)
    return data


# a stage in one of these did not measure in this run: a result file of its name is from outside the run
NOT_MEASURED = (StageStatus.PENDING, StageStatus.SKIPPED, StageStatus.NOT_APPLICABLE, StageStatus.NOT_RUN)


ALSO_WRITTEN_BY = {"bench": ("hardware",)}  # a stage's results named otherwise than the stage


def _leave_out_stages_not_run(data: RunData) -> None:
    """A result file whose stage status.json records as not run in this run (skipped, not applicable, not run)
    came from something else (an earlier run, a copied file): it is left out, so no figure of it is shown, and
    `outside` names it. A lone command's bench.json (`bench --out RUN_DIR`) is not a stage's and stays."""
    for name, record in data.stages.items():
        if record.get("status") not in NOT_MEASURED:
            continue
        for result in (name, *ALSO_WRITTEN_BY.get(name, ())):
            if result in data.parts:
                data.parts.pop(result)
                data.outside[result] = record["status"]
        if name == "bench":
            for mode in [m for m in data.bench if m in rundir.BENCH_MODES]:
                data.bench.pop(mode)
                data.outside[f"bench-{mode}"] = record["status"]


def _read(data: RunData, name: str, path: Path, into: dict, model: type[StageResult]) -> None:
    if not path.exists():
        return
    try:
        into[name] = read_checked(path, model)
    except UnreadableResult as exc:  # named in the report's notes, never misread
        data.unreadable[name] = str(exc)
