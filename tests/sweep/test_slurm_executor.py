"""The sweep's executors: Slurm options and shards checked up front, the node as a statistical level, and sweeps
through a real one-node Slurm cluster (tests/local_slurm.py), never a mock, with the same records as a local sweep."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.commands import EXIT_INTERRUPTED
from bench.config import make_config
from bench.errors import ConfigError
from bench.report.data import config_tables
from bench.results.record import validate_record
from bench.stats.intervals import outer_level, process_interval
from bench.sweep import slurm_jobs
from bench.sweep.executors import SlurmOptions, check_for_profile, make_executor, slurm_options, time_limit_minutes
from bench.sweep.plan import comparison_group
from bench.sweep.profiles import load_profile
from bench.sweep.runner import results_lock
from bench.sweep.shard import parse_shard, shard_configs, shard_profile
from tests import local_slurm
from tests.conftest import ROOT, TEST_HOST, interruptible
from tests.synthetic import record

# One tiny config, two fresh processes: the smallest sweep that has repetitions.
TINY = """description: one tiny config, two processes (executor tests)
frameworks: [{framework}]
models: [tiny_cnn]
modes: [inference]
batch_sizes: [1]
repeats: 2
retries: 0
settings: {{protocol: seed, warmup: 2, iterations: 5, phase_iterations: 2, image_size: 32}}
slurm: {{time_limit: 15}}
"""


def _profile(tmp_path: Path, framework: str = "torch") -> Path:
    path = tmp_path / f"tiny-{framework}.yaml"
    path.write_text(TINY.format(framework=framework))
    return path


# ---- shards -------------------------------------------------------------------------------------------------
def test_shards_split_the_plan_by_comparison_group_deterministically_and_completely():
    profile = load_profile("tiny")
    n = 3
    shards = [shard_configs(profile.configs, k, n) for k in range(1, n + 1)]
    assert shards == [shard_configs(profile.configs, k, n) for k in range(1, n + 1)]  # the same on every machine
    every = [c for s in shards for c in s]
    assert sorted(c.key for c in every) == sorted(c.key for c in profile.configs)  # each config exactly once
    for s in shards:  # every framework of a comparison on one machine: no ratio across machines
        groups = {comparison_group(c) for c in s}
        assert all(comparison_group(c) not in groups for other in shards if other is not s for c in other)
        assert s  # the tiny profile has more comparison groups than 3
    one = shard_profile(profile, 2, n)
    assert one.configs == shards[1] and one.repeats == profile.repeats and one.order_seed == profile.order_seed


@pytest.mark.parametrize("text, needle", [("0/2", "k must be from 1 to n"), ("3/2", "k must be from 1 to n"),
                                          ("1", "expected k/n"), ("a/b", "expected k/n"), ("1/0", "from 1 to n")])


def test_a_bad_shard_is_refused_with_the_valid_form(text, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_shard(text)


def test_more_shards_than_comparison_groups_is_refused():
    profile = load_profile("tiny")
    groups = len({comparison_group(c) for c in profile.configs})
    with pytest.raises(ConfigError, match=f"only {groups} comparison group"):
        shard_profile(profile, groups + 1, groups + 1)


# ---- Slurm options ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, minutes", [(90, 90), ("90", 90), ("1:30:00", 90), ("2-00:00:00", 2880),
                                            ("10:30", 11), ("1-2", 1560)])


def test_time_limits_in_slurm_formats(value, minutes):
    assert time_limit_minutes(value) == minutes


@pytest.mark.parametrize("given, needle", [
    ({"time_limit": "soon"}, "invalid time limit 'soon'"), ({"time_limit": 0}, "from 1 minute"),
    ({"cpus_per_task": 0}, "cpus_per_task 0"), ({"gpus_per_task": -1}, "gpus_per_task -1"),
    ({"partition": "a b"}, "invalid partition 'a b'"), ({"exclusive": "yes"}, "valid choices: true, false"),
    ({"parallel": 2, "exclusive": False}, "parallel 2 needs exclusive"), ({"nodes": 2}, "unknown key"),
])


def test_bad_slurm_options_are_refused_naming_the_value(given, needle):
    with pytest.raises(ConfigError, match=needle):
        slurm_options(given)


def test_slurm_options_come_from_the_profile_and_the_command_line_overrides_them():
    executor = make_executor("slurm", {"partition": "a", "time_limit": 30}, {"partition": "b", "parallel": None})
    assert executor.options == SlurmOptions(partition="b", time_limit_min=30)
    with pytest.raises(ConfigError, match="--partition: only for --executor slurm"):
        make_executor("local", {}, {"partition": "b"})
    assert make_executor("local", {"partition": "a"}, {}).name == "local"  # a profile's block waits for slurm
    with pytest.raises(ConfigError, match="unknown executor 'pbs'; valid choices: local, slurm"):
        make_executor("pbs")


def test_a_job_must_fit_the_profiles_runs():
    configs = [make_config(framework="torch", model="tiny_cnn", threads=2, image_size=32)]
    with pytest.raises(ConfigError, match="--cpus-per-task 1 is fewer than the 2 threads"):
        check_for_profile(SlurmOptions(cpus_per_task=1), configs)
    check_for_profile(SlurmOptions(cpus_per_task=2), configs)


def test_a_profiles_bad_slurm_block_fails_at_load(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(TINY.format(framework="torch").replace("time_limit: 15", "time_limit: 15, partion: x"))
    with pytest.raises(ConfigError, match=r"profile p.yaml: 'slurm': unknown key\(s\) partion"):
        load_profile(str(path))


def test_scontrol_array_task_ids_and_the_schedulers_reason():
    assert slurm_jobs._task_ids("3") == [3] and slurm_jobs._task_ids("2-4,7%1") == [2, 3, 4, 7]
    info = slurm_jobs.JobInfo("12_0", "TIMEOUT", "TimeLimit", "n1", "0:15", "00:01:00")
    assert info.ended and info.explain() == ("Slurm job 12_0 TIMEOUT: killed at its time limit on node n1 "
                                             "(time limit 00:01:00) (reason TimeLimit) (exit code 0:15)")
    assert not slurm_jobs.JobInfo("12_1", "PENDING").ended


# ---- the node as a statistical level ------------------------------------------------------------------------
def _on(node: str | None, rec: dict) -> dict:
    rec["sweep"] = {"id": "s1", "order_index": rec["repeat"], **({"executor": "slurm", "job_id": f"7_{rec['repeat']}",
                                                                  "node": node} if node else {})}
    return rec


def test_processes_on_several_nodes_make_the_node_the_outer_level():
    values = [10.0, 10.05, 12.0, 12.1]
    nodes = ["n1", "n1", "n2", "n2"]
    flat = [_on(None, record(repeat=i, ips=v, seed=i)) for i, v in enumerate(values)]
    nested = [_on(n, record(repeat=i, ips=v, seed=i)) for i, (v, n) in enumerate(zip(values, nodes))]
    a = config_tables(flat, [])[2].iloc[0]
    b = config_tables(nested, [])[2].iloc[0]
    assert a["ci_method"] == "t over processes" and len(a["process_ips"]) == 4
    assert b["ci_method"].startswith("t over nodes (2") and len(b["process_ips"]) == 2
    means, levels = outer_level(a["process_ips"], nodes)  # each node's geometric mean of its processes
    assert levels == 2 and b["process_ips"] == pytest.approx(means)
    expected = process_interval(means)  # two node means, one degree of freedom
    assert math.isclose(b["images_per_sec_ci_low"], expected["ci_low"])
    assert math.isclose(b["images_per_sec_ci_high"], expected["ci_high"])
    assert b["images_per_sec_ci_high"] - b["images_per_sec_ci_low"] > a["images_per_sec_ci_high"] - \
        a["images_per_sec_ci_low"]  # two nodes are two replicates, not four
    one = [_on("n1", record(repeat=i, ips=v, seed=i)) for i, v in enumerate(values)]
    assert config_tables(one, [])[2].iloc[0]["ci_method"] == "t over processes"  # one node: processes


# ---- a real Slurm -------------------------------------------------------------------------------------------
def _sweep(profile: Path, results: Path, env: dict, *more: str, wait: bool = True):
    cmd = [sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir", str(results), *more]
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if not wait:
        return subprocess.Popen(cmd, env=full, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=interruptible)
    return subprocess.run(cmd, env=full, cwd=ROOT, capture_output=True, text=True, timeout=900)


def _records(results: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / TEST_HOST / "records").glob("*.json"))]


def test_the_scheduler_reports_a_cancelled_job_with_its_reason(slurm_cluster, tmp_path):
    """The job-state reader against the real controller: a job cancelled by scancel ends CANCELLED."""
    env = {**os.environ, **slurm_cluster}
    out = subprocess.run(["sbatch", "--parsable", "--array=0-1%1", "-t", "5", "-o", str(tmp_path / "%A_%a.out"),
                          "--wrap", "sleep 120"], env=env, capture_output=True, text=True, check=True)
    array = out.stdout.strip().split(";")[0]
    try:
        os.environ["SLURM_CONF"] = slurm_cluster["SLURM_CONF"]
        deadline = time.time() + 300  # other users of the cluster may hold the node for a while
        first, second = f"{array}_0", f"{array}_1"
        while (slurm_jobs.job_states(array) or {}).get(first, slurm_jobs.JobInfo("", "PENDING")).state != "RUNNING":
            assert time.time() < deadline, slurm_jobs.job_states(array)
            time.sleep(0.5)
        subprocess.run(["scancel", first], env=env, check=True)
        while not slurm_jobs.job_states(array)[first].ended:
            assert time.time() < deadline
            time.sleep(0.5)
        states = slurm_jobs.job_states(array)
        assert states[first].state == "CANCELLED" and states[first].node == local_slurm.node_name()
        assert "CANCELLED: cancelled (scancel" in states[first].explain()
        assert not states[second].ended  # the other task was not touched
        assert slurm_jobs.job_states("999999999") == {}  # forgotten (or never known): not "no answer" (None)
        lost = slurm_jobs.forgotten_state("999999999")  # no accounting on this cluster: nothing else to ask
        assert lost.state == "LOST" and lost.ended and "no longer knows the job" in lost.explain()
    finally:
        subprocess.run(["scancel", array], env=env)
        os.environ.pop("SLURM_CONF", None)


def _summary(recs: list[dict]) -> list[tuple]:
    return sorted((r["config_key"], r["repeat"], r["status"]) for r in recs)


@pytest.mark.full
def test_a_slurm_sweep_gives_the_same_records_as_a_local_one(slurm_cluster, tmp_path):
    profile = _profile(tmp_path)
    local = _sweep(profile, tmp_path / "local", {})
    assert local.returncode == 0, local.stdout[-2000:] + local.stderr[-3000:]
    slurm = _sweep(profile, tmp_path / "slurm", slurm_cluster, "--executor", "slurm")
    assert slurm.returncode == 0, slurm.stdout[-2000:] + slurm.stderr[-3000:]
    a, b = _records(tmp_path / "local"), _records(tmp_path / "slurm")
    assert _summary(a) == _summary(b) == [(a[0]["config_key"], 0, "ok"), (a[0]["config_key"], 1, "ok")]
    for r in a + b:
        validate_record(r)
    assert all("job_id" not in r["sweep"] and "node" not in r["sweep"] for r in a)
    assert {r["sweep"]["node"] for r in b} == {local_slurm.node_name()}
    jobs = sorted(r["sweep"]["job_id"] for r in b)
    assert len(set(j.split("_")[0] for j in jobs)) == 1 and [j.split("_")[1] for j in jobs] == ["0", "1"]
    # the planned order is kept: the job of order index i ran i-th
    by_order = sorted(b, key=lambda r: r["sweep"]["order_index"])
    assert [r["created"] for r in by_order] == sorted(r["created"] for r in b)
    assert sorted(set(a[0]["config"]) ^ set(b[0]["config"])) == [] and a[0]["config"] == b[0]["config"]
    manifest = json.loads(next((tmp_path / "slurm" / TEST_HOST / "sweeps").glob("*.json")).read_text())
    assert manifest["executor"]["name"] == "slurm" and manifest["status"] == "finished"
    assert sorted(j["job_id"] for j in manifest["executor"]["jobs"]) == jobs
    assert {j["state"] for j in manifest["executor"]["jobs"]} == {"COMPLETED"}


@pytest.mark.full
def test_a_job_killed_by_scancel_becomes_an_error_record_and_resume_resubmits_only_it(slurm_cluster, tmp_path):
    profile = _profile(tmp_path, "null")
    results = tmp_path / "results"
    proc = _sweep(profile, results, slurm_cluster, "--executor", "slurm", wait=False)
    jobs = results / TEST_HOST / "slurm-jobs"
    deadline = time.time() + 300
    while not list(jobs.glob("*/*_0.started.json")):
        assert proc.poll() is None and time.time() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.2)
    job_id = next(jobs.glob("*/*_0.started.json")).name.split(".")[0]
    subprocess.run(["scancel", job_id], env={**os.environ, **slurm_cluster}, check=True)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:]
    first = _records(results)
    assert _summary(first) == [(first[0]["config_key"], 0, "error"), (first[0]["config_key"], 1, "ok")]
    killed = next(r for r in first if r["status"] == "error")
    validate_record(killed)
    assert killed["sweep"]["job_id"] == job_id and killed["sweep"]["job_state"] == "CANCELLED"
    assert killed["reason"].startswith(f"Slurm job {job_id} CANCELLED: cancelled (scancel")
    assert killed["host"] == TEST_HOST and killed["sweep"]["node"] == local_slurm.node_name()
    resumed = _sweep(profile, results, slurm_cluster, "--executor", "slurm")
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert "1 run to do" in resumed.stdout and "1 already recorded" in resumed.stdout
    after = _records(results)
    new = [r for r in after if r["record_id"] not in {x["record_id"] for x in first}]
    assert [(r["repeat"], r["status"]) for r in new] == [(0, "ok")]
    assert new[0]["sweep"]["job_id"] != job_id


def test_a_second_sweep_on_the_same_results_is_refused_whatever_the_executor(slurm_cluster, tmp_path):
    """The results lock holds for a Slurm sweep too (taken before anything is submitted)."""
    results = tmp_path / "results"
    with results_lock(results):
        done = _sweep(_profile(tmp_path, "null"), results, slurm_cluster, "--executor", "slurm")
    assert done.returncode == 2 and "another sweep" in done.stderr
    assert not (results / TEST_HOST / "slurm-jobs").exists()  # refused before any job was submitted


def test_ctrl_c_cancels_this_sweeps_jobs_and_only_those(slurm_cluster, tmp_path):
    env = {**os.environ, **slurm_cluster}
    other = subprocess.run(["sbatch", "--parsable", "-t", "5", "-c", "1", "-o", str(tmp_path / "other.out"),
                            "--wrap", "sleep 300"], env=env, capture_output=True, text=True, check=True)
    other_id = other.stdout.strip().split(";")[0]
    results = tmp_path / "results"
    try:
        proc = _sweep(_profile(tmp_path, "null"), results, slurm_cluster, "--executor", "slurm", wait=False)
        deadline = time.time() + 300

        def manifest() -> dict:
            paths = list((results / TEST_HOST / "sweeps").glob("*.json"))
            return json.loads(paths[0].read_text()) if paths else {}

        while not (manifest().get("executor") or {}).get("jobs"):
            assert proc.poll() is None and time.time() < deadline, proc.stdout.read()[-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == EXIT_INTERRUPTED, out[-3000:]
        jobs = manifest()["executor"]["jobs"]
        os.environ["SLURM_CONF"] = slurm_cluster["SLURM_CONF"]
        states = slurm_jobs.job_states(jobs[0]["job_id"].split("_")[0])
        assert all(states[j["job_id"]].state in ("CANCELLED", "COMPLETED") for j in jobs), states
        assert "CANCELLED" in {s.state for s in states.values()}
        assert manifest()["status"] == "interrupted"
        assert {j["state"] for j in manifest()["executor"]["jobs"]} <= {"CANCELLED", "COMPLETED"}
        assert not slurm_jobs.job_states(other_id)[other_id].ended  # someone else's job: untouched
    finally:
        subprocess.run(["scancel", other_id], env=env)
        os.environ.pop("SLURM_CONF", None)


@pytest.mark.full
def test_a_job_past_its_time_limit_becomes_an_error_record_with_the_schedulers_reason(slurm_cluster, tmp_path):
    profile = tmp_path / "long.yaml"  # a run of a million iterations in a job of one minute
    profile.write_text(TINY.format(framework="torch").replace("iterations: 5", "iterations: 1000000")
                       .replace("repeats: 2", "repeats: 1"))
    done = _sweep(profile, tmp_path / "results", slurm_cluster, "--executor", "slurm", "--time-limit", "1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (rec,) = _records(tmp_path / "results")
    validate_record(rec)
    assert rec["status"] == "error" and rec["sweep"]["job_state"] == "TIMEOUT"
    assert rec["reason"].startswith(f"Slurm job {rec['sweep']['job_id']} TIMEOUT: killed at its time limit on node "
                                    f"{local_slurm.node_name()} (time limit 00:01:00)")


LEAKY_SITE = '''import os, sys
if os.environ.get("LEAK_TEST"):
    sys.stderr.write(f"pid {os.getpid()} HF={os.environ.get('HF_TOKEN')} MA={os.environ.get('MASTER_ADDR')}\\n")
'''

SECRETS = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123456789", "AWS_SECRET_ACCESS_KEY": "SuperSecretAwsKey123",
           "MASTER_ADDR": "user:hunter22pw@node1", "LEAK_TEST": "1"}


def _leaky_env(tmp_path) -> dict:
    """Every Python process started with this environment prints the secrets to stderr as it starts (a
    sitecustomize on PYTHONPATH): the masker itself too, unless it starts isolated."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LEAKY_SITE)
    return {**os.environ, **SECRETS, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}


def test_the_slurm_jobs_masker_starts_isolated_so_nothing_prints_past_it(tmp_path):
    """Before: the masker (a Slurm job's interpreter) ran a sitecustomize on the PYTHONPATH before masking, and its
    stderr went straight to the job's log, secrets verbatim."""
    from bench.masking import masked_command

    done = subprocess.run(f"{masked_command()} -c 'print(42)'", shell=True, capture_output=True, text=True,
                          env=_leaky_env(tmp_path), timeout=60)
    text = done.stdout + done.stderr
    assert done.returncode == 0 and "42" in text and "<masked>" in text  # the child printed, masked
    assert not any(v in text for k, v in SECRETS.items() if k != "LEAK_TEST"), text


@pytest.mark.full
def test_slurm_job_logs_keep_no_secret(slurm_cluster, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\n"
                       "settings: {image_size: 32, warmup: 1, iterations: 2, protocol: seed}\n")
    env = {**_leaky_env(tmp_path), **slurm_cluster}
    done = subprocess.run([sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir",
                           str(tmp_path / "r"), "--executor", "slurm"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    logs = list((tmp_path / "r").glob("*/slurm-jobs/*/*_log.*"))
    text = "".join(p.read_text(errors="replace") for p in logs)
    assert logs and "<masked>" in text  # the job's processes printed, masked
    assert not any(v in text for k, v in SECRETS.items() if k != "LEAK_TEST")


@pytest.mark.parametrize("env, needle", [
    ({"SLURM_JOB_ID": "../../x"}, "SLURM_JOB_ID '../../x'"),
    ({"SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "a/b"}, "SLURM_ARRAY_TASK_ID 'a/b'"),
    ({"SLURM_ARRAY_JOB_ID": "-1", "SLURM_ARRAY_TASK_ID": "0"}, "SLURM_ARRAY_JOB_ID '-1'"),
])


def test_a_slurm_jobs_id_is_checked_before_it_names_a_file(env, needle):
    """A job's files are named after its id: a value that is no Slurm id is refused naming the variable."""
    from bench.sweep.executors import slurm_job_id

    with pytest.raises(ConfigError, match=re.escape(needle)):
        slurm_job_id(env)
    assert slurm_job_id({"SLURM_JOB_ID": "42"}) == "42" and slurm_job_id({}) == "unknown"
    assert slurm_job_id({"SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "3", "SLURM_JOB_ID": "9"}) == "7_3"
