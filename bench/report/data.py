"""Tables the report is drawn from: runs with a platform label, best batch sizes, framework ratios."""

from __future__ import annotations

import csv
import itertools
from importlib import resources

import numpy as np
import pandas as pd

from ..stats import ratio_of_medians_ci
from ..store import runs_frame

GROUP = ["platform", "model", "mode", "precision"]


def series_label(row) -> str:
    """Framework, plus engine/precision when they are not the framework's default."""
    from ..adapters import ADAPTERS

    label = row["framework"]
    if row["framework"] in ADAPTERS and row["engine"] != ADAPTERS.get(row["framework"]).engines[0]:
        label += f"/{row['engine']}"
    if row["precision"] != "fp32":
        label += f" {row['precision']}"
    return label


def runs_table(records: list[dict]) -> pd.DataFrame:
    """All runs (every status), with `platform` = hardware [host] and a `series` label for legends."""
    runs = runs_frame(records)
    if runs.empty:
        return runs
    runs = runs[runs["framework"] != "null"].copy()
    runs["platform"] = runs["hardware"] + " [" + runs["host"] + "]"
    runs["series"] = runs.apply(series_label, axis=1)
    return runs.sort_values(["platform", "model", "mode", "series", "batch_size"]).reset_index(drop=True)


def ok_runs(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"] if not runs.empty else runs


def best_batch(runs: pd.DataFrame) -> pd.DataFrame:
    """Per platform x model x mode x series: the row with the highest median images/s."""
    ok = ok_runs(runs)
    if ok.empty:
        return ok
    idx = ok.groupby(GROUP + ["series"])["images_per_sec_median"].idxmax()
    return ok.loc[idx].reset_index(drop=True)


def timed_images_per_sec(records: list[dict]) -> dict[str, np.ndarray]:
    """record_id -> per-iteration images/s of the timed loop (for bootstrap ratios)."""
    out = {}
    for r in records:
        if r["status"] == "ok":
            t = np.asarray(r["samples"]["timed_s"])
            out[r["record_id"]] = r["config"]["batch_size"] / t
    return out


def ratio_table(runs: pd.DataFrame, samples: dict[str, np.ndarray]) -> pd.DataFrame:
    """Every pair of series measured on the same platform/model/mode/precision/batch: A/B with a 95% CI."""
    rows = []
    ok = ok_runs(runs)
    for key, g in ok.groupby(GROUP + ["batch_size"]):
        for (_, a), (_, b) in itertools.combinations(g.sort_values("series").iterrows(), 2):
            ratio, lo, hi, noise = ratio_of_medians_ci(samples[a["record_id"]], samples[b["record_id"]])
            rows.append({**dict(zip(GROUP + ["batch_size"], key)), "a": a["series"], "b": b["series"],
                         "ratio_a_over_b": ratio, "ci_low": lo, "ci_high": hi,
                         "verdict": "within noise" if noise else (f"{a['series']} faster" if ratio > 1
                                                                  else f"{b['series']} faster")})
    return pd.DataFrame(rows)


def _reference(name: str) -> pd.DataFrame:
    text = resources.files("bench.data").joinpath(name).read_text()
    return pd.DataFrame(list(csv.DictReader(text.splitlines())))


def published_throughput() -> pd.DataFrame:
    """Published single-node images/s (tf_cnn_benchmarks, NVIDIA, Lambda, timm, ...): not measured here."""
    df = _reference("published_throughput.csv")
    df["images_per_sec"] = pd.to_numeric(df["images_per_sec"])
    return df


def seed_2019() -> pd.DataFrame:
    """The 2019 study's own numbers (its 'training' had no optimizer update)."""
    df = _reference("seed_2019_results.csv")
    for col in ("batch_size", "ms_per_batch", "images_per_sec"):
        df[col] = pd.to_numeric(df[col])
    return df
