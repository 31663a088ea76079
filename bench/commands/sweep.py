"""The sweep command: run (or list) a profile's configs as papermill notebooks, resumably."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..errors import ConfigError
from ..host import devices
from ..paths import default_results_dir
from ..report import coverage
from ..report import overhead as process_overhead
from ..results.store import host_records, read_only
from ..results.sweep_manifest import set_aside_sweeps
from ..sweep.executors import OPTION_KEYS, make_executor
from ..sweep.measurements import measure_peaks
from ..sweep.profiles import load_profile, slurm_block
from ..sweep.runner import estimate_line, plan, run_sweep
from ..sweep.shard import parse_shard, shard_profile
from ..values import counted
from . import EXIT_OK


def job_gpus(args: argparse.Namespace) -> int | None:
    """The GPUs each Slurm job will have (--gpus-per-task, else the profile's `slurm` block; none unless asked for),
    or None for a local sweep: `all-gpus` means the job's GPUs, never the login node's."""
    if args.executor != "slurm":
        return None
    asked = args.gpus_per_task if args.gpus_per_task is not None else slurm_block(args.profile).get("gpus_per_task")
    return asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else 0


def sweep(args: argparse.Namespace) -> int:
    count = job_gpus(args)
    with devices.planned_gpus(count) if count is not None else contextlib.nullcontext():
        profile = load_profile(args.profile)  # validates every config before anything runs
    if args.repeats is not None and not 1 <= args.repeats <= 100:
        raise ConfigError(f"invalid --repeats {args.repeats}; it must be an integer from 1 to 100")
    if args.shard is not None:
        profile = shard_profile(profile, *parse_shard(args.shard))
    executor = make_executor(args.executor, dict(profile.slurm), {k: getattr(args, k) for k in OPTION_KEYS})
    executor.check(profile.configs)  # e.g. a Slurm client, the controller, the partition: before any work
    for line in set_aside_sweeps(args.results_dir or default_results_dir()):
        print(f"set aside an unreadable sweep manifest (the plan goes on without it): {line}")
    limit = profile.max_repeats if profile.adaptive else None
    if args.repeats is not None and limit and args.repeats > limit:
        print(f"--repeats {args.repeats} is above the profile's max_repeats {limit}: --repeats wins, "
              f"{args.repeats} rounds are planned")
    if args.list:
        with read_only():  # a listing changes nothing, not even an unreadable record's place
            p = plan(profile, Path(args.results_dir), args.force, args.repeats,
                     measure_peaks(profile) if executor.local else {}, executor)
        for i, t in enumerate(p.tasks):
            print(f"{i:4d}  todo  round {t.round}  {t.config.label}")
        for c in p.dropped:
            print(f"      not run: over budget  {c.label}")
        print(f"{counted(len(p.tasks), 'run')} to do, {len(p.done)} already recorded, "
              f"{counted(len(p.dropped), 'config')} dropped to fit the budget; {estimate_line(p)}")
        return EXIT_OK
    result = run_sweep(profile, args.results_dir, force=args.force, repeats=args.repeats, executor=executor,
                       shard=args.shard)
    n = len(result.ran)
    m = result.manifest
    if m:  # the counts in the report's words (bench/report/coverage.py), so the terminal and page 1 agree
        c = coverage.sweep_coverage(m, host_records(args.results_dir))
        print(f"sweep {profile.name} ({result.sweep_id}): {c.runs_text()}; {c.retries()} (the methodology's "
              f"words), {len(result.still_disturbed)} still disturbed after a retry, {len(result.failures)} not ok; "
              f"{coverage.budget_text(m, c)}")
    else:
        print(f"sweep {profile.name} ({result.sweep_id}): nothing to run")
    if n:
        overhead = result.papermill_s - result.measured_s
        print(f"time: {result.papermill_s:.0f} s in papermill, of which {result.measured_s:.0f} s inside the "
              f"harness; per-config notebook overhead {overhead / n:.1f} s "
              f"({overhead / max(result.papermill_s, 1e-9):.0%} of the sweep)")
    if m:
        print("time: " + process_overhead.estimate_text(m)
              + (f"; retries added ~{m.retry_estimate_s / 60:.1f} min" if m.retry_estimate_s else "")
              + (f"; {len(result.extra)} extra processes (~{m.extra_estimate_s / 60:.1f} min) where "
                 "comparisons were undecided" if result.extra else ""))
        print("where each process's seconds went (this sweep):")
        print(process_overhead.to_text(process_overhead.latest_sweep_overhead(host_records(args.results_dir), [m])))
    for line in result.extra:
        print(f"  extra process: {line}")
    for label, status, reason in result.failures:
        print(f"  {status}: {label}: {reason}")
    for line in result.still_disturbed:
        print(f"  disturbed (kept, flagged): {line}")
    return EXIT_OK
