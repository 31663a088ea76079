"""Results on disk: atomic append-only records under results/<host>/records/, and tidy loaders."""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..host.manifest import host_name
from .record import Record, as_records, validate_record

if TYPE_CHECKING:
    import pandas as pd

RECORDS = "records"
QUARANTINE = "quarantine"
_READ_ONLY = contextvars.ContextVar("read_only", default=False)


@contextlib.contextmanager
def read_only():
    """Inside, reading records changes nothing on disk: an unreadable file is skipped, never quarantined. A listing
    (`bench sweep --list`) reads through here, so looking at a results folder never alters it."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


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


def record_path(results_dir: Path | str, record: Record) -> Path:
    c = record.config
    stamp = record.created.replace(":", "").replace("-", "")[:15]
    rep = f"r{record.repeat}a{record.attempt}"
    name = f"{stamp}_{c.framework}_{c.model}_{c.mode}_bs{c.batch_size}_{rep}_{record.config_key}.json"
    return host_dir(results_dir, record.host) / RECORDS / name


def write_record(record: Record | Mapping[str, Any], results_dir: Path | str) -> Path:
    """Schema-check, then write atomically. An invalid record is never written. A record given as JSON
    (a dict) is loaded as a Record first, so it is checked and written in the current format."""
    if not isinstance(record, Record):
        record = Record.from_json(record)
    data = record.to_json()
    validate_record(data)
    path = record_path(results_dir, record)
    atomic_write_json(path, data)
    return path


def record_files(results_dir: Path | str) -> list[Path]:
    return sorted(Path(results_dir).glob(f"*/{RECORDS}/[!.]*.json"))


def read_record(path: Path) -> Record:
    """One record file, validated and upgraded to the current format (raises OSError/ValueError)."""
    return Record.from_json(json.loads(path.read_text()))


def load_records(results_dir: Path | str, latest: bool = True,
                 skipped: list[tuple[Path, Exception]] | None = None) -> list[Record]:
    """Every valid record under every host folder; unreadable ones are reported and skipped.

    With `latest`, each repetition of a config counts once per sweep on a host: its newest attempt in that sweep
    (a retry after a disturbed run). A second sweep of the same configs (sweep --force, or another sweep's
    folder merged in) is more data, not a replacement: the report's statistics take the sweep as a level above
    the process. A repetition that did not end ok in one sweep and ran again later counts only as its later run.
    Older attempts stay on disk as evidence. An unreadable file is warned of, or, given `skipped`, added to it with
    its error for the caller to report.
    """
    records = []
    for path in record_files(results_dir):
        try:
            records.append(read_record(path))
        except (OSError, ValueError) as exc:
            if skipped is None:
                warnings.warn(f"skipping {path}: {exc}", stacklevel=2)
            else:
                skipped.append((path, exc))
    return counted_attempts(records) if latest else records


# A run's own flag that says other programs took CPU time while it was timed (bench/measurement/flags.py).
DISTURBED = "disturbed"


def counted_attempts(records: list[Record]) -> list[Record]:
    """The attempt of each repetition that counts, once per sweep on a host: the newest attempt that other work did
    not disturb, else the newest (a retry that ran into a busy spell never replaces a clean attempt). A repetition
    that did not end ok in one sweep and ran again later counts only as its later run."""
    chosen: dict[tuple, Record] = {}
    last: dict[tuple[str, str, int], Record] = {}
    for r in sorted(records, key=lambda r: (r.created or "", r.attempt)):
        key = (r.host, r.sweep.id if r.sweep else None, r.config_key, r.repeat)
        if key not in chosen or _disturbed(r) <= _disturbed(chosen[key]):
            chosen[key] = r
        last[r.host, r.config_key, r.repeat] = r
    return [r for r in chosen.values()
            if r.status == "ok" or last[r.host, r.config_key, r.repeat] is r]


def _disturbed(r: Record) -> bool:
    return r.status == "ok" and any(f.name == DISTURBED for f in r.flags)


def host_records(results_dir: Path | str, host: str | None = None, quarantine: bool = True,
                 config_key: str | None = None) -> list[Record]:
    """This host's valid records (every attempt), or only one config's (its key ends the file name).
    Unreadable files are moved to records/quarantine/ with a warning, so a resume never counts a
    truncated or foreign file as a finished run."""
    folder = host_dir(results_dir, host) / RECORDS
    out = []
    for path in sorted(folder.glob(f"[!.]*_{config_key}.json" if config_key else "[!.]*.json")):
        try:
            out.append(read_record(path))
        except (OSError, ValueError) as exc:
            if quarantine and not _READ_ONLY.get():
                target = folder / QUARANTINE / path.name
                target.parent.mkdir(exist_ok=True)
                os.replace(path, target)
                warnings.warn(f"moved unreadable record {path.name} to {target.parent}: {exc}", stacklevel=2)
            else:  # another host's (or a listing's): named and set aside, never moved
                warnings.warn(f"set aside unreadable record {folder.parent.name}/{RECORDS}/{path.name} (not counted, "
                              f"its run planned as not done): {exc}", stacklevel=2)
    return out


def finished_runs(results_dir: Path | str, host: str | None = None) -> set[tuple[str, int]]:
    """(config key, repeat) pairs with a valid record on this host: what a resumed sweep skips."""
    return {(r.config_key, r.repeat) for r in host_records(results_dir, host)}


def runs_frame(records: list[Record]) -> pd.DataFrame:
    """One tidy row per record (`Record.to_row`): configuration and summary in columns."""
    import pandas as pd  # lazily: a run process never needs pandas

    return pd.DataFrame([r.to_row() for r in as_records(records)])
