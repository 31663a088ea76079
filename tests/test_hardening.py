"""Bad input of every kind refused before work; no credential captured; Ctrl-C; one sweep per folder."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from bench.errors import ConfigError

from .conftest import ROOT, TEST_HOST, bench_cli, interruptible

RUN = ("run", "--framework", "null", "--model", "tiny_cnn", "--protocol", "seed")
NULL_PROFILE = "frameworks: [null]\nmodels: [tiny_cnn]\nbatch_sizes: [1, 2]\nrepeats: {r}\nretries: 0\n" \
               "settings: {{protocol: seed, warmup: 2, iterations: 5, phase_iterations: 0}}\n"


def _file(tmp_path: Path) -> str:
    f = tmp_path / "a-file"
    f.write_text("x")
    return str(f)


# (arguments, text the one-line error must contain); every row: exit 2, no traceback, nothing written
BAD = [
    (RUN + ("--batch-size", "0"), "batch_size 0"),
    (RUN + ("--time-budget-s", "nan"), "nan"),
    (RUN + ("--ci-target", "inf"), "inf"),
    (RUN + ("--seed", "99999999999"), "99999999999"),
    (RUN + ("--warmup", "-1"), "-1"),
    (RUN + ("--phase-iterations", "-2"), "-2"),
    (RUN + ("--image-size", "0"), "image_size 0"),
    (RUN + ("--precision", "fp8"), "fp8"),
    (RUN + ("--device", "tpu"), "tpu"),
    (RUN + ("--data", "disk"), "disk"),
    (RUN + ("--engine", "turbo"), "turbo"),
    (RUN + ("--results-dir", ""), "''"),
    (RUN + ("--results-dir", "{file}"), "is a file"),
    (RUN + ("--results-dir", "{file}/sub"), "cannot be created"),
    (("sweep", "--profile", "nosuch"), "nosuch"),
    (("sweep", "--profile", "tiny", "--repeats", "0"), "--repeats 0"),
    (("sweep", "--profile", "tiny", "--results-dir", "{file}"), "is a file"),
    (("report", "--results-dir", "{empty}"), "no results in"),
    (("report", "--results-dir", "{empty}", "--out", "{file}"), "is a file"),
    (("peak", "--threads", "0"), "--threads 0"),
    (("peak", "--threads", "2", "--device", "gpu9"), "gpu9"),
    (("peak", "--threads", "2", "--precision", "fp64"), "fp64"),
    (("flops", "--model", "resnet9000", "--input-size", "224"), "resnet9000"),
    (("flops", "--model", "resnet50", "--input-size", "0"), "--input-size 0"),
    (("flops", "--model", "bert_base", "--input-size", "513"), "--input-size 513"),
    (("fidelity", "--framework", "null", "--model", "tiny_cnn"), "no hand-written loop"),
    (("fidelity", "--framework", "torch", "--model", "tiny_cnn", "--rounds", "0"), "--rounds 0"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    empty = tmp_path / "empty"
    empty.mkdir()
    results = tmp_path / "results"
    subs = {"{file}": _file(tmp_path), "{empty}": str(empty)}
    args = [subs.get(a, a.replace("{file}", subs["{file}"])) for a in args]
    proc = bench_cli(*args, results=results)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not results.exists() and not any(empty.iterdir())


@pytest.mark.parametrize("host", ["..", ".", "a" * 65, "bob:s3cret@h", "a/b", "a b"])
def test_unsafe_host_names_are_refused(tmp_path, host):
    proc = bench_cli(*RUN, "--results-dir", str(tmp_path / "r"), env={"BENCH_HOST": host})
    assert proc.returncode == 2 and "BENCH_HOST" in proc.stderr and "Traceback" not in proc.stderr
    assert "s3cret" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


SECRETS = {f"{prefix}{name}": f"s3cret-{prefix}{name}-value"
           for prefix in ("OMP_", "MKL_", "KMP_", "CUDA_", "NCCL_", "TF_", "XLA_", "JAX_", "ONEDNN_", "DNNL_",
                          "OPENBLAS_", "PYTORCH_", "TORCH_", "MXNET_", "ORT_", "GLOO_")
           for name in ("PASSPHRASE", "PWD", "PAT", "DB_URL", "CLI_CONFIG_FILE", "X")}


def test_no_credential_reaches_any_output(tmp_path):
    env = {**SECRETS, "TF_DB_URL": "postgres://user:s3cret@host/db", "OMP_NUM_THREADS": "2"}
    results = tmp_path / "results"
    proc = bench_cli(*RUN, "--results-dir", str(results), env=env)
    assert proc.returncode == 0, proc.stderr
    shown = bench_cli("env", env=env).stdout
    texts = [p.read_text(errors="replace") for p in results.rglob("*") if p.is_file()] + [shown, proc.stdout]
    for text in texts:
        assert "s3cret" not in text
    assert json.loads(shown)["env"].get("OMP_NUM_THREADS") == "2"  # allow-listed variables are kept


def _kernels_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"bench-kernels-{pid}-*"))


@pytest.mark.full
def test_ctrl_c_during_a_sweep_exits_130_cleanly(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(NULL_PROFILE.format(r=20))
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST}
    proc = subprocess.Popen([sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir",
                             str(results)], env=env, cwd=ROOT, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible)
    records = results / TEST_HOST / "records"
    deadline = time.time() + 240
    while len(list(records.glob("*.json"))) < 2:
        assert proc.poll() is None and time.time() < deadline, "sweep ended before it could be interrupted"
        time.sleep(0.2)
    children = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "interrupted" in err
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"orphans: {alive}"
    assert not list(results.rglob("*.tmp")) and not _kernels_of(proc.pid)
    [manifest] = (results / TEST_HOST / "sweeps").glob("*.json")
    assert json.loads(manifest.read_text())["status"] == "interrupted"


@pytest.mark.full
def test_a_second_sweep_on_the_same_folder_is_refused(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(NULL_PROFILE.format(r=2))
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST}
    cmd = [sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir", str(results)]
    first = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = results / TEST_HOST / ".sweep.lock"
    deadline = time.time() + 120
    while not (lock.exists() and lock.read_text()):
        assert first.poll() is None and time.time() < deadline
        time.sleep(0.1)
    second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=300) == 0
    assert second.returncode == 2 and "another sweep" in second.stderr and "Traceback" not in second.stderr
    records = [json.loads(p.read_text()) for p in (results / TEST_HOST / "records").glob("*.json")]
    assert Counter((r["config_key"], r["repeat"]) for r in records) == Counter(
        {k: 1 for k in {(r["config_key"], r["repeat"]) for r in records}}) and len(records) == 4


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


def test_the_progress_bar_names_each_run_while_it_runs_extra_processes_included(tmp_path):
    """The bar names the run in progress, not the last planned one while the adaptive plan's extra processes run."""
    from bench.sweep.runner import Sweep

    from .test_sweep_objects import DoubleExecutor, _profile

    class Watching(DoubleExecutor):
        def __init__(self, **kw) -> None:
            super().__init__(**kw)
            self.shown, self.sweep = [], None

        def submit(self, batch, results_dir, notify=lambda: None):
            inner = super().submit(batch, results_dir, notify)
            for s in batch:  # what the bar says as each run starts
                self.shown.append((getattr(self.sweep._bar, "postfix", ""), f"{s.task.config.label} r{s.task.repeat}"))
                yield next(inner)

    profile = _profile(tmp_path, "batch_sizes: [1]\nrepeats: adaptive\nmax_repeats: 4\nretries: 0\n")
    executor = Watching(spread=0.5)
    executor.sweep = Sweep(profile, tmp_path / "results", progress=False, announce=lambda _: None, executor=executor)
    m = executor.sweep.execute().manifest
    assert m.extra_processes and len(executor.shown) == 2 + len(m.extra_processes)
    for i, (shown, running) in enumerate(executor.shown):
        assert shown == running + (" (extra process)" if i >= 2 else ""), executor.shown
