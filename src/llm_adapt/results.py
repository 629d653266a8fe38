"""Typed JSON results: every stage writes one, the report reads only these.

Each result carries `kind` and `schema_version` so an old run directory is recognised
(or refused with a clear message) instead of being misread.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError

from llm_adapt.errors import AdaptError
from llm_adapt.messages.core import from_schema_1, loaded, stored

SCHEMA_VERSION = 2  # 2: every keyed message stored as {text, key, args}
READABLE_VERSIONS = (1, SCHEMA_VERSION)  # 1 is read through messages.core.from_schema_1

T = TypeVar("T", bound="StageResult")


class StageResult(BaseModel):
    """Base of every stage result; `kind` names the stage (inspect, accuracy, probes, ...)."""

    model_config = ConfigDict(extra="forbid")
    KIND: ClassVar[str] = "stage"

    kind: str = ""
    schema_version: int = SCHEMA_VERSION

    def model_post_init(self, __context: Any) -> None:
        if not self.kind:
            self.kind = self.KIND

    def to_json(self) -> str:
        """The result as JSON, every message in it (a Reason, at any depth) in its stored shape."""
        return pydantic_core.to_json(stored(self.model_dump()), indent=2, inf_nan_mode="null").decode()

    def save(self, path: Path) -> Path:
        """Write atomically: a crash leaves the old file or the new one, never half of one."""
        write_text_atomic(path, self.to_json() + "\n")
        return path

    @classmethod
    def load(cls: type[T], path: Path) -> T:
        try:
            data = read_checked(path)
        except UnreadableResult as exc:
            raise AdaptError(str(exc)) from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise AdaptError(f"{path}: {where}: {first['msg']}; rerun the stage") from None


class UnreadableResult(AdaptError):
    """A result file that is missing, not JSON, or of another schema version: named, never misread."""


def read_checked(path: Path) -> dict[str, Any]:
    """A result file's JSON with its messages as Reasons, refused (one line) when this llm-adapt cannot read
    its schema version; a file of schema 1 is read in the shape of this one."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UnreadableResult(f"{path}: no such result file; run the stage that writes it first") from None
    except json.JSONDecodeError as exc:
        raise UnreadableResult(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); rerun the stage") from None
    except OSError as exc:
        raise UnreadableResult(f"{path}: cannot be read ({exc.strerror})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in READABLE_VERSIONS:
        raise UnreadableResult(f"{path}: schema version {version} is not {SCHEMA_VERSION}; "
                               "rerun the stage with this llm-adapt version")
    if version == 1:
        data = {**from_schema_1(data), "schema_version": SCHEMA_VERSION}
    return loaded(data)


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
