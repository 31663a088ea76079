"""Each framework's best engine per configuration: the engine with the most images/s, against its runner-up (the
interval and verdict), and what its number means against the machine: at fp32 its share of the measured fp32 GEMM
peak, at int8 (no GEMM peak here) its speed-up over the same framework's fastest fp32 engine."""

from __future__ import annotations

import pandas as pd

from ...stats.judge import Judge
from .comparisons import GROUP
from .int8 import INT8, int8_table
from .pair_verdicts import compare_pair


def engines_table(configs: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """One row per configuration and framework measured with at least two engines (or at int8): its best engine and
    images/s, every engine measured, the runner-up's verdict, the fp32 GEMM-peak share or int8's speed-up."""
    if configs.empty or "engine" not in configs:
        return pd.DataFrame()
    int8 = int8_table(configs, judge)
    rows = []
    for key, g in configs.groupby(GROUP + ["batch_size", "framework"], sort=True):
        where = dict(zip(GROUP + ["batch_size", "framework"], key, strict=True))
        if g["engine"].nunique() < 2 and where["precision"] != INT8:
            continue
        ranked = g.sort_values("images_per_sec_median", ascending=False)
        best = ranked.iloc[0]
        row = {**where, "best engine": best["engine"], "img/s": best["images_per_sec_median"],
               "engines": ", ".join(f"{r['engine']} {r['images_per_sec_median']:.1f}" for _, r in ranked.iterrows()),
               "runner-up": None, "speed-up": None, "ci_low": None, "ci_high": None, "verdict": "",
               "utilisation": None if where["precision"] == INT8 else best.get("utilisation"), "int8 speed-up": None}
        if len(ranked) > 1:
            pair = compare_pair(best, ranked.iloc[1], judge)
            row.update({"runner-up": ranked.iloc[1]["engine"], "speed-up": pair["speedup"],
                        "ci_low": pair["speedup_ci_low"], "ci_high": pair["speedup_ci_high"],
                        "verdict": pair["verdict"]})
        if where["precision"] == INT8 and not int8.empty:
            mine = int8[(int8["platform"] == where["platform"]) & (int8["framework"] == where["framework"])
                        & (int8["model"] == where["model"]) & (int8["batch"] == where["batch_size"])
                        & (int8["int8 engine"] == best["engine"])]
            row["int8 speed-up"] = mine["speed-up"].iloc[0] if not mine.empty else None
        rows.append(row)
    return pd.DataFrame(rows)
