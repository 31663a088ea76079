"""A JSON Schema check in plain Python for the keywords the project's schemas use, for an interpreter without
fastjsonschema (a GPU container, a cluster module: `bench gpucheck` and `bench doctor` must run there). It checks the
same keywords fastjsonschema does for these schemas (type, const, enum, required, properties, items, minimum,
minLength, minItems, pattern, if/then/else), so a record written there is held to the same schema; a keyword it does
not know is an error at compile time, never silently passed."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

KNOWN = {"$schema", "type", "const", "enum", "required", "properties", "items", "minimum", "minLength", "minItems",
         "pattern", "if", "then", "else"}
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer(),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


class JsonCheckError(ValueError):
    """The first place `data` breaks the schema, as fastjsonschema's message names it (data.key must be ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def compile_schema(schema: dict) -> Callable[[Any], None]:
    """A check raising JsonCheckError at the first problem; unknown keywords refused here, before any data."""
    _known(schema)
    return lambda data: _check(schema, data, "data")


def _known(schema: dict) -> None:
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"json_check cannot check the keywords {sorted(unknown)}; it knows {sorted(KNOWN)}")
    for sub in (*schema.get("properties", {}).values(), *(schema[k] for k in ("items", "if", "then", "else")
                                                            if k in schema)):
        _known(sub)


def _check(schema: dict, v: Any, where: str) -> None:
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[k](v) for k in kinds):
            raise JsonCheckError(f"{where} must be {' or '.join(kinds)}")
    if "const" in schema and v != schema["const"]:
        raise JsonCheckError(f"{where} must be same as const definition: {schema['const']}")
    if "enum" in schema and v not in schema["enum"]:
        raise JsonCheckError(f"{where} must be one of {schema['enum']}")
    if isinstance(v, dict):
        for name in schema.get("required", ()):
            if name not in v:
                raise JsonCheckError(f"{where} must contain {name!r} properties")
        for name, sub in schema.get("properties", {}).items():
            if name in v:
                _check(sub, v[name], f"{where}.{name}")
    if isinstance(v, list):
        if len(v) < schema.get("minItems", 0):
            raise JsonCheckError(f"{where} must contain at least {schema['minItems']} items")
        for i, item in enumerate(v if "items" in schema else ()):
            _check(schema["items"], item, f"{where}[{i}]")
    if _TYPES["number"](v) and "minimum" in schema and v < schema["minimum"]:
        raise JsonCheckError(f"{where} must be bigger than or equal to {schema['minimum']}")
    if isinstance(v, str):
        if len(v) < schema.get("minLength", 0):
            raise JsonCheckError(f"{where} must be longer than or equal to {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], v):
            raise JsonCheckError(f"{where} must match pattern {schema['pattern']}")
    if "if" in schema:
        try:
            _check(schema["if"], v, where)
            branch = schema.get("then")
        except JsonCheckError:
            branch = schema.get("else")
        if branch:
            _check(branch, v, where)
