"""The sweep manifest: what a sweep planned, in which order, what it dropped, and its device peaks.

One JSON file per sweep invocation under results/<host>/sweeps/, rewritten atomically as the sweep
goes. Records point to it by `sweep.id`; the report reads it for the methodology (order, seed,
repeats, budget), the "not run: over budget" list, and the peak each utilisation is computed against.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from .store import atomic_write_json, host_dir

SWEEPS = "sweeps"


def new_sweep_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def sweep_path(results_dir: Path | str, sweep_id: str, host: str | None = None) -> Path:
    return host_dir(results_dir, host) / SWEEPS / f"{sweep_id}.json"


def write_sweep(results_dir: Path | str, manifest: dict) -> Path:
    path = sweep_path(results_dir, manifest["sweep_id"], manifest["host"])
    atomic_write_json(path, manifest)
    return path


def read_sweep(results_dir: Path | str, sweep_id: str, host: str | None = None) -> dict | None:
    path = sweep_path(results_dir, sweep_id, host)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def load_sweeps(results_dir: Path | str) -> list[dict]:
    """Every readable sweep manifest under every host folder, oldest first."""
    out = []
    for path in sorted(Path(results_dir).glob(f"*/{SWEEPS}/[!.]*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda m: m.get("started", ""))


def sweep_peak(manifest: dict | None, key: str) -> dict | None:
    """The peak a utilisation uses: the best of the sweep's start and end trials, with both kept."""
    if not manifest:
        return None
    entry = (manifest.get("peaks") or {}).get(key)
    if not entry or not entry.get("start"):
        return None
    measured = [m for m in (entry.get("start"), entry.get("end")) if m]
    best = max(measured, key=lambda m: m["flops_per_sec"])
    start, end = entry["start"]["flops_per_sec"], (entry.get("end") or {}).get("flops_per_sec")
    return {**best, "start_flops_per_sec": start, "end_flops_per_sec": end,
            "start_end_change": None if end is None else end / start - 1, "sweep_id": manifest["sweep_id"]}


def wall_key(config_key: str, repeat: int, attempt: int) -> str:
    """How a manifest's `process_walls` (seconds each process took in papermill) names one process."""
    return f"{config_key}/{repeat}/{attempt}"


def process_walls(manifests: list[dict]) -> dict[str, float]:
    """Every process's wall time the manifests recorded, by `wall_key` (the latest sweep's on a repeat)."""
    out: dict[str, float] = {}
    for m in manifests:
        out.update(m.get("process_walls") or {})
    return out
