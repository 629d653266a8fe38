"""Results as the report reads them, built from the fields a test names: every other required field of the
record gets the empty value of its type ("", 0, [], {}, None), at any depth, and the whole is validated by
the stage's own model, so a misspelt field or a wrong type fails the test as it would fail a real file."""

from __future__ import annotations

import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from typing_extensions import is_typeddict

from llm_adapt.judged.data import RunData
from llm_adapt.results import RUN_FILES, StageResult


def record(model: type[StageResult], /, **fields: Any) -> StageResult:
    """`model` with `fields`, and the empty value of its type in every required field not named."""
    return model.model_validate(_filled(model, fields))


def run_data(dir: Path | None = None, unreadable: dict[str, str] | None = None, bench: dict[str, Any] | None = None,
             **parts: dict[str, Any] | None) -> RunData:
    """A RunData of results by name (results.RUN_FILES), each given as the fields a test names (None: absent)."""
    from llm_adapt.bench.modes import BenchResult

    return RunData(dir=dir, parts={name: _as(RUN_FILES[name], value) for name, value in parts.items() if value is not None},
                   bench={mode: _as(BenchResult, value) for mode, value in (bench or {}).items()},
                   unreadable=unreadable or {})


def _as(model: type[StageResult], value: Any) -> StageResult:
    return value if isinstance(value, model) else record(model, **value)


def _filled(tp: Any, value: Any) -> Any:
    """`value` with the required fields of `tp` it lacks filled in, where `tp` is a record; as it is otherwise."""
    tp = _unwrapped(tp)
    if isinstance(value, dict):
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            hints = {name: f.annotation for name, f in tp.model_fields.items()}
            required = [name for name, f in tp.model_fields.items() if f.is_required()]
            return _with_required(hints, required, value)
        if is_typeddict(tp):
            hints = get_type_hints(tp, include_extras=True)  # __required_keys__ misses a NotRequired in a string
            required = [k for k, h in hints.items() if tp.__total__ and get_origin(h) is not typing.NotRequired]
            return _with_required(hints, required, value)
        if get_origin(tp) is dict:
            inner = get_args(tp)[1] if get_args(tp) else Any
            return {k: _filled(inner, v) for k, v in value.items()}
    if isinstance(value, list) and get_origin(tp) is list:
        inner = get_args(tp)[0] if get_args(tp) else Any
        return [_filled(inner, v) for v in value]
    return value


def _with_required(hints: dict[str, Any], required: list[str], value: dict[str, Any]) -> dict[str, Any]:
    out = {k: _filled(hints.get(k, Any), v) for k, v in value.items()}
    for name in required:
        if name not in out:
            out[name] = _empty(hints[name])
    return out


def _unwrapped(tp: Any) -> Any:
    """The record inside an Optional, a NotRequired or an Annotated type."""
    while True:
        origin = get_origin(tp)
        if origin in (typing.Annotated, typing.NotRequired, typing.Required):
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            records = [a for a in args if _is_record(_unwrapped(a))]
            tp = records[0] if records else (args[0] if len(args) == 1 else Any)
        else:
            return tp


def _is_record(tp: Any) -> bool:
    return (isinstance(tp, type) and issubclass(tp, BaseModel)) or is_typeddict(tp)


def _empty(tp: Any) -> Any:
    """The empty value of a field's type: None where it may be None."""
    if get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp):
        return None
    if get_origin(tp) in (Union, types.UnionType) and not any(_is_record(_unwrapped(a)) for a in get_args(tp)):
        return _empty(get_args(tp)[0])  # int | float: the first one's
    tp = _unwrapped(tp)
    origin = get_origin(tp) or tp
    if _is_record(tp):
        return _filled(tp, {})
    if origin is Literal:
        return get_args(tp)[0]
    if isinstance(tp, type) and issubclass(tp, Enum):  # a status: its first member
        return next(iter(tp))
    return {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}, tuple: ()}.get(origin)


def screen_of(run: RunData, lang: str = "en", numbers: dict | None = None):
    """The first screen of a RunData, its verdict judged as the report judges it (once, by judged/verdict)."""
    from llm_adapt.judged.verdict import overall_verdict
    from llm_adapt.report.first_screen import first_screen

    return first_screen(run, overall_verdict(run), lang, numbers)
