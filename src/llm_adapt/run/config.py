"""What the user asked of a run: fixed before the first stage starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from llm_adapt.accuracy import defaults

if TYPE_CHECKING:
    from llm_adapt.engines.endpoint import Endpoint
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.models.source import ModelSource

@dataclass(frozen=True)
class RunSizes:
    """How much each measuring stage does on a run's defaults. No emulated weight quantization by
    default: `--quant int8-tensor` / `int8-channel` add one as an informational experiment (each is one
    more in-process pass, about a minute on the default model on 2 cores); it never decides the verdict."""

    prompts: str = defaults.PROMPTS
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    latency_iterations: int = 5
    input_len: int = 128
    output_len: int = 64
    throughput_prompts: int = 16
    sweep: tuple[int, ...] = (1, 2, 4)
    sweep_prompts: int = 8
    quants: tuple[str, ...] = ()
    corpus_tokens: int | None = None  # perplexity on the first N tokens of each corpus text (None: all)


# The quick suite's prompts are about 400 tokens in all: the whole corpus (about 2,400) would be most of
# each runner's work, so a quick run reads the first 256 tokens of each corpus text.
QUICK = RunSizes(prompts="quick", max_new_tokens=12, latency_iterations=3, input_len=64, output_len=16,
                 throughput_prompts=6, sweep=(1, 2), sweep_prompts=4, corpus_tokens=256)


@dataclass(frozen=True)
class RunConfig:
    out: Path
    model_arg: str
    plan_options_for: Callable[["ModelSource"], "PlanOptions"]
    platform: str | None = None  # None: detected
    target: str | None = None  # in-process DEVICE:DTYPE; None: this machine's platform at bf16
    engine: str | None = None  # vllm | transformers; None: vLLM when installed
    endpoint: "Endpoint | None" = None  # an external server instead of starting one
    graph: bool = False
    # a differential run (`--settings`): the deployment settings served in turn, the first the run's own
    settings: tuple = ()
    port: int | None = None  # the started engine's port; None: a free one
    startup_timeout_s: float = 900.0
    sizes: RunSizes = RunSizes()
    lang: str = "en"
    skip: frozenset[str] = field(default_factory=frozenset)
    resume: bool = False
    dummy: bool = False  # random weights: serve, probes and bench only
    dummy_first: bool = False  # `--stages dummy,real`: a dummy-weight run in its own directory first
    offline: bool = False
    tasks: tuple[str, ...] = ()  # lm-eval tasks for the opt-in eval stage
    eval_limit: int | None = None  # items per task
    gsm8k_data: Path | None = None  # --gsm8k-data: gsm8k's files at a path, read instead of the hub's dataset
    # the layers stage, capture inside the engine this run starts: "on" (--layers), "auto" (when endpoint
    # accuracy is FAIL or WARN: the escalation), "off" (--no-escalate)
    layers: str = "auto"
    # where progress and one-line messages go (I/O hooks, not settings)
    progress: Callable[[str, int, int], None] = lambda what, done, total: None
    log: Callable[[str], None] = print
    # the report stage's renderer (report/render.render_report, given by the command that starts the run, so the
    # run never imports the report); None: the report is drawn by `llm-adapt report` in a child process
    render_report: Callable[[Path, str], list[Path]] | None = None
