"""What the Slurm scheduler says about a sweep's jobs: partitions, job states and reasons, cancelling.

submitit submits the jobs and reads their results, but learns a job's state only from `sacct`, which a
cluster without accounting lacks (and then it never sees a cancelled or killed job end). `scontrol show
job` answers on every cluster while the controller remembers the job (MinJobAge, 300 s by default); `sacct`
is asked only for a job it has forgotten.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import ConfigError

TIMEOUT_S = 30  # a Slurm command against an unreachable controller retries for up to a minute
# States in which a job has ended (squeue/scontrol spelling); the rest are pending or running.
ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}
MEANING = {
    "CANCELLED": "cancelled (scancel, or an administrator)",
    "TIMEOUT": "killed at its time limit",
    "NODE_FAIL": "its node failed",
    "PREEMPTED": "preempted by a higher-priority job",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "killed at its deadline",
    "OUT_OF_MEMORY": "killed for exceeding its memory",
    "FAILED": "its batch script failed",
    "COMPLETED": "completed without leaving a result",
    "LOST": "the scheduler no longer knows the job, and it left no result",
}


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str  # PENDING, RUNNING, ..., or LOST (unknown to the scheduler)
    reason: str | None = None
    node: str | None = None
    exit_code: str | None = None
    time_limit: str | None = None

    @property
    def ended(self) -> bool:
        return self.state in ENDED or self.state == "LOST"

    def explain(self) -> str:
        """The scheduler's account of why the job ended, for an error record's reason."""
        parts = [f"Slurm job {self.job_id} {self.state}: {MEANING.get(self.state, 'ended')}"]
        if self.node:
            parts.append(f"on node {self.node}")
        if self.state == "TIMEOUT" and self.time_limit:
            parts.append(f"(time limit {self.time_limit})")
        if self.reason and self.reason != "None":
            parts.append(f"(reason {self.reason})")
        if self.exit_code and self.exit_code != "0:0":
            parts.append(f"(exit code {self.exit_code})")
        return " ".join(parts)


def _run(*argv: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"no answer within {TIMEOUT_S} s")
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]} is not installed")


def partitions() -> list[str]:
    """The cluster's partitions; ConfigError when there is no Slurm client or no controller answers."""
    if shutil.which("sbatch") is None:
        raise ConfigError("--executor slurm: sbatch is not installed here; run the sweep on a machine with the "
                          "Slurm client (Debian: slurm-client) and a slurm.conf (or SLURM_CONF) for your cluster")
    done = _run("sinfo", "-h", "-o", "%R")
    if done.returncode:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(f"--executor slurm: the Slurm controller does not answer (sinfo: "
                          f"{said[-1] if said else done.returncode}); is SLURM_CONF right?")
    return list(dict.fromkeys(done.stdout.split()))


def _fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", line))


def _task_ids(text: str) -> list[int]:
    """scontrol's ArrayTaskId: '3', or the pending ones as '2-5,7%1'."""
    ids = []
    for part in text.split("%")[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit():
            ids += range(int(low), int(high or low) + 1)
    return ids


def job_states(job_id: str) -> dict[str, JobInfo] | None:
    """A job, or every task of a job array, that the controller still knows: job id ('41', '41_3') -> state.
    Empty when the controller has forgotten the job; None when it did not answer (ask again later)."""
    done = _run("scontrol", "show", "job", "-o", job_id)
    out: dict[str, JobInfo] = {}
    if done.returncode:
        return out if "invalid job id" in done.stderr.lower() else None
    for line in done.stdout.splitlines():
        f = _fields(line)
        if "JobState" not in f:
            continue
        node = f.get("NodeList") if f.get("NodeList") not in (None, "", "(null)") else None
        ids = [f"{f['ArrayJobId']}_{t}" for t in _task_ids(f.get("ArrayTaskId", ""))] if "ArrayJobId" in f \
            else [f.get("JobId", job_id)]
        for jid in ids:
            out[jid] = JobInfo(jid, f["JobState"], f.get("Reason"), node, f.get("ExitCode"), f.get("TimeLimit"))
    return out


def forgotten_state(job_id: str) -> JobInfo:
    """A job the controller has forgotten: what accounting says, when the cluster keeps it; else LOST."""
    done = _run("sacct", "-n", "-P", "-X", "-o", "JobID,State,NodeList,ExitCode,Timelimit", "-j", job_id)
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        jid, state, node, code, limit = (line.split("|") + [""] * 5)[:5]
        if jid == job_id and state:
            return JobInfo(job_id, state.split()[0], None, node or None, code or None, limit or None)
    return JobInfo(job_id, "LOST")


def cancel(job_ids: list[str]) -> None:
    """Cancel exactly these jobs (array job ids cancel their own tasks only)."""
    if job_ids:
        _run("scancel", *job_ids)
