"""The report's scaling section: distributed runs as processes and configs, communication cost
(strategy minus the independent baseline), scaling efficiency with a CI, the alpha-beta model's
prediction beside the measurement, its extrapolation to published set-ups, and accuracy over time.

Distributed records never enter the single-process tables (their labels carry strategy and workers).
"""

from __future__ import annotations

import csv
import statistics
from importlib import resources

import numpy as np
import pandas as pd

from ..measurement import scaling_pairs as pairs
from ..measurement.flags import FLAG_SCOPE, baseline_flag, efficiency_flag, flag, forward_backward_flag
from ..results import link_model as netmodel
from ..results.links import OPERATIONS, link_key
from ..results.record import Distributed, Flag, Record, RunSettings, as_records
from ..stats.intervals import process_interval
from ..stats.judge import Judge
from ..stats.moderated import SweepSpreads
from ..strategies import has, strategy
from .energy import hardware_label, mean_energy

PHASES = ("forward", "backward", "forward_backward", "update", "exposed_comm", "other")
ID = ["platform", "framework", "model", "worker_batch", "image_size", "scaling"]


def is_distributed(record: Record) -> bool:
    return record.config.distributed


def rows_where(frame: pd.DataFrame, test) -> pd.Series:
    """Which rows' strategy `test` holds of (bench/strategies/), as a mask of `frame`."""
    return pd.Series(has(frame["strategy"], test), index=frame.index, dtype=bool)

def link_label(config: RunSettings, link: dict | None) -> str:
    if config.nodes == 1:
        return "loopback"
    if link and link.get("fallback"):
        return "loopback (emulation unavailable)"
    if link and link.get("kind") == "real cluster":
        return f"{config.nodes} machines" + (f" ({config.cluster})" if config.cluster else "")
    rate = f"{config.link_gbit:g} Gbit/s" if config.link_gbit else "unshaped"
    delay = f", +{config.link_delay_ms:g} ms" if config.link_delay_ms else ""
    return f"{config.nodes} nodes, {rate}{delay}"


def _server_update_ms(d: Distributed) -> float | None:
    """The synchronous parameter server's aggregation + update: every worker waits for it."""
    server = [r for r in d.ranks if r.role == "server+worker" and r.phases_median_ms]
    return server[0].phases_median_ms.get("update") if server else None


def processes(records: list[Record]) -> pd.DataFrame:
    """One row per successful distributed process."""
    rows = []
    for r in as_records(records):
        if r.status != "ok" or not is_distributed(r) or not r.distributed:
            continue
        c, d = r.config, r.distributed
        phases = r.phases.median_ms if r.phases else {}
        rows.append({
            "config_key": r.config_key, "platform": f"{r.hardware} [{r.host}]", "host": r.host,
            "framework": c.framework, "model": c.model, "strategy": c.strategy, "workers": c.workers,
            "nodes": c.nodes, "link": link_label(c, d.link), "bucket_mb": c.bucket_mb,
            "scaling": c.scaling, "worker_batch": d.worker_batch, "global_batch": d.global_batch,
            "image_size": c.image_size, "threads": c.threads, "repeat": r.repeat,
            "micro_batches": c.micro_batches if strategy(c.strategy).pipeline else None,
            "profile": r.sweep.profile if r.sweep else None,
            "device": c.device, "backend": d.backend,
            "images_per_sec": r.summary.images_per_sec_median, "step_ms": r.summary.latency_ms_median,
            **{f"{p}_ms": phases.get(p) for p in PHASES}, "overlap_share": d.overlap_share,
            "grad_bytes": d.grad_bytes, "accuracy": d.accuracy, "batch_method": d.sandblaster,
            "flags": [f for f in r.flags if FLAG_SCOPE.get(f.name, "throughput") == "throughput"],
            "link_gbit": c.link_gbit, "link_delay_ms": c.link_delay_ms,
            "server_update_ms": _server_update_ms(d),
            **({"cluster": c.cluster} if c.cluster else {}),  # a column only where real machines ran
            "hardware_label": hardware_label(r.hardware, c.device, c.precision, d.link),
            "images_per_joule": r.energy.images_per_joule if r.energy.available else None,
            "energy_reason": None if r.energy.available else r.energy.reason,
        })
    df = pd.DataFrame(rows)
    if not df.empty:
        df["clean"] = df["flags"].map(lambda f: not f)
    return df


def configs(procs: pd.DataFrame) -> pd.DataFrame:
    """One row per distributed config: geometric mean over clean processes with a 95% interval whose between-process
    spread is moderated by the platform's other distributed configs (bench/stats/moderated.py; `spreads`), beside the
    config's own (Welch) interval."""
    return configs_and_spreads(procs)[0]


def configs_and_spreads(procs: pd.DataFrame) -> tuple[pd.DataFrame, SweepSpreads | None]:
    """`configs` and the moderated spreads its intervals came from, fitted once: the scaling table and the
    parallelism table judge their comparisons with the same object (None without distributed processes)."""
    if procs.empty:
        return procs, None
    rows = []
    for _, g in procs.groupby("config_key", sort=False):
        clean = g[g["clean"]]
        used = clean if len(clean) else g
        est = process_interval(used["images_per_sec"])
        first = g.iloc[0]
        row = {k: first[k] for k in ["config_key", "host", *ID, "strategy", "workers", "nodes", "link", "bucket_mb",
                                       "global_batch", "threads", "grad_bytes", "link_gbit", "link_delay_ms", "device",
                                       "hardware_label", "backend", "micro_batches", "profile"]}
        row["images_per_joule"], row["energy_reason"] = mean_energy(used)
        row["cluster"] = _cluster(first)
        server = used["server_update_ms"].dropna()
        row["server_update_ms"] = float(server.mean()) if len(server) else None
        row.update(processes=len(used), flagged=len(g) - len(clean), sound=len(clean) >= 2,
                   images_per_sec=est["estimate"], ci_low=est["ci_low"], ci_high=est["ci_high"],
                   own_ci_low=est["ci_low"], own_ci_high=est["ci_high"], spread_df=None, pooled=False,
                   overlap_share=used["overlap_share"].mean() if used["overlap_share"].notna().any() else None,
                   values=list(used["images_per_sec"]), step_values=list(used["step_ms"]),
                   flag_reasons="; ".join(dict.fromkeys(f.reason for fl in g["flags"] for f in fl)))
        for p in PHASES:
            col = used[f"{p}_ms"].dropna()
            row[f"{p}_ms"] = float(col.mean()) if len(col) else None
        # distributed runs are training steps: the forward/backward guard applies to every config
        row["phase_flags"] = [f for f in (forward_backward_flag(row["forward_ms"], row["backward_ms"]),) if f]
        rows.append(row)
    out = pd.DataFrame(rows)
    spreads = spreads_of(out)
    for i, row in out.iterrows():
        if row["config_key"] in spreads.values:
            est = spreads.interval(row["config_key"])
            out.at[i, "ci_low"], out.at[i, "ci_high"] = est["ci_low"], est["ci_high"]
            out.at[i, "spread_df"], out.at[i, "pooled"] = est["df"], est["pooled"]
    out["step_ms"] = out["global_batch"] / out["images_per_sec"] * 1e3
    return out, spreads


def _baseline(table: pd.DataFrame, row, workers: int) -> pd.Series | None:
    """The independent config on one machine with `workers` workers that `row` is measured against (the pairing of
    bench/measurement/scaling_pairs.py), or None."""
    sides = _sides(table)
    me = next(s for s in sides if s.key == row["config_key"])
    base = pairs.independent_baseline(me, sides, workers)
    return None if base is None else table[table["config_key"] == base.key].iloc[0]


def spreads_of(cfgs: pd.DataFrame) -> SweepSpreads:
    """The sound configs' clean per-process values, each moderated by its platform's other distributed configs (a
    pool apart from single processes: ranks add variation of their own)."""
    sound = cfgs[cfgs["sound"].astype(bool)]
    return SweepSpreads(dict(zip(sound["config_key"], sound["values"])),
                        dict(zip(sound["config_key"], sound["platform"])))


def _sides(cfgs: pd.DataFrame) -> list[pairs.Side]:
    return [pairs.Side(r["config_key"], (r["platform"], r["framework"], r["model"], r["image_size"], r["device"]),
                         r["scaling"], r["strategy"], int(r["workers"]), int(r["nodes"]), int(r["worker_batch"]),
                         int(r["global_batch"]), r["link"], r.get("profile")) for _, r in cfgs.iterrows()]


def _step_difference(r: dict, base_step_ms: float) -> tuple[float, float | None, float | None]:
    """A throughput ratio a/b as the step time a spends beyond b's, in ms, with its interval (b's step times the
    ratio's inverse minus one: the same interval, in the unit a reader of steps wants)."""
    ms = base_step_ms * (1 / r["ratio"] - 1)
    if r["ci_low"] is None:
        return ms, None, None
    return ms, base_step_ms * (1 / r["ci_high"] - 1), base_step_ms * (1 / r["ci_low"] - 1)


def scaling_table(cfgs: pd.DataFrame, judge: Judge, spreads: SweepSpreads | None = None) -> pd.DataFrame:
    """Per config: throughput, communication cost (vs independent at the same N) and efficiency (vs 1 worker), each
    with its interval and verdict (bench/measurement/scaling_pairs.py) by `judge`, sweep-moderated where both sides
    are sound, else shown and undecided (bench/stats/judge.py: compare_values). `spreads`: those `cfgs` came
    with (configs_and_spreads), fitted again only when not given."""
    if cfgs.empty:
        return cfgs
    on = judge.on(spreads if spreads is not None else spreads_of(cfgs))
    by_key = {r["config_key"]: r for _, r in cfgs.iterrows()}
    found = {(c.kind, c.a): c for c in pairs.comparisons(_sides(cfgs))}
    out = []
    for _, row in cfgs.iterrows():
        key = row["config_key"]
        comm, comm_flags, comm_v = (None, None, None), [], None
        if (c := found.get((pairs.COMMUNICATION, key))) is not None:
            same_n = by_key[c.b]
            r, comm_v = on.compare_values(c.a, c.b, row["values"], same_n["values"], c.divisor)
            comm = _step_difference(r, same_n["step_ms"])
            comm_flags = [f for f in (baseline_flag("the independent baseline at the same N", same_n["sound"],
                                                    same_n["flag_reasons"]),) if f]
        eff, eff_flags, eff_v, eff_batch = {"ratio": None, "ci_low": None, "ci_high": None}, [], None, None
        piped = None if (pairs.EFFICIENCY, key) in found else _pipeline_efficiency(cfgs, row)
        if (c := found.get((pairs.EFFICIENCY, key)) or piped) is not None:
            one = by_key[c.b]
            # a pipeline's one-worker run may train on another batch than its global one: the row names it
            eff_batch = int(one["global_batch"]) if piped and int(one["global_batch"]) != int(row["global_batch"]) \
                else None
            eff, eff_v = on.compare_values(c.a, c.b, row["values"], one["values"], c.divisor)
            eff_flags = [f for f in (baseline_flag("the 1-worker baseline", one["sound"], one["flag_reasons"]),
                                     efficiency_flag(eff["ratio"], row["scaling"])) if f]
        overlap = None  # all-reduce during backward against after it: (ms, low, high, verdict)
        if (c := found.get((pairs.OVERLAP, key))) is not None:
            after = by_key[c.b]
            r, v = on.compare_values(c.a, c.b, row["values"], after["values"], c.divisor)
            overlap = (*_step_difference(r, after["step_ms"]), v)
        top, clipped = pairs.bounded_top(eff["ci_high"], row["scaling"])
        # a guarded number leaves the table's number columns, so no reader of them can print it; the raw value
        # stays beside it for the record (never displayed)
        out.append({**row.to_dict(), "comm_flags": comm_flags, "comm_cost_raw_ms": comm[0],
                    **dict(zip(("comm_cost_ms", "comm_ci_low", "comm_ci_high"),
                               (None, None, None) if comm_flags else comm)),
                    "comm_verdict": comm_v, "efficiency_flags": eff_flags, "efficiency_raw": eff["ratio"],
                    "efficiency": None if eff_flags else eff["ratio"],
                    "eff_ci_low": None if eff_flags else eff["ci_low"],
                    "eff_ci_high": None if eff_flags else top, "eff_ci_high_raw": eff["ci_high"],
                    "eff_clipped": clipped and not eff_flags, "eff_verdict": eff_v, "eff_baseline_batch": eff_batch,
                    "eff_why": None if _compared(eff, eff_flags) or row["workers"] < 2 else NO_ONE_WORKER,
                    "overlap_diff": overlap})
    table = pd.DataFrame(out)
    # the no-communication ceiling: the independent run's efficiency at the same N (workers share the cores);
    # a guarded ceiling is None (its flags go with the row's efficiency flags when displayed)
    ceilings, ceiling_flags = [], []
    for _, row in table.iterrows():
        base = _baseline(table, row, row["workers"])
        has = base is not None and row["workers"] > 1
        ceilings.append(base["efficiency"] if has else None)
        ceiling_flags.append(base["efficiency_flags"] if has else [])
    table["ceiling"] = ceilings
    table["ceiling_flags"] = ceiling_flags
    return table


# Why a row of N > 1 workers has no efficiency: no one-worker run to divide by.
NO_ONE_WORKER = "n/a: no 1-worker independent run of this model, image size and batch to compare with"


def _compared(eff: dict, flags: list) -> bool:
    """Whether a row's efficiency comparison was made (a number, or a guard that blanked it)."""
    return eff["ratio"] is not None or bool(flags)


def of_profile(frame: pd.DataFrame, profile) -> pd.DataFrame:
    """The rows of `frame` measured by sweep profile `profile` where it has any, else all of them: two profiles'
    runs of one baseline differ in their measurement settings, so a comparison takes its own profile's
    (as bench/measurement/scaling_pairs.py's independent_baseline does)."""
    mine = frame[frame["profile"] == profile]
    return mine if len(mine) else frame


def _pipeline_efficiency(cfgs: pd.DataFrame, row) -> pairs.Comparison | None:
    """A pipeline config's efficiency comparison: its stages train on one batch together, so no one-worker run shares
    its batch per worker; it is compared with the one-worker independent run of the same model, image size and
    device, at its global batch where one ran, else at the largest batch one ran (the parallelism section's
    definition: throughput / (workers x one worker's throughput at its own batch))."""
    if not strategy(row["strategy"]).pipeline or row["workers"] < 2:
        return None
    same = ["platform", "framework", "model", "image_size", "device"]
    one = cfgs[rows_where(cfgs, lambda s: s.baseline) & (cfgs["workers"] == 1) & (cfgs["nodes"] == 1)
               & np.logical_and.reduce([cfgs[k] == row[k] for k in same])]
    if one.empty:
        return None
    one = of_profile(one, row["profile"])
    at = one[one["global_batch"] == row["global_batch"]]
    base = (at if len(at) else one.sort_values("global_batch")).iloc[-1]
    return pairs.Comparison(pairs.EFFICIENCY, row["config_key"], base["config_key"], int(row["workers"]))


def _cluster(row) -> str:
    """The row's real machines (their `cluster` setting), '' for this machine (a missing column or NaN)."""
    value = row.get("cluster")
    return value if isinstance(value, str) else ""


def _link_for(networks: dict, row, kind: str) -> netmodel.Link | None:
    key = link_key(row["workers"], row["nodes"], row["link_gbit"], row["link_delay_ms"], _cluster(row))
    entry = networks.get(row["host"], {}).get(key)
    if not entry:
        return None
    fit = entry["fit_allreduce" if kind == "ring" else "fit_p2p"]
    return netmodel.Link(fit["alpha_s"], fit["bandwidth_Bps"], fit.get("r2"), entry["key"],
                         entry.get("backend", netmodel.FIT_BACKEND))


def fit_backend_flag(run_backend, fit_backend: str) -> Flag | None:
    """A run whose collectives ran over another backend than the link's fit (NCCL against a gloo fit: NVLink, shared
    memory or InfiniBand are not the link that was measured): its prediction is withheld, and says why."""
    if not isinstance(run_backend, str) or run_backend == fit_backend:  # unrecorded: the runs before NCCL (gloo)
        return None
    return flag("link_fit_backend", f"the run's collectives used {run_backend}, the link's fit measured "
                                    f"{fit_backend}: a {fit_backend} fit does not predict {run_backend} communication")


def predictions(table: pd.DataFrame, networks: dict) -> pd.DataFrame:
    """The alpha-beta model's step time beside the measured one, for synchronous multi-worker configs.

    compute = the independent baseline's step at the same N (for the synchronous parameter server plus
    the server's aggregation and update beyond a worker's own update, measured on the server rank: the
    workers wait for it); communication from the link's fit (ring all-reduce for DDP, point-to-point for
    the parameter server); overlap = the share measured in the run (DDP's bucket hooks), 0 where
    communication waits for the whole backward.
    """
    rows = []
    if table.empty:
        return pd.DataFrame()
    for _, row in table.iterrows():
        me = strategy(row["strategy"])
        if row["workers"] < 2 or not (me.synchronous and me.link_model):  # the model's forms: synchronous steps
            continue
        base = _baseline(table, row, row["workers"])
        link = _link_for(networks, row, me.link_model)
        if base is None or link is None or not row["grad_bytes"]:
            continue
        overlap = row["overlap_share"] if me.overlaps_backward and row["overlap_share"] else 0.0
        compute = base["step_ms"]
        if me.server_update and row["server_update_ms"] and base["update_ms"]:
            compute += max(0.0, row["server_update_ms"] - base["update_ms"])
        pred = netmodel.predict_step_s(me.link_model, compute / 1e3, link, row["workers"],
                                       row["grad_bytes"], overlap) * 1e3
        # the prediction's compute is the baseline's step: an unsound baseline makes the prediction n/a
        other_link = fit_backend_flag(row.get("backend"), link.backend)
        flags = [f for f in (baseline_flag("the independent baseline at the same N (the model's compute)",
                                           base["sound"], base["flag_reasons"]), other_link) if f]
        rows.append({"framework": row["framework"], "model": row["model"], "strategy": row["strategy"],
                     "workers": row["workers"], "link": row["link"], "bucket_mb": row["bucket_mb"],
                     "profile": row.get("profile"), "compute_ms": None if flags else compute,
                     "comm_model_ms": float("nan") if other_link else pred - compute,
                     "overlap_share": overlap, "predicted_ms": None if flags else pred,
                     "measured_ms": row["step_ms"], "exposed_comm_ms": row["exposed_comm_ms"],
                     "error": None if flags else pred / row["step_ms"] - 1, "flags": flags,
                     "alpha_us": link.alpha_s * 1e6, "bandwidth_gbit": link.bandwidth_Bps * 8 / 1e9})
    return pd.DataFrame(rows)


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**20:g} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:g} KiB"


def network_table(networks: dict) -> pd.DataFrame:
    """One row per host, link and operation: the fitted latency and bandwidth."""
    rows = []
    for host, key, e in ((h, k, e) for h, links in networks.items() for k, e in links.items()):
        for kind, operation in OPERATIONS.items():
            fit, sizes = e[f"fit_{kind}"], [p["bytes"] for p in e[kind]]
            rows.append({"host": host, "link": key, "operation": operation,
                         "alpha (us)": round(fit["alpha_s"] * 1e6, 1),
                         "bandwidth (Gbit/s)": round(fit["bandwidth_Bps"] * 8 / 1e9, 2),
                         "R2": round(fit["r2"], 3) if fit.get("r2") is not None else None,
                         "sizes": f"{_size(min(sizes))} - {_size(max(sizes))}",
                         "measured": e["measured"]})
    return pd.DataFrame(rows)


def accuracy_curves(procs: pd.DataFrame) -> pd.DataFrame:
    """One row per accuracy point of every process that recorded one (digits runs)."""
    rows = []
    if procs.empty:
        return pd.DataFrame()
    for _, p in procs[procs["accuracy"].notna()].iterrows():
        for point in p["accuracy"]:
            rows.append({"framework": p["framework"], "strategy": p["strategy"], "workers": p["workers"],
                         "repeat": p["repeat"], "clean": bool(p["clean"]), **point})
    return pd.DataFrame(rows)


def accuracy_at_equal_time(curves: pd.DataFrame) -> pd.DataFrame:
    """Test accuracy each strategy reached at the same training seconds (the shortest run's end),
    interpolated per process, then mean and range over processes."""
    if curves.empty:
        return curves
    t_common = curves.groupby(["strategy", "repeat"])["train_s"].max().min()
    rows = []
    for (fw, name, workers), g in curves.groupby(["framework", "strategy", "workers"]):
        per = [float(np.interp(t_common, c["train_s"], c["accuracy"])) for _, c in g.groupby("repeat")]
        final = [float(c.sort_values("train_s")["accuracy"].iloc[-1]) for _, c in g.groupby("repeat")]
        steps = [int(c["steps"].max()) for _, c in g.groupby("repeat")]
        ends = [float(c["train_s"].max()) for _, c in g.groupby("repeat")]
        rows.append({"framework": fw, "strategy": name, "workers": workers, "processes": len(per),
                     "at_s": t_common, "accuracy": statistics.mean(per), "min": min(per), "max": max(per),
                     "final_accuracy": statistics.mean(final), "end_s": statistics.mean(ends),
                     "steps_per_worker": statistics.mean(steps)})
    return pd.DataFrame(rows)


def published_scaling() -> pd.DataFrame:
    text = resources.files("bench.data").joinpath("published_scaling.csv").read_text()
    df = pd.DataFrame(list(csv.DictReader(text.splitlines())))
    df["workers"] = df["workers"].astype(int)
    df["images_per_sec"] = pd.to_numeric(df["images_per_sec"], errors="coerce")
    return df


# Published set-ups the model is extrapolated to: compute per step from the set-up's own 1-GPU number.
EXTRAPOLATED = [
    {"label": "SINGA set-up: K80, ResNet-50, 32/GPU, 10 Gbit/s", "system": ("SINGA allreduce",
                                                                              "parameter-server baseline"),
     "gbit": 10.0, "grad_bytes": 25.56e6 * 4, "compute_s": 32 / 45,
     "compute_source": "SINGA's own 1-GPU point (45 img/s at batch 32)"},
    {"label": "Goyal et al. set-up: P100, ResNet-50, 32/GPU, 50 Gbit/s", "system": ("Caffe2 allreduce",),
     "gbit": 50.0, "grad_bytes": 25.56e6 * 4, "compute_s": 32 / 219,
     "compute_source": "tf_cnn_benchmarks P100 ResNet-50 training, 219 img/s"},
]
EXTRAPOLATION_WORKERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def extrapolation(alpha_s: float, overlap_share: float) -> pd.DataFrame:
    """Efficiency vs workers on published set-ups: ring all-reduce with no overlap and with the measured
    overlap share, and a one-server parameter server; alpha is this machine's measured latency."""
    rows = []
    for s in EXTRAPOLATED:
        link = netmodel.Link(alpha_s, s["gbit"] * 1e9 / 8)
        for n in EXTRAPOLATION_WORKERS:
            ring = netmodel.ring_allreduce_s(link, n, s["grad_bytes"])
            rows += [{"setup": s["label"], "system": s["system"], "workers": n, "model": "ring all-reduce, no overlap",
                      "efficiency": netmodel.efficiency(s["compute_s"], ring)},
                     {"setup": s["label"], "system": s["system"], "workers": n, "model": "parameter server (1 server)",
                      "efficiency": netmodel.efficiency(s["compute_s"], netmodel.ps_s(link, n, s["grad_bytes"]))}]
            if overlap_share > 0:
                rows.append({"setup": s["label"], "system": s["system"], "workers": n,
                             "model": f"ring all-reduce, {overlap_share:.0%} overlapped",
                             "efficiency": netmodel.efficiency(s["compute_s"], ring, overlap_share)})
    return pd.DataFrame(rows)


def published_efficiency(published: pd.DataFrame) -> pd.DataFrame:
    """Published points as efficiency: SINGA's from its throughput bars, others from their stated %."""
    rows = []
    for system, g in published[published["images_per_sec"].notna()].groupby("system"):
        one = g[g["workers"] == 1]["images_per_sec"]
        if len(one):
            for _, r in g.iterrows():
                rows.append({"system": system, "model": r["model"], "workers": r["workers"], "network": r["network"],
                             "efficiency": r["images_per_sec"] / (r["workers"] * float(one.iloc[0])),
                             "source": r["source"]})
    for _, r in published[published["images_per_sec"].isna()].iterrows():
        note = r["note"]
        if "% scaling efficiency" in note:
            eff = float(note.split("%")[0].split()[-1]) / 100
        elif "x speed-up" in note:
            eff = float(note.split("x speed-up")[0].split()[-1]) / r["workers"]
        else:
            continue
        rows.append({"system": r["system"], "model": r["model"], "workers": r["workers"], "network": r["network"],
                     "efficiency": eff, "source": r["source"]})
    return pd.DataFrame(rows)
