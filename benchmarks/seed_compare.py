"""`compare` at the seeds' sizes, against the lower bound of the work it did.

Checkpoints: random weights (models/synthetic.py's generator) in the published Llama-3.2-1B / -3B /
Llama-3.1-8B shapes (tests/fixtures/configs), bf16 safetensors, the default model's tokenizer.
1B and 3B: `compare` fp32 gold against cpu:bf16 (with its floor's kernel-spread rerun), the quick
suite, 16 new tokens. 8B: the streaming fp32 reference alone (its fp32 weights do not fit in RAM
here), the quick suite.

Each model runs in a child process. Printed per stage (the progress labels compare reports): wall
seconds and peak RSS; per model: seconds per billion parameters, and the lower bound of what the run
computed: every weight matmul it made is counted (torch.nn.functional.linear wrapped: weight bytes,
2 x weight elements x rows FLOPs), and bound = sum of weight bytes / measured copy bandwidth + sum
of FLOPs / measured matmul rate in that dtype. Attention's own matmuls are left out of the bound
(short prompts), so it is a floor, not an estimate.

Run (one heavy job at a time; the 3B checkpoint takes 6.4 GB of disk, the 8B one 16 GB):
  .venv/bin/python benchmarks/seed_compare.py [--model llama-3.2-1b --model llama-3.2-3b --model llama-3.1-8b] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DROP = ("architectures", "model_type", "torch_dtype", "transformers_version")


def write_checkpoint(name: str, out: Path) -> Path:
    """Random bf16 weights in the published config's shape, built in bf16 (no fp32 copy in RAM)."""
    import torch

    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_tiny_llama

    if (out / "config.json").exists():
        return out
    config = {k: v for k, v in json.loads((ROOT / "tests/fixtures/configs" / f"{name}.json").read_text()).items()
              if k not in DROP}
    torch.set_default_dtype(torch.bfloat16)
    write_tiny_llama(out, dtype="bfloat16", shard_size="2GB", tokenizer_from=resolve_model("default").path, **config)
    torch.set_default_dtype(torch.float32)
    return out


class Counter:
    """Weight matmuls as they happen: bytes of weights read and FLOPs, per dtype."""

    def __init__(self):
        self.bytes: dict[str, float] = {}
        self.flops: dict[str, float] = {}
        self.calls = 0

    def install(self) -> None:
        import torch.nn.functional as F

        original = F.linear

        def linear(x, weight, bias=None):
            dtype = str(weight.dtype).removeprefix("torch.")
            rows = x.numel() // max(x.shape[-1], 1)
            self.bytes[dtype] = self.bytes.get(dtype, 0.0) + weight.numel() * weight.element_size()
            self.flops[dtype] = self.flops.get(dtype, 0.0) + 2.0 * weight.numel() * rows
            self.calls += 1
            return original(x, weight, bias)

        F.linear = linear  # nn.Linear calls F.linear through this same module object


class Stages:
    """Wall seconds and peak RSS per progress label (sampled every 50 ms)."""

    def __init__(self):
        self.current, self.started = "load", time.monotonic()
        self.rows: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def progress(self, what: str, _done: int, _total: int) -> None:
        if what != self.current:
            self._close()
            self.current, self.started = what, time.monotonic()

    def _close(self) -> None:
        row = self.rows.setdefault(self.current, {"seconds": 0.0, "peak_rss_gib": 0.0})
        row["seconds"] += time.monotonic() - self.started

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            rss = rss_gib()
            row = self.rows.setdefault(self.current, {"seconds": 0.0, "peak_rss_gib": 0.0})
            row["peak_rss_gib"] = max(row["peak_rss_gib"], rss)

    def finish(self) -> dict[str, dict[str, float]]:
        self._close()
        self._stop.set()
        return self.rows


def rss_gib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def child(model_dir: Path, mode: str) -> dict:
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    counter, stages = Counter(), Stages()
    counter.install()
    source = resolve_model(str(model_dir))
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=() if mode == "stream" else (RunnerSpec("cpu", "bf16"),),
                          prompts="quick", max_new_tokens=16, reference_streaming=mode == "stream")
    started = time.monotonic()
    if mode == "stream":
        from transformers import AutoTokenizer

        from llm_adapt.accuracy.reference import measure_reference
        from llm_adapt.prompts import load_prompts

        gold = measure_reference(source, AutoTokenizer.from_pretrained(source.path), load_prompts("quick"), opts,
                                 stages.progress)
        tokens = {"compared": sum(len(p.sequence) for p in gold.prompts),
                  "generated": sum(len(p.generated) for p in gold.prompts)}
    else:
        from llm_adapt.accuracy.compare import compare

        result = compare(source, opts, stages.progress)
        tokens = {"compared": result.prompts["tokens_compared"], "generated": result.prompts["generated_tokens"]}
    wall = time.monotonic() - started
    return {"wall_s": wall, "stages": stages.finish(), "bytes": counter.bytes, "flops": counter.flops,
            "linear_calls": counter.calls, "tokens": tokens, "peak_rss_gib": max(r["peak_rss_gib"] for r in stages.rows.values())}


def parameter_count(model_dir: Path) -> int:
    """From the safetensors headers (the project's own reader)."""
    from llm_adapt.models.weights import parameters_from_weights

    return parameters_from_weights(model_dir)[0]


def bound_seconds(run: dict, bandwidth_gb_s: float, rates: dict[str, float]) -> dict[str, float]:
    read = sum(run["bytes"].values()) / (bandwidth_gb_s * 1e9)
    compute = sum(f / (rates.get(d, rates["float32"]) * 1e12) for d, f in run["flops"].items())
    return {"memory_s": read, "compute_s": compute, "bound_s": read + compute}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"])
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the checkpoints here")
    parser.add_argument("--child", nargs=2, metavar=("DIR", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(Path(args.child[0]), args.child[1])), flush=True)
        return
    from llm_adapt.platforms.host_perf import copy_bandwidth, matmul_rate

    bandwidth = copy_bandwidth()
    rates = {"float32": matmul_rate("fp32")["tflops"], "bfloat16": matmul_rate("bf16")["tflops"]}
    print(f"copy bandwidth {bandwidth['gb_per_s']:.1f} GB/s; matmul fp32 {rates['float32'] * 1e3:.0f} GFLOP/s, "
          f"bf16 {rates['bfloat16'] * 1e3:.0f} GFLOP/s")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for name in args.model or ["llama-3.2-1b", "llama-3.2-3b"]:
            started = time.monotonic()
            model_dir = write_checkpoint(name, root / name)
            written = time.monotonic() - started
            mode = "stream" if name == "llama-3.1-8b" else "compare"
            proc = subprocess.run([sys.executable, __file__, "--child", str(model_dir), mode], capture_output=True,
                                  text=True)
            line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line is None:
                print(f"{name}: failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
                continue
            run = json.loads(line[len("RESULT "):])
            params = parameter_count(model_dir)
            bound = bound_seconds(run, bandwidth["gb_per_s"], rates)
            print(f"\n{name} ({params / 1e9:.2f} B params, checkpoint written in {written:.0f} s), {mode}: "
                  f"{run['wall_s']:.0f} s, peak RSS {run['peak_rss_gib']:.1f} GiB, "
                  f"{run['tokens']['compared']} positions compared, {run['tokens']['generated']} generated")
            print(f"  {run['wall_s'] / (params / 1e9):.0f} s per billion parameters; lower bound {bound['bound_s']:.0f} s "
                  f"(weights read {bound['memory_s']:.0f} s + matmul FLOPs {bound['compute_s']:.0f} s): "
                  f"{run['wall_s'] / bound['bound_s']:.2f}x the bound; {run['linear_calls']} weight matmuls")
            for stage, row in run["stages"].items():
                print(f"  {stage:<40} {row['seconds']:8.1f} s  peak RSS {row['peak_rss_gib']:5.1f} GiB")


if __name__ == "__main__":
    main()
