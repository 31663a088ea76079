"""RunConfig and the record's RunSettings are both made from bench/run_fields.py: the same fields in the same order,
the same value types, and a key an older record lacks reads as the config's default (or as not recorded)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

from bench.config import FIELD_TYPES, RunConfig
from bench.results.record import RunSettings
from bench.results.schema import OPTIONAL, json_fields, strip_none
from bench.run_fields import DEFAULT, REQUIRED, RUN_FIELDS
from tests.conftest import ROOT


def _base(tp):
    base, _ = strip_none(tp)
    return typing.get_origin(base) or base


def test_run_settings_and_run_config_have_the_declared_fields_in_order_with_their_types():
    declared = [f.name for f in RUN_FIELDS] + ["extra"]
    config = {f.name: f for f in dataclasses.fields(RunConfig)}
    settings = {f.name: tp for f, tp in json_fields(RunSettings)}
    assert list(config) == declared and list(settings) == declared
    for f in RUN_FIELDS:
        assert _base(settings[f.name]) is _base(config[f.name].type) is f.type is FIELD_TYPES[f.name], f.name


def test_a_key_an_older_record_lacks_reads_as_declared():
    fields = {f.name: f for f, _ in json_fields(RunSettings)}
    config = {f.name: f for f in dataclasses.fields(RunConfig)}
    for f in RUN_FIELDS:
        settings_field = fields[f.name]
        assert settings_field.metadata[OPTIONAL] is (f.recorded is not REQUIRED), f.name
        if f.recorded is DEFAULT:
            assert settings_field.default == config[f.name].default == f.default, f.name
        elif f.recorded is None:
            assert settings_field.default is None, f.name


def test_a_record_without_the_later_keys_loads_with_their_defaults():
    first = {f.name: "x" if f.type is str else 1 for f in RUN_FIELDS if f.recorded is REQUIRED}
    settings = RunSettings.from_json(first)
    assert settings.strategy == "none" and settings.workers == 1 and settings.scaling is None
    assert settings.seed is None and "strategy" not in settings.to_json()  # absent keys stay absent


def test_loading_a_record_imports_no_adapter_or_config():
    code = ("import sys, bench.results.record as r; "
            "bad = [m for m in sys.modules "
            "       if m.startswith(('bench.adapters', 'bench.config', 'torch', 'tensorflow'))]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
