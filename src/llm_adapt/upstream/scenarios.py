"""§9.1 of the tutorial: the three scenarios vLLM-Ascend's template asks for (long context, low latency, high
throughput), each a plan the planner computed with that scenario's max-model-len, max-num-seqs and
max-num-batched-tokens, and the reason for each value.

The choices, and where they come from:
- long context: the longest context the KV cache holds (up to the model's positions), as many sequences of
  it as fit up to the capacity baseline's 16, prefill in 8,192-token chunks;
- low latency: 4,096 tokens, 8 sequences, 2,048-token prefill chunks ("smaller values achieve better
  inter-token latency": vLLM's optimization guide, chunked prefill);
- high throughput: 4,096 tokens, as many sequences as fit up to vLLM's default of 256, 16,384-token chunks
  ("> 8192 for optimal throughput": the same guide).
Where a sequence count depends on the KV cache, the planner's plan at that length gives it, and the plan is
made again with it until the two agree (the activation reserve depends on the count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from llm_adapt.inspect.capacity import BASELINE_SEQS
from llm_adapt.inspect.plan import DeployPlan, make_plan
from llm_adapt.inspect.stage import PlanInputs
from llm_adapt.messages import Reason, reason

SHORT_LEN = 4096  # a typical interactive or batch request, prompt and answer together
LATENCY_SEQS, LATENCY_BATCHED = 8, 2048
THROUGHPUT_SEQS, THROUGHPUT_BATCHED = 256, 16384  # vLLM's default max-num-seqs; its guide's "> 8192"
LONG_BATCHED = 8192


@dataclass(frozen=True)
class Scenario:
    name: str  # as the template names it: "Long Context", "Low Latency", "High Throughput"
    plan: DeployPlan
    why: dict[str, Reason]  # per option (--max-model-len, --max-num-seqs, --max-num-batched-tokens): its reason
    # the sequences of full length its KV cache holds: upstream/kv_figures.fit, the one place every file takes it


def scenarios(inputs: PlanInputs) -> list[Scenario]:
    """The three scenarios' plans for one model and platform, in the template's order of its example rows."""
    return [high_throughput(inputs), long_context(inputs), low_latency(inputs)]


def _plan(inputs: PlanInputs, length: int | None, seqs: int, batched: int) -> DeployPlan:
    """The planner's plan with these three values; a length longer than the KV cache holds is shortened to
    the longest that fits (the planner's own choice without one)."""
    options = replace(inputs.options, max_model_len=None, max_num_seqs=seqs, max_num_batched_tokens=batched)
    longest = make_plan(inputs.spec, inputs.params["from_config"], inputs.target, options)
    if length is None or length >= longest.max_model_len:
        return longest
    return make_plan(inputs.spec, inputs.params["from_config"], inputs.target, replace(options, max_model_len=length))


def _fitting(inputs: PlanInputs, length: int | None, cap: int, batched: int) -> DeployPlan:
    """The plan at `length` with as many sequences as its KV cache holds at full length, up to `cap`. Fewer
    sequences reserve less for activations and leave more for the cache, so the count is taken again from
    each new plan until it holds (a few rounds)."""
    plan = _plan(inputs, length, cap, batched)
    for _ in range(8):
        seqs = max(1, min(cap, math.floor(plan.max_concurrency)))
        if seqs == plan.max_num_seqs:
            break
        plan = _plan(inputs, plan.max_model_len if length is not None else None, seqs, batched)
    return plan


def long_context(inputs: PlanInputs) -> Scenario:
    plan = _fitting(inputs, None, BASELINE_SEQS, LONG_BATCHED)
    return Scenario("Long Context", plan, {
        "--max-model-len": reason("sc_long_len", positions=inputs.spec.max_position_embeddings),
        "--max-num-seqs": reason("sc_long_seqs", seqs=plan.max_num_seqs, cap=BASELINE_SEQS),
        "--max-num-batched-tokens": reason("sc_long_batched")})


def _short(inputs: PlanInputs) -> int:
    return min(SHORT_LEN, inputs.spec.max_position_embeddings)


def low_latency(inputs: PlanInputs) -> Scenario:
    plan = _plan(inputs, _short(inputs), LATENCY_SEQS, LATENCY_BATCHED)
    return Scenario("Low Latency", plan, {
        "--max-model-len": reason("sc_latency_len", mml=plan.max_model_len),
        "--max-num-seqs": reason("sc_latency_seqs"), "--max-num-batched-tokens": reason("sc_latency_batched")})


def high_throughput(inputs: PlanInputs) -> Scenario:
    plan = _fitting(inputs, _short(inputs), THROUGHPUT_SEQS, THROUGHPUT_BATCHED)
    return Scenario("High Throughput", plan, {
        "--max-model-len": reason("sc_throughput_len", mml=plan.max_model_len, fit=int(plan.max_concurrency)),
        "--max-num-seqs": reason("sc_throughput_seqs", cap=THROUGHPUT_SEQS),
        "--max-num-batched-tokens": reason("sc_throughput_batched")})
