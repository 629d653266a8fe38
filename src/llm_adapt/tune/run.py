"""`llm-adapt tune`: each trial a fresh server and an identical short benchmark, repeated; the
winner only when it beats the engine's defaults outside the noise."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from typing_extensions import NotRequired, TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.accuracy.result import ModeFigures
from llm_adapt.bench.stats import Metrics
from llm_adapt.inspect.plan import render_command
from llm_adapt.platforms import get_platform
from llm_adapt.results import StageResult
from llm_adapt.status import Status
from llm_adapt.tune import stats
from llm_adapt.tune.grid import SkippedTrial, Trial, apply_trial, build_grid, cut_to_budget

OBJECTIVES = {"throughput": ("output_throughput", True), "latency": ("median_e2el_ms", False),
              "goodput": ("request_goodput", True)}


@dataclass(frozen=True)
class TuneOptions:
    objective: str = "throughput"
    slo: dict[str, float] | None = None
    budget_minutes: float = 20.0
    max_trials: int | None = None  # settings tried besides the baseline, at most
    repeats: int = 2
    num_prompts: int = 8
    input_len: int = 64
    output_len: int = 32
    startup_timeout_s: float = 900.0
    accuracy_check: bool = True  # each trial's server against the fp32 gold (quick suite); needs real weights


class TuneSettings(TypedDict):
    """What tune.json's trials ran under (TuneOptions), and its accuracy check in words (or "off")."""
    budget_minutes: int | float
    max_trials: int | None
    repeats: int
    num_prompts: int
    input_len: int
    output_len: int
    slo: dict[str, float] | None
    accuracy_check: NotRequired[str]


class TrialMetrics(TypedDict, total=False):
    """What a trial is compared on (METRICS), each a stats.summary over the trial's runs."""
    output_throughput: stats.Summary
    median_ttft_ms: stats.Summary
    p99_ttft_ms: stats.Summary
    median_tpot_ms: stats.Summary
    p99_tpot_ms: stats.Summary
    median_e2el_ms: stats.Summary
    request_goodput: stats.Summary


class Gain(TypedDict, total=False):
    """A trial's speed-up over the baseline (above 1 is better whichever way the metric points), its
    uncertainty, and the corrected test (recommend)."""
    gain: float | None
    gain_uncertainty: float | None
    p_value: float | None
    significant: bool


class TrialRow(TrialMetrics, total=False):
    """One trial in tune.json: its settings, then what it measured (TrialMetrics) or why it failed;
    vs_baseline its gain and test against the baseline (recommend)."""
    name: str
    knob: str
    graph: bool
    argv: list[str]
    env: dict[str, str]
    unset_env: list[str]
    startup_s: float
    accuracy: ModeFigures | None  # the accuracy check's figures (and graph mode's cause, name_graph_causes)
    accuracy_seconds: float
    status: str  # done | failed
    reason: str  # a failed trial's first line
    runs: list[Metrics]  # each repeat's metrics
    bench_seconds_each: float
    merged_into_baseline: bool  # the baseline's second session, counted in the first's figures
    vs_baseline: Gain


class Recommendation(Gain, total=False):
    """The trial to deploy with (the baseline unless one beat it outside the noise), its command, the
    test that chose it, and its accuracy check."""
    name: str
    metric: str
    argv: list[str]
    env: dict[str, str]
    unset_env: list[str]
    command: str
    trials_tested: int
    alpha: float
    test: str
    note: str
    accuracy: ModeFigures | None
    accuracy_verified: bool
    rejected_for_accuracy: list[str]


class TuneResult(StageResult):
    KIND: ClassVar[str] = "tune"
    FILE: ClassVar[str | None] = rundir.TUNE

    platform: str
    objective: str
    metric: str
    settings: TuneSettings
    trials: list[TrialRow]
    skipped: list[SkippedTrial]
    recommendation: Recommendation | None = None


def run_tune(inspect_result, opts: TuneOptions, out: Path, *, cores: int = 1, devices: int = 1,
             progress: Callable[[str, int, int], None] | None = None, log: Callable[[str], None] = print) -> TuneResult:
    plan = inspect_result.plan
    platform = plan.platform
    metric, higher = OBJECTIVES[opts.objective]
    grid = build_grid(plan, platform, cores, devices)
    result = TuneResult(platform=platform, objective=opts.objective, metric=metric,
                        settings={"budget_minutes": opts.budget_minutes, "max_trials": opts.max_trials, "repeats": opts.repeats,
                                  "num_prompts": opts.num_prompts, "input_len": opts.input_len,
                                  "output_len": opts.output_len, "slo": opts.slo}, trials=[], skipped=[])
    # The gold of the accuracy check is measured once, before the budget's clock starts: the budget is
    # for trials (each trial's own check is counted in its cost below).
    checker = AccuracyCheck.prepare(inspect_result, progress) if opts.accuracy_check else None
    result.settings["accuracy_check"] = checker.describe() if checker else "off"
    started = time.monotonic()
    baseline = _trial(grid[0], inspect_result, opts, out, progress, log, checker=checker)
    result.trials.append(baseline)
    result.save(out / rundir.TUNE)
    startup = dict(get_platform(platform).startup_prior_s)  # until the baseline's start-up is measured
    run_s = (baseline.get("bench_seconds_each") or 30.0) + (baseline.get("accuracy_seconds") or 0.0) / max(opts.repeats, 1)
    if baseline.get("startup_s"):
        scale = baseline["startup_s"] / startup["eager"]
        startup = {k: v * scale for k, v in startup.items()}
    # The baseline runs again at the end, so drift over the session shows up as baseline spread.
    closing = _cost(grid[0], startup, run_s, opts)
    remaining = opts.budget_minutes * 60 - (time.monotonic() - started) - closing
    chosen, result.skipped = cut_to_budget(grid, remaining + closing, startup, run_s, opts.repeats, opts.max_trials)
    for trial in chosen[1:]:
        result.trials.append(_trial(trial, inspect_result, opts, out, progress, log, checker=checker))
        result.save(out / rundir.TUNE)
    if len(chosen) > 1 and baseline.get("status") == "done":
        again = _trial(grid[0], inspect_result, opts, out, progress, log, suffix=" (again, at the end)", checker=checker)
        result.trials.append(again)
        if again.get("status") == "done":
            _merge_runs(baseline, again)
    name_graph_causes(result.trials)
    result.recommendation = recommend(result.trials, metric, higher)
    result.save(out / rundir.TUNE)
    return result


def _cost(trial: Trial, startup, run_s, opts) -> float:
    from llm_adapt.tune.grid import trial_cost_s

    return trial_cost_s(trial, startup, run_s, opts.repeats)


METRICS = tuple(TrialMetrics.__annotations__)  # in the order tune.json and its table give them


def _merge_runs(baseline: TrialRow, again: TrialRow) -> None:
    """The baseline's statistics over both of its sessions (start and end)."""
    baseline["runs"] = baseline["runs"] + again["runs"]
    _summarize(baseline)
    again["merged_into_baseline"] = True


def _summarize(row: TrialRow) -> None:
    for key in METRICS:
        values = [m[key] for m in row["runs"] if m.get(key) is not None and not math.isnan(m[key])]
        row[key] = stats.summary(values)


@dataclass
class AccuracyCheck:
    """A short endpoint accuracy check run on every trial's server: graph modes and decode-only
    cudagraph settings have broken accuracy before, so a faster setting is recommended only when
    its served answers still match the fp32 gold as well as the noise floor allows."""

    source: Any
    options: Any
    floor: Any
    gold: Any
    floor_data: Any

    @classmethod
    def prepare(cls, inspect_result, progress) -> "AccuracyCheck | None":
        from llm_adapt.accuracy.measure import measure_floor
        from llm_adapt.accuracy.options import compare_options, served_floor
        from llm_adapt.accuracy.reference import measure_reference
        from llm_adapt.models.source import resolve_model
        from llm_adapt.models.tokenizer import load_tokenizer
        from llm_adapt.prompts import load_prompts

        source = resolve_model(inspect_result.model["path"])
        if not source.has_weights or not source.has_tokenizer:
            return None  # config-only models (dummy weights) have nothing to judge
        progress = progress or (lambda *a: None)
        options = compare_options(prompts="quick", max_new_tokens=16, ppl_window=128)
        tokenizer = load_tokenizer(source.path)
        gold = measure_reference(source, tokenizer, load_prompts("quick"), options, progress)
        floor = served_floor(options.reference, inspect_result.plan.dtype)
        floor_data = measure_floor(floor, source, gold, tokenizer, options, progress).data if floor else None
        return cls(source, options, floor, gold, floor_data)

    def describe(self) -> str:
        return f"quick suite, {self.options.max_new_tokens} new tokens, against {self.options.reference.label}" + (
            f" with the {self.floor.label} floor" if self.floor else "")

    def run(self, endpoint, out: Path) -> ModeFigures:
        """The verdict, its first reasons and the served KL figures (what a mode comparison reads)."""
        from llm_adapt.accuracy.diagnosis import mode_figures
        from llm_adapt.accuracy.endpoint import compare_endpoint

        result = compare_endpoint(self.source, endpoint, self.options, self.floor, out, gold=self.gold,
                                  floor_data=self.floor_data)
        return mode_figures(result.verdict, result.sections)


def name_graph_causes(trials: list[TrialRow]) -> None:
    """Each graph-mode trial whose accuracy check is out of line while the eager baseline's passed gets
    graph mode as its likely cause (accuracy/diagnosis.py), with both figures. Pure but for the rows."""
    from llm_adapt.accuracy.diagnosis import graph_cause

    if not trials or trials[0].get("graph"):
        return
    eager = trials[0].get("accuracy")
    for trial in trials[1:]:
        if trial.get("graph") and trial.get("accuracy") and (cause := graph_cause(trial["accuracy"], eager)):
            trial["accuracy"]["cause"] = cause


def _trial(trial: Trial, inspect_result, opts: TuneOptions, out: Path, progress, log, suffix: str = "",
           checker: AccuracyCheck | None = None) -> TrialRow:
    """Start a server with the trial's settings, benchmark it `repeats` times, stop it."""
    from llm_adapt.engines.server import LaunchSpec, ManagedServer, free_port
    from llm_adapt.engines.vllm import launched

    plan = inspect_result.plan
    command, env = apply_trial(plan.command(), plan.env, trial)
    row: TrialRow = {"name": trial.name + suffix, "knob": trial.knob, "graph": trial.graph,
                     "argv": command.argv(), "env": env, "unset_env": list(trial.unset_env)}
    port = free_port()
    launch = launched(command).with_option("--port", str(port))
    spec = LaunchSpec(engine="vllm", argv=launch.argv(), env=env, host="127.0.0.1", port=port,
                      served_model=command.get("--served-model-name"), ready_paths=("/health", "/v1/models"),
                      startup_timeout_s=opts.startup_timeout_s, unset_env=trial.unset_env)
    log(f"tune: {trial.name} ...")
    try:
        with ManagedServer(spec, out / f"tune-{_slug(trial.name + suffix)}.log") as server:
            row["startup_s"] = server.startup_seconds
            runs = [_bench_once(server, inspect_result, opts, out, f"{trial.name}{suffix}", i, progress)
                    for i in range(opts.repeats)]
            if checker is not None:
                check_started = time.monotonic()
                row["accuracy"] = checker.run(server.endpoint, out / "tune-accuracy" / _slug(trial.name + suffix))
                row["accuracy_seconds"] = round(time.monotonic() - check_started, 1)
    except Exception as exc:  # a failed trial (OOM, crash, timeout) is a row, not the end of the run
        row.update(status="failed", reason=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        log(f"tune: {trial.name}: failed")
        return row
    row.update(status="done", runs=[r["metrics"] for r in runs], bench_seconds_each=sum(r["seconds"] for r in runs) / len(runs))
    _summarize(row)
    return row


def _bench_once(server, inspect_result, opts, out, label: str, index, progress) -> dict:
    from llm_adapt.bench.modes import BenchOptions, Workload, run_bench
    from llm_adapt.models.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(inspect_result.model["path"])
    bench_opts = BenchOptions(mode="throughput", num_prompts=opts.num_prompts, input_len=opts.input_len,
                              output_len=opts.output_len, warmup=1 if index == 0 else 0, slo=opts.slo, seed=index)
    started = time.monotonic()
    result = run_bench(server.endpoint, server.spec.served_model, Workload(tokenizer, as_ids=True), bench_opts, out,
                       pid=server.proc.pid, progress=progress, name=f"tune-{_slug(label)}-{index}.json")
    return {"metrics": result.runs[0]["metrics"], "seconds": time.monotonic() - started}


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:60]


def recommend(trials: list[TrialRow], metric: str, higher: bool, alpha: float = stats.ALPHA) -> Recommendation | None:
    """The best trial among those that beat the baseline after correcting for the number of trials
    (one-sided t-tests with the run-to-run noise pooled over all trials, Holm at family-wise alpha); else the baseline, saying so."""
    done = [t for t in trials if t.get("status") == "done" and t.get(metric, {}).get("n") and not t.get("merged_into_baseline")]
    if not done:
        return None
    baseline = trials[0] if trials[0].get("status") == "done" and trials[0] in done else None
    if baseline is None:
        best = max(done, key=lambda t: t[metric]["mean"] * (1 if higher else -1))
        return _recommendation(best, metric) | {
            "significant": False, "note": "the engine-default baseline failed; nothing to compare against"}
    rivals = [t for t in done if t is not baseline]
    pvalues = stats.pooled_p_values([t[metric] for t in rivals], baseline[metric], higher)
    wins = stats.holm(pvalues, alpha)
    for trial, p, won in zip(rivals, pvalues, wins):  # each knob's own measured gain, for the report
        trial["vs_baseline"] = _gain(trial[metric], baseline[metric], higher) | {"p_value": p, "significant": won}
    faster = [t for t, won in zip(rivals, wins) if won]
    winners = [t for t in faster if accuracy_ok(t)]  # faster but inaccurate is never recommended
    rejected = [t["name"] for t in faster if not accuracy_ok(t)]
    best = max(winners, key=lambda t: t[metric]["mean"] * (1 if higher else -1)) if winners else baseline
    out = _recommendation(best, metric)
    out.update(**_gain(best[metric], baseline[metric], higher), significant=bool(winners),
               trials_tested=len(rivals), alpha=alpha,
               p_value=pvalues[rivals.index(best)] if winners else (min(pvalues) if pvalues else None),
               test="one-sided t-test of ln(trial / baseline) per trial, noise pooled over all trials, "
                    "Holm-corrected over the trials",
               note=f"beats the engine's defaults after correcting for {len(rivals)} trials (Holm, alpha {alpha})"
               if winners else "no setting beats the engine's defaults once corrected for the number of trials; "
                               "keep the defaults",
               accuracy=best.get("accuracy"), accuracy_verified=best.get("accuracy", {}).get("status") in (Status.PASS, Status.WARN),
               rejected_for_accuracy=rejected)
    return out


def _gain(trial: stats.Summary, baseline: stats.Summary, higher: bool) -> Gain:
    """Speed-up over the baseline (>1 is better whichever way the metric points), with its uncertainty."""
    ratio, err = stats.ratio_with_uncertainty(trial, baseline)
    if not higher and ratio:
        ratio, err = 1 / ratio, err / ratio**2
    return {"gain": round(ratio, 4), "gain_uncertainty": round(err, 4)}


def accuracy_ok(trial: TrialRow) -> bool:
    """A trial may be recommended unless its accuracy check failed (no check: allowed, and said so)."""
    return (trial.get("accuracy") or {}).get("status") != Status.FAIL


def _recommendation(best: TrialRow, metric: str) -> Recommendation:
    return {"name": best["name"], "metric": metric, "argv": best["argv"], "env": best["env"],
            "unset_env": best.get("unset_env", []), "command": render_command(best["env"], best["argv"])}
