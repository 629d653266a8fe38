"""What a comparison measures and how: the options every accuracy stage shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_adapt.accuracy import defaults
from llm_adapt.accuracy.runner import RunnerSpec

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class CompareOptions:
    reference: RunnerSpec
    targets: tuple[RunnerSpec, ...]
    baseline: RunnerSpec | None = None  # None: chosen per target (see floor_for)
    prompts: str = defaults.PROMPTS
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    tie_margin: float = defaults.TIE_MARGIN
    top_k: int = defaults.TOP_K
    ppl_window: int = 512
    corpus_tokens: int | None = None  # perplexity on the first N tokens of each corpus text (None: all of it)
    local_factor: float = 2.0  # a layer's local error "exceeds its floor" above this ratio
    reference_streaming: bool | None = None  # None: stream when the fp32 model would not fit in RAM
    reference_why: dict | None = None  # `--reference auto`: where the gold was placed and why ({en, zh}, gold_placement.py)
    in_flight: int = 4  # served requests at once (endpoint_requests.IN_FLIGHT, the same 4); 1: a `serial` setting
    block_size: int | None = None  # the served engine's KV block size, for the shape probes (None: not known)
    chunk_budget: int | None = None  # its prefill budget a step (--max-num-batched-tokens; None: not known)



GOLD = "cpu:fp32"  # the reference every comparison measures against unless told otherwise


def compare_options(reference: str | RunnerSpec = GOLD, *, targets=(), quants=(), baseline: str | RunnerSpec | None = None,
                    **settings) -> CompareOptions:
    """The one builder of a comparison's options (run, tune, layers, compare, compare-endpoint): the
    reference and the baseline as DEVICE:DTYPE or as parsed; the targets, each then with each weight
    quantization; any other field of CompareOptions by name, where None leaves its default."""
    from llm_adapt.accuracy.runner import parse_runner

    def spec(runner):
        return parse_runner(runner) if isinstance(runner, str) else runner

    given = {name: value for name, value in settings.items() if value is not None}
    return CompareOptions(reference=spec(reference), targets=tuple(with_quants([spec(t) for t in targets], quants)),
                          baseline=spec(baseline) if baseline else None, **given)


def with_quants(mains: list[RunnerSpec], quants: tuple[str, ...] | list[str]) -> list[RunnerSpec]:
    """The targets of a comparison: each main target, then each of them with each weight quantization."""
    from dataclasses import replace

    return list(mains) + [replace(t, quant=q) for t in mains for q in quants]


def served_floor(reference: RunnerSpec, served_dtype: str, explicit: RunnerSpec | None = None) -> RunnerSpec | None:
    """The in-process noise floor of a served model: the reference's device at the served dtype, with
    a floor's numerics here (floor_numerics), or the user's --baseline as given; None when that is
    the reference itself."""
    from dataclasses import replace

    from llm_adapt.accuracy.runner import floor_numerics

    floor = explicit or floor_numerics(replace(reference, dtype=served_dtype))
    return None if floor == reference else floor
