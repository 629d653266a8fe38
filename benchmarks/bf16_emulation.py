"""Is the emulated bf16 floor the native bf16 floor? Both measured side by side on one gold.

For each model: the fp32 gold, then the bf16 noise floor twice, natively (torch's bf16 kernels) and
emulated (accuracy/bf16_emulation.py: bf16 storage, fp32 matmuls), each with its kernel-spread
rerun (eager attention), as `compare` and `run` measure a floor. Printed per tensor:
both rel. L2 errors against the gold, their ratio, and the ratio the verdicts accept as chance for
that tensor when one floor is judged against the other exactly as `compare` judges a target
against its floor (compare.with_floor: the prompts resampled, and the kernel-spread rerun of the
floor judged against), both ways; then the mean KL the same way, and the seconds each floor took.
The emulation stands in for the native floor only if each passes as the other's target: every
ratio within what chance allows, emulated against native and native against emulated.

Models: `default` (SmolLM2-135M) and random weights in a published seed's shape
(`llama-3.2-1b`: tests/fixtures/configs, built as benchmarks/seed_compare.py builds it).

  .venv/bin/python benchmarks/bf16_emulation.py [--model default] [--model llama-3.2-1b] [--prompts default] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(model: str, prompts: str, workdir: Path) -> dict:
    from transformers import AutoTokenizer

    from llm_adapt.accuracy.measure import measure_floor
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.reference import measure_reference
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.accuracy.compare import with_floor
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import cpu_has_native_bf16
    from llm_adapt.prompts import load_prompts

    if model == "default":
        source = resolve_model("default")
    else:
        from seed_compare import write_checkpoint

        source = resolve_model(str(write_checkpoint(model, workdir / model)))
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(), prompts=prompts, max_new_tokens=16)
    tokenizer = AutoTokenizer.from_pretrained(source.path)
    gold = measure_reference(source, tokenizer, load_prompts(prompts), opts, lambda *a: None)
    gold.key = None  # floors measured afresh, never from the cache
    floors, seconds = {}, {}
    for name, spec in (("native", RunnerSpec("cpu", "bf16")), ("emulated", RunnerSpec("cpu", "bf16", emulated=True))):
        started = time.monotonic()
        floors[name] = measure_floor(spec, source, gold, tokenizer, opts, lambda *a: None).report
        seconds[name] = round(time.monotonic() - started, 1)
        print(f"{model}: {name} floor in {seconds[name]} s", file=sys.stderr)
    native, emulated = floors["native"], floors["emulated"]
    e_vs_n, n_vs_e = with_floor(emulated, native, opts), with_floor(native, emulated, opts)
    rows = [_row(a["name"], a["floor_rel_l2"], a["rel_l2"], a["allowed"], b["allowed"])
            for a, b in zip(e_vs_n.layers, n_vs_e.layers)]
    kl = _row("mean KL", native.logits["kl_mean"], emulated.logits["kl_mean"], e_vs_n.vs_floor["kl_allowed"],
              n_vs_e.vs_floor["kl_allowed"])
    within = all(r["within"] for r in rows) and kl["within"]
    return {"model": source.name, "prompts": prompts, "tokens": sum(len(p.sequence) for p in gold.prompts),
            "native_bf16_cpu": cpu_has_native_bf16(), "seconds": seconds,
            "speedup": round(seconds["native"] / seconds["emulated"], 2), "layers": rows, "kl": kl,
            "within_spread": within, "verdicts": [e_vs_n.verdict["status"], n_vs_e.verdict["status"]],
            "worst_ratio": max((r["ratio"] for r in rows + [kl]), key=lambda x: abs(x - 1))}


def _row(name: str, native: float, emulated: float, allowed: float, allowed_back: float) -> dict:
    """emulated / native against what the native floor allows, and native / emulated against what
    the emulated floor allows."""
    if native == emulated == 0:  # exact in both (e.g. embeddings of a checkpoint stored in bf16): the same
        ratio = 1.0
    else:
        ratio = emulated / native if native else float("inf")
    back = 1 / ratio if ratio else float("inf")
    return {"name": name, "native": native, "emulated": emulated, "ratio": round(ratio, 4),
            "allowed": round(allowed, 4), "allowed_back": round(allowed_back, 4),
            "within": ratio <= allowed and back <= allowed_back}


def rejudged(result: dict) -> dict:
    """A stored result judged again by _row from its own figures (nothing measured)."""
    rows = [_row(r["name"], r["native"], r["emulated"], r["allowed"], r["allowed_back"]) for r in result["layers"]]
    kl = result["kl"]
    kl = _row(kl["name"], kl["native"], kl["emulated"], kl["allowed"], kl["allowed_back"])
    return result | {"layers": rows, "kl": kl, "within_spread": all(r["within"] for r in rows) and kl["within"],
                     "worst_ratio": max((r["ratio"] for r in rows + [kl]), key=lambda x: abs(x - 1))}


def show(result: dict) -> None:
    print(f"\n{result['model']} ({result['prompts']} suite, {result['tokens']} tokens; native bf16 on this CPU: "
          f"{result['native_bf16_cpu']})")
    print(f"{'tensor':<14}{'native':>12}{'emulated':>12}{'e/n':>8}{'allowed':>9}{'n/e':>8}{'allowed':>9}  within")
    for r in result["layers"] + [result["kl"]]:
        print(f"{r['name']:<14}{r['native']:>12.4e}{r['emulated']:>12.4e}{r['ratio']:>8.3f}{r['allowed']:>9.3f}"
              f"{1 / r['ratio']:>8.3f}{r['allowed_back']:>9.3f}  {'yes' if r['within'] else 'NO'}")
    s = result["seconds"]
    print(f"floor seconds: native {s['native']}, emulated {s['emulated']} ({result['speedup']}x); "
          f"worst ratio {result['worst_ratio']}; every tensor within the native floor's spread: "
          f"{'yes' if result['within_spread'] else 'NO'}; verdicts: emulated as native's target "
          f"{result['verdicts'][0]}, native as emulated's {result['verdicts'][1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", help="default, or a seed shape such as llama-3.2-1b")
    parser.add_argument("--prompts", default="default", help="prompt suite (default: default)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="keep built checkpoints here")
    parser.add_argument("--show", type=Path, metavar="JSON", help="judge and print an earlier --json again, measuring nothing")
    args = parser.parse_args()
    if args.show:
        results = [rejudged(r) for r in json.loads(args.show.read_text())]
        for result in results:
            show(result)
        return 0 if all(r["within_spread"] for r in results) else 1
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(m, args.prompts, args.keep or Path(tmp)) for m in args.model or ["default"]]
    for result in results:
        show(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["within_spread"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
