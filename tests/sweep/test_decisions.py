"""A report that decides on an ordinary machine (issue 52): the noise command's arms, order and statistics; comparison
groups back to back in each round and the estimate within those blocks; extras as whole groups and only where they can
decide; one jitter rule for every process; the framework's process settings set and recorded; what an undecided row's
interval supports, in words."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from bench.adapters import process_environment as PE
from bench.config import make_config
from bench.errors import ConfigError
from bench.host.interference import cv_outlier_reason
from bench.report.context import load
from bench.stats.blocks import blocked_ratio, pooled_residual
from bench.stats.config_intervals import pair_ratio
from bench.stats.noise import decidable_ratio, spread, within
from bench.stats.verdicts import BOUND, DIRECTION, judge, support_kind, supported, verdict_count
from bench.sweep import noise
from bench.sweep.plan import can_decide, comparison_group, interleaved_order
from tests.conftest import bench_cli
from tests.synthetic import record, write


# --- the noise command ------------------------------------------------------------------------------------------
def test_an_arm_is_a_name_and_variables_whose_values_may_hold_commas():
    arm = noise.parse_arm("jemalloc:LD_PRELOAD=/lib/libjemalloc.so.2,MALLOC_CONF=oversize_threshold:1,"
                          "background_thread:true")
    assert arm.name == "jemalloc"
    assert arm.env == {"LD_PRELOAD": "/lib/libjemalloc.so.2",
                       "MALLOC_CONF": "oversize_threshold:1,background_thread:true"}
    assert noise.parse_arm("bare").env == {}
    for bad in ("", "a b:X=1", "thp:=1", "thp:1X=2", "thp:NOEQUALS"):
        with pytest.raises(ConfigError, match="valid form"):
            noise.parse_arm(bad)
    assert [a.name for a in noise.arms_from(["thp:THP_MEM_ALLOC_ENABLE=1"])] == ["plain", "thp"]  # the baseline first
    with pytest.raises(ConfigError, match="given twice"):
        noise.arms_from(["a:X=1", "a:X=2"])


def test_the_noise_schedule_runs_every_framework_and_arm_once_a_round_in_a_new_order_each_round():
    arms = noise.arms_from(["thp:THP_MEM_ALLOC_ENABLE=1"])
    order = noise.schedule(["torch", "tensorflow"], arms, 6, seed=1)
    rounds = [[(f, a.name) for r, f, a in order if r == k] for k in range(6)]
    assert all(sorted(r) == sorted(rounds[0]) for r in rounds)  # every pair once a round
    assert len({tuple(r) for r in rounds}) > 1  # not one block order repeated: a new random order each round


def test_the_spread_between_processes_has_an_interval_and_says_what_it_can_decide():
    rng = np.random.default_rng(0)
    values = np.exp(rng.normal(math.log(30), 0.05, 16))
    s = spread(values)
    assert s.n == 16 and s.low < s.sd_log < s.high
    assert 0.02 < s.sd_log < 0.09
    # fewer processes a side, or a wider spread, need a larger speed-up to decide
    assert decidable_ratio(0.05, 15, 2, 0.05) > decidable_ratio(0.05, 15, 6, 0.05) > 1.05
    assert decidable_ratio(0.02, 15, 6, 0.05) < decidable_ratio(0.05, 15, 6, 0.05)
    assert decidable_ratio(None, 15, 6, 0.05) is None
    assert spread([30.0]).sd_log is None
    cvs = list(rng.uniform(0.01, 0.03, 16))
    w = within(cvs)
    assert w.n == 16 and w.low <= w.cv <= w.high and w.cv == pytest.approx(float(np.median(cvs)))


def test_the_noise_command_refuses_bad_input_before_any_work(tmp_path):
    out = tmp_path / "noise"
    for args, says in ((["--frameworks", "pytorch"], "invalid framework 'pytorch'"),
                       (["--arm", "x:1=2"], "valid form"),
                       (["--processes", "1"], "invalid --processes 1"),
                       (["--mode", "serving"], "invalid --mode 'serving'")):
        proc = bench_cli("noise", *args, "--out", str(out))
        assert proc.returncode == 2 and says in proc.stderr
        assert not out.exists()  # nothing started, nothing written


@pytest.mark.full
def test_the_noise_command_runs_fresh_kernels_per_arm_and_prints_each_spread(tmp_path):
    from bench.adapters import ADAPTERS
    from bench.results.store import host_records

    out = tmp_path / "noise"
    proc = bench_cli("noise", "--frameworks", "torch", "--model", "tiny_cnn", "--batch-size", "4", "--processes", "2",
                     "--arm", "off:THP_MEM_ALLOC_ENABLE=0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "between (medians)" in proc.stdout and "torch        off" in proc.stdout and "machine before" in proc.stdout
    off = host_records(out / "off")
    assert len(off) == 2 and all(r.manifest.env.get("THP_MEM_ALLOC_ENABLE") == "0" for r in off)  # the arm's wins
    assert all(isinstance(r.interference.minor_faults, int) for r in off)  # page faults beside the speed
    # the baseline starts as the sweep starts PyTorch: with its declared settings
    declared = ADAPTERS.get("torch").process_environment.get("THP_MEM_ALLOC_ENABLE")
    if "THP_MEM_ALLOC_ENABLE" not in os.environ:
        assert all(r.manifest.env.get("THP_MEM_ALLOC_ENABLE") == declared for r in host_records(out / "plain"))


# --- comparison groups back to back, and the estimate within blocks ---------------------------------------------
def _configs():
    return [make_config(framework=fw, model="tiny_cnn", batch_size=b, image_size=32)
            for b in (1, 2, 4) for fw in ("torch", "tensorflow")]


def test_each_round_runs_a_comparison_groups_configs_back_to_back():
    tasks = interleaved_order(_configs(), 3, seed=5)
    for r in range(3):
        in_round = [comparison_group(t.config) for t in tasks if t.round == r]
        changes = sum(a != b for a, b in zip(in_round, in_round[1:]))
        assert changes == len(set(in_round)) - 1  # each group's configs are adjacent
    firsts = [next(t.config.framework for t in tasks if t.round == r) for r in range(3)]
    orders = {tuple(t.config.key for t in tasks if t.round == r) for r in range(3)}
    assert len(orders) > 1 or len(set(firsts)) > 1  # the order inside and across groups is drawn anew each round


def _drifting(seed: int, rounds: int = 6):
    """Two equally fast configs of one group measured back to back in each round, on a machine whose speed drifts
    by +-10% from round to round (a slow spell), with 1% process noise; a second group alike, for the pooled
    residual."""
    rng = np.random.default_rng(seed)
    drift = np.exp(rng.normal(0, 0.10, rounds))
    groups = {}
    for g in ("bs1", "bs4"):
        groups[g] = {f"{g}-a": [(r, 30 * drift[r] * math.exp(rng.normal(0, 0.01))) for r in range(rounds)],
                     f"{g}-b": [(r, 30 * drift[r] * math.exp(rng.normal(0, 0.01))) for r in range(rounds)]}
    return groups


def test_the_blocked_estimate_removes_a_drift_the_unblocked_one_carries():
    groups = _drifting(3)
    residual = pooled_residual(groups)
    assert residual is not None and residual.df == 10  # 24 processes less 4 configs and 12 blocks less 2 constraints
    assert math.sqrt(residual.var) < 0.03  # the drift is in the blocks, not in the residual
    a, b = groups["bs1"]["bs1-a"], groups["bs1"]["bs1-b"]
    blocked = blocked_ratio(a, b, residual)
    assert blocked["blocked"] and blocked["blocks"] == 6
    assert blocked["ci_low"] < 1 < blocked["ci_high"] and blocked["ci_high"] / blocked["ci_low"] < 1.05
    rows = [{"process_ips": [v for _, v in side], "process_sweeps": ["s"] * 6} for side in (a, b)]
    unblocked = pair_ratio(*rows)
    assert unblocked["ci_high"] / unblocked["ci_low"] > 3 * (blocked["ci_high"] / blocked["ci_low"] - 1) + 1
    # the report's pair takes the blocked estimate where both rows name their blocks and the residual ...
    both = [{**row, "process_blocks": [f"s:{r}" for r in range(6)], "block_var": residual.var,
             "block_df": residual.df} for row in rows]
    assert pair_ratio(*both).get("blocked") is True
    # ... and an older folder's rows (no blocks) keep today's estimate
    assert pair_ratio(*[{**row, "process_blocks": [None] * 6, "block_var": None, "block_df": None}
                        for row in rows]).get("blocked") is None
    assert blocked_ratio(a[:1], b[:1], residual) is None  # one shared block is no comparison within blocks


def test_the_report_compares_a_grouped_sweeps_configs_within_their_blocks(tmp_path):
    rng = np.random.default_rng(1)
    drift = [1.0, 0.85, 1.1, 0.9]
    runs = []
    for r, d in enumerate(drift):
        for fw, base in (("torch", 20.0), ("tensorflow", 23.0)):
            for bs in (4, 8):
                rec = record(framework=fw, batch_size=bs, repeat=r, seed=100 * r + bs + len(fw),
                             ips=base * d * math.exp(rng.normal(0, 0.005)), sweep_id="grouped")
                rec["sweep"].update(round=r, block=r)
                runs.append(rec)
    data = load(write(runs, tmp_path))
    row = data.summary[data.summary["batch_size"] == 4].iloc[0]
    assert row["fastest"] == "tensorflow" and row["verdict"] == "winner"  # 15% apart through a +-15% drift
    assert row["ci_high"] / row["ci_low"] < 1.05  # the drift is out of the interval
    blocks = list(data.configs["process_blocks"].iloc[0])
    assert [b.rsplit(":", 1)[0] for b in blocks] == [f"grouped:{r}" for r in range(4)]
    assert len({b.rsplit(":", 1)[1] for b in blocks}) == 1  # one comparison group's blocks


# --- extras as whole groups, only where they can decide ---------------------------------------------------------
def test_no_extra_goes_to_a_comparison_more_processes_cannot_decide():
    on_margin = judge(1.0508, 1.02, 1.082, 0.05, 4, 4, 40)  # its estimate sits on the margin: never decided
    assert on_margin.word == "undecided" and not can_decide(on_margin, 4, 6)
    near = judge(1.12, 1.03, 1.22, 0.05, 2, 2, 40)
    assert near.extra_processes is not None
    assert can_decide(near, 2, 2 + near.extra_processes) and not can_decide(near, 2, 1 + near.extra_processes)


def test_an_extra_runs_with_its_partner_in_a_round_of_their_own(tmp_path):
    from bench.sweep.policies import adaptive_task
    from bench.sweep.profiles import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("description: t\nframeworks: [torch, tensorflow]\nmodels: [tiny_cnn]\nmodes: [inference]\n"
                    "batch_sizes: [2, 4, 8]\nrepeats: adaptive\nmin_repeats: 2\nmax_repeats: 20\n"
                    "settings: {image_size: 32, protocol: seed}\n")
    p = load_profile(str(path))
    runs = []
    # batch 2 and 8: 30% apart (winners); batch 4: 8% apart, the sides jittering 2% against each other (undecided)
    for c in p.configs:
        base = {2: 20.0, 4: 20.0, 8: 20.0}[c.batch_size] * (
            {2: 1.3, 4: 1.08, 8: 1.3}[c.batch_size] if c.framework == "tensorflow" else 1.0)
        for r in range(2):
            rec = record(framework=c.framework, model="tiny_cnn", batch_size=c.batch_size, repeat=r,
                         ips=base * ((1.02 if r else 0.98) if c.framework == "tensorflow" else (0.98 if r else 1.02)),
                         seed=r * 7 + c.batch_size + len(c.framework),
                         sweep_id="s")
            rec["sweep"].update(round=r, block=r)
            runs.append(rec)
    results = write(runs, tmp_path / "results")
    extra = adaptive_task(p, results, list(p.configs), lambda t: 10.0, 1e9)
    assert extra is not None, "the undecided batch-4 comparison should get processes"
    tasks, why = extra
    assert {t.config.framework for t in tasks} == {"torch", "tensorflow"}  # the pair, not one side
    assert {t.config.batch_size for t in tasks} == {4}
    assert {t.round for t in tasks} == {2} and {t.repeat for t in tasks} == {2}


# --- one jitter rule ----------------------------------------------------------------------------------------------
def test_a_jittery_process_with_one_sibling_is_judged_against_its_framework_and_mode():
    # the case: CV 24%, one sibling; its framework and mode's other processes jitter 2-4%
    why = cv_outlier_reason(0.24, [0.03], 30.0, [33.7], family_cvs=[0.02, 0.03, 0.04, 0.03])
    assert why and "framework, mode and precision's other processes'" in why
    # the run's case: an int8 config's two processes jitter 7% and 9% (a short step), its fp32 family's 2%: both
    # alike, so the config's own jitter, not an odd process
    assert cv_outlier_reason(0.09, [0.07], family_cvs=[0.02, 0.02, 0.03]) is None
    assert cv_outlier_reason(0.09, [], family_cvs=[0.02, 0.02, 0.03]) is not None  # a lone one is still judged
    assert cv_outlier_reason(0.24, [0.03], family_cvs=[0.02, 0.03]) is None  # too small a family: no rule
    assert cv_outlier_reason(0.06, [0.03], family_cvs=[0.02, 0.03, 0.04]) is None  # not far above usual
    assert cv_outlier_reason(0.30, [0.02, 0.03], family_cvs=[0.2, 0.2, 0.2]) is not None  # siblings first


def test_the_report_flags_a_lone_jittery_process(tmp_path):
    runs = [record(framework="torch", batch_size=b, repeat=r, seed=10 * b + r, ips=20.0, jitter=0.02)
            for b in (2, 4, 8) for r in range(2)]
    runs.append(record(framework="torch", batch_size=16, repeat=0, seed=99, ips=18.0, jitter=0.30))
    runs.append(record(framework="torch", batch_size=16, repeat=1, seed=98, ips=20.0, jitter=0.02))
    data = load(write(runs, tmp_path))
    procs = data.processes
    flagged = procs[procs["process_flags"].map(lambda f: any(x.name == "cv_outlier" for x in f))]
    assert list(flagged["batch_size"]) == [16] and len(flagged) == 1


# --- the framework's process settings ---------------------------------------------------------------------------
def test_per_host_facts_are_measured_in_a_plain_process(monkeypatch):
    from bench.measurement.fresh_process import plain_environ

    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4")
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "1")
    monkeypatch.setenv(PE.SET_BY_PROJECT, "THP_MEM_ALLOC_ENABLE")
    env = plain_environ()
    assert not {"LD_PRELOAD", "THP_MEM_ALLOC_ENABLE", PE.SET_BY_PROJECT} & set(env)
    assert env["PYTHONPATH"]  # what a bench child needs stays


def test_a_setting_read_at_process_start_restarts_bench_run_and_is_never_claimed_in_process(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv(PE.SET_BY_PROJECT, raising=False)
    declared = {"LD_PRELOAD": "/lib/libtcmalloc.so.4"}
    assert PE.restart_with(declared, os.environ) == {"LD_PRELOAD": "/lib/libtcmalloc.so.4",
                                                     PE.SET_BY_PROJECT: "LD_PRELOAD"}
    assert PE.restart_with(declared, {"LD_PRELOAD": "x"}) == {}  # the user's own wins
    assert PE.restart_with({"THP_MEM_ALLOC_ENABLE": "1"}, os.environ) == {}  # read at the first allocation: set it
    PE.apply(declared)
    assert "LD_PRELOAD" not in os.environ  # too late in a running process: not set, so not recorded as in effect
    assert PE.in_effect(declared)["LD_PRELOAD"]["set_by"] == "unset"


def test_process_settings_are_set_where_the_user_has_not_and_recorded_with_who_set_them(monkeypatch):
    declared = {"BENCH_TEST_SETTING": "1", "BENCH_TEST_OTHER": "x"}
    monkeypatch.setenv("BENCH_TEST_OTHER", "user")
    monkeypatch.delenv(PE.SET_BY_PROJECT, raising=False)
    assert PE.to_set(declared, os.environ) == {"BENCH_TEST_SETTING": "1"}  # a user's own value wins
    with PE.environment(PE.to_set(declared, os.environ)):
        assert os.environ["BENCH_TEST_SETTING"] == "1"
        seen = PE.in_effect(declared)
    assert seen == {"BENCH_TEST_SETTING": {"value": "1", "set_by": "project"},
                    "BENCH_TEST_OTHER": {"value": "user", "set_by": "user"}}
    assert "BENCH_TEST_SETTING" not in os.environ and PE.SET_BY_PROJECT not in os.environ  # restored after


def test_a_sweep_kernel_starts_with_its_frameworks_process_settings(monkeypatch, tmp_path):
    from bench.adapters import ADAPTERS
    from bench.sweep import task as T
    from bench.sweep.plan import Task

    seen = {}
    monkeypatch.setattr(type(ADAPTERS.get("torch")), "process_environment", {"BENCH_TEST_SETTING": "on"})
    monkeypatch.setattr(T, "execute_masked", lambda *a, **k: seen.update(
        setting=os.environ.get("BENCH_TEST_SETTING"), mark=os.environ.get(PE.SET_BY_PROJECT)))
    config = make_config(framework="torch", model="tiny_cnn", batch_size=2, image_size=32)
    T.run_notebook(config, tmp_path, Task(config, 0, 0), {"id": "s"})
    assert seen == {"setting": "on", "mark": "BENCH_TEST_SETTING"}
    assert "BENCH_TEST_SETTING" not in os.environ


def test_pytorch_starts_with_tcmalloc_and_its_huge_pages_and_the_record_shows_them_loaded(tmp_path):
    """The A/B's outcome as the default (bench/adapters/allocator.py): a real `bench run` of PyTorch restarts itself
    with the preload, and its record's settings and fairness certificate say what was set, by whom, and that the
    library was really mapped into the measuring process."""
    import json

    from bench.adapters import ADAPTERS
    from bench.adapters.allocator import GLIBC_KEEPS_MEMORY, found

    declared = ADAPTERS.get("torch").process_environment
    if not found():
        assert declared == GLIBC_KEEPS_MEMORY  # huge pages alone raised the within-process CV: not without tcmalloc
        pytest.skip("tcmalloc is not installed (make system-deps installs libgoogle-perftools4)")
    assert declared["LD_PRELOAD"].startswith("libtcmalloc") and declared["THP_MEM_ALLOC_ENABLE"] == "1"
    if any(k in os.environ for k in declared):
        pytest.skip("the tests' own environment sets one of PyTorch's process settings: a user's value wins")
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--batch-size", "2",
                     "--protocol", "seed", "--warmup", "1", "--iterations", "3", "--phase-iterations", "0",
                     results=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads(next(tmp_path.glob("*/records/*.json")).read_text())
    seen = record["settings"]["process_environment"]
    assert seen["LD_PRELOAD"]["set_by"] == "project" and seen["LD_PRELOAD"]["loaded"] is True
    assert seen["THP_MEM_ALLOC_ENABLE"] == {"value": "1", "set_by": "project"}
    assert record["fairness"]["process_environment"] == seen


def test_without_tcmalloc_pytorch_starts_with_glibcs_malloc_keeping_its_memory(monkeypatch):
    """The second A/B's outcome: where tcmalloc is missing, glibc's tunables (read as the process starts, so `bench
    run` restarts itself with them as with a preload) keep the memory glibc would map and unmap every step."""
    from bench.adapters import allocator

    monkeypatch.setattr(allocator, "found", lambda library=allocator.TCMALLOC: None)
    settings = allocator.torch_cpu_settings()
    assert settings == {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"}
    assert PE.restart_with(settings, {}) == {**settings, PE.SET_BY_PROJECT: "GLIBC_TUNABLES"}
    assert PE.restart_with(settings, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}) == {}  # a user's own value wins


# --- what an undecided row's interval supports ----------------------------------------------------------------
def test_an_undecided_interval_says_its_direction_and_range_or_its_bound():
    assert supported(1.01, 1.09, "tensorflow", "torch") == "tensorflow 1-9% faster"
    assert supported(0.85, 0.97, "tensorflow", "torch") == "torch 3-18% faster"
    assert supported(0.94, 1.11, "tensorflow", "torch") == "at most 11% apart"
    assert supported(None, None, "a", "b") == ""
    assert support_kind(1.01, 1.09) == DIRECTION and support_kind(0.9, 1.1) == BOUND
    assert [verdict_count(n, w) for n, w in ((1, "winner"), (2, "winner"), (3, "small difference"),
                                              (2, "equivalent"), (4, "undecided"))] == \
        ["1 winner", "2 winners", "3 small differences", "2 equivalent", "4 undecided"]


def test_no_undecided_row_names_a_fastest_in_words(tmp_path):
    from bench.report import throughput_grid as G
    from bench.report.answer import answer_table, decided_line
    from bench.report.estimates import framework_grid

    runs = []
    for r in range(3):  # batch 4: 3% apart with a 4% spread (undecided, holds 1x); batch 8: 2x (a winner)
        runs += [record(framework="torch", batch_size=4, repeat=r, seed=r, ips=20.0 * (1 + 0.04 * (r - 1))),
                 record(framework="tensorflow", batch_size=4, repeat=r, seed=10 + r,
                        ips=20.6 * (1 - 0.04 * (r - 1))),
                 record(framework="torch", batch_size=8, repeat=r, seed=20 + r, ips=20.0 * (1 + 0.01 * r)),
                 record(framework="tensorflow", batch_size=8, repeat=r, seed=30 + r, ips=40.0 * (1 + 0.01 * r))]
    data = load(write(runs, tmp_path))
    grid = framework_grid(data.configs, data.judge)
    table = G.images_table(grid, data.summary, data.best, data.judge)
    four = table[table["batch"] == "4"].iloc[0]
    assert four["fastest vs runner-up"].startswith("undecided: at most")
    assert "fastest" not in four["fastest vs torch"] and "over" not in four["fastest vs runner-up"]
    reading, _ = answer_table(data.summary, data.best, data.judge)
    undecided = reading[reading["verdict"].str.startswith("undecided")]
    # page 2 gives the ratio and its interval (page 1 says what it supports): a ratio, never a fastest in words
    assert all(c.startswith("tensorflow / torch: 1.0") and "fastest" not in c for c in undecided["speed-up [95% CI]"])
    line = decided_line(data.summary, data.best, data.judge)
    assert "2 winners" in line or "1 winner" in line
    assert "bounded" in line


# --- the speed reference and slow spells ------------------------------------------------------------------------
def test_a_process_between_two_slow_readings_ran_in_a_slow_spell():
    from bench.measurement.spells import SPELL_LIMIT, spell_reason

    readings = [(0, 0.100), (0, 0.101), (4, 0.099), (8, 0.100), (12, 0.115), (16, 0.116), (20, 0.100)]
    assert spell_reason(readings, 13) and "slow spell" in spell_reason(readings, 13)  # between 12 and 16: both slow
    assert spell_reason(readings, 9) is None  # slow after it, not before
    assert spell_reason(readings, 2) is None
    assert spell_reason(readings, 25) is None  # no reading after it
    assert spell_reason(readings[:2], 1) is None  # too few readings to know the usual speed
    assert 0.05 <= SPELL_LIMIT < 0.125  # the spell seen here (12.5%) is caught


def test_the_report_flags_processes_in_a_spell_and_draws_the_reference(tmp_path):
    import matplotlib.pyplot as plt

    from bench.report.diagnostics import drift_timeline
    from bench.results.sweep_manifest import write_sweep

    runs = []
    for r in range(3):
        for i, fw in enumerate(("torch", "tensorflow")):
            rec = record(framework=fw, batch_size=4, repeat=r, seed=10 * r + i, ips=20.0, sweep_id="spell")
            rec["sweep"].update(order_index=2 * r + i, round=r, block=r)
            runs.append(rec)
    results = write(runs, tmp_path)
    readings = [{"position": 0, "step_s": 0.1}, {"position": 2, "step_s": 0.1}, {"position": 4, "step_s": 0.12},
                {"position": 6, "step_s": 0.121}, {"position": 6, "step_s": 0.1}]
    write_sweep(results, {"sweep_id": "spell", "host": "test-host", "profile": "t", "status": "finished",
                          "speed_reference": readings})
    data = load(results)
    spelled = data.processes[data.processes["process_flags"].map(lambda f: any(x.name == "slow_spell" for x in f))]
    assert sorted(spelled["order_index"]) == [4, 5]  # the last round ran between two slow readings
    assert data.speed_readings["spell"][2] == (4, 0.12)
    fig = drift_timeline(data.processes, data.replaced, data.speed_readings)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any("speed reference" in label for label in labels)
    plt.close(fig)


@pytest.mark.full
def test_the_speed_reference_steadies_and_reads_a_real_network_step():
    from bench.sweep.speed_reference import SpeedReference

    said = []
    ref = SpeedReference(said.append)
    try:
        ref.steady(position=0)
        assert ref.read(5) is not None
    finally:
        ref.close()
    assert ref.failed is None and "resnet18" in ref.label
    assert said and "speed reference" in said[0]
    assert [r["position"] for r in ref.readings][-1] == 5 and all(r["step_s"] > 0 for r in ref.readings)


def test_the_utilisation_uses_a_steady_peak_and_flags_only_when_none_is():
    from bench.report.estimates.configs import config_utilisation

    start = {"flops_per_sec": 480e9, "spread": 0.21}  # measured while other work ran
    end = {"flops_per_sec": 460e9, "spread": 0.04}
    share, flags = config_utilisation(4e9, 10.0, [start, end], [])
    assert not flags and share == pytest.approx(4e9 * 10 / 460e9)
    share, flags = config_utilisation(4e9, 10.0, [start], [])
    assert share is None and [f.name for f in flags] == ["peak_unsteady"]


def test_an_undecidable_row_says_the_true_reason():
    from bench.stats.verdicts import undecidable

    assert undecidable(1.0507, 0.05).startswith("on the margin")
    assert undecidable(1 / 1.0511, 0.05).startswith("on the margin")
    assert undecidable(1.01, 0.05).startswith("too noisy")
    wide = judge(1.01, 0.70, 1.45, 0.05, 2, 2, 40)
    assert wide.word == "undecided" and "too noisy" in wide.to_decide()


def test_the_forest_plot_reads_at_page_size_and_draws_int8_on_a_panel_of_its_own():
    import matplotlib.pyplot as plt

    from bench.report import verdict_figure as V
    from bench.stats.judge import Judge

    points = [{"where": ("resnet50", "inference", "fp32", 16), "pair": "tensorflow / torch", "ratio": 1.03,
               "low": 0.98, "high": 1.09, "verdict": "undecided"},
              {"where": ("resnet50", "inference", "int8", 16), "pair": "openvino int8 / its fp32", "ratio": 4.05,
               "low": 3.69, "high": 4.44, "verdict": "winner"}]
    fig = V.verdict_forest(points, Judge())
    assert len(fig.axes) == 2
    frameworks, int8 = fig.axes
    assert frameworks.get_xlim()[1] < 1.3  # the int8 point does not stretch the frameworks' axis
    assert int8.get_xlim()[1] > 4.4
    assert min(t.get_fontsize() for t in frameworks.get_yticklabels()) >= 9
    plt.close(fig)


def test_three_or_more_frameworks_fall_into_tiers_split_only_at_decided_winners(tmp_path):
    from bench.report.answer import tiers_text
    from bench.report.estimates import tiers

    runs = []
    for r in range(3):
        runs += [record(framework="onnxruntime", batch_size=8, repeat=r, seed=r, ips=21.0 * (1 + 0.01 * r)),
                 record(framework="tensorflow", batch_size=8, repeat=r, seed=10 + r, ips=20.0 * (1 + 0.01 * r)),
                 record(framework="torch", batch_size=8, repeat=r, seed=20 + r, ips=10.0 * (1 + 0.01 * r))]
    data = load(write(runs, tmp_path))
    [row] = tiers(data.configs, data.judge)
    assert row["tiers"] == [["onnxruntime", "tensorflow"], ["torch"]] and row["steps"] == 2
    line = tiers_text([row])
    assert "onnxruntime, tensorflow > torch" in line and "at most 10% familywise" in line
