"""What the report says about itself is true: an unfinished sweep is announced first with counts from its
manifest and records, and each environment that produced runs is described by its own values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.adapters import ADAPTERS
from bench.config import make_config
from bench.report import coverage, sections
from bench.report.context import load
from bench.report.sections.environment import environment_name, environment_table
from bench.report.sections.header import header, provenance
from bench.report.sections.methodology import methodology
from bench.results.record import Record
from bench.results.store import write_record
from bench.results.sweep_manifest import write_sweep
from tests.synthetic import record, write

HOST, SWEEP, PROFILE = "test-host", "20260101T000000-abcdef", "quick"
NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "report.ipynb"


def _minute(m: int, s: int = 0) -> str:
    return f"2026-01-01T00:{m:02d}:{s:02d}.000000Z"


def _run(framework: str, repeat: int, minute: int, attempt: int = 0, **kw) -> dict:
    r = record(framework=framework, repeat=repeat, seed=repeat + 10 * attempt, sweep_id=SWEEP,
               created=_minute(minute), host=HOST, **kw)
    r["attempt"] = attempt
    return r


def _manifest(order: list[dict], retried: list[dict], status: str = "running", **extra) -> dict:
    return {"sweep_id": SWEEP, "host": HOST, "profile": PROFILE, "description": "", "order_seed": 1, "repeats": 3,
            "retries": 1, "budget_minutes": None, "force": False, "started": "2026-01-01T00:00:00Z",
            "finished": None, "status": status, "estimate_s": 600.0, "order": order, "already_done": 0,
            "dropped": [], "peaks": {}, "retried": retried, "networks": {}, "not_applicable": [], **extra}


@pytest.fixture
def unfinished(tmp_path) -> Path:
    """A running sweep of 6 planned runs: 5 recorded (one failed), 2 retries queued of which 1 has run, 41 min in."""
    torch = [_run("torch", i, 5 + i) for i in range(3)]
    tf = [_run("tensorflow", 0, 9, flags=[{"name": "disturbed", "reason": "other processes used 45% of the CPUs"}])]
    retry = _run("torch", 0, 41, attempt=1)
    config = make_config(framework="tensorflow", model="resnet50", mode="inference", batch_size=8, protocol="seed")
    failed = Record.failure(config, "it broke", repeat=1, sweep={"id": SWEEP, "order_index": 4})
    failed.host, failed.created = HOST, _minute(20)
    write(torch + tf + [retry], tmp_path)
    write_record(failed, tmp_path)
    order = [{"config_key": r["config_key"], "repeat": i, "round": i, "label": r["label"]}
             for r in (torch[0], tf[0]) for i in range(3)]
    retried = [{"config_key": torch[0]["config_key"], "repeat": 0, "attempt": 0, "reason": "disturbed"},
               {"config_key": tf[0]["config_key"], "repeat": 0, "attempt": 0, "reason": "disturbed"}]
    write_sweep(tmp_path, _manifest(order, retried))
    return tmp_path


def test_an_unfinished_sweep_says_so_first_with_true_counts(unfinished):
    d = load(unfinished)
    (c,) = coverage.coverages(d.sweeps, d.records)
    assert (c.planned, c.done, c.failed, c.retries_queued, c.retries_done, c.retries_pending) == (6, 5, 1, 2, 1, 1)
    assert not c.complete and c.minutes_so_far and c.minutes == pytest.approx(41, abs=0.5)
    head = header(d)
    assert head.startswith("> **Incomplete: sweep")
    # one run was retried once: 5 runs recorded in 6 attempts, counted once and said the same way everywhere
    assert (c.attempts, c.single, c.distributed, c.extra) == (6, 5, 0, 0)
    for true in ("has not finished (status running)", "5 of 6 planned runs recorded in 6 attempts (1 retry); "
                 "1 not yet run",
                 "1 failed or skipped", "2 retries of disturbed or jittery runs queued, 1 run, 1 pending",
                 "41 min so far, up to the end of its newest run",
                 f"`make sweep PROFILE={PROFILE}`", f"`python -m bench sweep --profile {PROFILE}`",
                 "1 failed and 0 were skipped"):
        assert true in head + provenance(d), true
    method = methodology(d)
    assert c.runs_text() in method and "41 min so far" in method and "1 pending" in method
    text = head + method + NOTEBOOK.read_text()
    for false in ("0 runs failed", "took 0 min", "(2 retried)", "every config of the profile was run"):
        assert false not in text, false


def test_an_interrupted_sweep_states_its_recorded_duration(unfinished):
    m = load(unfinished).sweeps[0]
    write_sweep(unfinished, {**m, "status": "interrupted", "elapsed_s": 43 * 60.0, "runs_done": 5})
    head = header(load(unfinished))
    assert head.startswith("> **Incomplete") and "is interrupted" in head and "took 43 min" in head


def test_a_complete_sweep_has_no_banner_and_states_its_duration(tmp_path):
    runs = [_run("torch", i, 1 + i) for i in range(3)]
    write(runs, tmp_path)
    order = [{"config_key": runs[0]["config_key"], "repeat": i, "round": i, "label": runs[0]["label"]}
             for i in range(3)]
    write_sweep(tmp_path, _manifest(order, [], status="finished", elapsed_s=7 * 60.0, runs_done=3))
    d = load(tmp_path)
    assert coverage.banner(d.sweeps, d.records) == ""
    head = header(d)
    (c,) = coverage.coverages(d.sweeps, d.records)
    assert c.runs_text() == "3 of 3 planned runs recorded in 3 attempts"
    assert head.startswith("**Status:** complete, 3 of 3 planned runs;")  # page 1: one line
    more = provenance(d)  # page 2, the header and the methodology agree word for word
    assert more.startswith(f"**Status:** complete ({c.runs_text()})")
    assert "`quick` on test-host: complete" in more and c.runs_text() in methodology(d)
    assert "took 7 min" in methodology(d) and "no disturbed or jittery run retried" in methodology(d)


def test_each_environment_is_listed_with_its_own_runs_and_values(tmp_path):
    own = next(ADAPTERS.get(n).environment for n in ADAPTERS if ADAPTERS.get(n).environment)
    main = [record(framework="torch", repeat=i, seed=i) for i in range(3)]
    other = [record(framework="tensorflow", repeat=i, seed=i) for i in range(2)]
    for r in main:
        r["manifest"].update(interpreter="/p/.venv", libraries={"numpy": "2.1.3"}, env={})
    for r in other:  # as runs in a framework's environment of its own record them
        r["manifest"].update(interpreter=f"/p/{own}", libraries={"numpy": "1.23.5"}, env={"OMP_NUM_THREADS": "2"})
    write(main + other, tmp_path)
    env = environment_table(load(tmp_path).records)
    assert sorted(env.columns) == sorted([f"{HOST}: main", f"{HOST}: {own}"])
    a, b = env[f"{HOST}: main"], env[f"{HOST}: {own}"]
    assert (a["environment (interpreter)"], a["runs"], a["frameworks (runs)"], a["numpy"], a["recorded env vars"]) \
        == (".venv", "3 successful runs (3 single-process on synthetic data)", "torch (3)", "2.1.3", "none")
    assert (b["environment (interpreter)"], b["runs"], b["frameworks (runs)"], b["numpy"], b["recorded env vars"]) \
        == (own, "2 successful runs (2 single-process on synthetic data)", "tensorflow (2)", "1.23.5",
            "OMP_NUM_THREADS=2")


def test_two_unnamed_environments_on_one_host_stay_apart(tmp_path):
    runs = [record(framework="torch", repeat=i, seed=i) for i in range(2)]
    for r, prefix in zip(runs, ("/a/.venv", "/b/.venv")):
        r["manifest"]["interpreter"] = prefix
    env = environment_table(load(write(runs, tmp_path)).records)
    assert len(env.columns) == 2 and set(env.loc["environment (interpreter)"]) == {"a/.venv", "b/.venv"}


def test_a_framework_s_own_environment_is_named_after_its_folder():
    own = next(ADAPTERS.get(n).environment for n in ADAPTERS if ADAPTERS.get(n).environment)
    assert environment_name(f"/p/{own}") == own
    assert environment_name("/p/.venv") == "main" and environment_name(None) == "not recorded"


def test_the_notebook_shows_the_header_first():
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    first_output = [c for c in cells if "parameters" not in c.get("metadata", {}).get("tags", [])][0]
    assert "".join(first_output["source"]).rstrip().endswith("show_all(REPORT, load(results_dir), figures_dir)")
    assert sections.REPORT[0] is sections.header


def test_an_interpreter_in_a_home_folder_does_not_name_its_user(tmp_path):
    runs = [record(framework="torch", repeat=0, seed=0)]
    runs[0]["manifest"]["interpreter"] = "/home/alice/proj/.venv"
    env = environment_table(load(write(runs, tmp_path)).records)
    assert env.loc["environment (interpreter)"].tolist() == [".venv"] and "alice" not in env.to_string()


def test_a_sweeps_coverage_counts_its_real_files_runs_too():
    """The `files` runs of the input-pipeline study are kept out of the framework tables but not out of the sweep's
    coverage: a finished sweep whose every run is recorded is never called incomplete for them."""
    from types import SimpleNamespace

    from bench.report.sections.base import all_records

    d = SimpleNamespace(records=["synthetic"], input_records=["files"], scaling=SimpleNamespace(records=["ranks"]))
    assert all_records(d) == ["synthetic", "files", "ranks"]
