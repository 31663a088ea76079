"""Every pair of frameworks per model, mode, precision and batch, and the answer per comparison: the fastest, its
speed-up over the runner-up with the interval, and the verdict (bench/report/estimates/intervals.py computes all
three)."""

from __future__ import annotations

import itertools

import pandas as pd

from .intervals import compare_pair
from .judgement import unsound_flags

GROUP = ["platform", "model", "mode", "precision"]


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
                         "winner": False, "unsound_flags": unsound_flags(top["flag_list"])})
            continue
        c = compare_pair(g.iloc[0], g.iloc[1])
        rows.append({**base, "fastest": c["faster"], "images_per_sec": g.iloc[0]["images_per_sec_median"],
                     "runner_up": c["slower"], "speedup": c["speedup"], "ci_low": c["speedup_ci_low"],
                     "ci_high": c["speedup_ci_high"], "verdict": c["verdict"], "winner": c["winner"],
                     "certificates": f"{g.iloc[0].get('certificate')} / {g.iloc[1].get('certificate')}",
                     "unsound_flags": list(dict.fromkeys(unsound_flags(g.iloc[0]["flag_list"])
                                                         + unsound_flags(g.iloc[1]["flag_list"])))})
    return pd.DataFrame(rows)
