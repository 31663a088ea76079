"""The per-config estimate: numbers and flags only, computed once from a config's processes.

A disturbed or unusually jittery process is left out while a clean one remains. A config is *sound* (usable for a
finding) when at least MIN_PROCESSES clean processes measured it and no guard flagged its throughput. How any of
this is shown is bench/report/config_frame.py's business.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import strategies
from ...config import FIELDS
from ...measurement.flags import (
    FLAG_SCOPE,
    MIN_PROCESSES,
    MODEL_FLAGS,
    flag,
    forward_backward_flag,
    peak_flag,
    phase_sum_flag,
    utilisation_flag,
)
from ...measurement.loop import P99_MIN_TIMED
from ...measurement.peak import peak_key
from ...measurement.utilisation import peak_threads, utilisation
from ...results.record import Flag
from ...stats.blocks import Residual, pooled_residual
from ...stats.config_intervals import Interval, config_intervals
from ...stats.intervals import variance_components
from .cross_run import cross_run_flags
from .judgement import join_reasons
from .processes import throughput_flags

CONFIG = ["platform", "config_key"]
# The run table's columns that describe a process, not its config.
PER_PROCESS = ("record_id", "repeat", "attempt")


@dataclass
class Certificate:
    """A config's fairness certificate over its processes: the checks each ran (the fewest) and every one failed."""

    checked: int
    failed: list[str]


@dataclass
class ConfigEstimate:
    """One config (platform x config key): what was measured, the estimate with its interval, and its flags."""

    config: dict  # the config's own columns of the runs table (its first clean process's row)
    interval: Interval
    ci_low: float  # the interval, or with one process its own within-process interval
    ci_high: float
    processes: int
    clean_processes: int
    sweeps: int
    latency_ms: dict[str, float]  # p50, p90, p99, median over every timed iteration of the processes used
    peak_memory_bytes: float
    utilisation: float | None  # against the best peak of the config's sweeps (withheld where that peak is unsteady)
    cv_median: float
    variance: dict  # within- and between-process components of the per-iteration images/s
    duration_s: float
    certificate: Certificate | None  # None where the records carry no certificate
    prepare_s: float | None
    first_iteration_s: float | None
    phases: dict[str, float]  # one process's phase columns (phase_<name>_ms), as shown
    flags: list[Flag] = field(default_factory=list)
    # each replicate's block ("sweep:round" where its comparison group ran back to back, else None) and the sweep's
    # pooled within-block residual (bench/stats/blocks.py), for ratios within blocks
    blocks: list = field(default_factory=list)
    residual: Residual | None = None

    @property
    def estimate(self) -> float:
        return self.interval.estimate


def _median(frame: pd.DataFrame, column: str) -> float | None:
    values = frame[column].dropna() if column in frame else []
    return float(values.median()) if len(values) else None


def _certificate(processes: pd.DataFrame) -> Certificate | None:
    if "certificate_failed" not in processes:
        return None
    failed = sorted({c for fl in processes["certificate_failed"] for c in (fl or [])})
    return Certificate(int(processes["certificate_checked"].min()), failed)


def _known(value) -> bool:
    return bool(value) and not pd.isna(value)


def config_utilisation(flops_per_image, images_per_sec: float, sweep_peaks: list[dict],
                       run_peaks: list) -> tuple[float | None, list[Flag]]:
    """The config's utilisation and the flags judging it: against the best steady peak its sweeps measured (start or
    end: an unsteady start beside a steady end uses the end's), else the best its runs recorded; withheld (flag
    peak_unsteady) only where every peak its sweeps measured spread too far, so the flag is about the peak the
    utilisation would have used."""
    found: list[Flag] = []
    share = None
    measured = [m for m in sweep_peaks if m["flops_per_sec"]]
    steady = [m for m in measured if m["spread"] is not None and peak_flag(m["spread"]) is None]
    if _known(flops_per_image):
        peak = max([m["flops_per_sec"] for m in steady or measured] or
                   [p for p in run_peaks if _known(p)] or [np.nan])
        share = utilisation(flops_per_image, images_per_sec, peak)
    spread = None if steady else min((m["spread"] for m in measured if m["spread"] is not None), default=None)
    if share is not None and (p := peak_flag(spread)) is not None:
        found.append(p)
        share = None
    if (u := utilisation_flag(share)) is not None:
        found.append(u)
    return share, found


def spread_pool(processes: pd.DataFrame) -> tuple:
    """The configs a config may share its between-process spread with: the same platform, and single processes
    apart from distributed runs (ranks add variation of their own)."""
    first = processes.iloc[0]
    name = first["strategy"] if "strategy" in processes and first["strategy"] == first["strategy"] else None
    return first["platform"], name is None or not strategies.strategy(name).distributed


def spread_family(processes: pd.DataFrame) -> str:
    """Configs alike enough to share a prior where their spread differs from the rest of their pool's: one
    framework in one mode (e.g. 'torch training')."""
    first = processes.iloc[0]
    return f"{first['framework']} {first['mode']}"


def _used(g: pd.DataFrame) -> pd.DataFrame:
    """The processes a config's number is made of: its clean ones, or all of them where none is clean."""
    clean = g[g["clean"]]
    return clean if len(clean) else g


def estimate_config(g: pd.DataFrame, interval: Interval, columns: list[str],
                    peaks: dict[str, dict] | None) -> ConfigEstimate:
    """One config's estimate from its processes `g` (rows of the process table) and its interval; `columns` are the
    runs table's."""
    clean = g[g["clean"]]
    used = _used(g)
    first = used.sort_values("repeat").iloc[0]
    config = {c: first[c] for c in columns if c in first and c not in PER_PROCESS}
    lat = np.concatenate([1 / x for x in used["timed_ips"]]) * first["batch_size"] * 1e3
    flags = [f for fl in used["process_flags"] for f in fl
             if FLAG_SCOPE.get(f.name) != "throughput" or f.name in MODEL_FLAGS]
    if len(clean) < MIN_PROCESSES:
        disturbed = join_reasons(f.reason for fl in g["process_flags"] for f in throughput_flags(fl))
        why = (f"{len(g) - len(clean)} of {len(g)} processes disturbed ({disturbed})" if len(clean) < len(g)
               else f"only {len(g)} process{'es' if len(g) != 1 else ''}: the between-process spread is unknown")
        flags.append(flag("disturbed" if len(clean) < len(g) else "too_few_processes", why))
    # the peak of this config's own device, precision and threads (a row has the config's fields as attributes)
    key = peak_key(first["device"], first["precision"], peak_threads(first))
    mine = [m for s in dict.fromkeys(used["sweep_id"]) if peaks and key in peaks.get(s, {}) for m in peaks[s][key]]
    share, judged = config_utilisation(first.get("flops_per_image"), interval.estimate, mine, list(used["peak_flops"]))
    # the records' own utilisation judgements were against their run's peak; the config's replace them
    flags = [f for f in flags if f.name not in ("utilisation_over_peak", "peak_unsteady")] + judged
    phase_row = g.sort_values("repeat").iloc[0]
    # the phases shown are one process's; they must also add up to the config's headline step
    phases = {c: phase_row[c] for c in g.columns if c.startswith("phase_") and c.endswith("_ms")}
    phase_ms = {c: v for c, v in phases.items() if v == v}
    if interval.estimate and not any(f.name == "phase_sum_mismatch" for f in flags):
        if (p := phase_sum_flag(phase_ms, first["batch_size"] / interval.estimate * 1e3)) is not None:
            flags.append(p)
    # judged here too, not only when the run was recorded: records written before the guard existed
    if first["mode"] == "training" and not any(f.name == "forward_over_backward" for f in flags):
        if (fb := forward_backward_flag(phase_ms.get("phase_forward_ms"), phase_ms.get("phase_backward_ms"))):
            flags.append(fb)
    if interval.groups:  # its own spread, never a borrowed one: said beside its number
        flags.append(flag("two_groups", f"its processes form two groups: {interval.groups}; its interval is its own "
                                        "processes' (a t interval over them does not describe two groups)"))
    one = interval.ci_low is None  # a single process: only its own (within-process) interval exists
    return ConfigEstimate(
        config=config, interval=interval,
        ci_low=used["images_per_sec_ci_low"].min() if one else interval.ci_low,
        ci_high=used["images_per_sec_ci_high"].max() if one else interval.ci_high,
        processes=len(g), clean_processes=len(clean), sweeps=used["sweep_id"].nunique(),
        latency_ms={"p50": float(np.percentile(lat, 50)), "p90": float(np.percentile(lat, 90)),
                    # the 99th percentile of fewer than 100 iterations is their largest or next to it: not given
                    "p99": float(np.percentile(lat, 99)) if len(lat) >= P99_MIN_TIMED else float("nan"),
                    "median": float(np.median(lat))},
        peak_memory_bytes=used["peak_memory_bytes"].max(), utilisation=share, cv_median=float(used["cv"].median()),
        variance=variance_components(list(g["timed_ips"])), duration_s=float(g["duration_s"].median()),
        certificate=_certificate(used), prepare_s=_median(used, "prepare_s"),
        first_iteration_s=_median(used, "first_iteration_s"), phases=phases, flags=flags)


def estimate_configs(processes: pd.DataFrame, columns: list[str],
                     peaks: dict[str, dict] | None = None) -> list[ConfigEstimate]:
    """Every config's estimate, with the flags that need several configs (bench/report/estimates/cross_run.py).

    `columns` are the runs table's (a config keeps its own); `peaks` maps sweep id -> peak key -> that sweep's peak
    (bench/report/data.py: sweep_peaks): its FLOP/s at the start and at the end, each with its trials' spread."""
    if processes.empty:
        return []
    groups = [g for _, g in processes.groupby(CONFIG, sort=False)]
    intervals = config_intervals([(u["ips"], u["node"] if "node" in u else [None] * len(u), u["sweep_id"],
                                   spread_pool(u), spread_family(u)) for u in map(_used, groups)])
    estimates = [estimate_config(g, i, columns, peaks) for g, i in zip(groups, intervals, strict=True)]
    _blocks(estimates, [_used(g) for g in groups])
    cross_run_flags(estimates)
    return estimates


def comparison_group(config: dict) -> tuple:
    """What a config is compared within (its platform and every run field but the framework and engine): the
    configs a sweep runs back to back in a round. A missing value (NaN in a column that mixes numbers and None) is
    None, so configs alike in it share a group."""
    def known(v):
        return None if v is None or (isinstance(v, float) and v != v) else v
    return (config.get("platform"), *((k, known(config.get(k))) for k in FIELDS if k not in ("framework", "engine",
                                                                                             "extra")))


def _blocks(estimates: list[ConfigEstimate], used: list[pd.DataFrame]) -> None:
    """Each estimate's replicates' blocks, labelled with their comparison group (two configs share a block only where
    they ran back to back in one round of one sweep), and the within-block residual pooled over every comparison group
    of a platform's single-process configs whose processes name their block (older sweeps name none: their ratios stay
    unblocked)."""
    pools: dict[tuple, dict[tuple, dict]] = {}
    for e, u in zip(estimates, used, strict=True):
        group = comparison_group(e.config)
        label = hashlib.sha1(repr(group).encode()).hexdigest()[:10]
        per_process = e.interval.nodes == 1 and "block" in u and len(e.interval.replicates) == len(u)
        e.blocks = ([f"{b}:{label}" if isinstance(b, str) else None for b in u["block"]] if per_process
                    else [None] * len(e.interval.replicates))
        if spread_pool(u)[1] and any(e.blocks):
            pools.setdefault(spread_pool(u), {}).setdefault(group, {})[e.config["config_key"]] = \
                list(zip(e.blocks, e.interval.replicates))
    residuals = {pool: pooled_residual(groups) for pool, groups in pools.items()}
    for e, u in zip(estimates, used, strict=True):
        e.residual = residuals.get(spread_pool(u))
