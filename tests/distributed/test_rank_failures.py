"""A distributed run whose rank dies: the reason names the rank killed first (not the peer that lost it), on one node
or two, and a signal to the launcher leaves no process behind."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from bench.runs.distributed import topology
from bench.runs.distributed.launcher import Launch, LaunchError, Task
from bench.runs.distributed.run import SCRATCH_PREFIX
from tests.conftest import ROOT
from tests.surface.test_bad_input import DIST, RUN


def _ranks_of(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True)  # the ranks, not their agents
                if "bench.runs.distributed.rank_main" in " ".join(p.cmdline())
                and "torch.distributed.run" not in " ".join(p.cmdline()) and p.name() != "pt_elastic"]
    except psutil.Error:
        return []

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
