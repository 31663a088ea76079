"""The sweep manifest: what a sweep planned, in which order, what it dropped, and its device peaks.

One JSON file per sweep invocation under results/<host>/sweeps/, rewritten atomically as the sweep
goes. Records point to it by `sweep.id`; the report reads it for the methodology (order, seed,
repeats, budget), the "not run: over budget" list, and the peak each utilisation is computed against.

Typed sections like the record's (bench/results/record.py: keys it does not declare are kept, optional
keys an older manifest lacks stay absent). Formats: 1 had no `schema_version` key (every manifest written
before the type; keys were added over time, so a format 1 manifest may lack any key but its id, host and
profile); 2 is format 1 with its version stated. Every field has a default so that a partial manifest (a test's,
a notebook's) loads unchecked; the checked load requires what the schema requires.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SchemaError
from .record import JsonFormat, Section, Versioned, optional, section
from .schema import compile_check, json_schema, key
from .store import atomic_write_json, host_dir

SWEEPS = "sweeps"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)


@section
class PlannedRun(Section):
    """One process of the sweep's order (the adaptive plan's extra processes are appended as they are queued)."""

    config_key: str = key(default=None)
    repeat: int = key(default=None)
    round: int | None = optional()
    label: str | None = optional()


@section
class DroppedConfig(Section):
    """A config the sweep did not run, and why (over the profile's budget)."""

    config_key: str = key(default=None)
    label: str = key(default=None)
    reason: str = key(default=None)


@section
class Retry(Section):
    """A disturbed (or jittery) process queued again at the end; `attempt` is the one that was disturbed."""

    config_key: str = key(default=None)
    repeat: int = key(default=None)
    attempt: int = key(default=None)
    reason: str = key(default=None)


@section
class ExtraProcess(Section):
    """A process the adaptive plan added after the rounds, and why (bench/sweep/plan.py: next_process)."""

    config_key: str = key(default=None)
    label: str = key(default=None)
    repeat: int = key(default=None)
    reason: str = key(default=None)


@section
class AdaptivePlan(Section):
    """`repeats: adaptive`: every config gets `min_repeats` processes, the undecided ones up to `max_repeats`."""

    min_repeats: int = key(default=None)
    max_repeats: int = key(default=None)


@dataclass(frozen=True)
class SweepPeak:
    """The peak a utilisation uses: the best of the sweep's start and end trials (bench/measurement/peak.py's
    measurement, as a dict), with both kept."""

    best: dict[str, Any]
    start_flops_per_sec: float
    end_flops_per_sec: float | None
    sweep_id: str

    @property
    def flops_per_sec(self) -> float:
        return self.best["flops_per_sec"]

    @property
    def spread(self) -> float | None:
        """The best measurement's trial spread (None when unrecorded)."""
        return self.best.get("spread")


@section
class SweepManifest(Versioned):
    """One sweep: its plan, its progress (rewritten as it goes), its peaks and what its estimate was worth.
    Keys are in the order the sweep first writes them; those written later are optional."""

    sweep_id: str = key(default=None, minLength=1)
    host: str = key(default=None, minLength=1)
    profile: str = key(default=None)
    description: str = optional("")
    order_seed: int | None = optional()
    repeats: int | None = optional()
    adaptive: AdaptivePlan | None = optional()
    extra_processes: list[ExtraProcess] = optional([])
    retries: int | None = optional()
    budget_minutes: float | None = optional()
    equivalence_margin: float | None = optional()  # the profile's margin for "equivalent" (bench/stats/verdicts.py)
    force: bool | None = optional()
    started: str | None = optional()
    finished: str | None = optional()
    status: str = optional("unknown")  # running, finished, interrupted
    estimate_s: float | None = optional()  # printed before the start: the rounds and the expected extra processes
    rounds_estimate_s: float | None = optional()
    expected_extra_s: float | None = optional()
    order: list[PlannedRun] = optional([])
    already_done: int = optional(0)  # repetitions recorded before this sweep started
    dropped: list[DroppedConfig] = optional([])
    # peak key -> {"start": measurement, "end": measurement} (bench/measurement/peak.py's dicts, None when unmeasured)
    peaks: dict[str, dict[str, Any]] = optional({})
    retried: list[Retry] = optional([])
    networks: list[str] = optional([])
    not_applicable: list[str] = optional([])
    process_walls: dict[str, float] = optional({})  # wall_key -> seconds the process took in papermill
    runs_s: float | None = optional()  # the timed runs' wall time (what the estimate is of)
    estimate_error: float | None = optional()
    estimate_error_with_queued: float | None = optional()
    retry_estimate_s: float = optional(0.0)
    extra_estimate_s: float = optional(0.0)
    executor: dict[str, Any] | None = optional()  # the executor's own state (bench/sweep/executors.py)
    shard: str | None = optional()
    busy_warning: str | None = optional()
    memory_searches: list[str] = optional([])
    elapsed_s: float | None = optional()
    runs_done: int | None = optional()
    # cache -> folder: the compiled-artefact caches its processes could read (bench/adapters/compile_cache.py); each
    # record says whether its build hit or missed (startup.build_cache)
    compile_caches: dict[str, str] = optional({})
    # the speed reference's readings (bench/sweep/speed_reference.py): {position, step_s, at}; its network in words,
    # and why it stopped where it did
    speed_reference: list[dict[str, Any]] = optional([])
    speed_reference_label: str | None = optional()
    speed_reference_failed: str | None = optional()

    def peak(self, key: str) -> SweepPeak | None:
        """The peak a utilisation uses for one peak key (device|precision|threads); None without a start trial."""
        entry = self.peaks.get(key)
        if not entry or not entry.get("start"):
            return None
        best = max([m for m in (entry["start"], entry.get("end")) if m], key=lambda m: m["flops_per_sec"])
        return SweepPeak(best, entry["start"]["flops_per_sec"], (entry.get("end") or {}).get("flops_per_sec"),
                         self.sweep_id)

    @property
    def planned(self) -> set[tuple[str, int]]:
        """(config key, repeat) of every process in the order."""
        return {(o.config_key, o.repeat) for o in self.order}


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's JSON in the current format (format 1 differs only in lacking its version)."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"invalid sweep manifest: {type(data).__name__}, not an object")
    version = data.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise SchemaError(f"invalid sweep manifest: schema_version {version!r}; "
                          f"readable: {', '.join(map(str, READABLE_VERSIONS))}")
    return {**data, "schema_version": SCHEMA_VERSION}


def _manifest_schema() -> dict:
    schema = json_schema(SweepManifest)
    schema["properties"] = {"schema_version": {"const": SCHEMA_VERSION}, **schema["properties"]}
    return schema


MANIFEST_SCHEMA = _manifest_schema()
SweepManifest.json_format = JsonFormat(SCHEMA_VERSION, upgrade, compile_check(MANIFEST_SCHEMA, "sweep manifest"))


def as_manifests(manifests: Iterable[SweepManifest | Mapping[str, Any]]) -> list[SweepManifest]:
    """Manifests as SweepManifests: those given as JSON (tests and notebooks hold them as dicts) taken as they are."""
    return [m if isinstance(m, SweepManifest) else SweepManifest.from_json(m, check=False) for m in manifests]


def new_sweep_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def sweep_path(results_dir: Path | str, sweep_id: str, host: str | None = None) -> Path:
    return host_dir(results_dir, host) / SWEEPS / f"{sweep_id}.json"


def write_sweep(results_dir: Path | str, manifest: SweepManifest | Mapping[str, Any]) -> Path:
    """Write (or rewrite) a sweep's manifest atomically in the current format."""
    [manifest] = as_manifests([manifest])
    path = sweep_path(results_dir, manifest.sweep_id, manifest.host)
    atomic_write_json(path, manifest.to_json())
    return path


def _read(path: Path) -> SweepManifest | None:
    return _read_or_why(path)[0]


def _read_or_why(path: Path) -> tuple[SweepManifest | None, str | None]:
    """The manifest at `path`, or None and why it cannot be read (not JSON, not this format: a list, a string, a
    field of the wrong type)."""
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            return None, f"a JSON {type(data).__name__}, not a sweep manifest"
        return SweepManifest.from_json(data), None
    except (OSError, ValueError, SchemaError, TypeError, AttributeError, KeyError) as exc:
        return None, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _all_sweeps(results_dir: Path | str) -> list[tuple[Path, SweepManifest | None, str | None]]:
    """(path, manifest or None, why not) of every sweep manifest file under every host folder."""
    return [(path, *_read_or_why(path)) for path in sorted(Path(results_dir).glob(f"*/{SWEEPS}/[!.]*.json"))]


def set_aside_sweeps(results_dir: Path | str) -> list[str]:
    """The sweep manifests under `results_dir` that cannot be read (another checkout's, a torn file), each as
    'host/sweeps/file: why': the plan and the report go on without them, and say so."""
    return [f"{path.parent.parent.name}/{SWEEPS}/{path.name}: {why}"
            for path, manifest, why in _all_sweeps(results_dir) if manifest is None]


def read_sweep(results_dir: Path | str, sweep_id: str, host: str | None = None) -> SweepManifest | None:
    return _read(sweep_path(results_dir, sweep_id, host))


def load_sweeps(results_dir: Path | str) -> list[SweepManifest]:
    """Every readable sweep manifest under every host folder, oldest first."""
    return sorted((m for _, m, _ in _all_sweeps(results_dir) if m is not None), key=lambda m: str(m.started or ""))


def estimate_error(estimate_s: float | None, actual_s: float | None) -> float | None:
    """(estimate - actual) / actual: positive when the estimate was too long; None without both."""
    if not estimate_s or not actual_s:
        return None
    return (estimate_s - actual_s) / actual_s


def wall_key(config_key: str, repeat: int, attempt: int) -> str:
    """How a manifest's `process_walls` (seconds each process took in papermill) names one process."""
    return f"{config_key}/{repeat}/{attempt}"


def process_walls(manifests: Iterable[SweepManifest | Mapping[str, Any]]) -> dict[str, float]:
    """Every process's wall time the manifests recorded, by `wall_key` (the latest sweep's on a repeat)."""
    out: dict[str, float] = {}
    for m in as_manifests(manifests):
        out.update(m.process_walls or {})
    return out
