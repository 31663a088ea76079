"""`bench gpucheck`: verify a GPU machine in one command, in minutes, with the interpreter and frameworks already
there (no venv, no pip, no Jupyter): every framework present in every precision it runs, a 1-rank NCCL DDP run,
2 ranks over gloo on one GPU, one-process data parallel over the one device, NVML energy, the largest-batch search, and
ResNet-50 training at that batch in bf16 and fp16 beside the published AMP fp16 figure on an H100. Each step is its own
`python -m bench` process (a framework may take most of the GPU's memory for itself); the records land in
results/<host>/."""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..adapters import ADAPTERS, reference_adapter
from ..adapters.precision import INT8
from ..config import make_config
from ..host.manifest import host_name
from ..measurement.fresh_process import bench_environ
from ..paths import PROJECT_ROOT, default_results_dir
from ..results.store import atomic_write_json, host_dir
from ..runs import maxbatch
from . import EXIT_OK, EXIT_RUN_ERROR
from .doctor import ask, host_facts, table

PUBLISHED = PROJECT_ROOT / "bench" / "data" / "published_throughput.csv"
# The published figure the check's fp16 run stands beside: Lambda's AMP fp16 ResNet-50 training on one H100 SXM in
# the reference framework (the CSV names frameworks as the published tables do: an adapter's name or alias).
REFERENCE = {"hardware": "H100 80GB SXM5", "model": "resnet50", "mode": "training", "precision": "amp-fp16"}
# Sizes: on a GPU, ResNet-50 at 224 px with enough timed steps per process; --tiny: the plumbing on a CPU in seconds.
SIZES = {False: dict(model="resnet50", batch=64, image=224, warmup=10, iterations=30, max_batch=512),
         True: dict(model="tiny_cnn", batch=4, image=32, warmup=1, iterations=3, max_batch=8)}


@dataclass
class Step:
    """One `python -m bench` process of the check and what it came to."""

    name: str
    argv: list[str]  # `python -m bench` arguments; for a largest-batch search, `maxbatch`'s (its probes are processes)
    outcome: str = "not run"
    record: dict = field(default_factory=dict)
    best_batch: int | None = None  # a search's fastest batch that fits


def run_argv(framework: str, mode: str, precision: str, device: str, size: dict, batch: int | None = None,
             **distributed) -> list[str]:
    argv = ["run", "--framework", framework, "--model", size["model"], "--mode", mode, "--precision", precision,
            "--device", device, "--batch-size", str(batch or size["batch"]), "--image-size", str(size["image"]),
            "--protocol", "seed", "--warmup", str(size["warmup"]), "--iterations", str(size["iterations"]),
            "--phase-iterations", "0"]
    for key, value in distributed.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    return argv


def plan(answers: dict[str, dict], device: str, tiny: bool) -> list[Step]:
    """What to run, most telling first, since --minutes may stop the rest: the reference framework's runs in every
    precision, its largest-batch search (the best-batch runs follow it), its distributed runs; then every other
    framework present alike (training where it trains); last, one run of each framework missing here, or whose build
    cannot reach the device, whose skipped record says why."""
    size, gpu = SIZES[tiny], device != "cpu"
    ref = reference_adapter().name
    present = sorted((n for n, a in answers.items() if a.get("version") and (a.get("gpus") or not gpu)),
                     key=lambda n: n != ref)
    steps = []
    for name in present:
        adapter = ADAPTERS.get(name)
        mode = "training" if "training" in adapter.modes else adapter.modes[0]
        for precision in adapter.precisions:
            if precision == INT8 and gpu:  # int8 is a CPU inference path here: nothing of it to check on a GPU
                continue
            reason = adapter.not_applicable(mode, precision, device)
            step = Step(f"{name} {mode} {precision} {device}", run_argv(name, mode, precision, device, size))
            if reason:
                step.outcome = f"not applicable: {reason}"
            steps.append(step)
        if name == ref:
            steps.append(Step(f"{ref} largest training batch bf16", [
                "maxbatch", "--framework", ref, "--model", size["model"], "--mode", "training", "--precision", "bf16",
                "--device", device, "--image-size", str(size["image"]), "--max-batch", str(size["max_batch"])]))
        if "allreduce" not in adapter.distributed_strategies:
            continue
        if adapter.chooses_backend:
            # one rank per process that picks its collectives: one rank over NCCL (the GPU's own collectives), two
            # ranks sharing the one GPU over gloo
            steps.append(Step(f"{name} DDP 1 rank {'NCCL' if gpu else 'gloo'}",
                              run_argv(name, "training", "fp32", device, size, strategy="allreduce", workers=1)))
            steps.append(Step(f"{name} DDP 2 ranks gloo on one {'GPU' if gpu else 'CPU'}",
                              run_argv(name, "training", "fp32", device, size, strategy="allreduce", workers=2,
                                       backend="gloo", oversubscribe="true")))
        else:  # one process over its local devices (a mesh, a mirrored strategy)
            steps.append(Step(f"{name} data parallel over 1 device",
                              run_argv(name, "training", "fp32", device, size, strategy="allreduce", workers=1)))
    return steps + [Step(f"{name} on {device}: {answers[name].get('gpu') or 'not installed'}",
                         run_argv(name, ADAPTERS.get(name).modes[0], "fp32", device, size))
                    for name in answers if name not in present]


def execute(step: Step, deadline: float, results_dir: Path) -> None:
    """Run one step (not past `deadline`) and read its record, or its search's probes."""
    left = deadline - time.monotonic()
    if step.outcome != "not run":
        return
    if left < 5:
        step.outcome = "not run: out of time (--minutes)"
        return
    if step.argv[0] == "maxbatch":
        search(step, results_dir)
        return
    try:
        proc = subprocess.run([sys.executable, "-m", "bench", *step.argv, "--results-dir", str(results_dir)],
                              capture_output=True, text=True, env=bench_environ(), timeout=left)
    except subprocess.TimeoutExpired:
        step.outcome = "stopped: out of time (--minutes)"
        return
    text = proc.stdout + proc.stderr
    found = re.search(r"^record: (.+)$", text, flags=re.M)
    if found and Path(found.group(1)).is_file():
        step.record = json.loads(Path(found.group(1)).read_text())
        step.outcome = summary(step.record)
    else:
        step.outcome = f"failed (exit {proc.returncode}): " + ((text.strip().splitlines() or ["no output"])[-1])


def search(step: Step, results_dir: Path) -> None:
    """A largest-batch search (each probe a fresh process); the fastest batch that fits is the best."""
    flags = dict(zip(step.argv[1::2], step.argv[2::2]))
    config = make_config(**{k[2:].replace("-", "_"): (int(v) if k == "--image-size" else v) for k, v in flags.items()
                            if k != "--max-batch"}, batch_size=1)
    cap = maxbatch.host_cap(config.device, maxbatch.default_cap_bytes(config.device))
    found = maxbatch.execute(config, results_dir, cap, int(flags["--max-batch"]))
    fits = [p for p in found["probes"] if p["fits"] and p["images_per_sec"]]
    best = max(fits, key=lambda p: p["images_per_sec"], default=None)
    step.best_batch = best["batch_size"] if best else None
    step.outcome = (f"largest batch {found['largest_batch'] or 'none'} (limited by {found['limited_by']}"
                    + (f"; {found['error'][:120]}" if found.get("error") else "") + ")"
                    + (f", fastest probe at batch {best['batch_size']} ({best['images_per_sec']:.0f} img/s over "
                       "2 steps)" if best else ""))


def summary(record: dict) -> str:
    """A record as one line: throughput and energy, or its status and reason."""
    if record["status"] != "ok":
        return f"{record['status']}: {(record.get('reason') or '').splitlines()[0][:160]}"
    s, energy = record["summary"], record.get("energy") or {}
    joules = (f", {energy['images_per_joule']:.2f} img/J ({energy.get('meter')})" if energy.get("available")
              else f", energy: {energy.get('reason', 'not measured')}")
    return f"{s['images_per_sec_median']:.1f} img/s (median of {s['n']}){joules}"


def published_reference() -> float | None:
    """The published images/s of REFERENCE (bench/data/published_throughput.csv)."""
    ref = reference_adapter()
    with PUBLISHED.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["framework"] in (ref.name, *ref.aliases) and all(row[k] == v for k, v in REFERENCE.items()):
                return float(row["images_per_sec"])
    return None


def best_batch_steps(steps: list[Step], device: str, tiny: bool) -> list[Step]:
    """ResNet-50 training at the fastest batch the search found to fit (else the default batch), in bf16 and fp16."""
    size = SIZES[tiny]
    batch = next((s.best_batch for s in steps if s.best_batch), size["batch"])
    ref = reference_adapter()
    out = []
    for precision in ("bf16", "fp16"):
        step = Step(f"{ref.name} training {precision} at batch {batch}",
                    run_argv(ref.name, "training", precision, device, size, batch=batch))
        reason = ref.not_applicable("training", precision, device)
        if reason:
            step.outcome = f"not applicable: {reason}"
        out.append(step)
    return out


def gpucheck(args: argparse.Namespace) -> int:
    started = time.monotonic()
    deadline = started + args.minutes * 60
    if args.tiny:  # the plumbing, not a device: a small matrix for the device peak, as the test suite's runs
        os.environ.setdefault("BENCH_PEAK_N", "1024")
    results_dir = Path(args.results_dir or default_results_dir())
    names = [n for n in (args.frameworks.split(",") if args.frameworks else ADAPTERS)
             if ADAPTERS.get(n).measures_a_framework]
    answers = {n: ask(n) for n in names}
    host = host_facts(answers)
    print(table(answers, host), flush=True)
    device = args.device or ("cuda:0" if host["gpus"] else None)
    if device is None or (device != "cpu" and not host["gpus"]):
        print("\nno GPU on this machine: nothing to check (--device cpu --tiny checks the plumbing here)")
        return EXIT_RUN_ERROR
    steps = plan(answers, device, args.tiny)
    if args.dry_run:
        print("\n" + "\n".join(f"{s.name}: " + (s.outcome if s.outcome != "not run" else
                                                  f"python -m bench {' '.join(s.argv)}") for s in steps))
        return EXIT_OK
    print(f"\nchecking {device} with {sys.executable} (records in {host_dir(results_dir)}), "
          f"at most {args.minutes:g} minutes:", flush=True)
    reference, done = published_reference(), []
    while steps:
        step = steps.pop(0)
        execute(step, deadline, results_dir)
        print(f"  {step.name}: {step.outcome}", flush=True)
        done.append(step)
        if step.argv[0] == "maxbatch":  # at the batch it found, before anything else
            steps[:0] = best_batch_steps([step], device, args.tiny)
        if step.name.startswith(f"{reference_adapter().name} training fp16 at batch") and reference:
            print(f"  published: {reference_adapter().display_name} AMP fp16 ResNet-50 training on one H100 SXM, "
                  f"{reference:.0f} img/s (Lambda; {SIZES[args.tiny]['model']} here)", flush=True)
    steps = done
    out = host_dir(results_dir) / f"gpucheck-{time.strftime('%Y%m%dT%H%M%S')}.json"
    atomic_write_json(out, {"host": host_name(), "device": device, "python": sys.executable, "tiny": args.tiny,
                            "seconds": round(time.monotonic() - started, 1), "doctor": {"frameworks": answers,
                                                                                         "host": host},
                            "published_img_s": reference,
                            "steps": [{"name": s.name, "outcome": s.outcome, "argv": s.argv,
                                       "record_id": s.record.get("record_id")} for s in steps]})
    print(f"summary: {out} ({time.monotonic() - started:.0f} s)")
    failed = [s for s in steps if s.outcome.startswith(("failed", "error"))]
    return EXIT_RUN_ERROR if failed else EXIT_OK
