"""Results on disk: atomic append-only records under results/<host>/records/, and tidy loaders."""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .schema import validate_record

if TYPE_CHECKING:
    import pandas as pd

RECORDS = "records"


def host_dir(results_dir: Path | str, host: str | None = None) -> Path:
    from .manifest import host_name

    return Path(results_dir) / (host or host_name())


def atomic_write_json(path: Path, obj) -> None:
    """Write JSON to a temp file in the same folder, fsync, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record_path(results_dir: Path | str, record: dict) -> Path:
    c = record["config"]
    stamp = record["created"].replace(":", "").replace("-", "")[:15]
    name = f"{stamp}_{c['framework']}_{c['model']}_{c['mode']}_bs{c['batch_size']}_{record['config_key']}.json"
    return host_dir(results_dir, record["host"]) / RECORDS / name


def write_record(record: dict, results_dir: Path | str) -> Path:
    """Schema-check, then write atomically. An invalid record is never written."""
    validate_record(record)
    path = record_path(results_dir, record)
    atomic_write_json(path, record)
    return path


def record_files(results_dir: Path | str) -> list[Path]:
    return sorted(Path(results_dir).glob(f"*/{RECORDS}/[!.]*.json"))


def load_records(results_dir: Path | str, latest: bool = True) -> list[dict]:
    """Every valid record under every host folder; unreadable ones are reported and skipped.

    With `latest`, a config re-run on the same host (sweep --force) counts once: its newest record.
    """
    records = []
    for path in record_files(results_dir):
        try:
            record = json.loads(path.read_text())
            validate_record(record)
        except (OSError, ValueError) as exc:
            warnings.warn(f"skipping {path}: {exc}", stacklevel=2)
            continue
        records.append(record)
    if latest:
        newest: dict[tuple[str, str], dict] = {}
        for r in sorted(records, key=lambda r: r["created"]):
            newest[r["host"], r["config_key"]] = r
        records = list(newest.values())
    return records


def finished_keys(results_dir: Path | str, host: str | None = None) -> set[str]:
    """Config keys that already have a record on this host (what a resumed sweep skips)."""
    out = set()
    for path in (host_dir(results_dir, host) / RECORDS).glob("[!.]*.json"):
        out.add(path.stem.rsplit("_", 1)[-1])
    return out


def _run_row(r: dict) -> dict:
    s = r.get("summary") or {}
    m = r.get("model") or {}
    phases = (r.get("phases") or {}).get("median_ms", {})
    row = {"record_id": r["record_id"], "config_key": r["config_key"], "host": r["host"],
           "created": r["created"], "status": r["status"], "reason": r["reason"], "label": r["label"],
           **r["config"],
           "hardware": r["hardware"],
           "framework_version": r["manifest"].get("framework", {}).get("version"),
           "params": m.get("params"), "flops_per_image": m.get("flops_per_image"),
           "peak_flops": (r.get("peak") or {}).get("flops_per_sec"),
           "utilisation": r["utilisation"],
           "peak_memory_bytes": (r.get("memory") or {}).get("peak_bytes"),
           "duration_s": r["duration_s"]}
    row.pop("extra", None)
    row.update(s)
    row.update({f"phase_{k}_ms": v for k, v in phases.items()})
    return row


def runs_frame(records: list[dict]) -> pd.DataFrame:
    """One tidy row per record: configuration and summary in columns."""
    import pandas as pd  # lazily: a run process never needs pandas

    return pd.DataFrame([_run_row(r) for r in records])


def load_runs(results_dir: Path | str) -> pd.DataFrame:
    """One tidy row per run across all hosts."""
    return runs_frame(load_records(results_dir))


def load_samples(results_dir: Path | str) -> pd.DataFrame:
    """One tidy row per iteration (warm-up and timed) across all hosts."""
    import pandas as pd

    rows = []
    for r in load_records(results_dir):
        cfg = {k: v for k, v in r["config"].items() if k != "extra"}
        base = {"record_id": r["record_id"], "host": r["host"],
                "hardware": r["hardware"], **cfg}
        i = 0
        for phase in ("warmup", "timed"):
            for t in r["samples"][f"{phase}_s"]:
                rows.append({**base, "iteration": i, "phase": phase, "latency_s": t,
                             "images_per_sec": cfg["batch_size"] / t if t > 0 else float("nan")})
                i += 1
    return pd.DataFrame(rows)
