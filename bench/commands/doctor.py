"""`bench doctor`: what this machine can run, per framework and device - each framework asked in a fresh process of
its own environment (its build, the CUDA libraries it loads, the GPUs it sees), then the driver, NVML and whether a
device peak can be measured. A plain table; exit 0 whatever it finds."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from ..adapters import ADAPTERS
from ..host import devices
from ..host.energy import NvmlEnergyMeter
from ..measurement.fresh_process import bench_environ
from ..paths import default_results_dir
from ..results.doctor import DOCTOR_FILE, table
from ..results.store import atomic_write_json, host_dir
from . import EXIT_OK

TIMEOUT_S = 300  # importing TensorFlow on a slow machine takes tens of seconds; a hung probe must not hang doctor


def ask(name: str) -> dict:
    """One framework's `doctor()` from a fresh process of its environment, or why it could not answer."""
    adapter = ADAPTERS.get(name)
    if adapter.cannot_run("inference", "fp32", "cpu") and not adapter.runs_here() and adapter.interpreter() is None:
        return {"version": None, "built_for": "-", "gpus": [], "gpu": adapter.cannot_run("inference", "fp32", "cpu")}
    python = str(adapter.interpreter() or sys.executable) if adapter.environment else sys.executable
    try:
        proc = subprocess.run([python, "-m", "bench", "doctor", "--framework", name], capture_output=True, text=True,
                              env=bench_environ(), timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"version": adapter.version(), "built_for": "?", "gpus": [], "gpu": f"no answer in {TIMEOUT_S} s"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"version": adapter.version(), "built_for": "?", "gpus": [], "gpu": f"its probe failed: {tail}"}


def host_facts(answers: dict[str, dict]) -> dict:
    """The driver, the GPUs nvidia-smi lists, NVML's energy counters and who can measure each device's peak."""
    gpus = devices.gpus()
    nvml = NvmlEnergyMeter([devices.nvml_index(f"cuda:{g['index']}") for g in gpus])
    if nvml.reason is None:
        with nvml:  # initialised by the check: shut NVML down again
            pass
    peak = {}
    for device in ["cpu", *(f"cuda:{g['index']}" for g in gpus[:1])]:
        able = [n for n, a in answers.items() if ADAPTERS.get(n).gemm_label(device, "fp32")
                and (device == "cpu" and a.get("version") or device != "cpu" and a.get("gpus"))]
        peak[device.split(":")[0]] = f"ready ({', '.join(able)})" if able else "not ready: no framework with a " \
            f"matrix product reaches the {'GPU' if device != 'cpu' else 'CPU'}"
    if not gpus:
        peak["cuda"] = "no GPU on this machine"
    return {"gpus": [f"{g['index']}: {g['name']} {g['memory']}" for g in gpus],
            "driver": gpus[0]["driver"] if gpus else None, "driver_cuda": devices.driver_cuda_version(),
            "nvml": nvml.reason or "energy counters readable", "peak": peak}


def doctor(args: argparse.Namespace) -> int:
    if args.framework:  # the inner call, in the framework's own environment
        print(json.dumps(ADAPTERS.get(args.framework).doctor()))
        return EXIT_OK
    answers = {n: ask(n) for n in ADAPTERS if ADAPTERS.get(n).measures_a_framework}
    host = host_facts(answers)
    found = {"frameworks": answers, "host": host, "python": sys.executable}
    atomic_write_json(host_dir(args.results_dir or default_results_dir()) / DOCTOR_FILE, found)
    print(json.dumps(found, indent=1) if args.json else table(answers, host))
    return EXIT_OK
