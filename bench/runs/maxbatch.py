"""The largest batch that fits, and peak memory against batch size.

One probe per batch size, each a fresh `python -m bench run` (in the framework's own interpreter, like any
run) with the `seed` protocol, one warm-up and two timed iterations, writing its record to a scratch folder:
probes are not benchmarks and never enter the results. Batch sizes double from 1 until a probe does not fit,
then bisect between the last fit and the first miss until they are within 1/8 of each other.

A probe does not fit when
- on a GPU, the framework runs out of device memory (the run's recorded error says so), or
- on a CPU, its process tree's resident memory passes the cap: a watchdog samples it every 50 ms and kills
  the tree, so the machine never swaps and the search goes on. The cap is a parameter (default: half of
  this machine's memory), so "largest batch" on a CPU means "largest batch within the cap".
Any other failure ends the search with that error recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from ..adapters import says_out_of_memory
from ..config import RunConfig
from ..errors import ConfigError
from ..host.devices import is_gpu
from ..host.manifest import host_name
from ..measurement.flops import FLOPS_FILE, flops_per_sample
from ..measurement.fresh_process import bench_environ, main_python
from ..measurement.peak import PEAK_FILE, device_peak
from ..results.searches import MEMORY_DIR
from ..results.store import atomic_write_json, host_dir, read_record

POLL_S = 0.05
PROBE_TIMEOUT_S = 900


def probe_config(config: RunConfig, batch_size: int) -> RunConfig:
    """The config of one probe: the searched config at `batch_size`, a short fixed-count protocol."""
    return dataclasses.replace(config, batch_size=batch_size, protocol="seed", warmup=1, iterations=2,
                               time_budget_s=None, phase_iterations=0)


def _argv(config: RunConfig, results_dir: Path) -> list[str]:
    """`bench run` flags for the fields that differ from their defaults (the run resolves the rest alike)."""
    argv = ["run", "--results-dir", str(results_dir)]
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in ("framework", "model") or (f.name != "extra" and value is not None and value != f.default):
            argv += ["--" + f.name.replace("_", "-"), str(value)]
    return argv


def _tree_rss(proc) -> int:
    total = 0
    for p in [proc] + proc.children(recursive=True):
        try:
            total += p.memory_info().rss
        except psutil.Error:  # exited between listing and reading
            pass
    return total


def _watch(argv: list[str], cap_bytes: int | None, deadline: float | None = None) -> tuple[int, int, bool]:
    """Run `python -m bench *argv` (stopped at `deadline`, a time.monotonic(), or after PROBE_TIMEOUT_S); return
    (exit code, highest tree RSS seen, killed at the cap)."""

    child = subprocess.Popen([main_python(), "-m", "bench", *argv], env=bench_environ(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc, high, over = psutil.Process(child.pid), 0, False
    deadline = min(deadline or float("inf"), time.monotonic() + PROBE_TIMEOUT_S)
    try:
        while child.poll() is None:
            high = max(high, _tree_rss(proc))
            if (cap_bytes and high > cap_bytes) or time.monotonic() > deadline:
                over = bool(cap_bytes and high > cap_bytes)
                break
            time.sleep(POLL_S)
    finally:
        if child.poll() is None:
            for p in proc.children(recursive=True) + [proc]:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            child.wait()
    return child.returncode, high, over


def host_facts(config: RunConfig, results_dir: Path | str) -> tuple[Path, tuple[str, ...]]:
    """Measure (or reuse) the per-host facts a run needs, the device peak and the model's FLOPs, in the
    results folder, so no probe spends its time re-measuring them in its scratch folder."""

    device_peak(results_dir, config.device, config.precision, config.threads)
    flops_per_sample(results_dir, config.model, config.input_size, config.mode)
    return host_dir(results_dir), (PEAK_FILE, FLOPS_FILE)


def probe(config: RunConfig, batch_size: int, cap_bytes: int | None, facts: tuple | None = None,
          deadline: float | None = None) -> dict:
    """One batch size: fits (True/False/None for an error), the run's own peak memory, the reason.
    `facts` = (host folder, file names) of per-host caches copied into the probe's scratch folder; `deadline` (a
    time.monotonic()) stops the probe, which then fits neither way."""
    cfg = probe_config(config, batch_size)
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as scratch:
        if facts:
            folder, names = facts
            mine = host_dir(scratch)
            mine.mkdir(parents=True)
            for name in names:
                if (folder / name).exists():
                    shutil.copy(folder / name, mine / name)
        t0 = time.monotonic()
        code, tree_high, over = _watch(_argv(cfg, Path(scratch)), cap_bytes, deadline)
        elapsed = time.monotonic() - t0
        records = sorted(Path(scratch).glob("*/records/*.json"))
        record = read_record(records[-1]) if records else None
    out = {"batch_size": batch_size, "seconds": round(elapsed, 1), "tree_peak_rss_bytes": tree_high,
           "peak_bytes": None, "memory_kind": None, "images_per_sec": None}
    if over:
        return {**out, "fits": False, "reason": f"resident memory passed the cap ({cap_bytes / 2**30:.1f} GiB): "
                                                f"stopped at {tree_high / 2**30:.2f} GiB"}
    if record is None:
        stopped = deadline is not None and time.monotonic() >= deadline
        return {**out, "fits": None, "reason": "stopped: the search's time ran out" if stopped else
                f"the probe wrote no record (exit code {code})"}
    if record.memory:
        out.update(peak_bytes=record.memory.peak_bytes, memory_kind=record.memory.kind)
    out.update(images_per_sec=record.summary.images_per_sec_median if record.summary else None)
    if record.status == "ok":
        return {**out, "fits": True, "reason": ""}
    reason = str(record.reason or "")
    return {**out, "fits": False if says_out_of_memory(reason) else None, "reason": reason[:300]}


def search(config: RunConfig, cap_bytes: int | None, max_batch: int, probe_fn=probe, facts=None,
           deadline: float | None = None, start: int = 1) -> dict:
    """Doubling from `start` (a batch known to fit saves the probes below it), then bisection: the largest batch size
    that fits (within the cap), every probe kept. Past `deadline` (a time.monotonic()) no probe starts and the one
    running is stopped: the search says it was limited by time."""
    probes: list[dict] = []
    fit, miss, error, timed_out = 0, None, None, False
    out_of_time = lambda: deadline is not None and time.monotonic() >= deadline

    def run(b: int) -> bool | None:
        nonlocal fit, miss, error, timed_out
        if out_of_time():
            timed_out = True
            return None
        p = probe_fn(config, b, cap_bytes, facts, **({"deadline": deadline} if deadline is not None else {}))
        probes.append(p)
        if p["fits"]:
            fit = max(fit, b)
        elif p["fits"] is False:
            miss = b if miss is None else min(miss, b)
        elif out_of_time():  # stopped at the deadline: no answer either way, not an error
            timed_out = True
        else:
            error = p["reason"]
        return p["fits"]

    going = lambda: error is None and not timed_out
    b = max(1, min(start, max_batch))
    while b <= max_batch and run(b):
        b *= 2
    if going() and fit and miss is None and fit < max_batch:
        run(max_batch)  # doubling overshot max_batch: try the limit itself
    while going() and miss is not None and fit and miss - fit > max(1, fit // 8):
        run((fit + miss) // 2)
    limited_by = "time" if timed_out else "error" if error else "memory" if miss is not None else "max_batch"
    return {"largest_batch": fit or None, "limited_by": limited_by, "error": error,
            "probes": sorted(probes, key=lambda p: p["batch_size"])}


def result_path(results_dir: Path | str, config: RunConfig, cap_bytes: int | None, max_batch: int) -> Path:
    key = hashlib.sha1(f"{config.key}|cap={cap_bytes}|max={max_batch}".encode()).hexdigest()[:12]
    return host_dir(results_dir) / MEMORY_DIR / f"{config.framework}-{config.model}-{config.mode}-{key}.json"


def execute(config: RunConfig, results_dir: Path | str, cap_bytes: int | None, max_batch: int,
            deadline: float | None = None, start: int = 1) -> dict:
    """Search and store results/<host>/memory/<...>.json (written once, whole); a stored result is reused. A search
    cut short by `deadline` is returned, not stored: it is no answer to reuse."""
    cap_bytes = host_cap(config.device, cap_bytes)
    path = result_path(results_dir, config, cap_bytes, max_batch)
    if path.exists():
        return json.loads(path.read_text())
    t0 = time.monotonic()
    found = search(config, cap_bytes, max_batch, facts=host_facts(config, results_dir), deadline=deadline, start=start)
    result = {"schema": "bench.runs.maxbatch/1", "host": host_name(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                        time.gmtime()),
              "config": {"framework": config.framework, "engine": config.engine, "model": config.model,
                         "mode": config.mode, "precision": config.precision, "device": config.device,
                         "image_size": config.image_size, "sequence_length": config.sequence_length,
                         "threads": config.threads},
              "cap_bytes": cap_bytes, "max_batch": max_batch, "seconds": round(time.monotonic() - t0, 1),
              **found}
    if found.get("limited_by") != "time":
        atomic_write_json(path, result)
    return result


def _limits() -> dict[str, tuple[type | tuple[type, ...], float, float, str]]:
    """A search's own settings: (type, lowest, highest, what the highest is). A cap above this machine's memory
    would never stop a probe: the machine would swap first."""
    total_gb = psutil.virtual_memory().total / 2**30
    return {"memory_cap_gb": ((int, float), 0.1, total_gb, f"this machine's {total_gb:.1f} GiB"),
            "max_batch": (int, 1, 65_536, "65536")}


def check_limit(name: str, value: object, shown: str | None = None) -> None:
    """Refuse a search setting (`memory_cap_gb`, `max_batch`) out of its range, by name (`shown`: the CLI's flag):
    the command line and a profile's `memory` blocks check through here."""
    typ, low, high, what = _limits()[name]
    ok = isinstance(value, typ) and not isinstance(value, bool) and math.isfinite(value) and low <= value <= high
    if not ok:
        kind = "an integer" if typ is int else "a number"
        text = f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else repr(value)
        raise ConfigError(f"invalid {shown or name} {text}; it must be {kind} from {low:g} to {what}")


def default_cap_bytes(device: str) -> int | None:
    """On a CPU half of this machine's memory; on a GPU none (the device's own memory is the limit)."""


    return None if is_gpu(device) else psutil.virtual_memory().total // 2


def host_cap(device: str, cap_bytes: int | None) -> int | None:
    """The host-memory cap a search on `device` applies: none on a GPU, whose own memory is the limit (a GPU
    process's resident memory, its CUDA context and libraries, says nothing about what fits on the device)."""
    return None if is_gpu(device) else cap_bytes


def cap_text(cap_bytes: int | None) -> str:
    return f"cap {cap_bytes / 2**30:.1f} GiB" if cap_bytes else "the device's memory"
