"""Sweep manifests written before the typed SweepManifest (commit 626c770's runner) load into it unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.errors import SchemaError
from bench.results.sweep_manifest import (
    SCHEMA_VERSION,
    AdaptivePlan,
    SweepManifest,
    as_manifests,
    load_sweeps,
    process_walls,
    read_sweep,
    write_sweep,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
# Written by the runner of commit 626c770 with synthetic records (no benchmark ran): an adaptive sweep with retries,
# extra processes and a busy warning; an interrupted one; one whose budget dropped every config (a shard); one run by
# a scheduler's executor (its jobs in the manifest). The tiny sweep's manifest is older still (no adaptive plan).
OLD = sorted((FIXTURES / "sweep_manifests").glob("*.json")) + sorted(FIXTURES.glob("tiny_sweep/*/sweeps/*.json"))


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.stem)
def test_a_manifest_written_before_the_type_loads_and_writes_back_the_same(path):
    data = json.loads(path.read_text())
    m = SweepManifest.from_json(data)
    assert "schema_version" not in data and m.to_json() == {"schema_version": SCHEMA_VERSION, **data}
    assert (m.sweep_id, m.host, m.profile, m.status) == (data["sweep_id"], data["host"], data["profile"],
                                                         data["status"])
    assert [(o.config_key, o.repeat, o.round, o.label) for o in m.order] == \
        [(o["config_key"], o["repeat"], o["round"], o["label"]) for o in data["order"]]
    assert [(r.config_key, r.repeat, r.attempt, r.reason) for r in m.retried] == \
        [(r["config_key"], r["repeat"], r["attempt"], r["reason"]) for r in data["retried"]]
    assert [d.label for d in m.dropped] == [d["label"] for d in data["dropped"]]
    assert m.planned == {(o["config_key"], o["repeat"]) for o in data["order"]}
    assert m.adaptive == data.get("adaptive") and m.busy_warning == data.get("busy_warning")
    assert [e.reason for e in m.extra_processes] == [e["reason"] for e in data.get("extra_processes", [])]
    assert m.process_walls == data.get("process_walls", {})
    for key, entry in data["peaks"].items():
        trials = [t for t in (entry["start"], entry.get("end")) if t]
        assert m.peak(key).flops_per_sec == max(t["flops_per_sec"] for t in trials)


def test_the_old_fixtures_cover_what_the_report_reads():
    loaded = [SweepManifest.from_json(json.loads(p.read_text())) for p in OLD]
    assert {m.status for m in loaded} == {"finished", "interrupted"}
    assert any(m.adaptive and m.extra_processes for m in loaded) and any(m.retried for m in loaded)
    assert any(m.dropped for m in loaded) and any(m.busy_warning for m in loaded)
    assert any(m.executor and m.executor["name"] == "slurm" for m in loaded)
    assert any(m.adaptive is None and "adaptive" not in json.loads(p.read_text()) for m, p in zip(loaded, OLD))


def test_a_manifest_of_an_unknown_version_or_without_its_id_is_refused_and_skipped(tmp_path):
    data = json.loads(OLD[0].read_text())
    with pytest.raises(SchemaError, match="schema_version 9"):
        SweepManifest.from_json({**data, "schema_version": 9})
    with pytest.raises(SchemaError, match="invalid sweep manifest: .*sweep_id"):
        SweepManifest.from_json({k: v for k, v in data.items() if k != "sweep_id"})
    folder = tmp_path / "test-host" / "sweeps"
    folder.mkdir(parents=True)
    for p in OLD:
        shutil.copy(p, folder / p.name)
    (folder / "broken.json").write_text(json.dumps({**data, "schema_version": 9}))
    loaded = load_sweeps(tmp_path)
    assert len(loaded) == len(OLD) and [m.started for m in loaded] == sorted(m.started for m in loaded)
    assert read_sweep(tmp_path, "broken", "test-host") is None


def test_a_written_manifest_reads_back_equal(tmp_path):
    m = SweepManifest.from_json(json.loads(OLD[0].read_text()))
    m.status, m.adaptive = "interrupted", AdaptivePlan(min_repeats=2, max_repeats=5)
    write_sweep(tmp_path, m)
    back = read_sweep(tmp_path, m.sweep_id, m.host)
    assert back == m and back.adaptive.max_repeats == 5 and back.to_json()["schema_version"] == SCHEMA_VERSION


def test_partial_manifests_held_as_dicts_are_taken_as_they_are():
    [m] = as_manifests([{"sweep_id": "s", "process_walls": {"k/0/0": 3.0}}])
    assert (m.sweep_id, m.status, m.order, m.adaptive, m.retry_estimate_s) == ("s", "unknown", [], None, 0.0)
    assert process_walls([{"process_walls": {"a": 1.0}}, m]) == {"a": 1.0, "k/0/0": 3.0}
