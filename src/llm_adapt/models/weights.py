"""Parameter counts, dtypes and shapes read from safetensors headers, without loading a single tensor."""

from __future__ import annotations

import json
import math
import struct
from collections import Counter
from pathlib import Path

from llm_adapt.errors import UsageError

SAFETENSORS_DTYPES = {"F32": "fp32", "BF16": "bf16", "F16": "fp16", "I8": "int8", "U8": "uint8",
                      "F8_E4M3": "fp8_e4m3", "F8_E5M2": "fp8_e5m2", "I32": "int32", "I64": "int64", "F64": "fp64"}


def read_header(path: Path) -> dict:
    """The JSON header of one .safetensors file: {name: {dtype, shape, data_offsets}}, once the file is seen
    to hold every byte the header's offsets point to (a truncated download is refused here, in one line,
    before anything loads it)."""
    with open(path, "rb") as handle:
        raw = handle.read(8)
        if len(raw) != 8:
            raise UsageError(f"{path}: truncated safetensors file; re-download it")
        (length,) = struct.unpack("<Q", raw)
        if length > 100 * 1024 * 1024:
            raise UsageError(f"{path}: not a safetensors file (header length {length}); re-download it")
        try:
            header = json.loads(handle.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UsageError(f"{path}: corrupt safetensors header; re-download it") from None
    header.pop("__metadata__", None)
    if not isinstance(header, dict):
        raise UsageError(f"{path}: corrupt safetensors header; re-download it")
    problem = data_problem(header, Path(path).stat().st_size - 8 - length)
    if problem:
        raise UsageError(f"{path}: {problem}; re-download it")
    return header


def data_problem(header: dict, data_bytes: int) -> str | None:
    """Why a safetensors file with `data_bytes` after its header cannot hold what its header's data_offsets
    (each tensor's [begin, end) in that buffer) say; None when every tensor is there. Pure."""
    try:
        spans = {name: (int(entry["data_offsets"][0]), int(entry["data_offsets"][1])) for name, entry in header.items()}
    except (KeyError, IndexError, TypeError, ValueError):
        return "corrupt safetensors header (a tensor without data_offsets)"
    if not spans:
        return None
    if any(b > e for b, e in spans.values()):
        return "corrupt safetensors header (a tensor's data_offsets run backwards)"
    name, (begin, end) = max(spans.items(), key=lambda item: item[1][1])
    if end > data_bytes:
        return (f"truncated: its header places the last tensor ({name}) at data bytes {begin:,}-{end:,} and the file holds "
                f"{max(data_bytes, 0):,} data bytes")
    return None


def safetensors_files(model_dir: Path) -> list[Path]:
    return sorted(Path(model_dir).glob("*.safetensors"))


def parameters_from_weights(model_dir: Path) -> tuple[int, dict[str, int]] | None:
    """(total parameters, parameters by dtype) over every shard; None without safetensors."""
    files = safetensors_files(model_dir)
    if not files:
        return None
    by_dtype: Counter[str] = Counter()
    for path in files:
        for entry in read_header(path).values():
            by_dtype[SAFETENSORS_DTYPES.get(entry["dtype"], entry["dtype"])] += math.prod(entry["shape"])
    return sum(by_dtype.values()), dict(by_dtype)


def tensor_shapes(model_dir: Path) -> dict[str, list[int]] | None:
    """{tensor name: shape} over every shard, from the headers alone; None without safetensors."""
    files = safetensors_files(model_dir)
    if not files:
        return None
    shapes: dict[str, list[int]] = {}
    for path in files:
        shapes.update({name: list(entry["shape"]) for name, entry in read_header(path).items()})
    return shapes


def checkpoint_tensors(model_dir: Path) -> dict[str, tuple[str, list[int]]] | None:
    """{tensor name: (safetensors dtype, shape)} over every shard, from the headers alone; None without
    safetensors. What weight sizing reads (inspect/memory.py `weight_sizing`)."""
    files = safetensors_files(model_dir)
    if not files:
        return None
    tensors: dict[str, tuple[str, list[int]]] = {}
    for path in files:
        tensors.update({name: (str(entry["dtype"]), list(entry["shape"])) for name, entry in read_header(path).items()})
    return tensors
