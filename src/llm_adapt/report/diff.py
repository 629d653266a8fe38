"""`llm-adapt diff RUN_A RUN_B`: what changed between two runs of the same model (a vLLM upgrade,
eager against graph, two plans), each metric's delta with its uncertainty, features that changed
status, and a regression verdict whose thresholds come from the runs' own spreads.

The metric extraction and the judgement are pure functions of the two runs' RunData."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.accuracy.result import EndpointAccuracyResult, RunnerReport, Verdict
from llm_adapt.accuracy.setting_cause import SettingCause
from llm_adapt.bench.modes import BenchResult
from llm_adapt.bench.stats import Figure  # NaN (a figure that is not finite) reads back as None
from llm_adapt.judged.data import RunData, load_run
from llm_adapt.results import StageResult, write_text_atomic
from llm_adapt.status import Status, worst
from llm_adapt.status import worse as status_worse

K_SE = 3.0  # a change counts when it exceeds this many standard errors of the difference ...
MIN_RELATIVE = 0.02  # ... and this share of the first run's value (below it nobody acts on it)


@dataclass(frozen=True)
class Metric:
    """One measured figure with its standard error (None when the run gives none)."""

    group: str  # accuracy | performance | resources
    name: str
    value: float
    se: float | None
    higher_is_better: bool
    unit: str = ""
    busy: bool = False  # measured while other processes kept the host's cores busy


class MetricChange(TypedDict):
    """One figure of both runs compared (compare_metric): B - A, its standard error and the bound it is held to."""
    group: str
    name: str
    a: Figure
    b: Figure
    delta: Figure
    se: Figure
    relative: Figure
    bound: Figure
    change: str  # regression | improvement | same | not judged (busy host)
    unit: str
    busy: list[bool]  # A's and B's host was busy


class FeatureChange(TypedDict):
    """One probed feature whose status differs between the runs (feature_change)."""
    name: str
    a: str | None
    b: str | None
    change: str  # lost | gained | changed | not measured in A | not measured in B


class SettingsMoved(TypedDict):
    """Two runs served in different settings: each one's label, and the setting that moved accuracy."""
    a: str
    b: str
    cause: SettingCause


class DiffResult(StageResult):
    KIND: ClassVar[str] = "diff"

    run_a: str
    run_b: str
    metrics: list[MetricChange]
    features: list[FeatureChange]
    verdict: Verdict
    # two runs served in different deployment settings: each one's, and the one that moved accuracy
    settings: SettingsMoved | None = None


def metrics_of(run: RunData) -> dict[str, Metric]:
    """Every comparable figure of a run, keyed by name."""
    found: list[Metric] = []
    found += _endpoint_metrics(run.endpoint_accuracy)
    found += _inprocess_metrics(run.main_target)
    found += _bench_metrics(run.bench)
    found += _resource_metrics(run)
    return {m.name: m for m in found if isinstance(m.value, (int, float))}  # a figure not measured is not compared


def _endpoint_metrics(ep: EndpointAccuracyResult | None) -> list[Metric]:
    if not ep or ep.sections["teacher_forced"].get("status") != "done":
        return []
    s = ep.sections["teacher_forced"]["server"]
    out = [Metric("accuracy", "served top-k KL", s["kl_lb_mean"], s.get("kl_lb_sem"), False),
           Metric("accuracy", "served same top-1", s["same_top1"], s.get("same_top1_err"), True)]
    ppl = ep.sections["perplexity"]
    if ppl.get("status") == "done":
        out.append(Metric("accuracy", "served ln PPL ratio", ppl["ln_ratio"], ppl.get("ln_ratio_sem"), False))
    return out


def _inprocess_metrics(target: RunnerReport | None) -> list[Metric]:
    if not target:
        return []
    lg = target.logits
    return [Metric("accuracy", f"in-process {target.label} KL", lg["kl_mean"], lg.get("kl_sem"), False),
            Metric("accuracy", f"in-process {target.label} same top-1", lg["same_top1"], lg.get("same_top1_err"), True)]


def _bench_metrics(bench: dict[str, BenchResult]) -> list[Metric]:
    out = []
    for mode in ("throughput", "latency", "serve"):
        runs = bench[mode].runs if mode in bench else []
        if not runs:
            continue
        m = runs[0]["metrics"]
        busy = bool(runs[0].get("server") and runs[0]["server"].get("cpu") and runs[0]["server"]["cpu"].get("busy"))
        n = max(m.get("completed") or 0, 1)
        # throughput moves with the mean request latency at a fixed load: its relative se
        rel = (_se(m.get("std_e2el_ms"), n) or 0) / m["mean_e2el_ms"] if m.get("mean_e2el_ms") else None
        out += [Metric("performance", f"{mode} output throughput", m.get("output_throughput"),
                       rel * m["output_throughput"] if rel is not None and m.get("output_throughput") is not None else None,
                       True, "tok/s", busy),
                Metric("performance", f"{mode} mean TTFT", m.get("mean_ttft_ms"), _se(m.get("std_ttft_ms"), n), False,
                       "ms", busy),
                Metric("performance", f"{mode} mean TPOT", m.get("mean_tpot_ms"), _se(m.get("std_tpot_ms"), n), False,
                       "ms", busy)]
    return out


def _se(std: float | None, n: int) -> float | None:
    return std / math.sqrt(n) if isinstance(std, (int, float)) and math.isfinite(std) else None


def _resource_metrics(run: RunData) -> list[Metric]:
    out = []
    serve = run.serve
    if serve and serve.startup_seconds is not None:
        out.append(Metric("resources", "engine start-up", serve.startup_seconds, None, False, "s"))
    kv = serve.engine_facts.get("kv_cache_tokens") if serve else None
    if kv is not None:
        out.append(Metric("resources", "KV-cache tokens", float(kv), 0.0, True))
    rss = [r["server"].get("rss_bytes_max") for b in run.bench.values() for r in b.runs if r.get("server")]
    rss = [x for x in rss if x]
    if rss:
        out.append(Metric("resources", "peak server RSS", max(rss) / 1024**3, None, False, "GiB"))
    return out


def compare_metric(a: Metric, b: Metric) -> MetricChange:
    """delta = b - a with its standard error; 'regression' / 'improvement' only beyond K_SE standard
    errors and MIN_RELATIVE of a; without any standard error, only beyond 5 x MIN_RELATIVE. A figure
    either run measured on a busy host is 'not judged (busy host)': the other load moved it."""
    delta = b.value - a.value
    se = math.hypot(a.se, b.se) if a.se is not None and b.se is not None else None
    bound = max(K_SE * se, MIN_RELATIVE * abs(a.value)) if se is not None else 5 * MIN_RELATIVE * abs(a.value)
    worse = delta < 0 if a.higher_is_better else delta > 0
    change = "regression" if abs(delta) > bound and worse else "improvement" if abs(delta) > bound else "same"
    if not (math.isfinite(a.value) and math.isfinite(b.value)):
        change = "regression" if not math.isfinite(b.value) else "improvement"
    if (a.busy or b.busy) and change != "same":
        change = "not judged (busy host)"
    return {"group": a.group, "name": a.name, "a": a.value, "b": b.value, "delta": delta, "se": se,
            "relative": delta / a.value if a.value else None, "bound": bound, "change": change, "unit": a.unit,
            "busy": [a.busy, b.busy]}


# A probe row that measured nothing: no row at all (the run stopped before its probes), or one not run or
# not applicable. Such a feature is "not measured" in that run, never lost or gained.
NOT_MEASURED = (None, "not run", "not applicable")


def feature_change(a: str | None, b: str | None) -> str:
    """What became of one feature from run A's probe status to run B's. Pure."""
    if a in NOT_MEASURED or b in NOT_MEASURED:
        return "not measured in A" if a in NOT_MEASURED else "not measured in B"
    return "lost" if a == "supported" else "gained" if b == "supported" else "changed"


def feature_changes(run_a: RunData, run_b: RunData) -> list[FeatureChange]:
    rows_a = {r["name"]: r["status"] for r in (run_a.probes.rows if run_a.probes else [])}
    rows_b = {r["name"]: r["status"] for r in (run_b.probes.rows if run_b.probes else [])}
    return [{"name": n, "a": rows_a.get(n), "b": rows_b.get(n), "change": feature_change(rows_a.get(n), rows_b.get(n))}
            for n in sorted(set(rows_a) | set(rows_b))
            if rows_a.get(n) != rows_b.get(n) and not {rows_a.get(n), rows_b.get(n)} <= set(NOT_MEASURED)]


def diff_verdict(metrics: list[MetricChange], features: list[FeatureChange], verdicts: tuple[str, str]) -> Verdict:
    """FAIL: an accuracy regression, a lost feature, or B's own verdict worse than A's;
    WARN: a performance or resource regression, a run that was interrupted (not judged), or features one run
    did not measure; else PASS."""
    reasons, status = [], Status.PASS
    for name, verdict in zip("AB", verdicts):
        if verdict == Status.INTERRUPTED:  # its verdict is not worse or better: there is none
            status = Status.WARN
            reasons.append(f"run {name} was interrupted: not judged; what it did not measure is not compared")
    if Status.INTERRUPTED not in verdicts and status_worse(verdicts[0], verdicts[1]):
        status = Status.FAIL
        reasons.append(f"the run's verdict went from {verdicts[0]} to {verdicts[1]}")
    for m in metrics:
        if m["change"] == "regression":
            worse = Status.FAIL if m["group"] == "accuracy" else Status.WARN
            status = worst([status, worse])
            reasons.append(f"{m['name']}: {m['a']:.4g} -> {m['b']:.4g} {m['unit']}".rstrip())
    for f in features:
        if f["change"] == "lost":
            status = Status.FAIL
            reasons.append(f"feature '{f['name']}': {f['a']} -> {f['b']}")
    unmeasured = {side: sum(f["change"] == f"not measured in {side}" for f in features) for side in "AB"}
    for side, count in unmeasured.items():
        if count:
            status = worst([status, Status.WARN])
            reasons.append(f"{count} feature(s) not measured in run {side}: not compared")
    return {"status": status, "reasons": reasons, "k_se": K_SE, "min_relative": MIN_RELATIVE}


def diff_runs(dir_a: Path, dir_b: Path) -> DiffResult:
    from llm_adapt.judged.verdict import overall_verdict

    run_a, run_b = load_run(dir_a), load_run(dir_b)
    ma, mb = metrics_of(run_a), metrics_of(run_b)
    metrics = [compare_metric(ma[name], mb[name]) for name in ma if name in mb]
    features = feature_changes(run_a, run_b)
    verdicts = (overall_verdict(run_a)["status"], overall_verdict(run_b)["status"])
    return DiffResult(run_a=str(dir_a), run_b=str(dir_b), metrics=metrics, features=features,
                      verdict=diff_verdict(metrics, features, verdicts) | {"run_verdicts": list(verdicts)},
                      settings=settings_moved(run_a, run_b))


def settings_moved(run_a: RunData, run_b: RunData) -> SettingsMoved | None:
    """Where the two runs served the same weights in different settings (eager against TP=2, say): each
    one's setting and endpoint verdict, and the setting that moved accuracy, judged as a differential run
    judges its settings (accuracy/setting_cause.py, A the baseline); None where the settings are the same."""
    from llm_adapt.accuracy.setting_cause import located_reason, setting_cause
    from llm_adapt.deploy_settings import served_setting

    rows = []
    for run in (run_a, run_b):
        setting = served_setting(run.serve.argv if run.serve else None)
        if setting is None:
            return None
        where = run.layers.first_local_excess if run.layers else None
        ep = run.endpoint_accuracy
        routing = where.get("routing") if where else None
        rows.append({"label": setting.label, "features": sorted(setting.features),
                     "status": ep.verdict["status"] if ep and ep.verdict else None,
                     "located": located_reason(where), "routing": routing.get("verdict") if routing else None})
    if rows[0]["label"] == rows[1]["label"]:
        return None
    return {"a": rows[0]["label"], "b": rows[1]["label"], "cause": setting_cause(rows)}


def diff_markdown(result: DiffResult) -> str:
    from llm_adapt.cells import cell, num

    lines = ["# llm-adapt diff", "", f"A: `{result.run_a}`  ", f"B: `{result.run_b}`", "",
             f"**Regression verdict: {result.verdict['status']}**"
             + (" — " + cell("; ".join(result.verdict["reasons"])) if result.verdict["reasons"] else ""), "",
             f"A change counts beyond {K_SE:g} standard errors of the difference and {MIN_RELATIVE:.0%} of A "
             f"(without a standard error: {5 * MIN_RELATIVE:.0%}).", "",
             "| group | metric | A | B | Δ | ± se | change |", "|---|---|---|---|---|---|---|"]
    for m in result.metrics:
        lines.append(f"| {m['group']} | {cell(m['name'])} {m['unit']} | {num(m['a'])} | {num(m['b'])} | "
                     f"{num(m['delta'])} | {num(m['se'])} | {m['change']} |")
    if result.settings:
        from llm_adapt.messages import message

        s = result.settings
        lines[6:6] = [f"Settings: A {s['a']}, B {s['b']}: {cell(str(message(s['cause']['summary'], 'en')))}", ""]
    lines += ["", "| feature | A | B | change |", "|---|---|---|---|"]
    lines += [f"| {cell(f['name'])} | {f['a']} | {f['b']} | {f['change']} |" for f in result.features] or ["| - | - | - | none |"]
    return "\n".join(lines) + "\n"


def write_diff(result: DiffResult, out: Path) -> list[Path]:
    from llm_adapt.report.render import to_html

    out = Path(out)
    text = diff_markdown(result)
    paths = [result.save(out / rundir.DIFF), out / "diff.md", out / "diff.html"]
    write_text_atomic(paths[1], text)
    write_text_atomic(paths[2], to_html(text, out, "en"))
    return paths
