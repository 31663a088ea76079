"""Energy in the report: images per joule where a meter read the run (NVML per GPU, RAPL on CPUs), the reason where
none could (a virtual machine, root-only counters, a GPU older than Volta), and the hardware label of GPU rows."""

from __future__ import annotations

import pandas as pd

from ..host.devices import is_gpu
from .marks import NOT_MEASURED, energy_text  # noqa: F401 - energy_text: the tables' cell, used below


def mean_energy(frame: pd.DataFrame) -> tuple[float | None, str | None]:
    """(mean images per joule over the processes that measured it, the reasons of those that did not): one config."""
    measured = frame["images_per_joule"].dropna()
    reasons = "; ".join(dict.fromkeys(r for r in frame["energy_reason"] if isinstance(r, str) and r))
    return (float(measured.mean()) if len(measured) else None), (reasons or None)


def hardware_label(hardware: str, device: str, precision: str | None = None, link: dict | None = None) -> str:
    """What a row ran on: a GPU row its GPUs' model, count, interconnect and precision ("2 x NVIDIA H100 80GB HBM3,
    NVLink, bf16"); a CPU row the CPU and precision. Without `precision`, the hardware alone (the per-hardware
    charts, whose series carry the precision)."""
    if is_gpu(device):
        link = link or {}
        count = link.get("gpus") or 1
        interconnect = link.get("interconnect") or "single GPU"
        hardware = f"{count} x {hardware}, {interconnect}"
    return hardware if precision is None else f"{hardware}, {precision}"


def energy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per hardware, model, mode, precision, series and batch: images per joule (median over the processes that
    measured it), or why none was measured. Empty when no successful run exists."""
    if runs.empty or "images_per_joule" not in runs:
        return pd.DataFrame()
    ok = runs[runs["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame()
    rows = []
    keys = ["platform", "model", "mode", "precision", "series", "batch_size"]
    for values, g in ok.groupby(keys, sort=True):
        measured = g["images_per_joule"].dropna()
        _, reasons = mean_energy(g)
        rows.append({**dict(zip(keys, values)), "processes": len(g), "measured": len(measured),
                     "images/J": energy_text(float(measured.median()) if len(measured) else None, reasons)})
    return pd.DataFrame(rows).rename(columns={"batch_size": "batch"})


def measured_energy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of `energy_table` where a meter read at least one process (the report's section; where none was
    read, the details give the reason per row)."""
    table = energy_table(runs)
    return table[table["measured"] > 0] if not table.empty else table
