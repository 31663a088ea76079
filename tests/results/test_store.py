"""Records: schema round trip, invalid records refused, atomic writes survive a killed writer."""

import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bench.config import make_config
from bench.errors import SchemaError
from bench.results.store import atomic_write_json, load_records, runs_frame, write_record
from bench.runs.single import execute
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def null_record(tmp_path_factory):
    return execute(make_config(framework="null", model="tiny_cnn", protocol="seed"),
                   tmp_path_factory.mktemp("r"))


def test_round_trip(tmp_path, null_record):
    path = write_record(null_record, tmp_path)
    assert path.parent == tmp_path / "test-host" / "records"
    assert load_records(tmp_path) == [json.loads(json.dumps(null_record))]
    runs = runs_frame(load_records(tmp_path))
    assert len(runs) == 1 and runs.loc[0, "framework"] == "null" and runs.loc[0, "status"] == "ok"
    [loaded] = load_records(tmp_path)
    assert len(loaded.samples.warmup_s) + len(loaded.samples.timed_s) == 30 and loaded.samples.timed_s


@pytest.mark.parametrize("breakage", [
    lambda r: r.pop("summary"),
    lambda r: r.update(status="done"),
    lambda r: r.update(summary=None),  # an ok record must carry a summary
    lambda r: r["config"].update(batch_size=0),
    lambda r: r.update(status="error", reason=""),  # an error must say why
    lambda r: r["samples"].update(timed_s=[-1.0]),
])


def test_invalid_records_are_never_written(tmp_path, null_record, breakage):
    bad = copy.deepcopy(null_record)
    breakage(bad)
    with pytest.raises(SchemaError):
        write_record(bad, tmp_path)
    assert not any(tmp_path.rglob("*.json"))


def test_killed_writer_leaves_no_partial_record(tmp_path):
    target = tmp_path / "h" / "records" / "big.json"
    target.parent.mkdir(parents=True)
    target.write_text('{"old": true}')
    code = ("import sys; from bench.results.store import atomic_write_json; "
            "atomic_write_json(sys.argv[1], {'x': list(range(30_000_000))})")
    proc = subprocess.Popen([sys.executable, "-c", code, str(target)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.time() + 60
    while not list(target.parent.glob(".big.json.*.tmp")):  # wait until it is mid-write
        assert proc.poll() is None and time.time() < deadline, "writer finished before it could be killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert json.loads(target.read_text()) == {"old": True}  # the old file is intact, never half-new
    with pytest.warns(UserWarning, match="big.json"):  # the old file is not a record; the temp file is invisible
        assert load_records(tmp_path) == []


def test_atomic_write_replaces_whole_file(tmp_path):
    atomic_write_json(tmp_path / "a.json", {"v": 1})
    atomic_write_json(tmp_path / "a.json", {"v": 2})
    assert json.loads((tmp_path / "a.json").read_text()) == {"v": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_disturbed_retry_never_replaces_a_clean_attempt():
    from bench.results.record import Record
    from bench.results.store import counted_attempts
    from tests.synthetic import record

    disturbed = [{"name": "disturbed", "reason": "other processes used 14% of the CPUs"}]
    first, retry = (Record.from_json(record(repeat=0, ips=ips, seed=s, flags=f, created=t)) for ips, s, f, t in (
        (10, 1, [], "2026-01-01T00:00:00Z"), (8, 2, disturbed, "2026-01-01T00:00:05Z")))
    retry.attempt = 1
    assert counted_attempts([first, retry]) == [first]
    first.flags = [Record.from_json(record(flags=disturbed)).flags[0]]  # both disturbed: the newest counts
    assert counted_attempts([first, retry]) == [retry]


def test_the_plain_python_check_agrees_with_fastjsonschema():
    import fastjsonschema

    from bench.errors import SchemaError
    from bench.results import json_check
    from bench.results.record import RECORD_SCHEMA

    fast, plain = fastjsonschema.compile(RECORD_SCHEMA), json_check.compile_schema(RECORD_SCHEMA)
    fixtures = sorted((ROOT / "tests" / "fixtures").rglob("records/*.json"))[:40]
    assert fixtures
    from bench.results.record import upgrade

    broken = 0
    for path in fixtures:
        good = upgrade(json.loads(path.read_text()))
        for mutate in (lambda r: r, lambda r: r.pop("status"), lambda r: r.update(status=3),
                       lambda r: r.update(reason="") if r["status"] != "ok" else r["samples"].update(timed_s=[]),
                       lambda r: r["samples"].update(timed_s=[-1.0]), lambda r: r.update(schema_version=-1)):
            data = copy.deepcopy(good)
            mutate(data)
            outcomes = []
            for check in (fast, plain):
                try:
                    check(data)
                    outcomes.append(True)
                except (fastjsonschema.JsonSchemaException, json_check.JsonCheckError):
                    outcomes.append(False)
            assert outcomes[0] == outcomes[1], (path.name, outcomes)
            broken += not outcomes[0]
    assert broken >= 4 * len(fixtures)  # the mutations are caught, not waved through
    with pytest.raises(ValueError, match="cannot check the keywords \\['oneOf'\\]"):
        json_check.compile_schema({"oneOf": []})
    assert issubclass(SchemaError, Exception)
