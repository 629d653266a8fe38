"""Convert a GGUF file once into a safetensors model directory that every engine can load.

transformers reads the GGUF (`gguf_file=`) and dequantizes it to float32; we drop the GGUF
quantizer so the saved directory is a plain float checkpoint, and write it atomically
(temp directory + rename) so a crash never leaves a half-converted model in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from contextlib import contextmanager
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
