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
from ..results.schema import VALIDATOR
from ..results.store import atomic_write_json, host_dir
from ..runs import maxbatch
from ..strategies import ALL_REDUCE
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
    """What to run, the claims never yet run on a GPU first, since --minutes may stop the rest: the reference
    framework's distributed runs (DDP on NCCL, 2 gloo ranks sharing the one GPU) and an fp32 training run (its NVML
    energy), then every other framework's data parallel and fp32 runs (JAX on its device); then the reference
    framework's largest-batch search, its bf16 and fp16 runs following at the batch it finds; then every framework's
    other precisions; last, one run of each framework missing here, or whose build cannot reach the device, whose
    skipped record says why."""
    size, gpu = SIZES[tiny], device != "cpu"
    ref = reference_adapter().name
    present = sorted((n for n, a in answers.items() if a.get("version") and (a.get("gpus") or not gpu)),
                     key=lambda n: n != ref)
    first, then, last = [], [], []
    for name in present:
        adapter = ADAPTERS.get(name)
        mode = "training" if "training" in adapter.modes else adapter.modes[0]
        runs = []
        for precision in adapter.precisions:
            if precision == INT8 and gpu:  # int8 is a CPU inference path here: nothing of it to check on a GPU
                continue
            if name == ref and precision in BEST_BATCH_PRECISIONS:  # run at the batch the search finds instead
                continue
            reason = adapter.not_applicable(mode, precision, device)
            step = Step(f"{name} {mode} {precision} {device}", run_argv(name, mode, precision, device, size))
            if reason:
                step.outcome = f"not applicable: {reason}"
            runs.append(step)
        first += distributed_steps(adapter, device, size)
        first.append(runs.pop(0))  # fp32: the framework on the device at all, and its energy
        if name == ref:
            then.append(Step(f"{ref} largest training batch bf16", [
                "maxbatch", "--framework", ref, "--model", size["model"], "--mode", "training", "--precision", "bf16",
                "--device", device, "--image-size", str(size["image"]), "--max-batch", str(size["max_batch"])]))
        last.extend(runs)
    absent = [Step(f"{name} on {device}: {answers[name].get('gpu') or 'not installed'}",
                   run_argv(name, ADAPTERS.get(name).modes[0], "fp32", device, size))
              for name in answers if name not in present]
    return first + then + last + absent


def distributed_steps(adapter, device: str, size: dict) -> list[Step]:
    """A framework's data-parallel runs on the one device: for one whose ranks pick their collectives, one rank over
    NCCL (the GPU's own collectives) and two ranks sharing the GPU over gloo; else one process over its devices."""
    name, gpu = adapter.name, device != "cpu"
    if ALL_REDUCE not in adapter.distributed.strategies:
        return []
    if adapter.distributed.chooses_backend:
        return [Step(f"{name} DDP 1 rank {'NCCL' if gpu else 'gloo'}",
                     run_argv(name, "training", "fp32", device, size, strategy=ALL_REDUCE, workers=1)),
                Step(f"{name} DDP 2 ranks gloo on one {'GPU' if gpu else 'CPU'}",
                     run_argv(name, "training", "fp32", device, size, strategy=ALL_REDUCE, workers=2,
                              backend="gloo", oversubscribe="true"))]
    return [Step(f"{name} data parallel over 1 device",
                 run_argv(name, "training", "fp32", device, size, strategy=ALL_REDUCE, workers=1))]


# What the runs at the best batch need once the search is done (two ResNet-50 processes on a GPU): the search
# stops this long before the check's deadline.
BEST_BATCH_RESERVE_S = {False: 60.0, True: 20.0}


def execute(step: Step, deadline: float, results_dir: Path, tiny: bool = False) -> None:
    """Run one step (not past `deadline`) and read its record, or its search's probes."""
    left = deadline - time.monotonic()
    if step.outcome != "not run":
        return
    if left < 5:
        step.outcome = "not run: out of time (--minutes)"
        return
    if step.argv[0] == "maxbatch":
        try:
            search(step, results_dir, deadline - BEST_BATCH_RESERVE_S[tiny], SIZES[tiny]["batch"])
        except Exception as exc:  # a failing peak or FLOP count (torchvision missing): the step's outcome, not a crash
            step.outcome = f"failed: {type(exc).__name__}: {first_line(str(exc))[:200]}"
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


def search(step: Step, results_dir: Path, deadline: float, start: int) -> None:
    """A largest-batch search (each probe a fresh process of this interpreter), doubling from `start` and stopped at
    `deadline`; the fastest batch that fits is the best."""
    flags = dict(zip(step.argv[1::2], step.argv[2::2]))
    config = make_config(**{k[2:].replace("-", "_"): (int(v) if k == "--image-size" else v) for k, v in flags.items()
                            if k != "--max-batch"}, batch_size=1)
    cap = maxbatch.host_cap(config.device, maxbatch.default_cap_bytes(config.device))
    found = maxbatch.execute(config, results_dir, cap, int(flags["--max-batch"]), deadline=deadline, start=start)
    fits = [p for p in found["probes"] if p["fits"] and p["images_per_sec"]]
    best = max(fits, key=lambda p: p["images_per_sec"], default=None)
    step.best_batch = best["batch_size"] if best else None
    step.outcome = (f"largest batch {found['largest_batch'] or 'none'} (limited by {found['limited_by']}"
                    + (f"; {found['error'][:120]}" if found.get("error") else "") + ")"
                    + (f", fastest probe at batch {best['batch_size']} ({best['images_per_sec']:.0f} img/s over "
                       "2 steps)" if best else ""))


def summary(record: dict) -> str:
    """A record as one line: throughput, utilisation of the device's measured peak and energy, or its status and
    reason."""
    if record["status"] != "ok":
        return f"{record['status']}: {first_line(record.get('reason'))[:160]}"
    s, energy = record["summary"], record.get("energy") or {}
    per_joule = energy.get("images_per_joule")
    joules = (f", {per_joule:.3g} img/J ({energy.get('meter')})" if energy.get("available") and per_joule
              else f", energy: {energy.get('reason') or 'the counter did not advance'}")
    util = record.get("utilisation")
    return (f"{s['images_per_sec_median']:.1f} img/s (median of {s['n']})"
            + (f", {util:.0%} of the device's measured peak" if util is not None else "") + joules
            + outputs_said(record.get("outputs_check")))


def outputs_said(check: dict | None) -> str:
    """The output check in the summary a user pastes: passed or FAILED with the largest difference relative to the
    reference's largest logit and the tolerance, or why it was not checked ('' where no check applies)."""
    if not check:
        return ""
    if check.get("passed") is None:
        return f", outputs not checked: {first_line(check.get('reason'))[:100]}"
    rel, tol = check.get("relative_diff"), check.get("tolerance")
    said = "passed" if check["passed"] else "FAILED (outputs_disagree)"
    return f", output check {said}" + (f" ({rel:.1e} of the largest logit, allowed {tol:.0e})"
                                       if rel is not None and tol is not None else "")


def first_line(text: str | None) -> str:
    """The first line of a reason, or a placeholder where there is none."""
    return next(iter((text or "").strip().splitlines()), "no reason given")


def published_reference() -> float | None:
    """The published images/s of REFERENCE (bench/data/published_throughput.csv)."""
    ref = reference_adapter()
    with PUBLISHED.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["framework"] in (ref.name, *ref.aliases) and all(row[k] == v for k, v in REFERENCE.items()):
                return float(row["images_per_sec"])
    return None


BEST_BATCH_PRECISIONS = ("bf16", "fp16")


def best_batch_steps(steps: list[Step], device: str, tiny: bool) -> list[Step]:
    """ResNet-50 training at the fastest batch the search found to fit (else the default batch), in bf16 and fp16."""
    size = SIZES[tiny]
    batch = next((s.best_batch for s in steps if s.best_batch), size["batch"])
    ref = reference_adapter()
    out = []
    for precision in BEST_BATCH_PRECISIONS:
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
    # every process the check starts, the largest-batch probes too, runs with the interpreter being checked
    os.environ["BENCH_MAIN_PYTHON"] = sys.executable
    print(f"\nchecking {device} with {sys.executable} (records in {host_dir(results_dir)}), "
          f"at most {args.minutes:g} minutes:", flush=True)
    reference, done = published_reference(), []
    while steps:
        step = steps.pop(0)
        execute(step, deadline, results_dir, args.tiny)
        print(f"  {step.name}: {step.outcome}", flush=True)
        done.append(step)
        if step.argv[0] == "maxbatch":  # at the batch it found, before anything else
            steps[:0] = best_batch_steps([step], device, args.tiny)
        if step.name.startswith(f"{reference_adapter().name} training fp16 at batch") and reference:
            print(f"  published: {reference_adapter().display_name} AMP fp16 ResNet-50 training on one H100 SXM, "
                  f"{reference:.0f} img/s (Lambda; {SIZES[args.tiny]['model']} here)", flush=True)
    steps = done
    stamp = time.strftime('%Y%m%dT%H%M%S')
    out = host_dir(results_dir) / f"gpucheck-{stamp}.json"
    lines = claims(steps, reference, device, host)
    atomic_write_json(out, {"host": host_name(), "device": device, "python": sys.executable, "tiny": args.tiny,
                            "seconds": round(time.monotonic() - started, 1), "doctor": {"frameworks": answers,
                                                                                         "host": host},
                            "published_img_s": reference, "validator": VALIDATOR, "claims": lines,
                            "steps": [{"name": s.name, "outcome": s.outcome, "argv": s.argv,
                                       "record_id": s.record.get("record_id")} for s in steps]})
    text = "\n".join([f"gpucheck {stamp} on {host_name()} ({', '.join(host['gpus']) or device}; "
                       f"{time.monotonic() - started:.0f} s, {sys.executable})", *lines])
    (out.with_suffix(".txt")).write_text(text + "\n")
    print(f"\n{text}\nsummary: {out} and {out.with_suffix('.txt').name}")
    failed = [s for s in steps if s.outcome.startswith(("failed", "error"))]
    return EXIT_RUN_ERROR if failed else EXIT_OK


NOT_RAN = ("skipped", "not applicable", "not run", "stopped", "failed", "error")


def claims(steps: list[Step], published: float | None, device: str, host: dict) -> list[str]:
    """Per claim the check tests, one pasteable line: ran (with its numbers), skipped or not applicable (with the
    reason), failed, or not run (out of time); the claims never run on a GPU first, then every other step."""
    def line(step: Step) -> str:
        return f"{step.name}: {step.outcome if step.outcome.startswith(NOT_RAN) else 'ran: ' + step.outcome}"

    ref = reference_adapter().name
    ddp = [s for s in steps if s.name.startswith(f"{ref} DDP")]
    jax = [s for s in steps if s.name.startswith("jax ")]
    ours = [s for s in steps if s.name.startswith(f"{ref} training ")] + [s for s in steps if "largest" in s.name]
    finished = [s for s in steps if s.record.get("status") == "ok"]
    read = [s for s in finished if (s.record.get("energy") or {}).get("images_per_joule")]
    if read:
        e = read[0].record["energy"]
        energy = (f"ran: {read[0].name}: {e['images_per_joule']:.3g} img/J, {e['joules_per_image']:.3g} J/image "
                  f"({e['meter']})")
    else:
        energy = "not measured: " + (first_line((finished[0].record.get("energy") or {}).get("reason")) if finished
                                     else f"no run finished; NVML: {host.get('nvml')}")
    lines = [line(s) for s in ddp] or [f"{ref} DDP: not planned (no framework here runs it)"]
    lines.append(f"{'NVML' if device != 'cpu' else 'RAPL'} energy: {energy}")
    lines += [line(s) for s in jax + ours]
    fp16 = next((s for s in ours if s.name.startswith(f"{ref} training fp16 at batch")), None)
    if fp16 is not None and fp16.record.get("status") == "ok" and published:
        measured = fp16.record["summary"]["images_per_sec_median"]
        lines.append(f"beside the published {published:.0f} img/s (PyTorch AMP fp16, ResNet-50, one H100 SXM, "
                     f"Lambda): {measured / published:.2f}x on {', '.join(host['gpus']) or device}")
    shown = ddp + jax + ours
    return lines + [line(s) for s in steps if not any(s is t for t in shown)]
