"""The adaptation strategy, decided by evidence.

native in vLLM's registry          -> direct registration (the registry is the evidence);
not native                         -> start vLLM with `--model-impl transformers` and dummy weights, for real;
                                      started and answered -> the Transformers backend;
neither                            -> the engine's one-line cause, and a generated skeleton of an
                                      out-of-tree vLLM general plugin calling ModelRegistry.register_model.

Everything here is pure planning: `decide` and `plugin_files`; the trial that starts the engine is
engines/backend_trial.py.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.inspect.support import SupportAnswer
from llm_adapt.messages import Reason, Said, reason

DIRECT = "direct registration"
BACKEND = "Transformers backend"
PLUGIN = "out-of-tree plugin"


@with_config(ConfigDict(extra="allow"))
class TrialRecord(TypedDict, total=False):
    """BackendTrial.to_dict: one start of vLLM with --model-impl transformers, as inspect.json records it."""
    started: bool
    answered: bool
    seconds: float
    cause: str | None
    argv: list[str]
    reply: str | None
    log: str | None
    weights: str


@with_config(ConfigDict(extra="allow"))
class PluginSkeleton(TypedDict):
    """Where write_plugin wrote the out-of-tree plugin's skeleton, and its files."""
    path: str
    files: list[str]


@with_config(ConfigDict(extra="allow"))
class StrategyRecord(TypedDict, total=False):
    """Strategy.to_dict, as inspect.json records it ({} in one written before)."""
    decision: str
    headline: Said
    evidence: list[Said]
    trial: TrialRecord | None
    plugin: PluginSkeleton | None


@dataclass(frozen=True)
class BackendTrial:
    """One start of vLLM with --model-impl transformers: what happened, with the engine's own words."""

    started: bool
    answered: bool
    seconds: float
    cause: str | None  # the engine log's root-cause line when it did not start or answer
    argv: list[str]
    reply: str | None = None  # the completion it returned
    log: str | None = None
    weights: str = "dummy"  # "dummy" (--load-format dummy) or "checkpoint"

    def to_dict(self) -> TrialRecord:
        return TrialRecord(**asdict(self))


@dataclass(frozen=True)
class Strategy:
    decision: str  # DIRECT | BACKEND | PLUGIN, with " (not tried)" when no trial ran
    headline: str  # the headline and the evidence lines: Reasons where they have words
    evidence: list[str] = field(default_factory=list)
    trial: TrialRecord | None = None
    plugin: PluginSkeleton | None = None  # the generated skeleton

    def to_dict(self) -> StrategyRecord:
        return StrategyRecord(**asdict(self))


def decide(architecture: str, support: SupportAnswer, trial: BackendTrial | None,
           plugin: PluginSkeleton | None = None) -> Strategy:
    """Pure: the strategy from the registry answer and, when not native, the backend trial."""
    registry = support["registry"]
    if support["vllm"] == "native":
        return _strategy(DIRECT, reason("strategy_native", arch=architecture),
                         [reason("st_native", registry=registry, arch=architecture)])
    if trial is None:
        guess = BACKEND if support["vllm"] == "transformers-backend" else PLUGIN
        return _strategy(f"{guess} (not tried)", support["detail"],
                         [reason("st_not_native", registry=registry, arch=architecture), reason("st_not_tried")])
    weights = reason(f"st_weights_{trial.weights}") if trial.weights in ("dummy", "checkpoint") else trial.weights
    outcome = reason("st_not_started") if not trial.started else reason("st_answered" if trial.answered else "st_silent")
    tried = reason("st_tried", weights=weights, outcome=outcome, seconds=trial.seconds)
    evidence = [reason("st_not_native", registry=registry, arch=architecture), tried]
    if trial.started and trial.answered:
        return _strategy(BACKEND, reason("strategy_backend", arch=architecture),
                         evidence + ([reason("st_reply", reply=trial.reply)] if trial.reply else []), trial.to_dict())
    return _strategy(PLUGIN, reason("strategy_plugin", arch=architecture,
                                    cause=trial.cause or reason("st_no_cause_in_log")),
                     evidence + [reason("st_engine", cause=trial.cause) if trial.cause else reason("st_no_cause")],
                     trial.to_dict(), plugin)


def _strategy(decision: str, headline: Reason | str, evidence: list[Reason | str], trial: TrialRecord | None = None,
              plugin: PluginSkeleton | None = None) -> Strategy:
    return Strategy(decision, headline, evidence, trial, plugin)


def plugin_name(architecture: str) -> str:
    """A Python package name for the plugin: vllm_plugin_<snake_case architecture>."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", re.sub(r"ForCausalLM$", "", architecture)).lower()
    return "vllm_plugin_" + re.sub(r"[^a-z0-9_]", "_", snake)


def plugin_files(architecture: str, inventory_rows: list[tuple[str, str]]) -> dict[str, str]:
    """The files of an out-of-tree vLLM general plugin that registers `architecture` (pure)."""
    pkg = plugin_name(architecture)
    blocks = "\n".join(f"#   {name}: {value}" for name, value in inventory_rows)
    return {
        "pyproject.toml": PYPROJECT.format(dist=pkg.replace("_", "-"), pkg=pkg),
        f"{pkg}/__init__.py": INIT.format(arch=architecture, pkg=pkg),
        f"{pkg}/model.py": MODEL.format(arch=architecture, blocks=blocks),
        "README.md": README.format(arch=architecture, dist=pkg.replace("_", "-")),
    }


def write_plugin(directory: Path, architecture: str, inventory_rows: list[tuple[str, str]]) -> PluginSkeleton:
    directory = Path(directory) / plugin_name(architecture)
    files = plugin_files(architecture, inventory_rows)
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {"path": str(directory), "files": sorted(files)}


PYPROJECT = '''[project]
name = "{dist}"
version = "0.1.0"
dependencies = ["vllm"]

# vLLM loads every "vllm.general_plugins" entry point in each process it starts (API server and workers).
[project.entry-points."vllm.general_plugins"]
register = "{pkg}:register"
'''

INIT = '''"""Registers {arch} with vLLM. Installed with `pip install -e .`; vLLM calls register() at start-up."""


def register() -> None:
    from vllm import ModelRegistry

    if "{arch}" not in ModelRegistry.get_supported_archs():
        # A "module:Class" string: vLLM imports the module lazily, in the worker that needs it.
        ModelRegistry.register_model("{arch}", "{pkg}.model:{arch}")
'''

MODEL = '''"""vLLM implementation of {arch}: a skeleton to fill in.

What llm-adapt read from the model (operator, value):
{blocks}

Start from the vLLM model closest to this inventory (vllm/model_executor/models/llama.py for a
Llama-like layout) and keep its structure: parallel linear layers, vLLM's Attention, get_rope, and a
load_weights() that maps the checkpoint names onto this module tree.
"""

from collections.abc import Iterable

import torch
from torch import nn


class {arch}(nn.Module):
    def __init__(self, *, vllm_config, prefix: str = "") -> None:
        super().__init__()
        self.config = vllm_config.model_config.hf_config
        raise NotImplementedError("build the layers listed in the docstring with vLLM's layers")

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, intermediate_tensors=None,
                inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        raise NotImplementedError
'''

README = '''# vLLM plugin for {arch}

Generated by llm-adapt because neither vLLM nor its Transformers backend ran {arch}.

    pip install -e .          # registers the "vllm.general_plugins" entry point
    llm-adapt inspect MODEL   # should now report {arch} as native
    llm-adapt run MODEL       # accuracy against the fp32 gold, probes and benchmarks

Fill in `{dist_pkg}/model.py` first; its docstring lists the operators llm-adapt found in the model.
'''.replace("{dist_pkg}", "the package")
