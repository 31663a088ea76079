"""Results on disk: atomic append-only records under results/<host>/records/, and tidy loaders."""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..host.manifest import host_name
from .schema import upgrade_record, validate_record

if TYPE_CHECKING:
    import pandas as pd

RECORDS = "records"
QUARANTINE = "quarantine"


def host_dir(results_dir: Path | str, host: str | None = None) -> Path:
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
    rep = f"r{record.get('repeat', 0)}a{record.get('attempt', 0)}"
    name = f"{stamp}_{c['framework']}_{c['model']}_{c['mode']}_bs{c['batch_size']}_{rep}_{record['config_key']}.json"
    return host_dir(results_dir, record["host"]) / RECORDS / name


def write_record(record: dict, results_dir: Path | str) -> Path:
    """Schema-check, then write atomically. An invalid record is never written."""
    validate_record(record)
    path = record_path(results_dir, record)
    atomic_write_json(path, record)
    return path


def record_files(results_dir: Path | str) -> list[Path]:
    return sorted(Path(results_dir).glob(f"*/{RECORDS}/[!.]*.json"))


def read_record(path: Path) -> dict:
    """One record file, validated and upgraded to the current format (raises OSError/ValueError)."""
    record = json.loads(path.read_text())
    validate_record(record)
    return upgrade_record(record)


def load_records(results_dir: Path | str, latest: bool = True) -> list[dict]:
    """Every valid record under every host folder; unreadable ones are reported and skipped.

    With `latest`, each repetition of a config on a host counts once: its newest attempt (a retry
    after a disturbed run, or a re-run with sweep --force). Older attempts stay on disk as evidence.
    """
    records = []
    for path in record_files(results_dir):
        try:
            records.append(read_record(path))
        except (OSError, ValueError) as exc:
            warnings.warn(f"skipping {path}: {exc}", stacklevel=2)
    if latest:
        newest: dict[tuple[str, str, int], dict] = {}
        for r in sorted(records, key=lambda r: r["created"]):
            newest[r["host"], r["config_key"], r["repeat"]] = r
        records = list(newest.values())
    return records


def host_records(results_dir: Path | str, host: str | None = None, quarantine: bool = True,
                 config_key: str | None = None) -> list[dict]:
    """This host's valid records (every attempt), or only one config's (its key ends the file name).
    Unreadable files are moved to records/quarantine/ with a warning, so a resume never counts a
    truncated or foreign file as a finished run."""
    folder = host_dir(results_dir, host) / RECORDS
    out = []
    for path in sorted(folder.glob(f"[!.]*_{config_key}.json" if config_key else "[!.]*.json")):
        try:
            out.append(read_record(path))
        except (OSError, ValueError) as exc:
            if quarantine:
                target = folder / QUARANTINE / path.name
                target.parent.mkdir(exist_ok=True)
                os.replace(path, target)
                warnings.warn(f"moved unreadable record {path.name} to {target.parent}: {exc}", stacklevel=2)
    return out


def finished_runs(results_dir: Path | str, host: str | None = None) -> set[tuple[str, int]]:
    """(config key, repeat) pairs with a valid record on this host: what a resumed sweep skips."""
    return {(r["config_key"], r["repeat"]) for r in host_records(results_dir, host)}


def _certificate_columns(fairness: dict | None) -> dict:
    """The fairness certificate in two columns: checks that applied, and those that failed."""
    from ..measurement.certificate import CERTIFICATE_CHECKS

    f = fairness or {}
    return {"certificate_checked": sum(f.get(c) is not None for c in CERTIFICATE_CHECKS),
            "certificate_failed": [c for c in CERTIFICATE_CHECKS if f.get(c) is False]}


def framework_version(record: dict) -> str | None:
    """The framework version the record's manifest names (None when it names none)."""
    return ((record.get("manifest") or {}).get("framework") or {}).get("version")


def _run_row(r: dict) -> dict:
    s = r.get("summary") or {}
    m = r.get("model") or {}
    phases = (r.get("phases") or {}).get("median_ms", {})
    interference = r.get("interference") or {}
    row = {"record_id": r["record_id"], "config_key": r["config_key"], "host": r["host"],
           "created": r["created"], "status": r["status"], "reason": r["reason"], "label": r["label"],
           "repeat": r["repeat"], "attempt": r["attempt"], "sweep_id": (r.get("sweep") or {}).get("id"),
           "order_index": (r.get("sweep") or {}).get("order_index"),
           "run_flags": [f["name"] for f in r["flags"]], "run_flag_reasons": [f["reason"] for f in r["flags"]],
           "other_cpu_share": interference.get("other_cpu_share"),
           "steal_share": interference.get("steal_share"),
           "warmup_iterations": len(r["samples"]["warmup_s"]),
           "timed_stop": r["samples"].get("timed_stop"),
           **r["config"],
           "hardware": r["hardware"],
           "framework_version": framework_version(r),
           "params": m.get("params"), "flops_per_image": m.get("flops_per_image"),
           "peak_flops": (r.get("peak") or {}).get("flops_per_sec"),
           "utilisation": r["utilisation"],
           "peak_memory_bytes": (r.get("memory") or {}).get("peak_bytes"),
           "duration_s": r["duration_s"],
           **_certificate_columns(r.get("fairness")),
           "prepare_s": (r.get("startup") or {}).get("prepare_s"),
           "first_iteration_s": (r.get("startup") or {}).get("first_iteration_s")}
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
