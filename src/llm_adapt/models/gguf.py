"""Convert a GGUF file once into a safetensors model directory that every engine can load.

transformers reads the GGUF (`gguf_file=`) and dequantizes it to float32; we drop the GGUF
quantizer so the saved directory is a plain float checkpoint, and write it atomically
(temp directory + rename) so a crash never leaves a half-converted model in the cache.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import struct
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from llm_adapt.errors import UsageError
from llm_adapt.home import models_cache

GGUF_MAGIC = b"GGUF"
MARKER = "llm_adapt_source.json"


def is_gguf(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == GGUF_MAGIC


def fingerprint(path: Path) -> str:
    """Cheap content key: size plus hashes of the first and last MiB."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:12]


def converted_dir(gguf_path: Path) -> Path:
    stem = gguf_path.name.removesuffix(".gguf")
    return models_cache() / f"{stem}-{fingerprint(gguf_path)}"


def ensure_converted(gguf_path: Path) -> Path:
    """Return the safetensors directory for this GGUF, converting it on first use."""
    gguf_path = Path(gguf_path).resolve()
    if not is_gguf(gguf_path):
        raise UsageError(f"{gguf_path}: not a GGUF file (no GGUF magic bytes); pass a .gguf model, an HF directory or 'default'")
    target = converted_dir(gguf_path)
    if (target / MARKER).is_file():
        return target
    with _converting(target):  # a second process waits for the first one's conversion instead of repeating it
        if (target / MARKER).is_file():
            return target
        _convert_into(gguf_path, target)
    return target


@contextmanager
def _converting(target: Path):
    import fcntl

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(f".{target.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _convert_into(gguf_path: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _convert(gguf_path, tmp)
        if target.exists():  # another process finished first; keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _read_once():
    """transformers parses the GGUF three times (config, weights, tokenizer) and rebuilds gguf's tensor
    name table once per module; both are pure, so one conversion reads the file and builds the table
    once."""
    import functools

    try:
        import gguf as gguf_lib
    except ImportError:
        raise UsageError("reading a .gguf file needs the gguf package: pip install 'llm-adapt[gguf]' "
                         "(make setup installs it)") from None

    reader, name_map = gguf_lib.GGUFReader, gguf_lib.get_tensor_name_map
    readers: dict = {}

    def cached_reader(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf_lib.GGUFReader, gguf_lib.get_tensor_name_map = cached_reader, functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf_lib.GGUFReader, gguf_lib.get_tensor_name_map = reader, name_map


def _convert(gguf_path: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, name = str(gguf_path.parent), gguf_path.name
    try:
        with _read_once():
            model = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32)
            tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    except UsageError:
        raise
    except Exception as exc:  # transformers raises many types for a bad file
        raise UsageError(f"{gguf_path}: cannot read this GGUF ({type(exc).__name__}: {str(exc)[:200]}); is the file complete?") from None
    # Saved weights are plain float32: without this, save_pretrained writes a GGUF
    # quantization_config that vLLM and transformers would then try to honour.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.name_or_path = gguf_path.name.removesuffix(".gguf")
    out.mkdir(parents=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    marker = {"source": str(gguf_path), "fingerprint": fingerprint(gguf_path), "dtype": "float32"}
    (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


# ---- what the file holds, from its header alone (no tensor is read) ----

@dataclass(frozen=True)
class GgufFacts:
    """What a GGUF's header says about its weights: the quantization they are stored in."""

    file_type: str | None  # general.file_type as llama.cpp names it ("Q4_1"); None: the header has none
    tensor_types: dict[str, int] = field(default_factory=dict)  # tensors by stored type ("Q4_1": 210, "F32": 61)
    name: str | None = None  # general.name
    organization: str | None = None  # general.organization


# GGUF value types (gguf's GGUFValueType): their struct formats; 8 is a string, 9 an array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_WANTED = ("general.file_type", "general.name", "general.organization")


def header_facts(path: Path) -> GgufFacts:
    """The quantization a GGUF file stores its weights in, read from its header (memory-mapped)."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
        return parse_header(buffer)


def parse_header(buffer) -> GgufFacts:
    """GgufFacts from a GGUF's bytes (version 2 or 3): the metadata keys named in _WANTED and every
    tensor's stored type. Pure; raises ValueError on a file of another shape."""
    if bytes(buffer[:4]) != GGUF_MAGIC:
        raise ValueError("no GGUF magic bytes")
    version, tensors, kvs = struct.unpack_from("<IQQ", buffer, 4)
    if version < 2:
        raise ValueError(f"GGUF version {version} is not read (2 or later)")
    offset, found = 24, {}
    for _ in range(kvs):
        key, offset = _string(buffer, offset)
        (kind,), offset = struct.unpack_from("<I", buffer, offset), offset + 4
        value, offset = _value(buffer, offset, kind)
        if key in _WANTED:
            found[key] = value
    types: Counter[str] = Counter()
    for _ in range(tensors):
        _, offset = _string(buffer, offset)
        (dims,) = struct.unpack_from("<I", buffer, offset)
        offset += 4 + 8 * dims
        (kind,) = struct.unpack_from("<I", buffer, offset)
        offset += 4 + 8  # the type, then the data offset
        types[tensor_type_name(kind)] += 1
    file_type = found.get("general.file_type")
    return GgufFacts(file_type=file_type_name(file_type) if isinstance(file_type, int) else None,
                     tensor_types=dict(types.most_common()), name=found.get("general.name"),
                     organization=found.get("general.organization"))


def _string(buffer, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", buffer, offset)
    start = offset + 8
    return bytes(buffer[start:start + length]).decode("utf-8", "replace"), start + length


def _value(buffer, offset: int, kind: int):
    if kind == _STRING:
        return _string(buffer, offset)
    if kind == _ARRAY:  # skipped: no array is wanted (the tokenizer's are most of the header)
        item, count = struct.unpack_from("<IQ", buffer, offset)
        offset += 12
        if item in _SCALARS:
            return None, offset + struct.calcsize(_SCALARS[item]) * count
        for _ in range(count):
            _, offset = _value(buffer, offset, item)
        return None, offset
    if kind not in _SCALARS:
        raise ValueError(f"unknown GGUF value type {kind}")
    return struct.unpack_from(_SCALARS[kind], buffer, offset)[0], offset + struct.calcsize(_SCALARS[kind])


def file_type_name(value: int) -> str:
    """llama.cpp's name of a general.file_type ("Q4_1" for 3, "F32" for 0), from the gguf package's table."""
    try:
        from gguf import LlamaFileType

        return LlamaFileType(value).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except (ImportError, ValueError):
        return f"file type {value}"


def tensor_type_name(value: int) -> str:
    """ggml's name of a tensor type ("Q4_1" for 3), from the gguf package's table."""
    try:
        from gguf import GGMLQuantizationType

        return GGMLQuantizationType(value).name
    except (ImportError, ValueError):
        return f"type {value}"
