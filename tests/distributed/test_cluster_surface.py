"""Issue 30: the cluster, Slurm and multi-machine surface held to the rule of the rest. A bad value from any source
(flag, profile key, environment variable a launcher reads) is one short message naming it, exit 2, before any work;
no credential in any message or in anything a child writes, masked as it is written; Ctrl-C takes SIGTERM's path;
the tests leave the local Slurm daemons as they found them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from bench.adapters import reference_adapter
from bench.cli import EXIT_BAD_INPUT, main
from bench.commands import measure
from bench.errors import ConfigError
from bench.masking import MASK, Masker, brief, mask_text, masked_command
from bench.runs.distributed import topology
from bench.runs.distributed.launcher import Launch, Task
from bench.runs.distributed.run import SCRATCH_PREFIX
from bench.sweep import jupyter_kernels
from bench.sweep.profiles import load_profile
from tests import local_slurm
from tests.conftest import ROOT
from tests.distributed.test_rank_failures import _ranks_of

SECRET = "s3cret"
RUN = ("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--mode", "training",
       "--strategy", "allreduce", "--workers", "2", "--nodes", "2")
HOSTS = "10.0.0.1,10.0.0.2"
SLURM_ENV = {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "2", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n[1-2]",
             "SLURM_TASKS_PER_NODE": "1(x2)"}
LONG_LIST = ",".join(f"10.0.{i // 250}.{i % 250 + 1}" for i in range(499)) + ",bad host"

# (flags after RUN, environment, text the message must contain); each: exit 2, at most 3 short lines, no secret
BAD = [
    (("--cluster", f"bob:{SECRET}@10.0.0.1,10.0.0.2", "--node-rank", "0"), {}, "invalid cluster"),
    (("--cluster", LONG_LIST, "--node-rank", "0"), {}, "'bad host'"),
    (("--master-addr", "10.0.0.1", "--node-rank", "0", "--master-port", "0"), {}, "--master-port 0"),
    (("--master-addr", "10.0.0.1", "--node-rank", "0", "--master-port", "70000"), {}, "--master-port 70000"),
    (("--cluster", "slurm", "--master-port", "70000"), SLURM_ENV, "--master-port 70000"),
    (("--cluster", "slurm"), {**SLURM_ENV, "MASTER_PORT": "70000"}, "MASTER_PORT '70000'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "MASTER_PORT": "abc"}, "MASTER_PORT 'abc'"),
    (("--master-addr", "", "--node-rank", "0"), {}, "--master-addr ''"),
    (("--master-addr", "10.0.0.1 x", "--node-rank", "0"), {}, "--master-addr '10.0.0.1 x'"),
    (("--master-addr", f"bob:{SECRET}@10.0.0.1", "--node-rank", "0"), {}, "--master-addr"),
    (("--master-addr", "10.0.0.1", "--node-rank", "2"), {}, "--node-rank 2"),
    (("--master-addr", "10.0.0.1", "--node-rank", "-1"), {}, "--node-rank -1"),
    (("--cluster", HOSTS), {"BENCH_NODE_RANK": "abc"}, "BENCH_NODE_RANK 'abc'"),
    (("--cluster", HOSTS), {"BENCH_NODE_RANK": "2"}, "BENCH_NODE_RANK '2'"),
    (("--cluster", HOSTS, "--node-rank", "0"), {"BENCH_MASTER_PORT": "abc"}, "BENCH_MASTER_PORT 'abc'"),
    (("--cluster", HOSTS, "--node-rank", "0"), {"BENCH_MASTER_PORT": "0"}, "BENCH_MASTER_PORT '0'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_NTASKS": "abc"}, "SLURM_NTASKS 'abc'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_PROCID": "abc"}, "SLURM_PROCID 'abc'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_PROCID": "5"}, "SLURM_PROCID '5'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_PROCID": "-1"}, "SLURM_PROCID '-1'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_STEP_NUM_TASKS": "x"}, "SLURM_STEP_NUM_TASKS 'x'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_JOB_ID": "../x"}, "SLURM_JOB_ID '../x'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_JOB_ID": "99999999999"}, "SLURM_JOB_ID '99999999999'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_STEP_ID": "x y"}, "SLURM_STEP_ID 'x y'"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_JOB_NODELIST": "n[1-99999999]"}, "more than 1024"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_TASKS_PER_NODE": "1(x99999999)"}, "99999999"),
    (("--cluster", "slurm"), {**SLURM_ENV, "SLURM_JOB_NODELIST": f"bob:{SECRET}@n1,n2"}, "Slurm node list"),
    (("--master-port", "29500"), {}, "--master-port is for a run across real machines"),
]


@pytest.fixture
def no_work(monkeypatch):
    """A refused command never reaches a run: if one did (the defect), the test fails at once instead of hanging."""
    def started(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(measure, "execute", started)
    monkeypatch.setattr(measure, "run", started)


def _refused(argv: list[str], capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    assert "Traceback" not in err and SECRET not in err, err
    assert len(err.strip().splitlines()) <= 3 and len(err) < 600, f"{len(err)} characters: {err[:300]}"
    return err


@pytest.mark.parametrize("flags, env, needle", BAD, ids=[n[:40] for _, _, n in BAD])
def test_a_bad_machine_value_from_any_source_is_one_short_masked_line(flags, env, needle, tmp_path, monkeypatch,
                                                                     capsys, no_work):
    for name in ("MASTER_PORT", "BENCH_NODE_RANK", "BENCH_MASTER_PORT", *SLURM_ENV, "SLURM_STEP_NUM_TASKS",
                 "SLURM_STEP_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    results = tmp_path / "results"
    err = _refused([*RUN, *flags, "--results-dir", str(results)], capsys)
    assert needle in err, err
    assert not results.exists()


def test_a_profiles_host_list_is_refused_as_the_flag_is_masked_and_short(tmp_path, capsys):
    for cluster in (f"bob:{SECRET}@10.0.0.1,10.0.0.2", LONG_LIST):
        profile = tmp_path / "p.yaml"
        profile.write_text(f"models: [tiny_cnn]\ndistributed:\n  - {{models: [tiny_cnn], workers: [2], "
                           f"settings: {{nodes: 2, cluster: '{cluster}'}}}}\n")
        with pytest.raises(ConfigError) as exc:
            load_profile(str(profile))
        assert SECRET not in str(exc.value) and len(str(exc.value)) < 600 and "cluster" in str(exc.value)
        err = _refused(["sweep", "--profile", str(profile), "--list", "--results-dir", str(tmp_path / "r")], capsys)
        assert "distributed block 1" in err


def test_every_config_error_is_masked_and_short_whoever_raises_it():
    exc = ConfigError(f"invalid thing 'postgres://u:{SECRET}@h/db' and 'bob:{SECRET}@10.0.0.1' " + "x" * 5000)
    assert SECRET not in str(exc) and len(str(exc)) < 300 and "5000 characters" in str(exc)


def test_an_option_that_would_do_nothing_is_refused(tmp_path, capsys, no_work):
    err = _refused(["run", "--framework", "torch", "--model", "tiny_cnn", "--oversubscribe",
                    "--results-dir", str(tmp_path / "r")], capsys)
    assert "oversubscribe" in err


@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_peak_refuses_the_precisions_runs_refuse(precision, capsys):
    reason = reference_adapter().cannot_run("inference", precision, "cpu")
    if not reason:
        pytest.skip(f"this CPU runs {precision}")
    err = _refused(["peak", "--precision", precision, "--threads", "1"], capsys)
    assert precision in err and reason in err


@pytest.mark.parametrize("value", ["abc", "1e9", "-5"])
def test_bench_peak_n_is_checked_as_a_value(value, monkeypatch, capsys):
    monkeypatch.setenv("BENCH_PEAK_N", value)
    err = _refused(["peak", "--threads", "1"], capsys)
    assert f"BENCH_PEAK_N {value!r}" in err


# ---- masking ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    f"MASTER_ADDR=bob:{SECRET}@10.0.0.1", f"bob:{SECRET}@10.0.0.1,10.0.0.2", f"--master-addr 'bob:{SECRET}@h'",
    f'{{"worker": ["bob:{SECRET}@10.0.0.1:2222"]}}', f"10.0.0.1,bob:p@{SECRET}@10.0.0.2",
    f"postgres://u:{SECRET}@h/db"])


def test_user_password_at_host_is_masked_with_or_without_a_scheme(text):
    assert SECRET not in mask_text(text, {}) and MASK in mask_text(text, {})


@pytest.mark.parametrize("text", ["user@example.com", "git@github.com:org/repo", "10.0.0.1:29500", "a: b@c"])
def test_what_is_no_credential_is_left_alone(text):
    assert mask_text(text, {}) == text


def test_a_stream_is_masked_line_by_line_whatever_its_chunks():
    text = (f"start\nMASTER_ADDR=bob:{SECRET}@10.0.0.1\r\nprogress 1\rprogress 2\r-----BEGIN RSA PRIVATE KEY-----\n"
            f"{SECRET}\n-----END RSA PRIVATE KEY-----\nend").encode()
    for size in (1, 3, 7, len(text)):
        masker = Masker({})
        out = b"".join(masker.feed(text[i:i + size]) for i in range(0, len(text), size)) + masker.close()
        assert SECRET.encode() not in out and out.startswith(b"start\nMASTER_ADDR=<masked>@10.0.0.1")
        assert out.endswith(b"<masked>\nend") and b"progress 1\rprogress 2\r" in out


def test_a_line_is_passed_on_as_soon_as_it_ends():
    masker = Masker({})
    assert masker.feed(b"half a li") == b""
    assert masker.feed(b"ne\nnext") == b"half a line\n"
    assert masker.close() == b"next"


def test_brief_keeps_short_messages_and_shortens_long_words():
    assert brief("invalid x 'a'; valid: 1, 2") == "invalid x 'a'; valid: 1, 2"
    assert len(brief("bad " + "h," * 1000)) < 250 and "2000 characters" in brief("bad " + "h," * 1000)


def _poll(path: Path, until: str, timeout_s: float = 60) -> list[str]:
    """What the file held at each look until it holds `until` (every state a reader could have seen)."""
    seen, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        seen.append(text)
        if until in text:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{path} never held {until!r}: {seen[-1][-500:]!r}")


PRINTS = (f"import os, sys, time; os.write(1, b'MASTER_ADDR=bob:{SECRET}@10.0.0.1 HF_TOKEN=' + "
          "os.environ['HF_TOKEN'].encode() + b'\\n'); os.write(2, b'done\\n'); time.sleep(60)")


def test_a_ranks_log_is_masked_as_it_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", f"hf_{SECRET}abcdefghijklmnopqrstuvwxyz0123")
    launch = Launch([Task("node0", [sys.executable, "-c", PRINTS])], tmp_path / "logs", timeout_s=60)
    launch.start()
    try:
        seen = _poll(tmp_path / "logs" / "node0.log", "done")
    finally:
        launch.stop()
    assert not [s for s in seen if SECRET in s], seen[-1]
    assert "MASTER_ADDR=<masked>@10.0.0.1 HF_TOKEN=<masked>" in seen[-1]
    assert all(p.poll() is not None for p in launch.copiers.values())


def test_a_kernels_own_log_is_masked_as_it_is_written(tmp_path):
    log = tmp_path / "kernels.log"
    start = f"import os; os.write(2, b'MASTER_ADDR=bob:{SECRET}@10.0.0.1\\n'); os.write(2, b'written\\n')"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_KERNEL_LOG": str(log)}
    kernel = subprocess.Popen([sys.executable, "-m", "bench.sweep.kernel_launcher", "-f",
                               str(tmp_path / "kernel.json"), f"--IPKernelApp.exec_lines={json.dumps([start])}"],
                              env=env, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        seen = _poll(log, "written")
    finally:
        os.killpg(kernel.pid, signal.SIGKILL)
        kernel.wait()
    assert not [s for s in seen if SECRET in s] and "MASTER_ADDR=<masked>@10.0.0.1" in seen[-1]


def test_a_slurm_jobs_interpreter_writes_its_log_masked(tmp_path):
    """submitit starts a job as `<python> -u -m submitit.core._submit`: with the masked command as its python, what
    the job prints reaches its log masked, and the job's exit status is kept."""
    script = f"import os, sys; print('MASTER_ADDR=bob:{SECRET}@h', os.environ['AWS_SECRET_ACCESS_KEY']); sys.exit(3)"
    log = tmp_path / "job_log.out"
    with log.open("wb") as out:
        done = subprocess.run(f"{masked_command()} -u -c {json.dumps(script)}", shell=True, stdout=out,
                              stderr=subprocess.STDOUT, env={**os.environ, "AWS_SECRET_ACCESS_KEY": f"{SECRET}-key1"})
    assert done.returncode == 3
    assert log.read_text() == "MASTER_ADDR=<masked>@h <masked>\n"


def test_the_slurm_executor_starts_jobs_through_the_masked_command(tmp_path):
    from bench.sweep.executors import SlurmExecutor, slurm_options

    executor = SlurmExecutor(slurm_options({}, "test"))._executor(tmp_path)
    assert executor.python == masked_command()


# ---- signals and leftovers ---------------------------------------------------------------------------------------

UNWIND = textwrap.dedent("""
    import os, signal, sys, time
    from bench.errors import terminations_unwind
    try:
        with terminations_unwind():
            try:
                os.write(1, b"ready\\n")
                time.sleep(60)
            finally:
                os.write(1, b"cleaning\\n")
                time.sleep(1.5)  # a second Ctrl-C arrives during the clean-up
                os.write(1, b"cleaned\\n")
    except KeyboardInterrupt:
        sys.exit(130)
""")


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["terminal", "script's background job"])
def test_ctrl_c_unwinds_like_sigterm_and_a_second_one_cannot_cut_the_clean_up_short(inherited):
    proc = subprocess.Popen([sys.executable, "-c", UNWIND], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    assert proc.stdout.readline() == b"ready\n"
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.stdout.readline() == b"cleaning\n"
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130 and out == b"cleaned\n"


@pytest.mark.full
@pytest.mark.skipif(topology.unavailable_reason() is not None,
                    reason=f"emulated nodes: {topology.unavailable_reason()}")


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["terminal", "script's background job"])
def test_ctrl_c_of_a_two_node_run_leaves_nothing_behind_and_exits_promptly(inherited, tmp_path):
    cmd = [sys.executable, "-m", "bench", *RUN[:5], "--image-size", "16", "--batch-size", "4", *RUN[7:],
           "--iterations", "100000", "--results-dir", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    deadline = time.monotonic() + 120
    while len(_ranks_of(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(_ranks_of(proc.pid)) == 2, "the ranks did not start"
    everything = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    _, alive = psutil.wait_procs(everything, timeout=10)
    assert not alive, f"processes left: {alive}"
    assert not [ns for ns in topology.project_namespaces() if ns.startswith(f"{topology.PREFIX}{proc.pid}x")]
    assert not list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{proc.pid}-*"))


def test_a_kernels_connection_file_lives_in_the_private_folder(tmp_path):
    from jupyter_client.connect import write_connection_file

    with jupyter_kernels.kernel_environment(tmp_path / "kernels.log") as runtime:
        fname, _ = write_connection_file()
        assert Path(fname).parent == Path(runtime)  # removed with it, and by the next sweep after a kill
    assert not Path(fname).exists()


def test_the_test_sessions_slurm_leaves_the_machine_as_it_found_it():
    """Started from nothing, everything the session started is stopped; what was up is reused and left up."""
    reason = local_slurm.unavailable_reason()
    if reason:
        pytest.skip(reason)
    before = local_slurm.running()
    started = local_slurm.start()
    try:
        assert started == set(local_slurm.SERVICES) - before
        assert local_slurm.node_state() == "idle"
    finally:
        local_slurm.stop(started)
    assert local_slurm.running() == before


def test_reading_every_hosts_records_moves_no_foreign_file(tmp_path):
    """`bench sweep --executor slurm --list` reads every host's records: a foreign host's unreadable file stays."""
    from bench.sweep.executors import SlurmExecutor, slurm_options

    foreign = tmp_path / "other-host" / "records"
    foreign.mkdir(parents=True)
    (foreign / "20260101T000000_x_r0a0_0123456789abcdef.json").write_text("[1, 2")
    assert SlurmExecutor(slurm_options({}, "test")).finished(tmp_path) == set()
    assert [p.name for p in foreign.rglob("*") if p.is_file()] == ["20260101T000000_x_r0a0_0123456789abcdef.json"]


def test_an_executed_notebook_is_masked_each_time_it_is_written(tmp_path, monkeypatch):
    import threading

    import nbformat

    from bench.sweep.masked_notebooks import execute_masked

    monkeypatch.setenv("TEST_ADDR", f"bob:{SECRET}@10.0.0.1")  # planted where the kernel reads it, never in its source
    monkeypatch.setenv("TEST_WORD", "hunter22")
    flag = tmp_path / "go-on"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os\nprint('MASTER_ADDR=' + os.environ['TEST_ADDR'] + ' TF_PASSWORD=' + "
                                  "os.environ['TEST_WORD'])"),
        nbformat.v4.new_code_cell(f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.1)")])
    source, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, source)
    runner = threading.Thread(target=execute_masked, args=(source, out),
                              kwargs=dict(kernel_name="python3", progress_bar=False,
                                          request_save_on_cell_execute=True))
    runner.start()
    try:
        seen = _poll(out, "MASTER_ADDR=<masked>@10.0.0.1")  # the first cell's output, saved mid-run
    finally:
        flag.touch()
        runner.join(timeout=120)
    final = out.read_text()
    for text in [*seen, final]:
        assert SECRET not in text and "hunter22" not in text


def _print_environment(flag: str) -> None:
    """A Slurm job that prints its environment, as frameworks do on some errors, then waits to be read."""
    print(f"HF_TOKEN={os.environ['HF_TOKEN']} MASTER_ADDR={os.environ['TEST_ADDR']}", flush=True)
    print(f"TF_CONFIG={os.environ['TEST_TF_CONFIG']}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_a_slurm_jobs_log_is_masked_as_it_is_written(slurm_cluster, tmp_path, monkeypatch):
    from bench.sweep.executors import SlurmExecutor, slurm_options

    for name, value in {**slurm_cluster, "HF_TOKEN": f"hf_{SECRET}abcdefghijklmnopqrstuvwxyz0123",
                        "TEST_ADDR": f"bob:{SECRET}@10.0.0.1",
                        "TEST_TF_CONFIG": json.dumps({"cluster": {"worker": [f"bob:{SECRET}@h:2222"]}})}.items():
        monkeypatch.setenv(name, value)
    flag = tmp_path / "read"
    job = SlurmExecutor(slurm_options({"time_limit": 5}, "test"))._executor(tmp_path / "jobs").submit(
        _print_environment, str(flag))
    try:
        log = tmp_path / "jobs" / f"{job.job_id}_0_log.out"
        seen = _poll(log, "TF_CONFIG=", timeout_s=240)  # the job runs: what its log held at every look
    finally:
        flag.touch()
    job.result()
    for text in [*seen, log.read_text()]:
        assert SECRET not in text
    assert "HF_TOKEN=<masked> MASTER_ADDR=<masked>@10.0.0.1" in seen[-1]


def test_a_runs_processes_keep_their_temporary_files_in_its_scratch_folder(tmp_path):
    """torchrun's agents make torchelastic_* folders (the ranks' error files) with mkdtemp: inside the run's scratch
    folder they go with it, instead of piling up in the machine's temporary folder."""
    script = "import tempfile; print(tempfile.mkdtemp(prefix='torchelastic_'))"
    launch = Launch([Task("node0", [sys.executable, "-c", script])], tmp_path / "logs", timeout_s=60)
    launch.run()
    made = Path((tmp_path / "logs" / "node0.log").read_text().strip())
    assert made.parent == tmp_path / "logs" / "tmp" and made.is_dir()


def test_a_listing_changes_nothing_not_even_an_unreadable_records_place(tmp_path, capsys):
    from tests.conftest import TEST_HOST

    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\n")
    records = tmp_path / "results" / TEST_HOST / "records"
    records.mkdir(parents=True)
    (records / "20260101T000000_x_r0a0_0123456789abcdef.json").write_text("{truncated")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(tmp_path / "results")]) == 0
    assert "1 run to do" in capsys.readouterr().out
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
