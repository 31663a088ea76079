"""The vendor-documented settings a framework's processes start with: environment variables set before the framework
loads, where the user has not set them, and recorded in every run.

An adapter declares them (`Adapter.process_environment`) only after an interleaved A/B of fresh processes (`bench noise
--arm`) showed that the setting helps on the median, the mean and the within-process spread: docs/methodology.md gives
each one's numbers. A sweep's kernel starts with them (bench/sweep/task.py); `bench run` sets them before it imports the
framework. BENCH_PROCESS_ENV_SET names the ones the project set, so a record tells them from a user's own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

SET_BY_PROJECT = "BENCH_PROCESS_ENV_SET"
# Read by the dynamic loader or the C library as the process starts: a process must be started with them (a running
# one setting them changes nothing), so `bench run` starts itself again where one is missing.
AT_START = ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CONF", "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD")


def restart_with(declared: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a process must be started again with for `declared` to take effect ({} where nothing read at
    start is missing): the variables to set, and BENCH_PROCESS_ENV_SET naming them."""
    missing = to_set(declared, environ)
    if not any(k in AT_START for k in missing):
        return {}
    return {**missing, SET_BY_PROJECT: ",".join(sorted(missing))}


def to_set(declared: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The declared variables the environment does not set already (a user's own value wins)."""
    return {k: v for k, v in declared.items() if k not in environ}


@contextlib.contextmanager
def environment(variables: Mapping[str, str], mark: bool = True) -> Iterator[None]:
    """`variables` in this process's environment while the block runs (a kernel started inside inherits them), and
    with `mark` their names in BENCH_PROCESS_ENV_SET; the previous values come back after."""
    given = dict(variables)
    if mark and given:
        given[SET_BY_PROJECT] = ",".join(sorted(given))
    previous = {k: os.environ.get(k) for k in given}
    os.environ.update(given)
    try:
        yield
    finally:
        for k, v in previous.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def apply(declared: Mapping[str, str]) -> None:
    """Set the declared variables the environment lacks, for good (a `bench run` process, before the import). Those
    only a process's start reads (AT_START) are left unset here: set now they would change nothing, and the record
    must not claim them (`bench run` and a sweep's kernel start with them)."""
    missing = {k: v for k, v in to_set(declared, os.environ).items() if k not in AT_START}
    if missing:
        os.environ.update(missing)
        os.environ[SET_BY_PROJECT] = ",".join(sorted(set(filter(None, os.environ.get(SET_BY_PROJECT, "").split(",")))
                                                     | set(missing)))


def in_effect(declared: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Each declared variable as this process has it: its value and who set it ('project', or 'user' where the value
    came from the environment the user gave), for the record's settings and the fairness certificate."""
    env = os.environ if environ is None else environ
    ours = set(env.get(SET_BY_PROJECT, "").split(","))
    out = {k: {"value": env.get(k), "set_by": "project" if k in ours else ("user" if k in env else "unset")}
           for k in declared}
    if out.get("LD_PRELOAD", {}).get("value") and environ is None:  # whether this process really loaded it
        out["LD_PRELOAD"]["loaded"] = preloaded(out["LD_PRELOAD"]["value"])
    return out


def preloaded(value: str, maps: str = "/proc/self/maps") -> bool | None:
    """Whether every library LD_PRELOAD names is mapped into this process (None where /proc cannot tell): a name
    the loader could not find is skipped with a warning on stderr, and the record must not claim it."""
    try:
        with open(maps) as f:
            mapped = {os.path.basename(line.split()[-1]) for line in f if "/" in line}
    except OSError:
        return None
    names = [os.path.basename(n) for n in value.replace(":", " ").split()]
    return all(any(m == n or m.startswith(n + ".") for m in mapped) for n in names)
