"""The noise command: per framework, how much its speed moves between fresh processes and inside one on this machine,
what comparison that spread can decide, and (with --arm) whether a setting changes it, tested interleaved."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ConfigError
from ..models import get_model
from ..paths import PROJECT_ROOT
from ..stats.printed import quantity, ratio_interval
from ..sweep import noise
from . import EXIT_OK, EXIT_RUN_ERROR

NOISE_DIR = PROJECT_ROOT / "results-noise"  # beside results/, never read by the report


def _pct(block: dict, key: str = "sd_log") -> str:
    return quantity(block.get(key) if key == "sd_log" else block.get("cv"), block.get("low"), block.get("high"), ".1%",
                    missing="[too few processes]") or "-"


def machine_line(state: dict) -> str:
    busy, steal = state.get("busy_share"), state.get("steal_share")
    return (f"{state['cpus']} CPUs, governor {state['governor']}, THP {state['thp_enabled']} (defrag "
            f"{state['thp_defrag']}), load {state['loadavg_1m']:.2f}, busy {busy:.0%}, steal {steal:.1%}"
            if busy is not None else f"{state['cpus']} CPUs, governor {state['governor']}, THP {state['thp_enabled']}")


def lines(summary: dict) -> list[str]:
    """The summary as the terminal shows it."""
    low, high = summary["profile_processes"]
    declared = "; ".join(f"{fw} " + ", ".join(f"{k}={v}" for k, v in env.items())
                         for fw, env in summary.get("declared", {}).items())
    out = [f"machine before: {machine_line(summary['machine_before'])}",
           f"machine after:  {machine_line(summary['machine_after'])}",
           f"every arm starts as the sweep starts each framework: {declared or 'no process settings declared'}; an "
           "arm's own variables win",
           "",
           "between-process spread: SD of the log of each process's median (and mean) rate, 95% interval; within: "
           "the median iteration-time CV over processes; decidable: the smallest speed-up a comparison with that "
           f"many processes a side calls a winner at +-{summary['margin']:.0%}, the spread known as well as this run "
           "measured it (as a sweep pools it over its configs)",
           f"{'framework':12s} {'arm':12s} {'n':>3s} {'rate':>8s}  {'between (medians)':24s} {'between (means)':24s} "
           f"{'within CV':22s} {'faults/it':>9s}  decidable at {low} | {high} a side"]
    for name, fw in summary["frameworks"].items():
        for arm, s in fw["arms"].items():
            rate = f"{s['median_rate']:8.2f}" if s["median_rate"] else "       -"
            faults = f"{s['faults_per_iteration']:9.0f}" if s["faults_per_iteration"] is not None else "        -"
            decide = " | ".join(f"{v:.2f}x" if v else "-" for v in s["decidable_ratio"].values())
            failed = f"  ({s['failed']} failed)" if s["failed"] else ""
            out.append(f"{name:12s} {arm:12s} {s['processes']:3d} {rate}  {_pct(s['between_medians']):24s} "
                       f"{_pct(s['between_means']):24s} {_pct(s['within_cv'], 'cv'):22s} {faults}  {decide}{failed}")
    effects = [(name, arm, e) for name, fw in summary["frameworks"].items() for arm, e in fw["effects"].items()]
    if effects:
        out += ["", f"each arm against {noise.BASELINE} (ratio of geometric means of the per-process values, Welch "
                    "95% interval; above 1x: faster)"]
        for name, arm, e in effects:
            if e is None:
                out.append(f"{name:12s} {arm:12s} too few processes on a side for an interval")
                continue
            m, mean = e["median_ratio"], e["mean_ratio"]
            cvs = (f"within CV {e['cv_arm']:.1%} against {e['cv_base']:.1%}"
                   if e["cv_arm"] is not None and e["cv_base"] is not None else "")
            out.append(f"{name:12s} {arm:12s} medians {ratio_interval(m['ratio'], m['ci_low'], m['ci_high'])}, "
                       f"means {ratio_interval(mean['ratio'], mean['ci_low'], mean['ci_high'])}, {cvs}")
    for name, reason in summary.get("left_out", {}).items():
        out.append(f"not measured: {name}: {reason}")
    out.append(f"records: {summary['root']} (noise.json: this summary)")
    return out


def noise_command(args: argparse.Namespace) -> int:
    arms = noise.arms_from(args.arm or [])  # every value checked before any work
    if not 2 <= args.processes <= 100:
        raise ConfigError(f"invalid --processes {args.processes}; it must be an integer from 2 to 100")
    get_model(args.model)
    if args.mode not in ("inference", "training"):
        raise ConfigError(f"invalid --mode {args.mode!r}; valid choices: inference, training")
    frameworks, left_out = noise.runnable(args.frameworks.split(",") if args.frameworks else None)
    if not frameworks:
        raise ConfigError("no framework to measure here: " + "; ".join(f"{k}: {v}" for k, v in left_out.items()))
    noise.configs(frameworks, args.model, args.mode, args.batch_size)  # each config valid, before any run
    root = Path(args.out) if args.out else NOISE_DIR / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"invalid --out {str(root)!r}: it is not empty; give a new folder (each run of the noise "
                          "command keeps its own records)")
    root.mkdir(parents=True, exist_ok=True)
    n = len(frameworks) * len(arms) * args.processes
    print(f"{n} fresh processes: {', '.join(frameworks)} x {', '.join(a.label for a in arms)} x {args.processes} "
          f"rounds, interleaved in a new random order each round (seed {args.seed}); records in {root}")
    summary = noise.run(root, frameworks, arms, args.processes, args.model, args.mode, args.batch_size, args.seed)
    summary.update(left_out=left_out, root=str(root))
    noise.write_summary(root, summary)
    print("\n".join(lines(summary)))
    ok = all(s["processes"] >= 2 for fw in summary["frameworks"].values() for s in fw["arms"].values())
    return EXIT_OK if ok else EXIT_RUN_ERROR
