"""Batched in-process greedy decoding against one prompt at a time, side by side. Prints ratios.

Same model, same prompts (the default suite, chat-templated), same stop tokens; the two ways
interleaved over --rounds rounds; median and spread of each, the ratio of medians, and whether the
tokens agree (fp32: they must; bf16: batch shapes change the rounding, so a few may differ).

Run: .venv/bin/python benchmarks/greedy_batching.py [--dtype fp32] [--rounds 3] [--max-new-tokens 24]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--suite", default="default")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from llm_adapt.accuracy.reference import eos_ids_of
    from llm_adapt.accuracy.runner import Runner, RunnerSpec
    from llm_adapt.models.source import resolve_model
    from llm_adapt.prompts import load_prompts

    source = resolve_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(source.path)
    prompts = [list(tokenizer.apply_chat_template(p.as_messages(), add_generation_prompt=True, tokenize=True,
                                                  return_dict=True)["input_ids"]) for p in load_prompts(args.suite)]
    eos = eos_ids_of(source.path, tokenizer)
    runner = Runner(RunnerSpec("cpu", args.dtype), source.path)
    times: dict[str, list[float]] = {"one at a time": [], "batched": []}
    outputs: dict[str, list[list[int]]] = {}
    for _ in range(args.rounds):
        for name, run in (("one at a time", lambda: [runner.generate(p, args.max_new_tokens, eos) for p in prompts]),
                          ("batched", lambda: runner.generate_all(prompts, args.max_new_tokens, eos))):
            start = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - start)
    tokens = sum(len(g) for g in outputs["batched"])
    print(f"{source.name} {args.dtype}: {len(prompts)} prompts ({sum(map(len, prompts))} prompt tokens), "
          f"{tokens} generated tokens, {args.rounds} interleaved rounds")
    for name, values in times.items():
        print(f"  {name:14s} median {statistics.median(values):7.2f} s  (min {min(values):.2f}, max {max(values):.2f})")
    ratio = statistics.median(times["one at a time"]) / statistics.median(times["batched"])
    same = sum(a == b for a, b in zip(outputs["one at a time"], outputs["batched"]))
    print(f"  speed-up {ratio:.2f}x; identical continuations: {same} of {len(prompts)}")


if __name__ == "__main__":
    main()
