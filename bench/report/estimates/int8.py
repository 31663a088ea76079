"""int8 against fp32: each int8 config beside the same framework's fastest fp32 engine at the same model, mode,
batch and platform, the speed-up with its interval and verdict, the agreement with fp32, and the CPU's int8
features."""

from __future__ import annotations

import pandas as pd

from ...stats.judge import Judge
from ...stats.printed import bounds
from ...stats.verdicts import UNDECIDED, phrase
from .pair_verdicts import compare_pair

INT8 = "int8"
# what an int8 config and its fp32 baseline must share besides the framework (the engine may differ)
SAME = ["platform", "model", "mode", "batch_size", "image_size", "sequence_length", "device", "data"]


def _fastest_fp32(configs: pd.DataFrame, q: pd.Series) -> pd.Series | None:
    same = configs[(configs["precision"] == "fp32") & (configs["framework"] == q["framework"])]
    for column in SAME:
        if column in configs:  # a missing value (a token model's image size) matches a missing one
            same = same[same[column].isna() if pd.isna(q[column]) else same[column] == q[column]]
    if same.empty:
        return None
    return same.loc[same["images_per_sec_median"].idxmax()]


def int8_pairs(configs: pd.DataFrame, judge: Judge) -> list[tuple[pd.Series, pd.Series | None,
                                                                                   dict | None]]:
    """Each int8 config, the same framework's fastest fp32 config beside it (None: there is none) and their
    comparison (compare_pair's dict, int8 as `a`; None without a baseline)."""
    if configs.empty or "precision" not in configs or not (configs["precision"] == INT8).any():
        return []
    out = []
    for _, q in configs[configs["precision"] == INT8].iterrows():
        base = _fastest_fp32(configs, q)
        out.append((q, base, None if base is None else compare_pair(q, base, judge)))
    return out


def int8_table(configs: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """One row per int8 config: its images/s, the fastest fp32 engine of its framework and its images/s, int8's
    speed-up over it (interval, verdict: a side not sound, e.g. flagged int8_disagrees, leaves it undecided), the
    agreement with fp32 on the held-out images, the calibration and the CPU's int8/bf16 features."""
    pairs = int8_pairs(configs, judge)
    if not pairs:
        return pd.DataFrame()
    rows = []
    for q, base, c in pairs:
        row = {"platform": q["platform"], "framework": q["framework"], "model": q["model"],
               "batch": int(q["batch_size"]), "int8 engine": q["engine"], "int8 img/s": q["images_per_sec_median"],
               "fp32 engine (fastest)": None if base is None else base["engine"],
               "fp32 img/s": None if base is None else base["images_per_sec_median"],
               "speed-up": None, "95% CI": "",
               "verdict": phrase(UNDECIDED, detail="no fp32 run of this framework to compare with")}
        if c is not None:
            ratio, lo, hi = c["ratio_a_over_b"], c["ci_low"], c["ci_high"]
            row.update({"speed-up": ratio, "95% CI": "" if lo is None else bounds(lo, hi),
                        "verdict": c["verdict"] + (f": {c['reason']}" if c["reason"] else "")})
        row.update({"SQNR dB": q.get("int8_sqnr_db"), "cosine (mean)": q.get("int8_cosine_mean"),
                    "top-1 agreement": q.get("int8_top1_agreement"),
                    "fp32 classes": q.get("int8_fp32_distinct_classes"),
                    "held-out images": q.get("int8_images"), "calibration images": q.get("int8_calibration_images"),
                    "quantise s": q.get("int8_quantise_s"), "quantise cached": q.get("int8_cached"),
                    "flags": q.get("flags", ""),
                    "CPU int8/bf16 features": q.get("cpu_precision_features")})
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["platform", "model", "framework", "batch"]).reset_index(drop=True)
