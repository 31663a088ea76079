"""A real one-node Slurm cluster on this machine, for the tests of the Slurm executor (and for trying it by hand).

    python tests/local_slurm.py start | stop | status

`start` needs root and Debian's `slurm-wlm` and `munge` (`make system-deps` installs them with apt when
missing). It writes its own slurm.conf under STATE (never /etc/slurm, so a machine's real Slurm is left
alone), starts munged when none runs, then slurmctld and slurmd, and waits until the node is idle. Every
command that talks to this cluster needs SLURM_CONF=<STATE>/slurm.conf in its environment: `environment()`
gives it. A cluster already up is reused, not restarted, and `start` says why it cannot run (not root, no packages)
without changing anything. `start()` returns the daemons it started and `stop(those)` ends exactly them, so a test
session leaves the machine as it found it (the `slurm_cluster` fixture in tests/conftest.py); `stop` from the command
line ends slurmctld and slurmd (munged stays: other things may use it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

STATE = Path(os.environ.get("DLBENCH_SLURM_STATE", "/var/lib/dlbench-slurm"))
CONF = STATE / "slurm.conf"
PARTITION = "dlbench"
DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scancel", "sinfo", "scontrol")
SERVICES = ("munged", "slurmctld", "slurmd")  # what `start` may start, in order


def unavailable_reason() -> str | None:
    """Why this machine cannot run the local cluster (None when it can)."""
    if os.geteuid() != 0:
        return "the local Slurm cluster needs root (slurmd runs jobs as their user)"
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if missing:
        return f"Slurm/munge are not installed (missing {', '.join(missing)}; `make system-deps` installs them)"
    return None


def environment() -> dict[str, str]:
    """The environment of a command talking to this cluster."""
    return {**os.environ, "SLURM_CONF": str(CONF)}


def node_name() -> str:
    """The cluster's one node: this machine's short host name."""
    return socket.gethostname().split(".")[0]


def _conf_text() -> str:
    host = node_name()
    cpus = os.cpu_count() or 1
    memory_mb = max(1000, int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8))
    return "\n".join([
        "ClusterName=dlbench",
        f"SlurmctldHost={host}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        "MpiDefault=none", "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "SlurmctldPort=6917", "SlurmdPort=6918",
        f"StateSaveLocation={STATE / 'ctld'}", f"SlurmdSpoolDir={STATE / 'slurmd'}",
        f"SlurmctldPidFile={STATE / 'slurmctld.pid'}", f"SlurmdPidFile={STATE / 'slurmd.pid'}",
        f"SlurmctldLogFile={STATE / 'slurmctld.log'}", f"SlurmdLogFile={STATE / 'slurmd.log'}",
        "MinJobAge=600", "KillWait=5", "InactiveLimit=0",
        f"NodeName={host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO",
        "",
    ])


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(argv), capture_output=True, text=True, env=environment())
    if check and done.returncode:
        said = done.stderr.strip() or done.stdout.strip()
        raise RuntimeError(f"`{' '.join(argv)}` failed ({done.returncode}): {said}")
    return done


def _alive(pid_file: Path) -> bool:
    try:
        return Path(f"/proc/{int(pid_file.read_text().strip())}").exists()
    except (OSError, ValueError):
        return False


def node_state() -> str | None:
    """The node's state as sinfo prints it (idle, mixed, down, ...), None when the controller does not answer.

    Without a running controller sinfo is never asked: it retries for 60 s on a missing slurm.conf and for
    about 10 s on an unreachable controller, which made a first `start` take a minute."""
    if not CONF.exists() or not _alive(STATE / "slurmctld.pid"):
        return None
    done = _run("sinfo", "-h", "-p", PARTITION, "-o", "%T", check=False)
    return done.stdout.strip().lower().rstrip("*~#") or None if done.returncode == 0 else None


def _pids(daemon: str) -> list[int]:
    """The processes of `daemon` on this machine (by their command name)."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == daemon:
                found.append(int(comm.parent.name))
        except OSError:
            continue
    return found


def running() -> set[str]:
    """Which of munged, slurmctld and slurmd run now."""
    return {d for d in SERVICES if _pids(d)}


def start(timeout_s: float = 60) -> set[str]:
    """Start (or reuse) the cluster; returns the daemons it started (empty when it was up), to give to `stop`.
    Raises RuntimeError with the reason when it cannot (stopping what it started)."""
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    before = running()
    if node_state() in ("idle", "mixed", "allocated"):
        return set()
    try:
        _start_missing(before, timeout_s)
    except BaseException:
        stop(running() - before)
        raise
    return running() - before


def _start_missing(before: set[str], timeout_s: float) -> None:
    for folder in (STATE, STATE / "ctld", STATE / "slurmd"):
        folder.mkdir(parents=True, exist_ok=True)
    CONF.write_text(_conf_text())
    if "munged" not in before:
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            _run("mungekey", "--create")
        shutil.chown(key, "munge", "munge")
        key.chmod(0o400)
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        _run("runuser", "-u", "munge", "--", "munged", "--force")
    if "slurmctld" not in before:
        _run("slurmctld")
    if "slurmd" not in before:
        _run("slurmd")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = node_state()
        if state == "idle":
            return
        if state and state.startswith("down"):
            _run("scontrol", "update", f"nodename={node_name()}", "state=resume", check=False)
        time.sleep(0.5)
    log = (STATE / "slurmctld.log").read_text(errors="replace")[-800:] if (STATE / "slurmctld.log").exists() else ""
    raise RuntimeError(f"the local Slurm node did not become idle within {timeout_s:g} s (state {node_state()}). {log}")


def stop(daemons: set[str] | tuple[str, ...] = ("slurmctld", "slurmd")) -> None:
    """Stop `daemons` (by default the cluster's own two; munged only when named: other things may use it), each
    waited for, so the next `start` finds the machine as it was."""
    for daemon in reversed(SERVICES):  # slurmd, slurmctld, then munged, which they need while they stop
        if daemon not in daemons:
            continue
        for pid in _pids(daemon):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for _ in range(100):
            if not _pids(daemon):
                break
            time.sleep(0.1)


if __name__ == "__main__":
    action = sys.argv[1] if len(sys.argv) > 1 else "status"
    if action == "start":
        start()
        print(f"local Slurm up: partition {PARTITION}; export SLURM_CONF={CONF}")
    elif action == "stop":
        stop()
        print("local Slurm stopped")
    elif action == "status":
        print(node_state() or "not running", "" if unavailable_reason() is None else f"({unavailable_reason()})")
    else:
        sys.exit(f"unknown action {action!r}; choose start, stop or status")
