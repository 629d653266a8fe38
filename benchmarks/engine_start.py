"""How long a vLLM-CPU engine takes to answer, in the three process layouts, side by side in one run.

The default model, eager, fp32, 1 GiB of KV, one start after another in interleaved rounds:
- serve:        the layout `serve` and `run` use (API server, engine core and worker spawned);
- forked core:  the tests' layout (the worker inside the engine core, the engine core forked from the
                API server: VLLM_ENABLE_V1_MULTIPROCESSING=0, LLM_ADAPT_FORK_ENGINE_CORE=1);
- warm:         the forked core, with the API server forked from a warm process that has imported
                vLLM (LLM_ADAPT_WARM_VLLM; engines/warm_start.py). The warm process is started once
                before the rounds, and that one-off cost is printed on its own.
Each start is timed from launch to ready (/health and /v1/models answer), and each server answers one
greedy request whose log-probs must be equal across the layouts. Prints, per layout, the median and
spread of the ready times and each round's ratio to `serve`.

Run: .venv/bin/python benchmarks/engine_start.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

LAYOUTS = {
    "serve": {},
    "forked core": {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "LLM_ADAPT_FORK_ENGINE_CORE": "1"},
    "warm": {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "LLM_ADAPT_FORK_ENGINE_CORE": "1", "LLM_ADAPT_WARM_VLLM": ""},
}
VARIABLES = sorted({k for env in LAYOUTS.values() for k in env})


def one_start(plan: dict, env: dict[str, str], log: Path) -> tuple[float, list[float]]:
    """(seconds to ready, the greedy answer's log-probs) for one engine in `env`'s layout."""
    import httpx

    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch

    for key in VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(env)
    with ManagedServer(vllm_launch(plan, port=free_port()), log) as server:
        reply = httpx.post(server.endpoint.base_url + "/completions", timeout=120,
                           json={"model": server.spec.served_model, "prompt": "The capital of France is",
                                 "max_tokens": 8, "temperature": 0, "logprobs": 1}).json()
        return server.startup_seconds, reply["choices"][0]["logprobs"]["token_logprobs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model("default")
    options = PlanOptions(model_path=str(source.path), served_model_name=source.name, kv_cache_space_gib=1,
                          max_model_len=1024, dtype="fp32")
    plan = run_inspect(source, options, "cpu").plan
    work = Path(tempfile.mkdtemp(prefix="engine-start-"))
    LAYOUTS["warm"]["LLM_ADAPT_WARM_VLLM"] = tempfile.mkdtemp(prefix="llm-adapt-warm-")
    first, _ = one_start(plan, LAYOUTS["warm"], work / "warm-first.log")
    print(f"warm process started with the first warm start: {first:.1f} s to ready (one-off)", flush=True)
    ready: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    answers: dict[str, list[float]] = {}
    for r in range(args.rounds):
        names = list(LAYOUTS)
        names = names[r % len(names):] + names[:r % len(names)]  # rotate the order: drift reaches all alike
        for name in names:
            seconds, logprobs = one_start(plan, LAYOUTS[name], work / f"{name.replace(' ', '-')}-{r}.log")
            ready[name].append(seconds)
            answers.setdefault(name, logprobs)
            print(f"round {r + 1}: {name:12s} ready in {seconds:5.1f} s", flush=True)
    same = all(a == answers["serve"] for a in answers.values())
    print(f"\ngreedy log-probs equal across the layouts: {same}")
    print(f"{'layout':12s} {'median s':>9s} {'min-max s':>13s} {'ratio to serve (median, min-max)':>34s}")
    for name, values in ready.items():
        ratios = [v / s for v, s in zip(values, ready["serve"])]
        print(f"{name:12s} {statistics.median(values):9.1f} {min(values):6.1f}-{max(values):<6.1f} "
              f"{statistics.median(ratios):12.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    shutil.rmtree(LAYOUTS["warm"]["LLM_ADAPT_WARM_VLLM"], ignore_errors=True)  # its warm process ended with us


if __name__ == "__main__":
    main()
