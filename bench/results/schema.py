"""JSON Schema generated from dataclass annotations (the record's sections), and its compiled check."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import SchemaError
from . import json_check

try:  # compiled to Python, fast; an interpreter without it (a GPU container) checks the same schema in plain Python
    import fastjsonschema
except ImportError:
    fastjsonschema = None
# Which checks this process's records and manifests (`bench doctor` and gpucheck print it).
VALIDATOR = f"fastjsonschema {fastjsonschema.VERSION}" if fastjsonschema else \
    "bench.results.json_check (fastjsonschema is not installed: the same schema, checked in plain Python)"

# Field metadata: OPTIONAL keys may be absent from the JSON; SCHEMA adds keywords (minimum, pattern, ...)
# to what the annotation gives; JSON=False keeps a field out of the JSON (a section's unknown keys).
OPTIONAL, SCHEMA, JSON = "optional", "schema", "json"

_SCALARS = {str: "string", bool: "boolean", int: "integer", float: "number"}


def key(*, optional: bool = False, default: Any = dataclasses.MISSING,
        default_factory: Callable[[], Any] | Any = dataclasses.MISSING, **schema) -> Any:
    """A dataclass field that is a JSON key: required unless `optional`, with extra schema keywords."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={OPTIONAL: optional, SCHEMA: schema})


@functools.cache
def json_fields(cls: type) -> tuple[tuple[dataclasses.Field, Any], ...]:
    """(field, resolved annotation) of each JSON key of a dataclass, in declaration order."""
    hints = typing.get_type_hints(cls)
    return tuple((f, hints[f.name]) for f in dataclasses.fields(cls) if f.metadata.get(JSON, True))


def strip_none(tp: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was allowed); a union of several other types reads as Any."""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else Any), len(args) < len(typing.get_args(tp))
    return tp, False


def type_schema(tp: Any) -> dict:
    """The JSON Schema of one annotation: scalars, lists, mappings, nested dataclasses, `X | None`."""
    base, nullable = strip_none(tp)
    origin = typing.get_origin(base) or base
    if dataclasses.is_dataclass(base):
        out = json_schema(base)
    elif origin in _SCALARS:
        out = {"type": _SCALARS[origin]}
    elif origin in (list, tuple):
        args = typing.get_args(base)
        items = type_schema(args[0]) if args else {}
        out = {"type": "array", **({"items": items} if items else {})}
    elif origin in (dict, Mapping):
        out = {"type": "object"}
    else:  # Any: the JSON is not constrained here
        return {}
    if nullable:
        out["type"] = [out["type"], "null"]
    return out


def json_schema(cls: type) -> dict:
    """An object schema from a dataclass: its JSON keys, which are required, and their types.
    Keys it does not declare are allowed (records written by a newer checkout)."""
    props, required = {}, []
    for f, tp in json_fields(cls):
        props[f.name] = {**type_schema(tp), **f.metadata.get(SCHEMA, {})}
        if not f.metadata.get(OPTIONAL):
            required.append(f.name)
    return {"type": "object", "required": required, "properties": props}


def compile_check(schema: dict, what: str = "record") -> Callable[[Any], None]:
    """A check raising SchemaError naming the first problem. fastjsonschema compiles the schema to Python
    once (jsonschema's import alone costs ~1.4 s per run process)."""
    check = fastjsonschema.compile(schema) if fastjsonschema else json_check.compile_schema(schema)
    failure = fastjsonschema.JsonSchemaException if fastjsonschema else json_check.JsonCheckError

    def validate(data: Any) -> None:
        try:
            check(data)
        except failure as exc:
            raise SchemaError(f"invalid {what}: {exc.message}") from None

    return validate
