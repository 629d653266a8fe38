"""The SLA capacity search side by side with evalscope's SLA auto-tune, on one vLLM-CPU server.

Both search the highest concurrency whose p99 TTFT and p99 TPOT meet the same limits, on the same
workload (128 prompt tokens as token ids to /v1/completions, 64 output tokens with ignore_eos, 2 x
the concurrency requests per run, 3 runs per point, concurrency 1 to --sla-max), in interleaved rounds
(the order swaps each round). Printed: each tool's capacity per round, and ours' bracket.

Where the methods differ, by their own documents and code (not forced to match):
- evalscope averages a point's 3 runs' metrics (its p99 too) and judges the average; llm-adapt
  requires every run to meet each SLO;
- both fail a point on any failed request; evalscope doubles then bisects from --parallel,
  llm-adapt doubles from 1 then bisects;
- llm-adapt sends one warm-up wave before a point's first run; evalscope sends none.

evalscope lives in its own environment (its dependencies move huggingface_hub and datasets past
the project's pins): `python -m venv PEERS && PEERS/bin/pip install 'evalscope[perf]>=1.14' torch==2.13.0`,
then
  .venv/bin/python benchmarks/sla_peers.py --peer-bin PEERS/bin [--rounds 3] [--ttft-ms MS] [--tpot-ms MS]
Without the SLOs given, one stream's p99 TTFT and TPOT are measured first (our latency mode) and the
SLOs are 3x and 1.5x them: limits this server meets with one stream and not with many.
It starts a vLLM-CPU server: run nothing else heavy beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import _peer, _run, start_server  # noqa: E402  (the peers' server and process helpers)

IN_LEN, OUT_LEN, RUNS = 128, 64, 3


def run_evalscope(base: str, model: str, tok: Path, out: Path, args, seed: int) -> dict:
    art = out / f"evalscope-sla-{seed}"
    params = json.dumps([{"p99_ttft": f"<={args.ttft_ms:g}", "p99_tpot": f"<={args.tpot_ms:g}"}])  # evalscope: ms
    _run([_peer(args.peer_bin, "evalscope"), "perf", "--url", base + "/v1/completions", "--api", "openai",
          "--model", model, "--tokenizer-path", str(tok), "--dataset", "random", "--min-prompt-length", str(IN_LEN),
          "--max-prompt-length", str(IN_LEN), "--prefix-length", "0", "--min-tokens", str(OUT_LEN),
          "--max-tokens", str(OUT_LEN), "--extra-args", json.dumps({"ignore_eos": True}), "--temperature", "0",
          "--stream", "--seed", str(seed), "--tokenize-prompt", "--outputs-dir", str(art), "--no-timestamp",
          "--sla-auto-tune", "--sla-variable", "parallel", "--sla-params", params, "--parallel", "1",
          "--sla-lower-bound", "1", "--sla-upper-bound", str(args.sla_max), "--sla-num-runs", str(RUNS),
          "--sla-number-multiplier", "2"], env={"HF_HUB_OFFLINE": "1"})
    summary = json.loads(next(art.rglob("sla_summary.json")).read_text())
    log = next(art.rglob("benchmark.log")).read_text()
    return {"capacity": evalscope_capacity(log), "points": evalscope_points(summary)}


def evalscope_capacity(log: str) -> int | None:
    """evalscope's own selection: the 'Selected' column of its one criteria row in the summary table it
    logs (sla_summary.json keeps each point's figures, not the selection)."""
    rows = [line for line in log.split("Selections:")[-1].splitlines() if "p99_ttft" in line]
    if not rows:
        return None
    cell = rows[0].strip("│ ").split("│")[1].strip()
    return int(cell) if cell.isdigit() else None


def evalscope_points(summary: dict) -> list[int]:
    """The concurrencies evalscope ran: sla_summary.json's keys, 'parallel_N'."""
    return sorted(int(key.rsplit("_", 1)[1]) for key in summary if key.startswith("parallel_"))


def run_ours(base: str, model: str, tok: Path, out: Path, args, seed: int) -> dict:
    art = out / f"ours-sla-{seed}"
    _run([sys.executable, "-m", "llm_adapt.cli", "bench", "--endpoint", base + "/v1", "--model", model,
          "--tokenizer", str(tok), "--mode", "sla", "--slo", f"ttft={args.ttft_ms},tpot={args.tpot_ms}",
          "--sla-max", str(args.sla_max), "--sla-percentile", "99", "--repeats", str(RUNS), "--num-prompts", "2",
          "--input-len", str(IN_LEN), "--output-len", str(OUT_LEN), "--seed", str(seed), "--out", str(art)])
    data = json.loads((art / "bench.json").read_text())
    sla = data.get("sla") or {}
    return {"capacity": sla.get("capacity"), "bracket": sla.get("bracket"),
            "points": sorted(r["load"] for r in data["runs"])}


def calibrate(base: str, model: str, tok: Path, out: Path, args) -> None:
    """SLOs this server meets with one stream and not with many, from one stream's own latency (the
    same rule the live test uses), unless given: a fixed SLO means nothing across machines."""
    if args.ttft_ms and args.tpot_ms:
        return
    art = out / "calibration"
    _run([sys.executable, "-m", "llm_adapt.cli", "bench", "--endpoint", base + "/v1", "--model", model,
          "--tokenizer", str(tok), "--mode", "latency", "--iterations", "3", "--input-len", str(IN_LEN),
          "--output-len", str(OUT_LEN), "--out", str(art)])
    metrics = json.loads((art / "bench.json").read_text())["runs"][0]["metrics"]
    args.ttft_ms = args.ttft_ms or round(3 * metrics["p99_ttft_ms"])
    args.tpot_ms = args.tpot_ms or round(1.5 * metrics["p99_tpot_ms"])
    print(f"SLOs from one stream (p99 TTFT {metrics['p99_ttft_ms']:.0f} ms, p99 TPOT {metrics['p99_tpot_ms']:.1f} ms): "
          f"ttft <= {args.ttft_ms:g} ms, tpot <= {args.tpot_ms:g} ms", flush=True)


TOOLS = {"llm-adapt bench --mode sla": run_ours, "evalscope perf --sla-auto-tune": run_evalscope}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-bin", type=Path, required=True, help="the bin directory evalscope is installed in")
    parser.add_argument("--ttft-ms", type=float, help="default: 3x one stream's p99 TTFT, measured first")
    parser.add_argument("--tpot-ms", type=float, help="default: 1.5x one stream's p99 TPOT, measured first")
    parser.add_argument("--sla-max", type=int, default=16)
    parser.add_argument("--out", type=Path, help="keep both tools' raw output here")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {t: [] for t in TOOLS}
    with tempfile.TemporaryDirectory() as tmp_name:
        out = args.out or Path(tmp_name)
        out.mkdir(parents=True, exist_ok=True)
        server, src = start_server(out)
        with server:
            base = server.endpoint.root_url
            calibrate(base, src.name, src.path, out, args)
            for rnd in range(args.rounds):
                order = list(TOOLS) if rnd % 2 == 0 else list(reversed(TOOLS))
                for tool in order:
                    started = time.monotonic()
                    found = TOOLS[tool](base, src.name, src.path, out, args, 100 * rnd + 11)
                    found["seconds"] = round(time.monotonic() - started, 1)
                    results[tool].append(found)
                    print(f"round {rnd + 1} {tool}: {found}", flush=True)
        (out / "sla_peers.json").write_text(json.dumps(results, indent=1))
    print(f"\np99 TTFT <= {args.ttft_ms:g} ms and p99 TPOT <= {args.tpot_ms:g} ms, {IN_LEN} in / {OUT_LEN} out, "
          f"{RUNS} runs a point, concurrency 1-{args.sla_max}, {args.rounds} interleaved rounds:\n")
    print("| tool | capacity per round | median | seconds per search (median) |\n|---|---|---|---|")
    for tool, rows in results.items():
        caps = [r["capacity"] for r in rows]
        known = [c for c in caps if c is not None]
        print(f"| {tool} | {', '.join(map(str, caps))} | {statistics.median(known) if known else '-'} | "
              f"{statistics.median(r['seconds'] for r in rows):.0f} |")


if __name__ == "__main__":
    main()
