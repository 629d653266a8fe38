"""The shapes of the served accuracy's requests, chosen on purpose: each request of the teacher-forced pass tagged
with its length against the engine's KV block size (on a multiple, one below, one above), how many prefill chunks
it takes under the deployment's budget, whether it was served alone or among others, and whether it repeats a
prompt the server has just served (a prefix-cache hit). Faults that hit only some requests follow these shapes
(vLLM-Ascend #8908: lengths on a block multiple; #11508: only prompts split into several chunks; batch-variant
kernels; the prefix cache). When the out-of-line requests share a shape the in-line ones lack, the likely cause
names it. Pure.
"""

from __future__ import annotations

import math

from typing_extensions import TypedDict

ON, BELOW, ABOVE, OTHER = "on a block multiple", "one below a multiple", "one above a multiple", "other"
ALONE, BATCHED = "alone", "batched"
COLD, REPEAT, AS_SERVED = "cold", "repeat", "as served"  # cache: none shared, a prompt served again, the suite's own
MULTIPLES = (1, 2)  # the block multiples the length probes sit on (short: a 128-token block gives 127-129, 255-257)
REPEATS = 3  # prompts of the suite sent again, one at a time, after the pass (each a prefix-cache hit)
MIN_SHARED = 2  # requests out of line, and in line without the shape, before a shape is named


class Shape(TypedDict):
    block: str  # ON, BELOW, ABOVE or OTHER (OTHER also where the block size is not known)
    chunks: int | None  # prefill chunks under the deployment's budget (None: the budget is not known)
    batch: str  # ALONE or BATCHED
    cache: str  # COLD (a cache salt of its own), REPEAT (served just before) or AS_SERVED


def block_class(tokens: int, block: int | None) -> str:
    if not block or tokens < block - 1:
        return OTHER
    rest = tokens % block
    return ON if rest == 0 else BELOW if rest == block - 1 else ABOVE if rest == 1 else OTHER


def chunk_count(tokens: int, budget: int | None) -> int | None:
    return math.ceil(tokens / budget) if budget else None


def shape_of(tokens: int, block: int | None, budget: int | None, batch: str, cache: str) -> Shape:
    return Shape(block=block_class(tokens, block), chunks=chunk_count(tokens, budget), batch=batch, cache=cache)


def length_probes(lengths: list[int], block: int | None) -> list[tuple[int, int]]:
    """(prompt index, tokens to send) for each length one below, on and one above the first MULTIPLES of the block
    size, each cut from a suite prompt at least one token longer (its gold's logits are that prompt's first ones:
    a causal model's prefix), the prompts taken in turn. [] without a block size or a prompt that long."""
    if not block:
        return []
    wanted = [m * block + d for m in MULTIPLES for d in (-1, 0, 1)]
    out, turn = [], 0
    for length in wanted:
        long_enough = [i for i, n in enumerate(lengths) if n > length]
        if long_enough:
            out.append((long_enough[turn % len(long_enough)], length))
            turn += 1
    return out


# shape -> (the test on a request's Shape, the likely cause's message key), in the order they are named
CAUSES = (
    (lambda s: s["block"] == ON, "shape_block_aligned"),
    (lambda s: (s["chunks"] or 0) > 1, "shape_chunked"),
    (lambda s: s["cache"] == REPEAT, "shape_prefix_cache"),
    (lambda s: s["batch"] == BATCHED, "shape_batched"),
)


def shared_shape(rows: list[tuple[Shape, bool]]) -> str | None:
    """The message key of the shape that explains the out-of-line requests: every one of them has it, at least
    MIN_SHARED in-line ones lack it, and at least half of the requests with it are out of line (a fault on every
    4th request lands on batched ones by chance, but on a quarter of them); None otherwise, and where fewer than
    MIN_SHARED are out of line (one bad request shares every shape it has). rows: (its shape, out of line). Pure."""
    flagged = [s for s, out in rows if out]
    clean = [s for s, out in rows if not out]
    if len(flagged) < MIN_SHARED:
        return None
    for has, key in CAUSES:
        with_it = sum(has(s) for s in flagged) + sum(has(s) for s in clean)
        if all(has(s) for s in flagged) and sum(not has(s) for s in clean) >= MIN_SHARED \
                and 2 * len(flagged) >= with_it:
            return key
    return None


def coverage(shapes: list[Shape]) -> dict[str, int]:
    """How many requests of each shape ran, for the report's "which shapes ran". Pure."""
    return {"on a block multiple": sum(s["block"] == ON for s in shapes),
            "one below a multiple": sum(s["block"] == BELOW for s in shapes),
            "one above a multiple": sum(s["block"] == ABOVE for s in shapes),
            "several prefill chunks": sum((s["chunks"] or 0) > 1 for s in shapes),
            "prefix-cache repeat": sum(s["cache"] == REPEAT for s in shapes),
            "alone": sum(s["batch"] == ALONE for s in shapes), "batched": sum(s["batch"] == BATCHED for s in shapes)}
