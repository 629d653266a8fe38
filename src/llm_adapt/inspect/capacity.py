"""The skill's capacity baseline: 128k context at 16 concurrent sequences on one machine, judged from
the plan's KV arithmetic (its pool of cache blocks, as vLLM will log it). Pure."""

from __future__ import annotations

import math

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.messages import reason
from llm_adapt.messages.core import Said

BASELINE_LEN = 131072  # "max-model-len=128k"
BASELINE_SEQS = 16  # "max-num-seqs=16"
FEASIBLE, NOT_FEASIBLE, NOT_APPLICABLE = "feasible", "not feasible", "not applicable"
SOURCE = ("vLLM-Ascend model-adapter skill, workflow-checklist.md §11: baseline (single machine) "
          "max-model-len=128k + max-num-seqs=16, or the explicit reason it is not feasible")


class PlanFigures(TypedDict):
    """What the baseline reads of a plan (DeployPlan.to_dict() holds these and more)."""
    block_size: int
    kv_cache_blocks: int
    kv_bytes_per_token: int
    kv_pool_bytes: int


@with_config(ConfigDict(extra="allow"))
class Capacity(TypedDict, total=False):
    """The baseline judged on one plan (capacity_baseline); {} in an adaptation.json of a run without one."""
    length: int
    seqs: int
    status: str  # FEASIBLE, NOT_FEASIBLE or NOT_APPLICABLE
    feasible: bool | None  # None where it does not apply
    reasons: list[Said]
    needed_blocks: int
    pool_blocks: int
    block_size: int
    pool_tokens: int
    longest_at_seqs: int
    seqs_at_length: int
    source: str


def blocks_for(tokens: int, block: int) -> int:
    return math.ceil(tokens / block)


def capacity_baseline(plan: PlanFigures, max_position_embeddings: int | None,
                      length: int = BASELINE_LEN, seqs: int = BASELINE_SEQS) -> Capacity:
    """Whether `seqs` sequences of `length` tokens fit the planned KV pool at once, with the numbers,
    the reasons when not, and the largest pairs that do fit (longest length at `seqs` sequences;
    most sequences at `length`). vLLM holds one block back (the null block). Not applicable (status
    "not applicable", feasible None) to a model whose own limit, max_position_embeddings (the limit the
    plan holds --max-model-len to), is under `length`: the model, not the deployment, stops it."""
    block = int(plan["block_size"])
    usable = max(int(plan["kv_cache_blocks"]) - 1, 0)
    need = blocks_for(length, block) * seqs
    reasons = []
    applies = max_position_embeddings is None or max_position_embeddings >= length
    if not applies:
        reasons.append(reason("cap_model_short", mpe=max_position_embeddings, length=length))
    elif need > usable:
        reasons.append(reason("cap_pool_short", seqs=seqs, length=length, need=need, block=block, need_tokens=need * block,
                              need_gib=need * block * plan["kv_bytes_per_token"] / 2**30, usable=usable,
                              usable_tokens=usable * block, pool_gib=plan["kv_pool_bytes"] / 2**30))
    longest = (usable // seqs) * block
    if max_position_embeddings is not None:
        longest = min(longest, max_position_embeddings)
    at_length = usable // blocks_for(length, block) if applies else 0
    status = NOT_APPLICABLE if not applies else FEASIBLE if not reasons else NOT_FEASIBLE
    return {"length": length, "seqs": seqs, "status": status, "feasible": None if not applies else not reasons,
            "reasons": reasons,
            "needed_blocks": need, "pool_blocks": usable, "block_size": block, "pool_tokens": usable * block,
            "longest_at_seqs": longest, "seqs_at_length": at_length, "source": SOURCE}
