"""The process table: one row per successful process with its value, its jitter and its own flags."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...host.interference import cv_outlier_reason
from ...measurement.flags import FLAG_SCOPE, MODEL_FLAGS, flag
from ...measurement.spells import spell_reason
from ...results.record import Flag, Record


def throughput_flags(flags: list[Flag]) -> list[Flag]:
    """A process's flags that disturb its throughput (a name no rule knows is not one of them; a flag about the model
    measured, MODEL_FLAGS, is its config's, not a disturbance)."""
    return [f for f in flags if FLAG_SCOPE.get(f.name) == "throughput" and f.name not in MODEL_FLAGS]


def process_table(records: list[Record], runs: pd.DataFrame,
                  readings: dict[str, list[tuple[int, float]]] | None = None) -> pd.DataFrame:
    """One row per successful process (latest attempt) with its value, jitter and own flags.

    `runs` is the runs table (one row per record, with platform and series). Adds `process_flags`
    (the record's flags plus a cv_outlier flag judged against its config's other processes, and a slow_spell flag
    where its sweep's speed reference read slow around it: `readings`, sweep id -> [(position, step s)]), `clean`
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
        others = ok[(ok["platform"] == row["platform"]) & (ok.index != idx)]
        siblings = others[others["config_key"] == row["config_key"]]
        family = others[(others["framework"] == row["framework"]) & (others["mode"] == row["mode"])
                        & (others["precision"] == row["precision"])]
        why = cv_outlier_reason(row["cv"], list(siblings["cv"]), row["ips"], list(siblings["ips"]), list(family["cv"]))
        if why:
            own.append(flag("cv_outlier", why))
        record = by_id[row["record_id"]]
        if record.sweep and (spell := spell_reason((readings or {}).get(record.sweep.id, []),
                                                   record.sweep.order_index)):
            own.append(flag("slow_spell", spell))
        flags.append(own)
    ok["process_flags"] = flags
    ok["clean"] = [not throughput_flags(f) for f in flags]
    return ok.reset_index(drop=True)
