"""From processes to configs: process-level estimates, cross-run sanity flags, and what is sound.

The process is the unit of replication. A config's number is the mean of its processes' medians
with a t-interval over processes (over nodes, each the mean of its processes, where a scheduler ran the
config's processes on several nodes); a disturbed or unusually jittery process is left out while enough
clean ones remain. A config is *sound* (usable for a finding) when at least MIN_PROCESSES clean
processes measured it and no guard flagged its throughput.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..host.interference import cv_outlier_reason
from ..measurement.flags import (
    FLAG_SCOPE,
    flag,
    forward_backward_flag,
    peak_flag,
    phase_sum_flag,
    utilisation_flag,
)
from ..results.record import Flag, Record
from ..stats import outer_level, process_interval, sweep_level_interval, sweep_level_ratio, variance_components

MIN_PROCESSES = 2
# A larger batch's throughput may fall (memory, cache), but not by more than this share beyond its CIs.
BATCH_DROP_LIMIT = 1 / 3
GROUP = ["platform", "model", "mode", "precision"]
CONFIG = ["platform", "config_key"]


def _throughput_flags(flags: list[Flag]) -> list[Flag]:
    return [f for f in flags if FLAG_SCOPE.get(f.name) == "throughput"]


def process_table(records: list[Record], runs: pd.DataFrame) -> pd.DataFrame:
    """One row per successful process (latest attempt) with its value, jitter and own flags.

    `runs` is the runs table (one row per record, with platform and series). Adds `process_flags`
    (the record's flags plus a cv_outlier flag judged against its config's other processes), `clean`
    and `ips` (its median images/s) and `timed_ips` (its per-iteration images/s).
    """
    ok = runs[runs["status"] == "ok"].copy() if not runs.empty else runs
    if ok.empty:
        return ok
    by_id = {r.record_id: r for r in records}
    ok["timed_ips"] = [r.config.batch_size / np.asarray(r.samples.timed_s) for r in map(by_id.get, ok["record_id"])]
    ok["ips"] = ok["images_per_sec_median"]
    nodes = [r.sweep.node if r.sweep else None for r in map(by_id.get, ok["record_id"])]
    if any(nodes):  # a scheduler's runs: the node each ran on (bench/sweep/executors.py)
        ok["node"] = nodes
    cvs = [float(np.std(1 / x, ddof=1) / np.mean(1 / x)) if len(x) > 1 else 0.0 for x in ok["timed_ips"]]
    ok["cv"] = cvs
    flags = []
    for idx, row in ok.iterrows():
        own = list(by_id[row["record_id"]].flags)
        siblings = ok[(ok["platform"] == row["platform"]) & (ok["config_key"] == row["config_key"]) & (ok.index != idx)]
        why = cv_outlier_reason(row["cv"], list(siblings["cv"]))
        if why:
            own.append(flag("cv_outlier", why))
        flags.append(own)
    ok["process_flags"] = flags
    ok["clean"] = [not _throughput_flags(f) for f in flags]
    return ok.reset_index(drop=True)


def _join(reasons) -> str:
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def aggregate(processes: pd.DataFrame, runs: pd.DataFrame, peaks: dict[str, dict] | None = None) -> pd.DataFrame:
    """One row per config (platform x config key) with the process-level estimate, CI and flags.

    Keeps the runs table's column names (images_per_sec_median/ci_low/ci_high, latency_ms_p50, ...)
    so every figure works on it; `images_per_sec_median` is the geometric mean over processes of each
    process's median. `process_ips` holds the replicates its interval and every ratio are built from: each
    process's median, or, where the config's processes ran on several nodes, each node's mean of them.
    `peaks` maps sweep id -> the sweep's peak (bench/report/data.py: sweep_peaks): its FLOP/s (best of start and
    end) and its trials' spread (a peak measured while other work ran gives no utilisation: flag peak_unsteady).
    """
    rows = []
    if processes.empty:
        return pd.DataFrame()
    for _, g in processes.groupby(CONFIG, sort=False):
        clean = g[g["clean"]]
        used = clean if len(clean) else g
        replicates, nodes = outer_level(used["ips"], used["node"] if "node" in used else [None] * len(used))
        # the sweep (the day) as a level above the process where two or more sweeps measured this config; where a
        # scheduler spread the processes over several nodes, the node is that outer level instead
        by_sweep = sweep_level_interval(list(used["ips"]), list(used["sweep_id"])) if nodes == 1 else None
        est = by_sweep or process_interval(replicates)
        first = used.sort_values("repeat").iloc[0]
        row = {c: first[c] for c in runs.columns if c in first and c not in ("record_id", "repeat", "attempt")}
        lat = np.concatenate([1 / x for x in used["timed_ips"]]) * first["batch_size"] * 1e3
        vc = variance_components(list(g["timed_ips"]))
        flags = [f for fl in used["process_flags"] for f in fl if FLAG_SCOPE.get(f.name) != "throughput"]
        if len(clean) < MIN_PROCESSES:
            disturbed = _join(f.reason for fl in g["process_flags"] for f in _throughput_flags(fl))
            why = (f"{len(g) - len(clean)} of {len(g)} processes disturbed ({disturbed})" if len(clean) < len(g)
                   else f"only {len(g)} process{'es' if len(g) != 1 else ''}: the between-process spread is unknown")
            flags.append(flag("disturbed" if len(clean) < len(g) else "too_few_processes", why))
        utilisation = None
        mine = [peaks[s] for s in used["sweep_id"] if peaks and s in peaks]
        if first.get("flops_per_image") and not pd.isna(first.get("flops_per_image")):
            peak = max([m["flops_per_sec"] for m in mine if m["flops_per_sec"]] or
                       [p for p in used["peak_flops"] if p and not pd.isna(p)] or [np.nan])
            utilisation = first["flops_per_image"] * est["estimate"] / peak if peak == peak else None
        flags = [f for f in flags if f.name not in ("utilisation_over_peak", "peak_unsteady")]
        spread = max((m["spread"] for m in mine if m["spread"] is not None), default=None)
        if utilisation is not None and (p := peak_flag(spread)) is not None:
            flags.append(p)
            utilisation = None
        if (u := utilisation_flag(utilisation)) is not None:
            flags.append(u)
        phase_row = g.sort_values("repeat").iloc[0]
        # the phases shown are one process's; they must also add up to the config's headline step
        phase_cols = [c for c in g.columns if c.startswith("phase_") and c.endswith("_ms")]
        phase_ms = {c: phase_row[c] for c in phase_cols if phase_row[c] == phase_row[c]}
        if est["estimate"] and not any(f.name == "phase_sum_mismatch" for f in flags):
            if (p := phase_sum_flag(phase_ms, first["batch_size"] / est["estimate"] * 1e3)) is not None:
                flags.append(p)
        # judged here too, not only when the run was recorded: records written before the guard existed
        if first["mode"] == "training" and not any(f.name == "forward_over_backward" for f in flags):
            if (fb := forward_backward_flag(phase_ms.get("phase_forward_ms"), phase_ms.get("phase_backward_ms"))):
                flags.append(fb)
        one = est["ci_low"] is None  # a single process: only its own (within-process) interval exists
        row.update({
            "images_per_sec_median": est["estimate"],
            "images_per_sec_ci_low": used["images_per_sec_ci_low"].min() if one else est["ci_low"],
            "images_per_sec_ci_high": used["images_per_sec_ci_high"].max() if one else est["ci_high"],
            "ci_method": ("within one process only" if est["ci_low"] is None else
                          f"t over nodes ({nodes}, each the mean of its processes)" if nodes > 1 else
                          f"t over sweeps and processes ({by_sweep['sweeps']} sweeps)" if by_sweep else
                          "t over processes"),
            "processes": len(g), "clean_processes": len(clean), "process_ips": replicates,
            "process_sweeps": list(used["sweep_id"]) if nodes == 1 else [None] * len(replicates),
            "sweeps": used["sweep_id"].nunique(),
            "between_sweep_share": by_sweep["between_sweep_share"] if by_sweep else None,
            "latency_ms_p50": float(np.percentile(lat, 50)), "latency_ms_p90": float(np.percentile(lat, 90)),
            "latency_ms_p99": float(np.percentile(lat, 99)), "latency_ms_median": float(np.median(lat)),
            "peak_memory_bytes": used["peak_memory_bytes"].max(),
            "utilisation": utilisation,
            "cv_median": float(used["cv"].median()),
            "between_share": vc["between_share"], "within_var": vc["within_var"], "between_var": vc["between_var"],
            "duration_s": float(g["duration_s"].median()),
            "certificate": certificate_text(used),
            "prepare_s": _median(used, "prepare_s"), "first_iteration_s": _median(used, "first_iteration_s"),
            "flag_list": flags,
        })
        for c in phase_cols:
            row[c] = phase_row[c]
        rows.append(row)
    configs = pd.DataFrame(rows)
    _cross_run_flags(configs)
    configs["flags"] = [", ".join(dict.fromkeys(f.name for f in fl)) for fl in configs["flag_list"]]
    configs["flag_reasons"] = [_join(f"{f.name}: {f.reason}" for f in fl) for fl in configs["flag_list"]]
    configs["sound"] = [not any(FLAG_SCOPE.get(f.name, "throughput") == "throughput" for f in fl)
                        for fl in configs["flag_list"]]
    return configs


def _lo(r) -> float:
    return r["images_per_sec_ci_low"] if r["images_per_sec_ci_low"] == r["images_per_sec_ci_low"] \
        else r["images_per_sec_median"]


def _hi(r) -> float:
    return r["images_per_sec_ci_high"] if r["images_per_sec_ci_high"] == r["images_per_sec_ci_high"] \
        else r["images_per_sec_median"]


# What else must match for two configs to be neighbours in batch size (or the same config in two modes): the
# image size, the data placement and a distributed run's layout (strategy, workers, nodes), so that, e.g., one
# worker's and two workers' batch 16 are never read as one curve.
SAME_SETTINGS = ["image_size", "data", "strategy", "workers", "nodes", "scaling"]


def _same_except(configs: pd.DataFrame, keys: list[str]):
    """configs grouped by `keys` and every SAME_SETTINGS column present (missing values match each other)."""
    by = keys + [c for c in SAME_SETTINGS if c in configs.columns]
    return configs.groupby(by, dropna=False)


def _cross_run_flags(configs: pd.DataFrame) -> None:
    """Flags that need several configs: a jump across batch sizes, training cheaper than inference."""
    for _, g in _same_except(configs, ["platform", "model", "mode", "precision", "series"]):
        g = g.sort_values("batch_size")
        for (i, a), (j, b) in itertools.pairwise(g.iterrows()):
            # Per-iteration time: a larger batch cannot finish sooner than a smaller one.
            if b["batch_size"] / _lo(b) < a["batch_size"] / _hi(a):
                why = (f"batch {b['batch_size']} took less time per iteration than batch {a['batch_size']} "
                       f"({1e3 * b['batch_size'] / b['images_per_sec_median']:.0f} vs "
                       f"{1e3 * a['batch_size'] / a['images_per_sec_median']:.0f} ms) beyond the CIs")
            elif _hi(b) < _lo(a) * (1 - BATCH_DROP_LIMIT):
                why = (f"throughput fell from {a['images_per_sec_median']:.3g} img/s at batch {a['batch_size']} "
                       f"to {b['images_per_sec_median']:.3g} at batch {b['batch_size']} (more than "
                       f"{BATCH_DROP_LIMIT:.0%} beyond the CIs)")
            else:
                continue
            for k in (i, j):
                configs.at[k, "flag_list"] = configs.at[k, "flag_list"] + [flag("batch_jump", why)]
    for _, g in _same_except(configs, ["platform", "model", "precision", "series", "batch_size"]):
        tr, inf = g[g["mode"] == "training"], g[g["mode"] == "inference"]
        if len(tr) and len(inf) and _lo(tr.iloc[0]) > _hi(inf.iloc[0]):
            why = (f"training ({tr.iloc[0]['images_per_sec_median']:.3g} img/s) beat inference "
                   f"({inf.iloc[0]['images_per_sec_median']:.3g} img/s) beyond the CIs")
            for k in (tr.index[0], inf.index[0]):
                configs.at[k, "flag_list"] = configs.at[k, "flag_list"] + [flag("training_cheaper_than_inference", why)]


def unsound_flags(r) -> list[str]:
    """The names of the flags that keep a config's throughput out of the findings."""
    return list(dict.fromkeys(f.name for f in r["flag_list"] if FLAG_SCOPE.get(f.name, "throughput") == "throughput"))


def unsound_reason(r) -> str:
    return _join(f"{f.name}: {f.reason}" for f in r["flag_list"]
                 if FLAG_SCOPE.get(f.name, "throughput") == "throughput")


UNRELIABLE = "not measured reliably"


def no_winner(a, b, ratio: dict, names: tuple[str, str] | None = None, sep: str = "; ") -> str | None:
    """The verdict when no winner may be stated (a side unsound, no interval, or within noise); None
    when the interval names one. `names` label the sides in the reasons (default: their series)."""
    names = names or (a["series"], b["series"])
    bad = [f"{n}: {unsound_reason(x)}" for n, x in zip(names, (a, b)) if not x["sound"]]
    if bad:
        return f"{UNRELIABLE} (" + sep.join(bad) + ")"
    if ratio["ci_low"] is None:
        return f"{UNRELIABLE} (fewer than two processes)"
    if ratio["within_noise"]:
        return "within noise"
    return None


def compare_pair(a, b) -> dict:
    """Verdict on two configs' rows: which is faster, by how much (always >= 1x), with the CI."""
    r = sweep_level_ratio(a["process_ips"], a["process_sweeps"], b["process_ips"], b["process_sweeps"])
    out = {"a": a["series"], "b": b["series"], "ratio_a_over_b": r["ratio"], "ci_low": r["ci_low"],
           "ci_high": r["ci_high"]}
    faster, slower, ratio, lo, hi = a, b, r["ratio"], r["ci_low"], r["ci_high"]
    if ratio < 1:
        faster, slower, ratio = b, a, 1 / ratio
        lo, hi = (None, None) if lo is None else (1 / hi, 1 / lo)
    out.update(faster=faster["series"], slower=slower["series"], speedup=ratio, speedup_ci_low=lo,
               speedup_ci_high=hi)
    out["verdict"] = no_winner(a, b, r) or f"{faster['series']} faster"
    out["winner"] = out["verdict"].endswith(" faster")
    return out


def _median(frame: pd.DataFrame, column: str) -> float | None:
    values = frame[column].dropna() if column in frame else []
    return float(values.median()) if len(values) else None


def certificate_text(processes: pd.DataFrame) -> str:
    """A config's fairness certificate over its processes: 'passed n/n' or the checks that failed."""
    if "certificate_failed" not in processes:
        return "none"
    failed = sorted({c for fl in processes["certificate_failed"] for c in (fl or [])})
    checked = int(processes["certificate_checked"].min())
    if failed:
        return "FAILED: " + ", ".join(failed)
    return f"{checked}/{checked} checks passed" if checked else "none"


def ratio_table(configs: pd.DataFrame) -> pd.DataFrame:
    """Every pair of series on the same platform/model/mode/precision/batch, with a process-level CI."""
    rows = []
    if configs.empty:
        return pd.DataFrame()
    for key, g in configs.groupby(GROUP + ["batch_size"]):
        for (_, a), (_, b) in itertools.combinations(g.sort_values("series").iterrows(), 2):
            rows.append({**dict(zip(GROUP + ["batch_size"], key)), **compare_pair(a, b)})
    return pd.DataFrame(rows)


def summary_table(configs: pd.DataFrame) -> pd.DataFrame:
    """Model x mode x batch (per platform and precision): the fastest series, its speed-up over the
    runner-up with the CI, and the verdict."""
    rows = []
    if configs.empty:
        return pd.DataFrame()
    for key, g in configs.groupby(GROUP + ["batch_size"]):
        g = g.sort_values("images_per_sec_median", ascending=False)
        base = dict(zip(GROUP + ["batch_size"], key))
        if len(g) < 2:
            top = g.iloc[0]
            rows.append({**base, "fastest": top["series"], "images_per_sec": top["images_per_sec_median"],
                         "runner_up": None, "speedup": None, "ci_low": None, "ci_high": None,
                         "verdict": f"only {top['series']} measured", "certificates": top.get("certificate"),
                         "winner": False, "unsound_flags": unsound_flags(top)})
            continue
        c = compare_pair(g.iloc[0], g.iloc[1])
        rows.append({**base, "fastest": c["faster"], "images_per_sec": g.iloc[0]["images_per_sec_median"],
                     "runner_up": c["slower"], "speedup": c["speedup"], "ci_low": c["speedup_ci_low"],
                     "ci_high": c["speedup_ci_high"], "verdict": c["verdict"], "winner": c["winner"],
                     "certificates": f"{g.iloc[0].get('certificate')} / {g.iloc[1].get('certificate')}",
                     "unsound_flags": list(dict.fromkeys(unsound_flags(g.iloc[0]) + unsound_flags(g.iloc[1])))})
    return pd.DataFrame(rows)
