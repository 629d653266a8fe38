"""What a run measured: the checkpoint (its hub id and revision where known), the file format, the
quantization as loaded and the dtype it was converted to before any engine read it.

The default model is a Q4_1 GGUF dequantized to fp32: its figures describe that conversion, not the
checkpoint published on the hub, and every report and exported file says so. `provenance_of` reads it
once, at inspect (I/O: the GGUF header, the package version); inspect.json keeps it under "provenance";
`recorded` reads it back, or rebuilds what an older inspect.json's model entry still tells.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llm_adapt.messages import Reason, reason
from llm_adapt.models import gguf
from llm_adapt.models.quant import QuantRecord
from llm_adapt.models.source import DEFAULT_FILE, DEFAULT_PACKAGE, ModelRef, ModelSource

GGUF, SAFETENSORS, PYTORCH, NO_WEIGHTS = "gguf", "safetensors", "pytorch", "none"
HUB_ORIGINS = ("hf", "ms")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Provenance:
    origin: str  # how MODEL was given: default | gguf | dir | hf | ms
    checkpoint: str  # the hub id (ORG/NAME), the GGUF's file name, or the directory's name
    file_format: str  # gguf | safetensors | pytorch | none (a config without weights)
    revision: str | None = None  # hub revision or snapshot commit; the bundled GGUF's package version
    quantization: str | None = None  # as loaded: the GGUF's file type ("Q4_1"), a checkpoint's scheme; None: float
    stored: dict[str, int] = field(default_factory=dict)  # GGUF: tensors by type; safetensors: parameters by dtype
    converted_to: str | None = None  # the dtype the weights were converted to before serving (GGUF: fp32)
    recorded: bool = True  # False: rebuilt from an older run's model entry, which did not record everything

    @property
    def converted(self) -> bool:
        """Whether the figures describe a conversion rather than the checkpoint's own files."""
        return self.converted_to is not None

    def to_dict(self) -> dict[str, str | bool | dict[str, int] | None]:
        return asdict(self)


def provenance_of(source: ModelSource, weights_by_dtype: dict[str, int] | None = None,
                  quant_scheme: str | None = None) -> Provenance:
    """The provenance of a resolved model (reads the GGUF's header, the default model's package version).
    `weights_by_dtype`: parameters by dtype from the safetensors headers; `quant_scheme`: a pre-quantized
    checkpoint's method and scheme (models/quant.py)."""
    if source.origin in ("default", "gguf"):
        return _of_gguf(source)
    stored = dict(weights_by_dtype or {})
    fmt = SAFETENSORS if stored else (PYTORCH if any(source.path.glob("*.bin")) else NO_WEIGHTS)
    if source.origin in HUB_ORIGINS:
        from llm_adapt.models.hub import parse_hub_id

        hub = parse_hub_id(source.given)
        revision = hub.revision or (source.path.name if COMMIT.match(source.path.name) else None)
        return Provenance(source.origin, hub.repo, fmt, revision, quant_scheme, stored)
    return Provenance(source.origin, source.name, fmt, None, quant_scheme, stored)


def _of_gguf(source: ModelSource) -> Provenance:
    marker = _marker(source.path)
    path = Path(marker.get("source") or (source.given if source.origin == "gguf" else ""))
    revision = _package_version() if source.origin == "default" else marker.get("fingerprint")
    try:
        facts = gguf.header_facts(path)
    except (OSError, ValueError):  # the GGUF moved since its conversion: what the cache recorded only
        facts = gguf.GgufFacts(file_type=None)
    name = path.name if path.name else DEFAULT_FILE
    return Provenance(source.origin, name, GGUF, revision, facts.file_type, facts.tensor_types,
                      converted_to=_dtype(marker.get("dtype")))


def _marker(converted: Path) -> dict[str, Any]:
    try:
        return json.loads((converted / gguf.MARKER).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _package_version() -> str | None:
    try:
        return f"{DEFAULT_PACKAGE.replace('_', '-')} {importlib.metadata.version(DEFAULT_PACKAGE.replace('_', '-'))}"
    except importlib.metadata.PackageNotFoundError:
        return None


def _dtype(torch_name: str | None) -> str:
    # the conversion writes float32 (gguf._convert); a marker without the field was written by the same code
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(torch_name or "float32", torch_name or "fp32")


def recorded(provenance: Provenance | None, model: ModelRef, weights_by_dtype: dict[str, int] | None = None,
             quant: QuantRecord | None = None) -> Provenance | None:
    """The provenance inspect.json recorded, or, for a run recorded before it did, what its model entry, the
    parameters by dtype and the quantization in its config still tell (marked `recorded=False`: the
    quantization of a GGUF was not kept). Pure."""
    if provenance is not None:
        return provenance
    origin = model.get("origin")
    if not origin:
        return None
    stored = weights_by_dtype or {}
    if origin in ("default", "gguf"):  # converted by gguf._convert, which has always written fp32
        name = DEFAULT_FILE if origin == "default" else Path(model.get("given") or "").name
        return Provenance(origin, name, GGUF, converted_to="fp32", recorded=False)
    checkpoint, revision = model.get("name") or "?", None
    if origin in HUB_ORIGINS and HUB_GIVEN.match(model.get("given") or ""):
        found = HUB_GIVEN.match(model["given"])
        checkpoint, revision = found["repo"], found["rev"]
    fmt = SAFETENSORS if stored else (NO_WEIGHTS if model.get("has_weights") is False else PYTORCH)
    scheme = f"{quant.get('method')} {quant.get('scheme')}".strip() if quant else None
    return Provenance(origin, checkpoint, fmt, revision, scheme, stored, recorded=False)


HUB_GIVEN = re.compile(r"^(?:hf|ms):(?P<repo>[^@\s]+)(?:@(?P<rev>\S+))?$")


def describe(prov: Provenance, hub_id: str | None = None) -> Reason:
    """What the figures were measured on, in one clause ("measured on the Q4_1 GGUF of X, dequantized to
    fp32: the figures describe that conversion"). `hub_id`: the id the files are exported under
    (--model-id), where a clause says whether the measured weights are that checkpoint's. Pure."""
    if prov.file_format == GGUF:
        kind = reason("prov_quant", quant=prov.quantization) if prov.quantization else reason("prov_quant_unknown")
        words = {"kind": kind, "file": prov.checkpoint, "dtype": prov.converted_to or "fp32",
                 "package": reason("prov_package", package=prov.revision) if prov.origin == "default" and prov.revision
                 else "", "note": "" if prov.recorded else reason("prov_unrecorded")}
        return reason("prov_gguf_of", hub=hub_id, **words) if hub_id else reason("prov_gguf", **words)
    if prov.file_format == NO_WEIGHTS:
        return reason("prov_config_only", name=prov.checkpoint)
    detail = ", ".join([prov.file_format, *([prov.quantization] if prov.quantization else list(prov.stored))])
    if prov.origin in HUB_ORIGINS:
        revision = reason("prov_revision", rev=_short(prov.revision)) if prov.revision else ""
        if hub_id and hub_id != prov.checkpoint:
            return reason("prov_hub_not", hub=prov.checkpoint, revision=revision, detail=detail, given=hub_id)
        return reason("prov_hub", hub=prov.checkpoint, revision=revision, detail=detail)
    if hub_id:
        return reason("prov_local_as", name=prov.checkpoint, detail=detail, hub=hub_id)
    return reason("prov_local", name=prov.checkpoint, detail=detail)


def _short(revision: str) -> str:
    return revision[:12] if COMMIT.match(revision) else revision
