"""Accuracy-engine performance, measured side by side in one run. Prints ratios.

1. capture overhead: `compare` (reference + one bf16 target, every layer captured, local error,
   metrics) against the plain forward/generate calls that same work needs, without hooks or metrics;
2. streaming reference on the default model: peak RSS and time against the in-memory fp32 reference;
3. streaming reference on a synthetic wide Llama (3B-like width, 4 layers, random weights in
   safetensors shards): peak RSS against embeddings + 2 layers + 1 GiB.

Run: .venv/bin/python benchmarks/accuracy_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time, torch

def hwm_kib():
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak across exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

from llm_adapt.prompts import load_prompts, render
from transformers import AutoTokenizer
mode, path, suite, new = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tok = AutoTokenizer.from_pretrained(path)
prompts = [render(tok, p) for p in load_prompts(suite)]
base = hwm_kib()
t = time.monotonic()
if mode == "stream":
    from llm_adapt.accuracy.streaming import StreamingReference
    ref = StreamingReference(path)
else:
    from llm_adapt.accuracy.reference import InMemoryReference
    from llm_adapt.accuracy.runner import Runner, RunnerSpec
    ref = InMemoryReference(Runner(RunnerSpec("cpu", "fp32"), path))
gen = ref.greedy_all(prompts, new, [2])
caps = ref.capture_all([p + g for p, g in zip(prompts, gen)])
elapsed = time.monotonic() - t
peak = hwm_kib()
print(json.dumps({"seconds": elapsed, "peak_kib": peak, "base_kib": base, "tokens": gen}))
"""


def child(mode: str, path: Path, suite: str, new: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path), suite, str(new)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def capture_overhead(suite: str, new: int) -> None:
    import torch

    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.prompts import corpus_windows, load_prompts, render
    from llm_adapt.accuracy.runner import Runner, RunnerSpec
    from llm_adapt.models.source import resolve_model
    from transformers import AutoTokenizer

    src = resolve_model("default")
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(RunnerSpec("cpu", "bf16"),), prompts=suite,
                          max_new_tokens=new)
    t = time.monotonic()
    compare(src, opts)
    full = time.monotonic() - t

    tok = AutoTokenizer.from_pretrained(src.path)
    prompts = [render(tok, p) for p in load_prompts(suite)]
    corpus = corpus_windows(tok, opts.ppl_window)
    t = time.monotonic()
    with torch.no_grad():
        ref = Runner(opts.reference, src.path)
        seqs = [p + ref.generate(p, new, [2]) for p in prompts]
        for s in seqs + corpus:
            ref.model(torch.tensor([s]), use_cache=False)
        tgt = Runner(opts.targets[0], src.path)
        for p, s in zip(prompts, seqs):
            for _ in range(2):  # the teacher-forced pass and the layer-by-layer (shadow) pass
                tgt.model(torch.tensor([s]), use_cache=False)
            tgt.generate(p, new, [2])
        for s in corpus:
            tgt.model(torch.tensor([s]), use_cache=False)
    plain = time.monotonic() - t
    print(f"[1] compare with full capture: {full:.1f} s; plain passes it needs: {plain:.1f} s; "
          f"ratio {full / plain:.2f}x (target <= 1.3x)")


def streaming_default(suite: str, new: int) -> None:
    from llm_adapt.models.source import resolve_model

    path = resolve_model("default").path
    mem = child("memory", path, suite, new)
    stream = child("stream", path, suite, new)
    same = mem["tokens"] == stream["tokens"]
    rss = stream["peak_kib"] / mem["peak_kib"]
    above = (stream["peak_kib"] - stream["base_kib"]) / max(mem["peak_kib"] - mem["base_kib"], 1)
    print(f"[2] default model, streaming vs in-memory fp32 reference: peak RSS {stream['peak_kib'] / 1024:.0f} vs "
          f"{mem['peak_kib'] / 1024:.0f} MiB = {rss:.2f}x (above the post-import baseline: {above:.2f}x; target <= 0.35); "
          f"time {stream['seconds']:.1f} vs {mem['seconds']:.1f} s = {stream['seconds'] / mem['seconds']:.2f}x "
          f"(target <= 1.5x); same tokens: {same}")


def streaming_wide(new: int) -> None:
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_tiny_llama

    with tempfile.TemporaryDirectory() as tmp:
        cfg = dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=4, num_attention_heads=24,
                   num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=True)
        path = write_tiny_llama(Path(tmp) / "wide", shard_size="500MB",
                                tokenizer_from=resolve_model("default").path, **cfg)
        embed = cfg["vocab_size"] * cfg["hidden_size"] * 4
        layer = (cfg["hidden_size"] * (cfg["hidden_size"] * 2 + 1024 * 2) + 3 * cfg["hidden_size"] * cfg["intermediate_size"]) * 4
        stream = child("stream", path, "quick", new)
        bound = embed + 2 * layer + 1024**3
        print(f"[3] synthetic wide Llama (embeddings {embed / 2**30:.2f} GiB, layer {layer / 2**30:.2f} GiB): "
              f"streaming peak RSS {stream['peak_kib'] / 2**20:.2f} GiB vs bound embeddings + 2 layers + 1 GiB = "
              f"{bound / 2**30:.2f} GiB -> {'within' if stream['peak_kib'] * 1024 <= bound else 'OVER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick prompt suite and 16 new tokens")
    parser.add_argument("--only", type=int, choices=[1, 2, 3], action="append", help="run only these measurements")
    args = parser.parse_args()
    suite, new = ("quick", 16) if args.quick else ("default", 64)
    steps = {1: lambda: capture_overhead(suite, new), 2: lambda: streaming_default(suite, new), 3: lambda: streaming_wide(8)}
    for number in args.only or [1, 2, 3]:
        steps[number]()


if __name__ == "__main__":
    main()
