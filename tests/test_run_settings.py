"""The record's RunSettings declares RunConfig's fields by hand (loading a record must not import the config
layer): this test fails when the two disagree on a field's name, order, value type or the default it reads as."""

from __future__ import annotations

import dataclasses
import typing

from bench.config import RunConfig
from bench.results.record import RunSettings
from bench.results.schema import json_fields, strip_none

_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict}


def _config_type(annotation: str):
    return _TYPES[annotation.split(" | ")[0]]


def _settings_type(tp):
    base, _ = strip_none(tp)
    return typing.get_origin(base) or base


def test_run_settings_declares_every_run_config_field_in_order_with_its_type():
    config = {f.name: f for f in dataclasses.fields(RunConfig)}
    settings = {f.name: tp for f, tp in json_fields(RunSettings)}
    assert list(settings) == list(config)
    for name, field in config.items():
        assert _settings_type(settings[name]) is _config_type(field.type), name


def test_a_key_an_older_record_lacks_reads_as_run_configs_default():
    for f, _ in json_fields(RunSettings):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if default is dataclasses.MISSING or default is None:  # required, or read as "not recorded"
            continue
        config_field = next(c for c in dataclasses.fields(RunConfig) if c.name == f.name)
        config_default = (config_field.default_factory() if config_field.default_factory is not dataclasses.MISSING
                          else config_field.default)
        assert default == config_default, f.name
