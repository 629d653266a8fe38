"""Report figures (matplotlib, Agg). Each function reads result records and writes one PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from llm_adapt import rundir
from llm_adapt.accuracy.result import AccuracyResult  # noqa: E402
from llm_adapt.judged.data import RunData  # noqa: E402


def error_growth(acc: AccuracyResult | None, out: Path) -> Path | None:
    targets = acc.targets if acc else []
    if not targets:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for t in targets:
        xs = list(range(len(t.layers)))
        ax.plot(xs, [max(r["rel_l2"], 1e-9) for r in t.layers], marker=".", label=f"{t.label} (full)")
        ax.plot(xs, [max(r["local_rel_l2"], 1e-9) for r in t.layers], linestyle="--", alpha=0.7,
                label=f"{t.label} (local)")
    for f in acc.floors:
        ax.plot(range(len(f.layers)), [max(r["rel_l2"], 1e-9) for r in f.layers], color="grey", linestyle=":",
                label=f"noise floor {f.label}")
    names = [r["name"] for r in targets[0].layers]
    step = max(1, len(names) // 12)
    ax.set_xticks(range(0, len(names), step), [names[i].replace("layer ", "L") for i in range(0, len(names), step)],
                  rotation=45, fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("tensor (embeddings, decoder layers L0.., final norm)")
    ax.set_ylabel("relative L2 error vs fp32 (log)")
    ax.set_title("Hidden-state error over depth (full: inherited + own; local: own)")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "accuracy_depth.png")


def kl_percentiles(acc: AccuracyResult | None, out: Path) -> Path | None:
    targets = acc.floors + acc.targets if acc else []
    if not targets:
        return None
    keys = ["kl_p50", "kl_p95", "kl_p99", "kl_p99_9", "kl_max"]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / len(targets)
    seen = set()
    for i, t in enumerate(targets):
        if t.label in seen:
            continue
        seen.add(t.label)
        ax.bar([k + i * width for k in range(len(keys))], [max(t.logits[k], 1e-9) for k in keys], width, label=t.label)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))], ["p50", "p95", "p99", "p99.9", "max"])
    ax.set_yscale("log")
    ax.set_xlabel("percentile over token positions")
    ax.set_ylabel("KL(ref || target), nats (log)")
    ax.set_title("Per-token KL divergence percentiles")
    ax.legend(fontsize=7)
    return _save(fig, out / "accuracy_kl.png")


def latency_percentiles(run: RunData, out: Path) -> Path | None:
    rows = [(name, b.runs[0]["metrics"]) for name, b in run.bench.items() if b.runs and name != "sweep"]
    if not rows:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, metric in zip(axes, ("ttft_ms", "tpot_ms")):
        for i, (name, m) in enumerate(rows):
            values = [_value(m.get(f"{stat}_{metric}")) for stat in ("median", "p90", "p95", "p99")]
            ax.bar([k + i * 0.35 for k in range(4)], values, 0.35, label=name)
        ax.set_xticks([k + 0.175 for k in range(4)], ["p50", "p90", "p95", "p99"])
        ax.set_title(metric.replace("_ms", "").upper())
        ax.set_ylabel("milliseconds")
        ax.set_xlabel("percentile over requests")
        ax.legend(fontsize=7)
    return _save(fig, out / "bench_latency.png")


def sweep_curve(run: RunData, out: Path) -> Path | None:
    sweep = run.bench.get("sweep")
    if not sweep or not sweep.runs:
        return None
    loads = [r["load"] for r in sweep.runs]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(loads, [_value(r["metrics"].get("output_throughput")) for r in sweep.runs], marker="o", label="output tok/s")
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tokens/s")
    ax2 = ax.twinx()
    ax2.plot(loads, [_value(r["metrics"].get("median_ttft_ms")) for r in sweep.runs], marker="s", color="tab:red",
             label="TTFT p50")
    ax2.set_ylabel("TTFT p50 (ms)")
    ax.set_title("Throughput and latency versus concurrency")
    ax.legend(loc="upper left", fontsize=7)
    ax2.legend(loc="lower right", fontsize=7)
    return _save(fig, out / "bench_sweep.png")


def _value(x) -> float:
    """A metric as a number to draw; one that was not measured (null in the JSON) is NaN, drawn as a gap."""
    return float(x) if isinstance(x, (int, float)) else float("nan")


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_all(run: RunData, into: Path | None = None) -> dict[str, str]:
    """Every figure the data allows, under `into` (default: the run directory); name -> path relative to it."""
    into = Path(into) if into is not None else run.dir
    out = into / rundir.PLOTS
    made = {"depth": error_growth(run.accuracy, out), "kl": kl_percentiles(run.accuracy, out),
            "latency": latency_percentiles(run, out), "sweep": sweep_curve(run, out)}
    return {name: str(path.relative_to(into)) for name, path in made.items() if path}
