"""How many stream chunks the benchmark client can parse, with 1, 2 and 4 client processes, against
the zero-delay mock server (no model: every token is sent at once, so the client side is all that
is measured, and the mock's own process).

Each round runs every process count once (interleaved), `--rounds` rounds; printed per count: the
median and range of output tokens per second (every token is one SSE chunk here), the client's own
CPU per process (bench/hostload.py) and the mock's.

  .venv/bin/python benchmarks/client_processes.py [--rounds 3] [--requests 256] [--output-len 256]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))


def one(server, tokenizer, processes: int, args, out: Path) -> dict:
    from llm_adapt.bench.modes import BenchOptions, Workload, run_bench

    opts = BenchOptions(mode="serve", num_prompts=args.requests, input_len=16, output_len=args.output_len,
                        max_concurrency=args.concurrency, warmup=4, client_processes=processes)
    result = run_bench(server.endpoint, "mock", Workload(tokenizer, True), opts, out, pid=server.proc.pid)
    run = result.runs[0]
    cpu = run["server"]["cpu"]
    return {"tok_s": run["metrics"]["output_throughput"], "client_per_process": cpu.get("client_cores_per_process"),
            "mock_cores": cpu.get("server_cores_mean"), "failed": run["metrics"]["failed"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--processes", default="1,2,4")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from llm_adapt.models.source import resolve_model
    from tests.conftest import start_mock

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("default").path)
    counts = [int(x) for x in args.processes.split(",")]
    rows: dict[int, list[dict]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory() as tmp, start_mock(Path(tmp), "--ttft-ms", "0", "--itl-ms", "0") as server:
        for r in range(args.rounds):
            for n in counts:
                out = Path(tmp) / f"r{r}-p{n}"
                out.mkdir()
                rows[n].append(one(server, tokenizer, n, args, out))
                print(f"round {r + 1}, {n} process(es): {rows[n][-1]['tok_s']:.0f} tok/s", file=sys.stderr)
    print("| client processes | parsed tok/s, median (min-max) | client CPU per process (cores) | mock CPU (cores) |")
    print("|---|---|---|---|")
    for n, rs in rows.items():
        tps = [x["tok_s"] for x in rs]
        cli = statistics.median(x["client_per_process"] or 0 for x in rs)
        mock = statistics.median(x["mock_cores"] or 0 for x in rs)
        print(f"| {n} | {statistics.median(tps):.0f} ({min(tps):.0f}-{max(tps):.0f}) | {cli:.2f} | {mock:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
