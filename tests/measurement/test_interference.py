"""Interference detection: a CPU hog beside a run is seen, flagged, retried, and kept flagged."""

import json
import os
import resource
import signal
import subprocess
import sys
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import psutil
import pytest

from bench.host.interference import (
    OTHER_CPU_LIMIT,
    InterferenceMonitor,
    busiest_others,
    cv_outlier_reason,
    interference_reasons,
)
from bench.measurement.flags import phase_sum_flag, run_flags, utilisation_flag
from bench.results.store import host_records
from tests.conftest import TEST_HOST, bench_cli


@dataclass
class Hog:
    pid: int


@contextmanager
def cpu_hogs(n: int = 2):
    """Busy loops in other processes, as a neighbour on a laptop or shared VM would be: not this process's
    descendants (a shell starts each in the background and exits), as the monitor counts those as the run's own."""
    pids = [int(subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                               capture_output=True, text=True, check=True).stdout) for _ in range(n)]
    time.sleep(0.3)
    try:
        yield [Hog(pid) for pid in pids]
    finally:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _watch(seconds: float) -> dict:
    with InterferenceMonitor() as m:
        time.sleep(seconds)  # this process idles, so whatever is busy is someone else
    return m.result()


def test_monitor_sees_other_processes_cpu():
    quiet = _watch(1.0)
    with cpu_hogs(1):
        busy = _watch(1.0)
    assert busy["judged"] and busy["other_cpu_share"] > OTHER_CPU_LIMIT
    assert busy["other_cpu_share"] > quiet["other_cpu_share"] + 0.25  # one of two cores was taken
    assert interference_reasons(busy) and "other processes used" in interference_reasons(busy)[0]
    for key in ("steal_share", "loadavg_1m_start", "loadavg_1m_end", "own_cpu_s", "cpu_mhz_start"):
        assert key in busy


def test_the_runs_own_child_processes_are_not_others():
    """A `files` run's DataLoader workers decode for its step: their CPU is the run's own, not a disturbance."""
    from bench.host import interference

    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\ntime.sleep(60)"])
    try:  # it burns 0.3 s, more than waited for: /proc counts in ticks and can stay under what the child counted
        deadline = time.monotonic() + 60
        while sum(psutil.Process(child.pid).cpu_times()[:2]) < 0.2 and time.monotonic() < deadline:
            time.sleep(0.05)
        own = interference._own_cpu_s()
        alone = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        assert own - alone >= 0.15  # the child's CPU counts as this process's
        assert child.pid not in {pid for pid, _ in interference._cpu_by_process()}
    finally:
        child.kill()
        child.wait()


def test_a_disturbed_run_names_the_busiest_other_process(monkeypatch):
    from bench.host import interference

    assert busiest_others({(1, "a"): 1.0, (2, "b"): 0.0}, {(1, "a"): 1.5, (2, "b"): 2.0, (3, "c"): 0.01}) == \
        "b (2) 2.0 s, a (1) 0.5 s"  # busiest first; under 0.05 s is no one's disturbance
    monkeypatch.setattr(interference, "TOP_OTHERS", 1000)  # this machine may be busier than the hog (CI)
    with cpu_hogs(1) as (hog,):
        busy = _watch(1.0)
    assert f"({hog.pid})" in busy["others"]  # the hog, by name and pid
    assert "while True" not in busy["others"]  # command names only: arguments may hold secrets


def test_a_short_window_is_not_judged():
    with cpu_hogs(1):
        r = _watch(0.05)
    assert not r["judged"] and interference_reasons(r) == []


def test_run_level_guards():
    assert utilisation_flag(1.15)["name"] == "utilisation_over_peak" and utilisation_flag(0.7) is None
    assert phase_sum_flag({"forward": 100.0, "backward": 250.0}, 200.0)["name"] == "phase_sum_mismatch"
    assert phase_sum_flag({"forward": 60.0, "backward": 130.0, "update": 5.0}, 200.0) is None
    r = {"interference": {"judged": True, "other_cpu_share": 0.4, "steal_share": 0.0}, "utilisation": 1.2,
         "phases": None, "summary": None}
    assert [f["name"] for f in run_flags(r)] == ["disturbed", "utilisation_over_peak"]


def test_cv_outlier_needs_two_siblings_and_a_real_excess():
    assert cv_outlier_reason(0.30, [0.02, 0.03]) is not None
    assert cv_outlier_reason(0.30, [0.02]) is None  # one sibling: no telling which is odd
    assert cv_outlier_reason(0.04, [0.005, 0.006]) is None  # below the floor: tiny absolute jitter


BUSY_PROFILE = """
description: one tiny config, long enough a timed loop to judge
frameworks: [torch]
models: [tiny_cnn]
modes: [inference]
batch_sizes: [64]
repeats: 1
retries: 1
settings: {protocol: seed, warmup: 3, iterations: 150, phase_iterations: 0, image_size: 32}
"""


@pytest.mark.full
def test_a_planted_busy_run_is_flagged_retried_and_kept_flagged(tmp_path):
    profile = tmp_path / "busy.yaml"
    profile.write_text(BUSY_PROFILE)
    results = tmp_path / "results"
    with cpu_hogs(2):
        proc = bench_cli("sweep", "--profile", str(profile), "--results-dir", str(results))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = sorted(host_records(results, TEST_HOST), key=lambda r: r["attempt"])
    assert [r["attempt"] for r in records] == [0, 1]  # retried once (the profile's bound), then kept
    for r in records:
        assert r["interference"]["judged"], r["interference"]
        assert r["interference"]["wall_s"] >= 0.5
        assert [f["name"] for f in r["flags"]] == ["disturbed"]
    assert "1 retry of disturbed or jittery runs queued, 1 run, 0 pending" in proc.stdout
    assert "1 still disturbed" in proc.stdout
    [manifest] = (results / TEST_HOST / "sweeps").glob("*.json")
    m = json.loads(manifest.read_text())
    assert len(m["retried"]) == 1 and m["status"] == "finished" and m["peaks"]


def test_wait_until_quiet_waits_out_a_busy_spell_and_gives_up_at_its_limit():
    from bench.host.interference import wait_until_quiet

    now = [0.0]

    def look_seq(shares):
        it = iter(shares)

        def look():
            now[0] += 2.0
            return next(it)
        return look

    seen = wait_until_quiet(0.10, 60.0, look=look_seq([0.4, 0.3, 0.05]), clock=lambda: now[0])
    assert seen["quiet"] and seen["busy_share"] == 0.05 and seen["waited_s"] == 6.0
    now[0] = 0.0
    stuck = wait_until_quiet(0.10, 5.0, look=look_seq([0.5] * 10), clock=lambda: now[0])
    assert not stuck["quiet"] and stuck["waited_s"] == 6.0


def test_the_machine_is_seen_busy_while_a_hog_runs():
    from bench.host.interference import machine_share_busy

    with cpu_hogs(1):
        assert machine_share_busy(0.6) > 0.3  # one of two cores at least


def test_a_jittery_process_whose_median_is_typical_is_not_left_out():
    # CV 30% against siblings' 2%: an outlier by jitter, but its median 10.2 sits within 5% of theirs (10.0)
    assert cv_outlier_reason(0.30, [0.02, 0.02], 10.2, [10.0, 9.9]) is None
    moved = cv_outlier_reason(0.30, [0.02, 0.02], 8.0, [10.0, 9.9])
    assert moved and "its median is more than 5% from theirs" in moved
    assert cv_outlier_reason(0.30, [0.02, 0.02]) is not None  # without medians: the jitter rule alone
