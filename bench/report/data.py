"""Tables the report is drawn from: runs with a platform label, best batch sizes, framework ratios."""

from __future__ import annotations

import csv
from importlib import resources

import pandas as pd

from ..adapters import ADAPTERS, measures_a_framework
from ..results.record import Record, as_records
from ..results.store import runs_frame
from ..results.sweep_manifest import SweepManifest, as_manifests
from .config_frame import configs_frame
from .energy import hardware_label
from .estimates import estimate_configs, process_table

GROUP = ["platform", "model", "mode", "precision"]


def series_label(row) -> str:
    """Framework, plus engine/precision when they are not the framework's default."""

    label = row["framework"]
    if row["framework"] in ADAPTERS and row["engine"] != ADAPTERS.get(row["framework"]).engines[0]:
        label += f"/{row['engine']}"
    if row["precision"] != "fp32":
        label += f" {row['precision']}"
    return label


def runs_table(records: list[Record]) -> pd.DataFrame:
    """All runs (every status), with `platform` = hardware [host] and a `series` label for legends."""
    runs = runs_frame(records)
    if runs.empty:
        return runs
    runs = runs[runs["framework"].map(measures_a_framework)].copy()
    if runs.empty:  # only the harness's own runs: no framework's numbers to label
        return runs.assign(platform=pd.Series(dtype=str), series=pd.Series(dtype=str))
    # a GPU's runs name the GPU's model, count and interconnect (bench/report/energy.py: hardware_label)
    runs["platform"] = [f"{hardware_label(h, d)} [{host}]" for h, d, host in
                        zip(runs["hardware"], runs["device"], runs["host"], strict=True)]
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


def sweep_peaks(sweeps: list[SweepManifest]) -> dict[str, dict[str, list[dict]]]:
    """sweep id -> peak key (device|precision|threads, bench/measurement/peak.py) -> the peaks measured for that key's
    runs, at the start and at the end of the sweep: each one's `flops_per_sec` and `spread`, its trials' spread (None
    when unrecorded; a large spread means the peak was measured while other work ran: flags.py, PEAK_SPREAD_LIMIT).
    The utilisation uses the best steady one (estimates/configs.py: config_utilisation). Kept per key: a CPU run is
    judged against the CPU's peak, fp32 against fp32, never against the best peak of the sweep."""
    out: dict[str, dict[str, list[dict]]] = {}
    for m in as_manifests(sweeps):
        for key, entry in m.peaks.items():
            found = [{"flops_per_sec": p["flops_per_sec"], "spread": p.get("spread")}
                     for p in (entry.get("start"), entry.get("end")) if p and p.get("flops_per_sec")]
            if found and entry.get("start"):
                out.setdefault(m.sweep_id, {})[key] = found
    return out


def spell_readings(sweeps: list[SweepManifest]) -> dict[str, list[tuple[int, float]]]:
    """sweep id -> its speed reference's readings [(position, step seconds)] (bench/measurement/spells.py)."""
    return {m.sweep_id: [(r["position"], r["step_s"]) for r in m.speed_reference]
            for m in as_manifests(sweeps) if m.speed_reference}


def config_tables(records: list[Record],
                  sweeps: list[SweepManifest]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(runs: one row per record, processes: one per successful process, configs: one per config)."""
    records = as_records(records)
    runs = runs_table(records)
    if runs.empty:
        return runs, runs, runs
    processes = process_table(records, runs, spell_readings(sweeps))
    return runs, processes, configs_frame(estimate_configs(processes, list(runs.columns), sweep_peaks(sweeps)))


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
