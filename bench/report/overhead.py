"""Where a sweep's process seconds go: a per-process overhead table built from the records' `startup` timestamps
and the sweep manifest's wall time per process, and the estimate against the actual wall time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ..results.record import Record, as_records
from ..results.sweep_manifest import SweepManifest, as_manifests, estimate_error, wall_key

# (record field or derived column, what it holds), in the order a process spends them.
COMPONENTS = (
    ("process_start_s", "kernel start, interpreter, package imports (before the run)"),
    ("prepare_s", "framework import, model build, export/compile"),
    ("warmup_s", "warm-up loop"),
    ("timed_s", "timed loop (the measurement)"),
    ("phases_s", "phase pass (first repetition only)"),
    ("checks_s", "FLOP count, utilisation, fairness checks"),
    ("manifest_s", "environment manifest"),
    ("other_s", "rest of the run (checksums, memory, energy)"),
    ("outside_s", "after the run: record write, notebook cells, kernel shutdown"),
)
COLUMNS = ["component", "what", "processes", "median_s", "total_s", "share"]


def process_seconds(records: Iterable[Record | Mapping], walls: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per process that recorded its start-up timestamps: each component's seconds, and its wall time
    (papermill's, from the sweep manifest) where known."""
    rows = []
    for r in as_records(records):
        s = r.startup
        if s is None or s.process_start_s is None or r.duration_s is None:
            continue  # records written before the timestamps existed, or runs that never reached the loop
        row = {name: getattr(s, name, None) for name, _ in COMPONENTS if hasattr(s, name)}
        inside = sum(v for k, v in row.items() if k != "process_start_s" and v)
        row["other_s"] = max(0.0, r.duration_s - inside)
        wall = (walls or {}).get(wall_key(r.config_key, r.repeat, r.attempt))
        row["outside_s"] = max(0.0, wall - s.process_start_s - r.duration_s) if wall is not None else None
        row["wall_s"] = wall if wall is not None else s.process_start_s + r.duration_s
        rows.append({"config_key": r.config_key, "label": r.label, "repeat": r.repeat, "attempt": r.attempt, **row})
    return pd.DataFrame(rows)


def overhead_table(records: Iterable[Record | Mapping], walls: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Per component: how many processes recorded it, its median and total seconds, and its share of the
    processes' wall time (all components sum to it where the manifest has each process's wall time)."""
    per = process_seconds(records, walls)
    if per.empty:
        return pd.DataFrame(columns=COLUMNS)
    total_wall = float(per["wall_s"].sum())
    rows = []
    for name, what in COMPONENTS:
        values = per[name].dropna() if name in per else pd.Series(dtype=float)
        values = values[values > 0] if name == "phases_s" else values
        if values.empty:
            continue
        total = float(values.sum())
        rows.append({"component": name.removesuffix("_s"), "what": what, "processes": int(values.size),
                     "median_s": float(np.median(values)), "total_s": total,
                     "share": total / total_wall if total_wall > 0 else None})
    measured = next((r["total_s"] for r in rows if r["component"] == "timed"), 0.0)
    rows.append({"component": "all", "what": "wall time of the processes (the timed loop's share is what is "
                 "measurement)", "processes": len(per), "median_s": float(per["wall_s"].median()),
                 "total_s": total_wall, "share": measured / total_wall if total_wall > 0 else None})
    return pd.DataFrame(rows, columns=COLUMNS)


def to_text(table: pd.DataFrame) -> str:
    """The table as fixed-width text for the terminal (the sweep summary)."""
    if table.empty:
        return "no process recorded its start-up timestamps"
    lines = [f"{'component':<16}{'processes':>10}{'median s':>10}{'total s':>10}{'share':>8}  what"]
    for _, r in table.iterrows():
        share = f"{r['share']:.0%}" if r["share"] is not None and r["share"] == r["share"] else ""
        lines.append(f"{r['component']:<16}{r['processes']:>10}{r['median_s']:>10.1f}{r['total_s']:>10.0f}"
                     f"{share:>8}  {r['what']}")
    return "\n".join(lines)


def rounds_actual(m: SweepManifest) -> tuple[float, int] | None:
    """(seconds, processes) the planned rounds took: the first attempt of every planned repetition below the adaptive
    plan's minimum (every one in a sweep without the plan), from the processes' wall times; None where none timed."""
    least = m.adaptive.min_repeats if m.adaptive else None
    walls = m.process_walls or {}
    took = [walls[k] for k in (wall_key(o.config_key, o.repeat, 0) for o in m.order or []
                               if least is None or o.repeat < least) if k in walls]
    return (sum(took), len(took)) if took else None


def estimate_text(manifest: SweepManifest | Mapping) -> str:
    """One sentence: what a sweep's estimate could miss against what it took. An adaptive sweep's whole estimate is its
    budget by construction (its extra processes are sized to fill it), so what is judged is the planned rounds'
    estimate against the rounds' own time; a sweep without the plan is judged whole."""
    [m] = as_manifests([manifest])
    est, actual, err = m.estimate_s, m.runs_s, m.estimate_error
    rounds = rounds_actual(m) if m.adaptive and m.rounds_estimate_s else None
    if rounds is not None:
        took, n = rounds
        extra = len(m.extra_processes or [])
        return (f"its rounds ({n} processes) estimated {m.rounds_estimate_s / 60:.1f} min, took {took / 60:.1f} min "
                f"(estimate error {estimate_error(m.rounds_estimate_s, took):+.0%}); then {extra} extra "
                f"process{'es' * (extra != 1)} of the adaptive plan" + (
                    f", {actual / 60:.1f} min of runs in all" if actual else ""))
    if err is None:
        return f"estimated {est / 60:.1f} min" if est else "no estimate recorded"
    return f"estimated {est / 60:.1f} min, took {actual / 60:.1f} min for its runs (estimate error {err:+.0%})"


def extra_processes_text(sweeps: list[SweepManifest]) -> str:
    """Why configs of an adaptive sweep got more than the minimum processes, one line each."""
    lines = []
    for m in as_manifests(sweeps):
        if not m.adaptive:
            continue
        extra = m.extra_processes or []
        if m.status != "finished":  # an unfinished sweep has not given every config its rounds yet
            lines.append(f"Sweep `{m.sweep_id}` ({m.status}) plans {m.adaptive.min_repeats} "
                         f"processes per config before any extra one; {len(extra)} extra so far.")
            continue
        lines.append(f"Sweep `{m.sweep_id}` gave every config {m.adaptive.min_repeats} processes, then "
                     f"{len(extra)} more (at most {m.adaptive.max_repeats} per config) to the configs whose "
                     "comparison was least decided:")
        lines += [f"- {e.label} (repeat {e.repeat}): {e.reason}" for e in extra]
    return "\n".join(lines)


def build_cache_text(records: Iterable[Record | Mapping]) -> str:
    """One sentence: per compiled-artefact cache, how many builds hit and missed it, and the build's median seconds
    (prepare_s) either way; empty when no record used a cache (records written before caches existed)."""
    seen: dict[str, dict[str, list[float]]] = {}
    for r in as_records(records):
        if r.startup is None or not r.startup.build_cache:
            continue
        for cache, outcome in r.startup.build_cache.items():
            seen.setdefault(cache, {}).setdefault(outcome, []).append(r.startup.prepare_s)
    parts = []
    for cache, by in sorted(seen.items()):
        counts = []
        for outcome, seconds in sorted(by.items()):
            known = [x for x in seconds if x is not None]
            noun = outcome if len(seconds) == 1 else {"miss": "misses"}.get(outcome, outcome + "s")
            counts.append(f"{len(seconds)} {noun}" + (f" (build median {np.median(known):.1f} s)" if known else ""))
        parts.append(f"{cache}: {', '.join(counts)}")
    return ("Compiled-artefact caches (keyed so a cached build is the same model; each record says hit or miss): "
            + "; ".join(parts) + ".") if parts else ""


def latest_sweep_overhead(records: list[Record], sweeps: list[SweepManifest]) -> pd.DataFrame:
    """The per-process overhead table of the latest sweep (the details notebook shows it)."""
    if not sweeps:
        return pd.DataFrame(columns=COLUMNS)
    [latest] = as_manifests(sweeps[-1:])
    ran = [r for r in as_records(records) if r.sweep and r.sweep.id == latest.sweep_id]
    return overhead_table(ran, latest.process_walls)


def sweep_cost_text(records: list[Record], sweeps: list[SweepManifest]) -> str:
    """The methodology's cost paragraph for the latest sweep: estimate against actual, the timed loop's share of
    the processes' wall time (the per-process table and every extra process are in the details), and how many
    configs got extra processes."""
    if not sweeps:
        return ""
    sweeps = as_manifests(sweeps)
    latest = sweeps[-1]
    table = latest_sweep_overhead(records, sweeps)
    text = f"**Where the time went.** Sweep `{latest.sweep_id}`: {estimate_text(latest)}."
    total = table[table["component"] == "all"]
    if not total.empty and total["share"].iloc[0] is not None:
        # the processes are the details' table's (latest_sweep_overhead), counted as page 1 counts runs: single
        # processes on either kind of data (distributed runs record no start-up timestamps), of a retried run the
        # attempt that counts
        text += (f" The timed loops were {total['share'].iloc[0]:.0%} of the wall time of its "
                 f"{int(total['processes'].iloc[0])} single-process runs that recorded their start-up (synthetic "
                 "data and real files; a run skipped before its framework started records none; of a retried run, "
                 "the attempt that counts); the rest (start-up, warm-up, phase pass, checks) is broken down per "
                 "component in the details.")
    ran = [r for r in as_records(records) if r.sweep and r.sweep.id == latest.sweep_id]
    caches = build_cache_text(ran)
    text += f" {caches}" if caches else ""
    extra = len(latest.extra_processes or []) if latest.adaptive else 0  # this sweep's, as the counts above
    if extra:
        text += (f" {extra} of its processes beyond the minimum went to the configs whose comparison was least "
                 "decided (each with its reason in the details).")
    return text
