"""Issue 20, class by class: one validation path for the CLI and every profile block, machine limits, SIGTERM/SIGHUP,
the first rank that died, compare on harness-only results, and no credential from a child process anywhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from bench.adapters import ADAPTERS
from bench.cli import EXIT_BAD_INPUT, main
from bench.errors import ConfigError
from bench.host import devices
from bench.host.links import netem_unavailable
from bench.host.manifest import mask_text
from bench.report.compare import compare_results
from bench.report.context import load
from bench.report.sections.environment import environment_folders, environment_table
from bench.report.sections.header import header
from bench.report.sections.methodology import methodology
from bench.results.record import SCHEMA_VERSION
from bench.results.store import load_records
from bench.results.sweep_manifest import write_sweep
from bench.runs.distributed import topology
from bench.runs.distributed.launcher import Launch, LaunchError, Task
from bench.runs.distributed.run import SCRATCH_PREFIX, remove_stale_scratch
from bench.stats.judge import Judge
from bench.sweep import jupyter_kernels
from bench.sweep.profiles import load_profile

from .conftest import ROOT
from .synthetic import dist_record, record, write

TOO_MANY = devices.usable_cpus() + 1  # more workers than this machine has cores for
NO_FP16 = ADAPTERS.get("torch").not_applicable("inference", "fp16", "cpu") is not None
HAS_GPU = bool(devices.gpus())
DIST = ("--mode", "training", "--strategy", "allreduce")
RUN = ("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32")
MAXBATCH = ("maxbatch", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32")

# (command line, text the one-line error must contain); each: exit 2, nothing written
CLI = [
    (RUN + DIST + ("--workers", "202", "--nodes", "202"), "nodes 202"),
    (RUN + DIST + ("--workers", str(TOO_MANY)), f"workers {TOO_MANY}"),
    (RUN + DIST + ("--workers", "2", "--nodes", "2", "--link-delay-ms", "5"), "link_delay_ms 5"),
    (RUN + ("--precision", "fp64"), "fp64"),
    (RUN + ("--engine", "jit"), "jit"),
    (RUN + DIST + ("--strategy", "allreduc", "--workers", "2"), "allreduc"),
    (RUN + DIST + ("--workers", "2", "--oversubscribe", "maybe"), "maybe"),
    (RUN + ("--warmup", "2.5"), "2.5"),
    (("maxbatch", "--framework", "onnxruntime", "--model", "tiny_cnn", "--mode", "training"), "has no training"),
    (MAXBATCH + ("--precision", "fp16"), "fp16"),
    (MAXBATCH + ("--memory-cap-gb", "50000"), "--memory-cap-gb 50000"),
    (MAXBATCH + ("--engine", "jit"), "jit"),
    (("peak", "--device", "cuda", "--threads", "1"), "no GPU"),
]
CLI_SKIPS = {"link_delay_ms 5": netem_unavailable() is None, "fp16": not NO_FP16, "no GPU": HAS_GPU}


@pytest.mark.parametrize("argv, needle", CLI, ids=[n for _, n in CLI])
def test_bad_command_lines_are_refused_before_any_work(argv, needle, tmp_path, capsys):
    if CLI_SKIPS.get(needle):
        pytest.skip(f"this machine can run it ({needle})")
    results = tmp_path / "results"
    try:
        code = main([*argv, "--results-dir", str(results)] if argv[0] != "peak" else list(argv))
    except SystemExit as exc:  # argparse's own refusal (a switch's value): exit 2 as well
        code = exc.code
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and needle in err, err
    assert "Traceback" not in err
    assert not results.exists()


# (block, key, YAML of the bad value, text naming the value) for every block that has the key
BLOCKS = {"top level": "", "also block 1": "also:\n  - {{{kv}}}\n",
          "distributed block 1": "distributed:\n  - {{models: [tiny_cnn], {kv}}}\n",
          "memory block 1": "memory:\n  - {{{kv}}}\n"}
VALUES = [
    ("precisions", "precisions: [fp64]", "'fp64'", ("top level", "also block 1", "memory block 1")),
    ("modes", "modes: [sleeping]", "'sleeping'", ("top level", "also block 1", "memory block 1")),
    ("devices", "devices: [tpu]", "'tpu'", ("top level", "also block 1", "memory block 1")),
    ("frameworks", "frameworks: [caffe2]", "'caffe2'", tuple(BLOCKS)),
    ("models", "models: [resnet9000]", "'resnet9000'", tuple(BLOCKS)),
    ("batch_sizes", "batch_sizes: [0]", "batch_size 0", ("top level", "also block 1", "distributed block 1")),
    ("engines", "frameworks: [torch], engines: [jit]", "'jit'", ("top level", "also block 1", "memory block 1")),
    ("strategies", "strategies: [allreduc]", "'allreduc'", ("distributed block 1",)),
    ("strategies", "strategies: ['']", "''", ("distributed block 1",)),
    ("workers", "workers: [0]", "workers 0", ("distributed block 1",)),
    ("bucket_mbs", "bucket_mbs: [-1]", "bucket_mb -1", ("distributed block 1",)),
    ("settings", "settings: {strategy: ps_sync}", "strategy", ("top level", "distributed block 1")),
    ("settings", "settings: {workers: 4}", "workers", ("top level", "distributed block 1")),
    ("settings", "settings: {bucket_mb: 4}", "bucket_mb", ("top level", "distributed block 1")),
    ("settings: warmup", "settings: {warmup: -1}", "warmup -1", ("top level", "distributed block 1")),
    ("settings: link_gbit", "settings: {link_gbit: .nan}", "link_gbit nan", ("top level", "distributed block 1")),
    ("memory_cap_gb", "memory_cap_gb: 50000", "memory_cap_gb 50000", ("memory block 1",)),
    ("max_batch", "max_batch: 0", "max_batch 0", ("memory block 1",)),
    ("", "workers: [202], settings: {nodes: 202}", "nodes 202", ("distributed block 1",)),
    ("", f"workers: [{TOO_MANY}]", f"workers {TOO_MANY}", ("distributed block 1",)),
    ("", "workers: [2], settings: {nodes: 2, link_delay_ms: 5}", "link_delay_ms 5", ("distributed block 1",)),
]
PROFILE_ROWS = [(block, key, kv, value) for key, kv, value, blocks in VALUES for block in blocks]


def _profile_text(block: str, kv: str) -> str:
    if block == "top level":  # the whole profile as one flow mapping
        return f"{{{kv}}}\n" if "models:" in kv else f"{{models: [tiny_cnn], {kv}}}\n"
    return "models: [tiny_cnn]\n" + BLOCKS[block].format(kv=kv)


@pytest.mark.parametrize("block, key, kv, value", PROFILE_ROWS, ids=[f"{b}: {kv}" for b, _, kv, _ in PROFILE_ROWS])
def test_a_bad_value_in_any_block_is_refused_naming_block_key_and_value(block, key, kv, value, tmp_path, capsys):
    if "link_delay_ms" in value and netem_unavailable() is None:
        pytest.skip("this kernel has netem: a link delay can be emulated")
    profile = tmp_path / "p.yaml"
    profile.write_text(_profile_text(block, kv))
    with pytest.raises(ConfigError) as exc:
        load_profile(str(profile))
    message = str(exc.value)
    assert block in message and value in message and f"'{key}'" * bool(key) in message, message
    results = tmp_path / "results"
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and block in err and value in err and len(err.strip().splitlines()) == 1, err
    assert not results.exists()


def test_a_framework_with_none_of_the_listed_engines_is_left_out_with_the_reason(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [torch, tensorflow]\nmodels: [tiny_cnn]\nengines: [xla]\n")
    p = load_profile(str(profile))
    assert {(c.framework, c.engine) for c in p.configs} == {("tensorflow", "xla")}
    assert any(s.startswith("torch inference fp32 cpu: torch has none of the engines xla") for s in p.not_applicable)


def test_oversubscription_is_an_explicit_choice(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(f"models: [tiny_cnn]\ndistributed:\n  - {{models: [tiny_cnn], workers: [{TOO_MANY}], "
                       "settings: {oversubscribe: true}}\n")
    (dist,) = [c for c in load_profile(str(profile)).configs if c.distributed]
    assert dist.workers == TOO_MANY and dist.oversubscribe and dist.threads == 1


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_launchers_scratch_and_kernel_folders_are_removed_by_the_next_run():
    pid = _dead_pid()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{pid}-"))
    kernels = Path(tempfile.mkdtemp(prefix=f"{jupyter_kernels.PREFIX}{pid}-"))
    mine = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))  # a live launcher's: kept
    try:
        remove_stale_scratch()
        jupyter_kernels.remove_stale()
        assert not scratch.exists() and not kernels.exists() and mine.exists()
    finally:
        mine.rmdir()


def _kernel_like(folder: Path, *body: str) -> subprocess.Popen:
    """A process our kernel lookup takes for a kernel (its command line names the launcher module) that runs `body`
    with `f`, the private folder, as a kernel would write into it."""
    script = "\n".join(("import sys, time, pathlib", "f = pathlib.Path(sys.argv[2])") + body)
    return subprocess.Popen([sys.executable, "-c", script, jupyter_kernels.KERNEL_MODULE, str(folder)],
                            start_new_session=True)  # as jupyter_client starts a kernel: Ctrl-C does not reach it


def test_the_kernel_folder_goes_even_while_an_exiting_kernel_still_writes_into_it(tmp_path):
    """After Ctrl-C a kernel still exiting can write into the private folder while it is being removed: the
    sweep waits for it and removes the folder (CI once found one left behind)."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    writer = _kernel_like(folder, "end = time.time() + 1.5; i = 0", "while time.time() < end:",
                          "    try: (f / f'log{i}').write_text('x'); i += 1", "    except OSError: break")
    time.sleep(0.3)
    jupyter_kernels._remove(str(folder))
    writer.wait(timeout=10)
    assert not folder.exists()


def test_a_kernel_still_starting_when_the_sweep_ends_neither_recreates_the_folder_nor_outlives_it(tmp_path):
    """ipykernel makes the folder of its connection file and writes its HMAC key there, so a kernel that was still
    starting when Ctrl-C ended the sweep recreated the private folder after it had been removed (CI found one left
    behind). Its own session keeps Ctrl-C from it, and nbclient had not got to it: the sweep ends it, then removes
    the folder."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    kernel = _kernel_like(folder, "time.sleep(0.5)", "f.mkdir(parents=True, exist_ok=True)",
                          "(f / 'kernel-1.json').write_text('key')", "time.sleep(60)")
    try:
        jupyter_kernels._remove(str(folder))
        assert not psutil.pid_exists(kernel.pid)  # ended (and reaped) by the sweep, not left to its own end
        time.sleep(0.7)
        assert not folder.exists()
    finally:
        kernel.kill()
        kernel.wait()


def _ranks_of(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True)  # the ranks, not their agents
                if "bench.runs.distributed.rank_main" in " ".join(p.cmdline())
                and "torch.distributed.run" not in " ".join(p.cmdline()) and p.name() != "pt_elastic"]
    except psutil.Error:
        return []


@pytest.mark.full
@pytest.mark.skipif(topology.unavailable_reason() is not None,
                    reason=f"emulated nodes: {topology.unavailable_reason()}")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_of_a_two_node_run_leaves_nothing_behind(signum, tmp_path):
    cmd = [sys.executable, "-m", "bench", *RUN[:5], "--image-size", "16", "--batch-size", "4", *DIST,
           "--workers", "2", "--nodes", "2", "--iterations", "100000", "--results-dir", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_ranks_of(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    ranks = _ranks_of(proc.pid)
    assert len(ranks) == 2, "the ranks did not start"
    everything = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert signal.Signals(signum).name in err and "Traceback" not in err
    _, alive = psutil.wait_procs(everything, timeout=10)
    assert not alive, f"processes left: {alive}"
    assert not [ns for ns in topology.project_namespaces() if ns.startswith(f"{topology.PREFIX}{proc.pid}x")]
    assert not list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{proc.pid}-*"))
    assert not list(tmp_path.rglob("records/*.json"))


AGENT_SUMMARY = """[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection reset by peer
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
bench.runs.distributed.rank_main FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-23_10:00:01
  host      : h
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4242
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_10:00:01
  host      : h
  rank      : 0 (local_rank: 0)
  exitcode  : {survivor} (pid: 4241)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================"""


def _launch(tmp_path: Path, *scripts: str) -> str:
    tasks = [Task(f"node{k}", [sys.executable, "-c", s]) for k, s in enumerate(scripts)]
    with pytest.raises(LaunchError) as exc:
        Launch(tasks, tmp_path / "logs", timeout_s=60).run()
    return str(exc.value)


@pytest.mark.parametrize("survivor", ["1", "-15 (SIGTERM)"], ids=["peer errored", "agent stopped the peer"])
def test_the_reason_names_the_rank_killed_first_not_the_peer_that_lost_it(tmp_path, survivor):
    agent = f"import sys; print({AGENT_SUMMARY.format(survivor=survivor)!r}); sys.exit(1)"
    reason = _launch(tmp_path, agent)
    assert reason.startswith("rank 1 was killed by SIGKILL (in node0, which exited with code 1)"), reason
    # the peer fails 50 ms after the victim was killed, often within one poll of the launcher: the victim is named
    at = time.time() + 2.0
    victim = f"import os, signal, time; time.sleep({at} - time.time()); os.kill(os.getpid(), signal.SIGKILL)"
    survivor = (f"import sys, time; time.sleep({at} + 0.05 - time.time()); "
                "print('RuntimeError: Connection reset by peer'); sys.exit(1)")
    reason = _launch(tmp_path, survivor, victim)
    assert reason.startswith("node1 was killed by SIGKILL"), reason


PLANTED = {"TF_DB_URL": "postgres://user:s3cret-url@db.example/x", "MY_SERVICE_TOKEN": "s3cret-token-value"}


def test_a_planted_credential_in_a_workers_output_never_reaches_the_reason(tmp_path, monkeypatch):
    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    worker = ("import os, sys; print('starting with', os.environ['MY_SERVICE_TOKEN']); "
              "raise ValueError('cannot parse TF_DB_URL=' + os.environ['TF_DB_URL'] + ' password=hunter22')")
    reason = _launch(tmp_path, worker)
    assert "ValueError: cannot parse TF_DB_URL=" in reason and "s3cret" not in reason and "hunter22" not in reason


def test_a_planted_credential_never_reaches_a_record_notebook_kernel_log_or_the_terminal(tmp_path, monkeypatch,
                                                                                          capsys):
    from bench.sweep import runner as sweep
    from bench.sweep import task

    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(task.BENCHMARK_NOTEBOOK, as_version=4)
    planted = nbformat.v4.new_code_cell("import os, sys\nprint(os.environ['TF_DB_URL'], file=sys.stderr)\n"
                                        "raise RuntimeError('bad ' + os.environ['TF_DB_URL'] + ' in ' + "
                                        "os.path.expanduser('~/x') + ' token ' + os.environ['MY_SERVICE_TOKEN'])")
    nb.cells.insert(2, planted)  # after the parameters cell
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, broken)
    monkeypatch.setattr(task, "BENCHMARK_NOTEBOOK", broken)
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\nsettings: {protocol: seed}\n")
    results = tmp_path / "results"
    result = sweep.run_sweep(load_profile(str(profile)), results, progress=False)
    [rec] = load_records(results)
    assert rec["status"] == "error" and "RuntimeError: bad" in rec["reason"]
    files = [p for p in results.rglob("*") if p.is_file()]
    assert any(p.suffix == ".ipynb" for p in files)
    shown = capsys.readouterr()
    for text in [p.read_text(errors="replace") for p in files] + [shown.out, shown.err, repr(result.failures)]:
        assert "s3cret" not in text


def test_a_record_written_unmasked_before_is_masked_when_loaded_for_the_report(tmp_path):
    secret = PLANTED["TF_DB_URL"]
    failed = {**record(), "status": "error", "reason": f"ValueError: TF_DB_URL={secret}",
              "traceback": f"Traceback ...\nValueError: TF_DB_URL={secret}"}
    write([failed], tmp_path)
    raw = next(tmp_path.rglob("records/*.json"))
    assert "s3cret" not in raw.read_text()  # written through the store: masked on the way
    data = json.loads(raw.read_text())
    data["reason"] = f"ValueError: TF_DB_URL={secret}"  # as an older checkout wrote it
    raw.write_text(json.dumps(data))
    [loaded] = load_records(tmp_path)
    assert "s3cret" not in loaded.reason and "s3cret" not in json.dumps(loaded.to_json())
    assert loaded.reason.startswith("ValueError: TF_DB_URL=")


def test_mask_text_masks_what_the_manifest_masks():
    env = {"TF_DB_URL": "postgres://u:pw12345678@h/db", "OMP_PASSPHRASE": "s3cret-passphrase"}
    text = mask_text("url postgres://u:pw12345678@h/db phrase s3cret-passphrase at /home/alice/x, key "
                     "AKIAABCDEFGHIJKLMNOP, Authorization: Bearer abcdefghijklmnopqrstuvwxyz", env)
    for secret in ("pw12345678", "s3cret", "alice", "AKIAABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz"):
        assert secret not in text, text
    assert text.startswith("url <masked> phrase <masked> at ~/x, key <masked>"), text


def test_compare_on_harness_only_results_says_so(tmp_path, capsys):
    for side in ("a", "b"):
        write([record(framework="null", model="tiny_cnn", seed=i, repeat=i) for i in range(3)], tmp_path / side)
    with pytest.raises(ConfigError, match="measure the harness itself"):
        compare_results(tmp_path / "a", tmp_path / "b", Judge())
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "harness itself" in err and "Traceback" not in err


def test_compare_says_how_many_records_it_left_out_and_why(tmp_path, capsys):
    """A record of a newer format (another checkout's results) is counted with its reason, never skipped silently;
    a damaged file beside it is counted apart."""
    for side in ("a", "b"):
        write([record(seed=i, repeat=i) for i in range(3)], tmp_path / side)
    newer = record(seed=9, repeat=9)
    newer["schema_version"] = 99
    folder = next((tmp_path / "b").glob("*/records"))
    (folder / "20990101T000000_newer_r9a0_0123456789abcdef.json").write_text(json.dumps(newer))
    (folder / "20990101T000000_newer_r8a0_0123456789abcdef.json").write_text(json.dumps(newer))
    (folder / "20990101T000000_torn_r7a0_0123456789abcdef.json").write_text("{torn")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    line = [x for x in out.out.splitlines() if x.startswith("B: ")]
    assert line == ["B: 3 record files skipped: 2 of a newer record format (schema_version 99; this checkout reads "
                    f"up to {SCHEMA_VERSION}): update this checkout to compare them; 1 unreadable (first: Expecting "
                    "property name enclosed in double quotes: line 1 column 2 (char 1))"], out.out
    assert not [x for x in out.out.splitlines() if x.startswith("A: ")] and "skipping" not in out.err
    only_newer = tmp_path / "c" / "other-host" / "records"
    only_newer.mkdir(parents=True)
    (only_newer / "20990101T000000_newer_r9a0_0123456789abcdef.json").write_text(json.dumps(newer))
    with pytest.raises(ConfigError, match=r"no results in .*\(1 record file skipped: 1 of a newer record format"):
        compare_results(tmp_path / "a", tmp_path / "c", Judge())


def test_the_report_text_holds_no_machine_path_and_no_literal_none_or_bad_plural(tmp_path):
    """Issue 30, item 7: the environment is named by its folder (no /tmp/<clone>/.venv of the machine that ran it),
    a framework that reports one thread pool is not said to have 'None inter-op', and one config is one config."""
    runs = [record(framework="torch", repeat=i, seed=i, sweep_id="s1") for i in range(2)]
    for r in runs:
        r["manifest"]["interpreter"] = "/tmp/clone-1a2b3c/.venv"
    runs[0]["settings"] = {"intra_op_threads": 2}
    runs[1]["settings"] = {"intra_op_threads": 2, "inter_op_threads": 1}
    write(runs, tmp_path)
    write_sweep(tmp_path, {
        "sweep_id": "s1", "host": "test-host", "profile": "quick", "description": "", "order_seed": 1, "repeats": 2,
        "retries": 0, "budget_minutes": 5, "force": False, "started": "2026-01-01T00:00:00Z", "finished": None,
        "status": "finished", "estimate_s": 60.0, "already_done": 0, "peaks": {}, "retried": [], "networks": {},
        "not_applicable": [], "order": [{"config_key": runs[0]["config_key"], "repeat": i, "round": i,
                                         "label": runs[0]["label"]} for i in range(2)],
        "dropped": [{"config_key": "k", "label": "big one", "reason": "over budget"}]})
    d = load(tmp_path)
    assert set(environment_table(d.records).loc["environment (interpreter)"]) == {".venv"}
    text = methodology(d)
    assert "None" not in text and "torch: 2 intra-op: 1, torch: 2 intra-op / 1 inter-op: 1" in text, text
    assert "1 config dropped to fit the budget" in text and "1 configs" not in text + header(d)


@pytest.mark.parametrize("interpreters, shown", [
    (["/tmp/clone-1a2b/.venv"], [".venv"]),
    (["/tmp/a/.venv", "/tmp/b/.venv", "/opt/mxnet-env"], ["a/.venv", "b/.venv", "mxnet-env"]),
    (["/home/alice/.venv", "/srv/x/.venv"], ["~/.venv", "x/.venv"]),
    ([None], ["not recorded"]),
])
def test_an_environment_is_named_by_its_folder_with_only_the_parents_that_tell_it_apart(interpreters, shown):
    assert list(environment_folders(interpreters).values()) == shown


def test_a_study_row_names_the_profile_that_measured_it_and_the_command_that_does(tmp_path):
    """The thesis' parameter-server rows are measured by the `distributed` profile, not by a plain `make report`:
    the row says which profile measured what it holds (from the records' sweeps), and the command that would."""
    from bench.report.studies import coverage_table

    runs = [dist_record(s, 2, 50.0, repeat=i, framework="tensorflow") for s in ("ps_async", "allreduce")
            for i in range(2)]
    for r in runs:
        r["sweep"] = {"id": "d1", "order_index": 0}
    single = [record(framework="tensorflow", repeat=i, seed=i, sweep_id="q1") for i in range(2)]
    write(runs + single, tmp_path)
    base = {"host": "test-host", "description": "", "order_seed": 1, "repeats": 2, "retries": 0,
            "budget_minutes": None, "force": False, "started": "2026-01-01T00:00:00Z", "finished": None,
            "status": "finished", "estimate_s": 60.0, "already_done": 0, "peaks": {}, "retried": [], "networks": {},
            "not_applicable": [], "order": [], "dropped": []}
    write_sweep(tmp_path, {**base, "sweep_id": "d1", "profile": "distributed"})
    write_sweep(tmp_path, {**base, "sweep_id": "q1", "profile": "quick"})
    thesis = coverage_table(load(tmp_path), "thesis").set_index("figure or claim")
    row = thesis.loc["TensorFlow ps/worker processes on localhost"]
    assert row["measured here"] == "tensorflow ps_async x2 (profile `distributed`)", row["measured here"]
    # the rows of what the `distributed` profile measures say so (the pipeline rows name `parallelism`, their own)
    ps_rows = [c for c in thesis.index if "parameter server" in c or "ps/worker" in c or "Downpour" in c]
    assert len(ps_rows) >= 2
    assert all("PROFILE=distributed" in thesis.loc[c, "what would measure it"] for c in ps_rows), ps_rows
    hkbu = coverage_table(load(tmp_path), "HKBU").set_index("figure or claim")
    assert hkbu.loc["Caffe-MPI, CNTK, MXNet and TensorFlow compared on a GPU cluster", "measured here"] == \
        "tensorflow (1 config) (profile `quick`)"
    singa = coverage_table(load(tmp_path), "SINGA").set_index("figure or claim")
    assert "ps_async" in singa.iloc[0]["measured here"]  # all-reduce against a parameter server: both ran


def test_singas_parameter_server_claim_is_measured_only_where_a_parameter_server_ran(tmp_path):
    # last session's coverage marked SINGA's "all-reduce against a parameter server" measured from a sweep that ran
    # all-reduce alone
    from bench.report.studies import coverage_table

    write([dist_record("allreduce", 2, 50.0, repeat=i) for i in range(2)]
          + [dist_record("independent", w, 40.0, repeat=i) for w in (1, 2) for i in range(2)], tmp_path)
    singa = coverage_table(load(tmp_path), "SINGA")
    row = singa[singa["figure or claim"].str.startswith("ResNet-50 throughput")].iloc[0]
    assert row["measured here"] == "not measured", row["measured here"]


def test_the_exported_report_is_masked_as_it_is_written(tmp_path, monkeypatch):
    """A report notebook whose kernel prints a credential (a warning quoting a record, a framework's error): the
    executed notebook, the HTML made from it and the kernel's log never hold it."""
    from bench.report.export import execute_report, to_html

    monkeypatch.setenv("TEST_ADDR", "bob:s3cret@10.0.0.1")  # planted where the kernel reads it, not in its source
    notebook = tmp_path / "report.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("results_dir = figures_dir = None", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import os, sys\nprint('MASTER_ADDR=' + os.environ['TEST_ADDR'])\n"
                                  "print('at ' + os.environ['TEST_ADDR'], file=sys.stderr)\nos.environ['TEST_ADDR']")],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}), notebook)
    out = tmp_path / "out"
    out.mkdir()
    executed = execute_report(tmp_path, out, notebook)
    html = to_html(executed, out / "report.html")
    for path in (executed, html, out / "kernels.log"):
        assert "s3cret" not in (path.read_text() if path.exists() else ""), path
    assert "MASTER_ADDR=&lt;masked&gt;@10.0.0.1" in html.read_text() or "MASTER_ADDR=<masked>@10.0.0.1" in \
        html.read_text()


@pytest.mark.full
def test_a_worker_killed_on_one_node_is_named_in_the_reason(tmp_path):
    import threading

    from bench.config import make_config
    from bench.runs.single import execute

    config = make_config(framework="torch", model="tiny_cnn", mode="training", batch_size=4, image_size=16,
                         warmup=1, iterations=100_000, strategy="allreduce", workers=2)
    out = {}
    runner = threading.Thread(target=lambda: out.update(record=execute(config, tmp_path)))
    runner.start()
    deadline = time.monotonic() + 120
    ranks = []
    while len(ranks) != 2 and time.monotonic() < deadline:
        ranks = _ranks_of(os.getpid())
        time.sleep(0.5)
    assert len(ranks) == 2, "the ranks did not start"
    time.sleep(3)
    victim = max(ranks, key=lambda p: p.pid)
    victim.kill()
    runner.join(timeout=60)
    reason = out["record"]["reason"]
    assert out["record"]["status"] == "error" and "was killed by SIGKILL" in reason.splitlines()[0], reason
