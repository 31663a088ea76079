"""Start every process of a distributed run, own them, and stop them all on the first failure.

Each process starts in its own session (its own process group); the launcher remembers every
group and, on a failure, a timeout or Ctrl-C, signals each group and every descendant it can
see (SIGTERM, then SIGKILL after a grace period), so nothing is orphaned. A rank that exits
non-zero (or is killed) stops the run within about a second, with a message naming it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ...adapters.launch import LaunchError, Task
from ...host.manifest import mask_text
from ...masking import masked_sink
from ...paths import PROJECT_ROOT

POLL_S = 0.1
GRACE_S = 5.0

__all__ = ["Launch", "LaunchError", "Task"]  # Task and LaunchError live with the launch plans


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the launcher dies, even by SIGKILL (Linux prctl), so a
    killed sweep or kernel leaves no rank behind (torchrun passes SIGTERM on to its workers)."""

    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


_EXCEPTION = re.compile(r"^[\w.]*(Error|Exception|Interrupt)\b.*")
_ABORT = re.compile(r"terminate called|what\(\):")


# An agent's (torchrun's) summary of its failed ranks: one entry per rank, "rank : N ..." then "exitcode : C ...".
_FAILED_RANK = re.compile(r"^\s*rank\s*:\s*(\d+).*\n\s*exitcode\s*:\s*(-?\d+)", re.MULTILINE)


def _cause_first(code: int) -> int:
    """Sort key of a failed process's exit code, the likeliest cause first: killed by a signal from outside (SIGKILL,
    SIGSEGV, ...), then an error exit (often a peer losing its connection to the killed one), then SIGTERM (how an
    agent or this launcher stops the survivors once one has failed)."""
    return 2 if code == -signal.SIGTERM else 0 if code < 0 else 1


def _first_death(text: str) -> str | None:
    """Which rank an agent's failure summary says died first, and how. The agent's own "first observed" order
    cannot tell the killed rank from the peers that then failed talking to it (a "Connection reset" is an effect,
    not the cause) or that it stopped: they are seen in the same poll."""
    failed = [(int(rank), int(code)) for rank, code in _FAILED_RANK.findall(text)]
    if not failed:
        return None
    rank, code = min(failed, key=lambda f: (_cause_first(f[1]), f[0]))
    return f"rank {rank} {_exit_text(code)}"


def _tail(path: Path, lines: int = 4) -> str:
    """The last exception line a process printed (a rank's, not its launcher's summary), else its last lines; every
    line masked as the manifest masks a value, since it may quote the environment."""
    try:
        raw = path.read_text(errors="replace")
    except OSError:
        return ""
    text = [ln.strip() for ln in mask_text(raw).splitlines() if ln.strip()]
    text = [re.sub(r"^\[rank\d+\]:\s*", "", ln) for ln in text]  # torchrun's per-rank prefix
    aborts = [ln for ln in text if _ABORT.search(ln)]  # a C++ exception (gloo) ends in SIGABRT, no traceback
    errors = [ln for ln in text if _EXCEPTION.match(ln) and "ChildFailedError" not in ln]
    if aborts or errors:
        return " / ".join((aborts + errors)[:2])[:400]
    return "\n".join(text[-lines:])


class _Watch:
    """Whether a task on another machine has come up (accepts connections at its address) and gone again."""

    EVERY_S = 1.0

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port, self.seen, self.next = host, int(port), False, 0.0

    def gone(self) -> bool:
        if time.monotonic() < self.next:
            return False
        self.next = time.monotonic() + self.EVERY_S
        try:
            with socket.create_connection((self.host, self.port), timeout=self.EVERY_S):
                self.seen = True
                return False
        except OSError:
            return self.seen


class Launch:
    """Run `tasks` to completion; `run()` returns wall seconds or raises LaunchError."""

    def __init__(self, tasks: list[Task], log_dir: Path, timeout_s: float, before_stop=None) -> None:
        self.tasks, self.log_dir, self.timeout_s = tasks, Path(log_dir), timeout_s
        self.before_stop = before_stop  # called with this Launch before anything is stopped
        self.procs: dict[str, subprocess.Popen] = {}
        self.copiers: dict[str, subprocess.Popen] = {}  # each task's log, masked as it is written
        self.seen: set[psutil.Process] = set()

    def _env(self, task: Task) -> dict:
        env = {**os.environ, **task.env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
        # their temporary files (torchrun's torchelastic_* folders, which hold the ranks' error files) inside the
        # run's scratch folder, so they go with it: nothing of a run is left in the machine's temporary folder
        env["TMPDIR"] = str(self.log_dir / "tmp")
        return env

    def start(self) -> None:
        (self.log_dir / "tmp").mkdir(parents=True, exist_ok=True)
        for task in self.tasks:
            with open(self.log_dir / f"{task.name}.log", "wb") as log:
                copier = self.copiers[task.name] = masked_sink(log, self._env(task))
            try:
                self.procs[task.name] = subprocess.Popen(
                    task.argv, stdout=copier.stdin, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self._env(task), cwd=str(PROJECT_ROOT), start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)
            finally:
                copier.stdin.close()

    def _logged(self, name: str, timeout_s: float = 2.0) -> None:
        """Wait (a little) until task `name`'s log holds all it wrote: its copier ends once every writer has."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.copiers[name].wait(timeout_s)

    def _remember_descendants(self) -> None:
        for proc in self.procs.values():
            try:
                self.seen.update(psutil.Process(proc.pid).children(recursive=True))
            except psutil.Error:
                pass

    def wait(self) -> None:
        daemons = {t.name for t in self.tasks if t.daemon}
        watches = [_Watch(t.serves_until) for t in self.tasks if t.serves_until]
        if len(daemons) == len(self.procs) and not watches:
            raise LaunchError("every task here is a server and none is told whose end ends the run")
        deadline = time.monotonic() + self.timeout_s
        while True:
            self._remember_descendants()
            failed = {name: proc.poll() for name, proc in self.procs.items() if proc.poll() not in (None, 0)}
            if failed:  # the likeliest cause first: the others' errors follow from its death
                name = min(failed, key=lambda n: _cause_first(failed[n]))
                self._logged(name)
                log = self.log_dir / f"{name}.log"
                try:
                    death = _first_death(log.read_text(errors="replace"))
                except OSError:
                    death = None
                tail = _tail(log)
                who = f"{death} (in {name}, which {_exit_text(failed[name])})" if death else \
                    f"{name} {_exit_text(failed[name])}"
                raise LaunchError(f"{who}; the other processes were stopped"
                                  + (f". Its log ends:\n{tail}" if tail else ""))
            for name, proc in self.procs.items():
                if proc.poll() == 0 and name in daemons:
                    raise LaunchError(f"{name} (a server) exited before the run finished")
            if len(daemons) < len(self.procs):
                if all(p.poll() == 0 for n, p in self.procs.items() if n not in daemons):
                    return
            elif all(watch.gone() for watch in watches):  # servers only: done when the chief elsewhere is
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"the run did not finish within {self.timeout_s:g} s; every process was stopped")
            time.sleep(POLL_S)

    def stop(self) -> None:
        """Stop every process group and every descendant seen; SIGKILL what outlives the grace period."""
        if self.before_stop:
            self.before_stop(self)
        self._remember_descendants()
        everything = set(self.seen)
        for proc in self.procs.values():
            try:
                everything.add(psutil.Process(proc.pid))
            except psutil.Error:
                pass
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in everything:
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(list(everything), timeout=GRACE_S)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=GRACE_S)
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        for name, copier in self.copiers.items():  # every writer is gone: each copier ends with its log complete
            self._logged(name, GRACE_S)
            if copier.poll() is None:
                copier.kill()
                copier.wait()

    def run(self) -> float:
        t0 = time.perf_counter()
        self.start()
        try:
            self.wait()
        finally:
            self.stop()
        return time.perf_counter() - t0

