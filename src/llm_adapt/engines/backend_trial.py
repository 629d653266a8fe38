"""The Transformers-backend trial: vLLM started once with `--model-impl transformers` and dummy
weights, one completion, stopped. Its outcome is the evidence inspect/strategy.py decides on."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from llm_adapt.inspect.strategy import BackendTrial, Strategy, decide, write_plugin


def settle_strategy(inspect_result, directory: Path, startup_timeout_s: float = 600.0) -> Strategy:
    """Run the backend trial when vLLM has no native implementation; on failure write the plugin
    skeleton into `directory`. Updates and returns inspect_result.strategy's source of truth."""
    arch, support = inspect_result.architecture, inspect_result.support
    if support["vllm"] == "native":
        strategy = decide(arch, support, None)
    else:
        trial = try_transformers_backend(inspect_result, directory, startup_timeout_s)
        plugin = None
        if not (trial.started and trial.answered):
            rows = [(op["name"], op["value"]) for op in inspect_result.operators]
            plugin = write_plugin(directory, arch, rows)
        strategy = decide(arch, support, trial, plugin)
    inspect_result.strategy = strategy.to_dict()
    return strategy


def try_transformers_backend(inspect_result, log_dir: Path, startup_timeout_s: float = 600.0) -> BackendTrial:
    """Start vLLM once with the plan's eager command plus --model-impl transformers and dummy weights,
    send one greedy completion, stop it. Never raises for an engine failure: that is the evidence."""
    from llm_adapt.command import Command
    from llm_adapt.engines.server import EngineStartError, ManagedServer, free_port
    from llm_adapt.engines.session import dummy_args
    from llm_adapt.engines.vllm import vllm_launch

    extra = ["--model-impl", "transformers", *dummy_args(inspect_result)]
    spec = vllm_launch(inspect_result.plan, port=free_port(), extra_args=extra, startup_timeout_s=startup_timeout_s)
    if not Command.from_argv(spec.argv).has("--trust-remote-code") and inspect_result.config.get("custom_code"):
        note = "the model ships custom code; pass --trust-remote-code to let vLLM run it"
    else:
        note = None
    log = Path(log_dir) / "transformers-backend.log"
    started = time.monotonic()
    try:
        with ManagedServer(spec, log) as server:
            reply, cause = _one_completion(server.endpoint, bool(inspect_result.model.get("has_tokenizer")))
            return BackendTrial(True, reply is not None, round(time.monotonic() - started, 1), cause, spec.argv,
                                reply, str(log))
    except EngineStartError as error:
        cause = pydantic_reason(log.read_text(errors="replace") if log.exists() else "") or error.cause
        return BackendTrial(False, False, round(time.monotonic() - started, 1),
                            cause + (f" ({note})" if note else ""), spec.argv, None, str(log))


PYDANTIC_VALUE_ERROR = re.compile(r"^\s*Value error, (?P<reason>.*?)(?: \[type=.*)?$", re.MULTILINE)


def pydantic_reason(log_text: str) -> str | None:
    """vLLM wraps config errors in a pydantic ValidationError whose first line says nothing; the reason
    is on the "Value error, ..." line under it."""
    if "ValidationError" not in log_text:
        return None
    match = PYDANTIC_VALUE_ERROR.search(log_text)
    return match["reason"].strip() if match else None


def _one_completion(endpoint, has_tokenizer: bool) -> tuple[str | None, str | None]:
    """One greedy completion through the shared client (the endpoint's key on it): its text, or why not."""
    import httpx

    from llm_adapt.engines.client import EndpointClient, ServerGone

    prompt: Any = "The capital of France is" if has_tokenizer else [1, 2, 3, 4]
    try:
        response = EndpointClient(endpoint, endpoint.model, timeout_s=120).post(
            "completions", {"prompt": prompt, "max_tokens": 4, "temperature": 0})
        choices = response.json().get("choices") if response.status_code == 200 else None
    except (ServerGone, httpx.HTTPError, ValueError) as exc:
        return None, f"completion request failed: {type(exc).__name__}: {exc}"
    if not choices:
        return None, f"completion answered HTTP {response.status_code}: {response.text[:200]}"
    choice = choices[0]
    return repr(choice.get("text") or choice.get("token_ids")), None
