"""The result-record schema (JSON Schema) and its check."""

from __future__ import annotations

import fastjsonschema

from ..errors import SchemaError

# 2: repetitions (repeat, attempt), the sweep a run belongs to, interference and sanity flags.
# Version 1 records (one process per config) still load: `upgrade_record` fills the new fields.
# 3: a `distributed` section (strategy, workers, link, one entry per rank); null for one process.
SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
STATUSES = ("ok", "skipped", "error")

_num_list = {"type": "array", "items": {"type": "number", "minimum": 0}}
_obj_or_null = {"type": ["object", "null"]}

RECORD_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["schema_version", "record_id", "config_key", "created", "host", "hardware", "status", "reason",
                 "config", "label", "manifest", "settings", "model", "samples", "summary", "phases",
                 "memory", "peak", "utilisation", "energy", "fairness", "duration_s", "traceback"],
    "properties": {
        "schema_version": {"enum": list(READABLE_VERSIONS)},
        "record_id": {"type": "string", "minLength": 8},
        "config_key": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "created": {"type": "string"},
        "host": {"type": "string", "minLength": 1},
        "hardware": {"type": "string", "minLength": 1},
        "status": {"enum": list(STATUSES)},
        "reason": {"type": ["string", "null"]},
        "config": {
            "type": "object",
            "required": ["framework", "model", "mode", "engine", "device", "precision", "batch_size",
                         "image_size", "threads", "protocol", "warmup", "iterations", "data"],
            "properties": {"batch_size": {"type": "integer", "minimum": 1},
                           "threads": {"type": "integer", "minimum": 1}},
        },
        "label": {"type": "string"},
        "manifest": {"type": "object", "required": ["host", "cpu", "libraries", "env", "git"]},
        "settings": {"type": "object"},
        "model": {"type": "object"},
        "samples": {
            "type": "object",
            "required": ["warmup_s", "timed_s"],
            "properties": {"warmup_s": _num_list, "timed_s": _num_list},
        },
        "summary": _obj_or_null,
        "phases": _obj_or_null,
        "memory": _obj_or_null,
        "peak": _obj_or_null,
        "utilisation": {"type": ["number", "null"]},
        "energy": {"type": "object"},
        "fairness": _obj_or_null,
        "duration_s": {"type": "number", "minimum": 0},
        "traceback": {"type": ["string", "null"]},
    },
    # An `ok` record carries its measurements; a skipped/error one says why.
    "if": {"properties": {"status": {"const": "ok"}}},
    "then": {"properties": {"summary": {"type": "object", "required": ["images_per_sec_median", "n"]},
                            "samples": {"properties": {"timed_s": {"minItems": 1}}}}},
    "else": {"properties": {"reason": {"type": "string", "minLength": 1}}},
}

_FLAG = {"type": "object", "required": ["name", "reason"],
         "properties": {"name": {"type": "string", "minLength": 1}, "reason": {"type": "string"}}}
RECORD_SCHEMA_V2 = {
    **RECORD_SCHEMA,
    "required": RECORD_SCHEMA["required"] + ["repeat", "attempt", "sweep", "interference", "flags"],
    "properties": {
        **RECORD_SCHEMA["properties"],
        "schema_version": {"const": 2},
        "repeat": {"type": "integer", "minimum": 0},
        "attempt": {"type": "integer", "minimum": 0},
        "sweep": {"type": ["object", "null"], "required": ["id"]},
        "interference": _obj_or_null,
        "flags": {"type": "array", "items": _FLAG},
    },
}

_RANK = {"type": "object", "required": ["rank", "role", "node", "samples", "phases_median_ms", "peak_rss_bytes"],
         "properties": {"rank": {"type": "integer", "minimum": 0}, "samples": {"type": "integer", "minimum": 0}}}
RECORD_SCHEMA_V3 = {
    **RECORD_SCHEMA_V2,
    "required": RECORD_SCHEMA_V2["required"] + ["distributed"],
    "properties": {
        **RECORD_SCHEMA_V2["properties"],
        "schema_version": {"const": 3},
        "startup": _obj_or_null,  # optional (added within version 3): prepare_s, first_iteration_s
        "distributed": {"oneOf": [{"type": "null"}, {
            "type": "object",
            "required": ["strategy", "workers", "nodes", "scaling", "worker_batch", "global_batch", "link", "ranks"],
            "properties": {"workers": {"type": "integer", "minimum": 1},
                           "ranks": {"type": "array", "items": _RANK}}}]},
    },
}

# fastjsonschema compiles the schema to Python once (jsonschema's import alone costs ~1.4 s per run process).
_VALIDATE = {1: fastjsonschema.compile(RECORD_SCHEMA), 2: fastjsonschema.compile(RECORD_SCHEMA_V2),
             3: fastjsonschema.compile(RECORD_SCHEMA_V3)}


def validate_record(record: dict) -> None:
    """Raise SchemaError naming the first problem when `record` does not match its version's schema."""
    version = record.get("schema_version") if isinstance(record, dict) else None
    if version not in _VALIDATE:
        raise SchemaError(f"invalid record: schema_version {version!r}; readable: {', '.join(map(str, _VALIDATE))}")
    try:
        _VALIDATE[version](record)
    except fastjsonschema.JsonSchemaException as exc:
        raise SchemaError(f"invalid record: {exc.message}") from None


def upgrade_record(record: dict) -> dict:
    """The record in the current format (a version 1 record was one process, not judged for interference)."""
    if record["schema_version"] == 1:
        record = {**record, "repeat": 0, "attempt": 0, "sweep": None, "interference": None, "flags": []}
    if record["schema_version"] in (1, 2):
        record = {**record, "distributed": None}
    return record
