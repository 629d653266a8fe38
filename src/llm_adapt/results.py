"""Typed JSON results: every stage writes one, the report reads only these.

Each result carries `kind` and `schema_version` so an old run directory is recognised
(or refused with a clear message) instead of being misread.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError

from llm_adapt.errors import AdaptError, cannot_write
from llm_adapt.messages.core import from_schema_1, loaded, stored

SCHEMA_VERSION = 2  # 2: every keyed message stored as {text, key, args}
READABLE_VERSIONS = (1, SCHEMA_VERSION)  # 1 is read through messages.core.from_schema_1

T = TypeVar("T", bound="StageResult")

KINDS: dict[str, type["StageResult"]] = {}  # every stage's result model by its `kind`, filled as each is defined
# every result a run directory holds, by its `kind`: the models that declare a FILE, filled as each is defined. The
# run directory's list of files (run/identity), the run's data (judged/data.RunData) and KINDS all come from it.
RUN_FILES: dict[str, type["StageResult"]] = {}


class StageResult(BaseModel):
    """Base of every stage result; `kind` names the stage (inspect, accuracy, probes, ...)."""

    model_config = ConfigDict(extra="forbid")
    KIND: ClassVar[str] = "stage"
    FILE: ClassVar[str | None] = None  # its file inside a run directory; None: not one of a run's results

    kind: str = ""
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "KIND" in cls.__dict__:
            KINDS[cls.KIND] = cls
        if cls.__dict__.get("FILE"):
            RUN_FILES[cls.KIND] = cls

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
            return read_checked(path, cls)
        except UnreadableResult as exc:
            raise AdaptError(str(exc)) from None


class UnreadableResult(AdaptError):
    """A result file that is missing, not JSON, or of another schema version: named, never misread."""


def read_checked(path: Path, model: type[T] | None = None) -> T:
    """A result file as the record it was written as: `model`, or the one its `kind` names (KINDS), with its
    messages as Reasons; refused in one line when this llm-adapt cannot read it (its schema version, its kind,
    a field it lacks). A file of schema 1 is read in the shape of this one."""
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
    return _validated(path, loaded(data), model)


def _validated(path: Path, data: dict[str, Any], model: type[T] | None) -> T:
    """`data` as `model` (or the model of its kind); one line naming the first field that does not fit. A field
    this llm-adapt does not know (one an earlier version wrote and this one dropped) is left out, as a reader
    of the dictionaries did: it is never shown, and never misread as another."""
    chosen = model or KINDS.get(data.get("kind", ""))
    if chosen is None:
        raise UnreadableResult(f"{path}: a result of kind {data.get('kind')!r} is not one this llm-adapt reads")
    try:
        return cast(T, chosen.model_validate(data))  # a file read by its kind is the record that kind names
    except ValidationError as exc:
        errors = exc.errors()
        if all(e["type"] == "extra_forbidden" for e in errors):
            return cast(T, _validated(path, _without(data, [e["loc"] for e in errors]), chosen))
        where = ".".join(str(p) for p in errors[0]["loc"])
        raise UnreadableResult(f"{path}: {where}: {errors[0]['msg']}; rerun the stage") from None


def _without(data: Any, locations: list[tuple[int | str, ...]]) -> Any:
    """`data` less the value at each location (a path of keys and list indices), in a copy. Pure."""
    out = copy.deepcopy(data)
    for *path, last in locations:
        into = out
        for step in path:
            into = into[step]
        into.pop(last, None)
    return out


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same directory and a rename; one line (errors.cannot_write)
    when the directory refuses it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise cannot_write(path.parent, exc) from None
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise cannot_write(path.parent, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
