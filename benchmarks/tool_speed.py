"""How long llm-adapt keeps its user waiting: whole commands, as processes, over interleaved repeats.

Each command runs as `.venv/bin/llm-adapt ...` in a child process; the wall time is what a user
waits. Each is broken down by the tool's own progress events (LLM_ADAPT_EVENTS: the span from the
first to the last report of each bar) and, for `run`, by status.json's per-stage seconds. Other
processes' CPU use during each command is sampled (bench/hostload.py): a figure from a busy host is
marked so.

Commands (the measured ones recompute: LLM_ADAPT_CACHE=off, except where the cache is the point):
  inspect-cold      inspect default in a new LLM_ADAPT_HOME (GGUF conversion, vLLM's registry, model walk)
  inspect-warm      inspect default again in a warm home
  compare-quick     compare default --prompts quick (in process)
  compare-default   compare default (in process)
  compare-cached    compare default, gold and floor from the cache
  compare-endpoint  compare default --endpoint URL (one vLLM server started here for all endpoint commands, in
                    the dtype `serve default` picks on this machine, named by --served-dtype)
  probe             probe --endpoint URL
  bench-serve       bench --endpoint URL --mode serve --num-prompts 32
  eval              eval default --endpoint URL --tasks builtin-mc --limit 60 (served and gold seconds from eval.json)
  run-default       run default (starts its own engine; timed after the shared server is stopped)
  make-test         make test (with --make-test: the whole suite, once)

Targets (issue #23, this 2-core box): warm inspect <= 5 s, compare --endpoint <= 90 s, run default
<= 240 s, make test <= 900 s, eval's served side <= 3x its gold side.

  .venv/bin/python benchmarks/tool_speed.py [--repeats 3] [--only inspect-warm,compare-quick] [--once run-default]
                                            [--make-test]
                                            [--json OUT] [--docs]

--docs writes the table into docs/measurements.md between its tool_speed markers, stamped with the date and
this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(ROOT / ".venv/bin/llm-adapt")]
PY = str(ROOT / ".venv/bin/python")
TARGETS = {"inspect-warm": 5.0, "compare-endpoint": 90.0, "run-default": 240.0, "make-test": 900.0}
EVAL_RATIO_TARGET = 3.0
SERVER_FREE = ("inspect-cold", "inspect-warm", "compare-quick", "compare-default", "compare-cached")
WITH_SERVER = ("compare-endpoint", "probe", "bench-serve", "eval")
BEGIN, END = "<!-- tool_speed:begin -->", "<!-- tool_speed:end -->"


def command(name: str, url: str | None, out: Path) -> tuple[list[str], dict[str, str]]:
    """argv and extra environment of one timed command."""
    fresh = {"LLM_ADAPT_CACHE": "off"}
    table = {
        "inspect-cold": (["inspect", "default"], {}),
        "inspect-warm": (["inspect", "default"], {}),
        "compare-quick": (["compare", "default", "--prompts", "quick", "--out", str(out)], fresh),
        "compare-default": (["compare", "default", "--out", str(out)], fresh),
        "compare-cached": (["compare", "default", "--out", str(out)], {}),
        "compare-endpoint": (["compare", "default", "--endpoint", str(url), "--served-dtype", SERVED_DTYPE,
                              "--out", str(out)], fresh),
        "probe": (["probe", "--endpoint", str(url), "--out", str(out)], {}),
        "bench-serve": (["bench", "--endpoint", str(url), "--mode", "serve", "--num-prompts", "32", "--input-len", "128",
                         "--output-len", "64", "--max-concurrency", "4", "--out", str(out)], {}),
        "eval": (["eval", "default", "--endpoint", str(url), "--tasks", "builtin-mc", "--limit", "60",
                  "--out", str(out)], {}),
        "run-default": (["run", "default", "--out", str(out)], fresh),
    }
    argv, env = table[name]
    return CLI + argv, env


def timed(argv: list[str], env: dict[str, str], home: Path, workdir: Path) -> dict:
    """One command as a child process: wall seconds, exit code, its progress spans, the host's load."""
    sys.path.insert(0, str(ROOT / "src"))
    from llm_adapt.bench.hostload import Sampler

    events = workdir / f"events-{time.monotonic_ns()}.jsonl"
    full_env = {**os.environ, "LLM_ADAPT_HOME": str(home), "LLM_ADAPT_EVENTS": str(events), "HF_HUB_OFFLINE": "1",
                **env}
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=full_env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid)
    while proc.poll() is None:
        time.sleep(1.0)
        sampler.sample()
    stderr = proc.stderr.read() if proc.stderr else ""
    seconds = time.monotonic() - started
    return {"seconds": round(seconds, 2), "code": proc.returncode, "spans": spans(events),
            "load": sampler.summary(), "error": stderr.strip().splitlines()[-1] if proc.returncode and stderr.strip() else None}


def spans(path: Path) -> dict[str, float]:
    """Seconds from the first to the last progress report of each bar. Pure on the file's lines."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            event = json.loads(line)
            first.setdefault(event["what"], event["t"])
            last[event["what"]] = event["t"]
    return {what: round(last[what] - first[what], 2) for what in first}


def summary(times: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(times), 2), "min": round(min(times), 2), "max": round(max(times), 2),
            "n": len(times)}


def served_dtype() -> str:
    """The dtype `serve default` picks on this machine (--dtype auto), so the endpoint commands run as a user's do."""
    sys.path.insert(0, str(ROOT / "src"))
    from llm_adapt.platforms import default_serving_dtype

    return default_serving_dtype("cpu")[0]


SERVED_DTYPE = served_dtype()


def start_server(home: Path, log: Path):
    sys.path.insert(0, str(ROOT / "src"))
    os.environ["LLM_ADAPT_HOME"] = str(home)
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model("default")
    options = PlanOptions(model_path=str(source.path), served_model_name=source.name, kv_cache_space_gib=2,
                          max_model_len=4096, dtype=SERVED_DTYPE)
    return ManagedServer(vllm_launch(run_inspect(source, options, "cpu").plan, port=free_port()), log)


def measure(names: list[str], repeats: int, workdir: Path, once_only: frozenset[str] = frozenset()) -> dict:
    warm_home = workdir / "home"
    results: dict[str, list[dict]] = {n: [] for n in names}

    def once(name: str, url: str | None) -> None:
        home = workdir / f"cold-{len(results[name])}" if name == "inspect-cold" else warm_home
        out = workdir / "out" / f"{name}-{len(results[name])}"
        argv, env = command(name, url, out)
        row = timed(argv, env, home, workdir)
        if name == "eval" and (out / "eval.json").exists():
            row["eval_seconds"] = json.loads((out / "eval.json").read_text()).get("seconds")
        if name == "run-default" and (out / "status.json").exists():
            stages = json.loads((out / "status.json").read_text())["stages"]
            row["stages"] = {s: v.get("seconds") for s, v in stages.items() if v.get("seconds") is not None}
        results[name].append(row)
        print(f"{name}: {row['seconds']} s (exit {row['code']})", file=sys.stderr)
        if name == "inspect-cold":
            shutil.rmtree(home, ignore_errors=True)

    warm = timed(CLI + ["inspect", "default"], {}, warm_home, workdir)  # the warm home: converted, walked
    print(f"warming the home: {warm['seconds']} s", file=sys.stderr)
    for round_ in range(repeats):  # interleaved: every command once per round (`once_only` in the first)
        for name in [n for n in names if n in SERVER_FREE and (round_ == 0 or n not in once_only)]:
            once(name, None)
    if any(n in WITH_SERVER for n in names):
        with start_server(warm_home, workdir / "engine.log") as server:
            url = server.endpoint.base_url
            for round_ in range(repeats):
                for name in [n for n in names if n in WITH_SERVER and (round_ == 0 or n not in once_only)]:
                    once(name, url)
    for _ in range(0 if "run-default" not in names else 1 if "run-default" in once_only else repeats):
        once("run-default", None)
    return results


def make_test(workdir: Path) -> dict:
    started = time.monotonic()
    proc = subprocess.run(["make", "test"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    (workdir / "make-test.log").write_text(proc.stdout)
    tail = [ln for ln in proc.stdout.splitlines() if " passed" in ln or " failed" in ln]
    return {"seconds": round(time.monotonic() - started, 1), "code": proc.returncode, "tail": tail[-1:] or None}


def table(results: dict) -> list[str]:
    lines = ["| command | median s | min-max s | runs | target | busy runs | where the time went (median s, top 3) |",
             "|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        if not rows:
            continue
        ok = [r for r in rows if r["code"] == 0] or rows
        s = summary([r["seconds"] for r in ok])
        target = TARGETS.get(name)
        verdict = "" if target is None else f"<= {target:g}: {'met' if s['median'] <= target else 'NOT met'}"
        busy = sum(1 for r in ok if (r.get("load") or {}).get("busy"))
        parts = top_spans(ok)
        lines.append(f"| {name} | {s['median']} | {s['min']}-{s['max']} | {s['n']} | {verdict} | {busy} of {len(ok)} | {parts} |")
    evals = [r["eval_seconds"] for r in results.get("eval", []) if r.get("eval_seconds")]
    if evals:
        served = statistics.median(e.get("served_loglikelihood", 0) for e in evals)
        gold = statistics.median(e.get("gold_loglikelihood", 0) or 0 for e in evals)
        if gold:
            ratio = served / gold
            lines.append(f"\neval (builtin-mc, 60 items): served {served:.1f} s, gold {gold:.1f} s, ratio {ratio:.2f} "
                         f"(target <= {EVAL_RATIO_TARGET:g}: {'met' if ratio <= EVAL_RATIO_TARGET else 'NOT met'})")
    return lines


def top_spans(rows: list[dict], n: int = 3) -> str:
    keys: dict[str, list[float]] = {}
    for r in rows:
        for what, sec in {**r.get("spans", {}), **{f"stage {k}": v for k, v in (r.get("stages") or {}).items()}}.items():
            keys.setdefault(what, []).append(sec)
    ranked = sorted(((statistics.median(v), k) for k, v in keys.items()), reverse=True)[:n]
    return "; ".join(f"{k} {v:.1f}" for v, k in ranked) or "-"


MEASUREMENTS = ROOT / "docs" / "measurements.md"


def machine() -> str:
    """This machine in a few words: CPU model, cores, native bf16 or not."""
    from llm_adapt import platforms

    bf16 = "native bf16" if platforms.cpu_has_native_bf16() else "no native bf16"
    return f"{platforms.cpu_model() or 'unknown CPU'}, {platforms.cpu_cores()} cores, {bf16}"


def write_docs(lines: list[str], command_line: str, path: Path = MEASUREMENTS) -> None:
    """The table between the markers of docs/measurements.md (appended with them where they are missing)."""
    text = path.read_text()
    block = "\n".join([BEGIN, f"Measured {time.strftime('%Y-%m-%d')} on {machine()} with `{command_line}`:", "",
                       *lines, END])
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text += "\n" + block + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="comma-separated command names (default: all but make-test)")
    parser.add_argument("--once", default="", help="comma-separated command names timed in the first round only (the long ones)")
    parser.add_argument("--make-test", action="store_true", help="also time `make test` once, at the end")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--docs", action="store_true",
                        help="write the table into docs/measurements.md between its markers, with the date and machine")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else [*SERVER_FREE, *WITH_SERVER, "run-default"]
    with tempfile.TemporaryDirectory(prefix="tool-speed-") as tmp:
        results = measure(names, args.repeats, Path(tmp), frozenset(filter(None, args.once.split(","))))
        if args.make_test:
            results["make-test"] = [make_test(Path(tmp))]
    lines = table(results)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.docs:
        write_docs(lines, "python benchmarks/tool_speed.py " + " ".join(sys.argv[1:]).replace("--docs", "").strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
