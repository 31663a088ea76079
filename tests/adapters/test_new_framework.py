"""Adding a framework is adding one package: a toy one dropped into a copy of bench/adapters/ is listed, runs,
gets a colour and a row in the framework table, with no other file touched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, TEST_HOST

TOY = Path(__file__).parents[1] / "fixtures" / "toy_framework"


def _bench(copy: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "BENCH_HOST": TEST_HOST, "BENCH_RESULTS": str(copy / "results")}
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "bench", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=copy, timeout=600)


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_a_framework_package_dropped_in_is_listed_runs_and_is_drawn(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(TOY, copy / "bench" / "adapters" / "toyfw")
    listed = _bench(copy, "list", "frameworks")
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("toyfw") for line in listed.stdout.splitlines()), listed.stdout
    assert "Toy framework" in listed.stdout  # its row in the framework table
    run = _bench(copy, "run", "--framework", "toyfw", "--model", "tiny_cnn", "--mode", "training", "--batch-size",
                 "4", "--image-size", "32", "--protocol", "seed", "--warmup", "1", "--iterations", "3")
    assert run.returncode == 0, run.stderr
    record = json.loads(Path(run.stdout.strip().splitlines()[-1].removeprefix("record: ")).read_text())
    assert record["status"] == "ok" and record["config"]["framework"] == "toyfw"
    assert record["fairness"]["weights_changed"] is True
    drawn = _bench(copy, code="import json; from bench.report.style import framework_colour; "
                              "from bench.report.sections.frameworks import frameworks_table; "
                              "print(json.dumps([framework_colour('toyfw'), list(frameworks_table()['framework'])]))")
    assert drawn.returncode == 0, drawn.stderr
    colour, table = json.loads(drawn.stdout)
    assert colour == "#123456" and "Toy framework" in table


def test_a_framework_package_s_ranks_run_through_the_rank_contract_alone(tmp_path):
    """The toy package's distributed run: its adapter returns its launch plan and its ranks (the contract's generic
    one-process-per-rank pieces over its own Workload); the launcher, the rank loop and the record need no other
    file to know it."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(TOY, copy / "bench" / "adapters" / "toyfw")
    run = _bench(copy, "run", "--framework", "toyfw", "--model", "tiny_cnn", "--mode", "training", "--batch-size",
                 "4", "--image-size", "32", "--strategy", "independent", "--workers", "2", "--warmup", "1",
                 "--iterations", "3")
    assert run.returncode == 0, run.stderr
    record = json.loads(Path(run.stdout.strip().splitlines()[-1].removeprefix("record: ")).read_text())
    assert record["status"] == "ok", record["reason"]
    d = record["distributed"]
    assert (d["launch"], d["workers"], d["global_batch"]) == ("processes", 2, 8)
    assert [(r["rank"], r["steps"], r["samples"]) for r in d["ranks"]] == [(0, 3, 12), (1, 3, 12)]
    assert len({r["pid"] for r in d["ranks"]}) == 2  # a process each
    assert all(r["checksum_after"] != r["checksum_before"] for r in d["ranks"])
    assert record["fairness"]["weights_changed"] is True and record["summary"]["images_per_sec_median"] > 0
