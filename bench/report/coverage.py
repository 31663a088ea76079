"""What each sweep planned against what its records show: done, failed, retries and duration, finished or not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..results.record import Record, as_records
from ..results.sweep_manifest import SweepManifest, as_manifests

FINISHED = "finished"


@dataclass
class SweepCoverage:
    """One sweep's coverage, computed from its manifest and the records that name it."""

    sweep_id: str
    host: str
    profile: str
    status: str  # the manifest's: running, interrupted or finished
    planned: int  # runs the sweep set out to have: recorded before it started plus its own order
    done: int  # of those, recorded (before the sweep or by it, any status)
    failed: int  # of the sweep's own runs, whose latest attempt failed or was skipped
    retries_queued: int
    retries_done: int
    minutes: float | None  # elapsed; for a running sweep up to the end of its newest run
    minutes_so_far: bool  # True when the sweep had not ended: `minutes` is a lower bound

    @property
    def retries_pending(self) -> int:
        return self.retries_queued - self.retries_done

    @property
    def complete(self) -> bool:
        return self.status == FINISHED and self.done >= self.planned and not self.retries_pending

    @property
    def command(self) -> str:
        return f"`make sweep PROFILE={self.profile}` (or `python -m bench sweep --profile {self.profile}`)"

    def duration(self) -> str:
        if self.minutes is None:
            return "no run recorded yet"
        if self.minutes_so_far:
            return f"{self.minutes:.0f} min so far, up to the end of its newest run"
        return f"took {self.minutes:.0f} min"

    def retries(self) -> str:
        if not self.retries_queued:
            return "no disturbed run retried"
        return (f"{self.retries_queued} retries of disturbed runs queued, {self.retries_done} run, "
                f"{self.retries_pending} pending")


def newest_sweeps(sweeps: list[SweepManifest]) -> list[SweepManifest]:
    """The newest sweep of each host and profile (a later one supersedes an earlier, unfinished one)."""
    newest: dict[tuple[str, str], SweepManifest] = {}
    for m in sorted(as_manifests(sweeps), key=lambda m: m.started or ""):
        newest[m.host, m.profile] = m
    return [newest[k] for k in sorted(newest)]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def sweep_coverage(manifest: SweepManifest, records: list[Record]) -> SweepCoverage:
    """`manifest` against every record (any status, distributed ones included) that names its sweep."""
    [manifest] = as_manifests([manifest])
    sid = manifest.sweep_id
    mine = [r for r in as_records(records) if r.sweep and r.sweep.id == sid]
    order = manifest.planned
    latest: dict[tuple[str, int], Record] = {}
    for r in sorted(mine, key=lambda r: (r.attempt, r.created or "")):
        latest[r.config_key, r.repeat] = r
    attempts = {(r.config_key, r.repeat, r.attempt) for r in mine}
    # The runner appends a retry to the manifest when it queues it; it has run once a later attempt is recorded.
    retried = manifest.retried
    retries_done = sum((e.config_key, e.repeat, e.attempt + 1) in attempts for e in retried)
    ended = manifest.elapsed_s is not None
    if ended:
        minutes = manifest.elapsed_s / 60
    elif mine and manifest.started:
        # A record is created when its run starts: its own duration brings it to the run's end.
        last = max(_time(r.created) + timedelta(seconds=r.duration_s or 0) for r in mine)
        minutes = (last - _time(manifest.started)).total_seconds() / 60
    else:
        minutes = None
    return SweepCoverage(
        sweep_id=sid, host=manifest.host, profile=manifest.profile, status=manifest.status,
        planned=manifest.already_done + len(order),
        done=manifest.already_done + len(order & set(latest)),
        failed=sum(r.status != "ok" for key, r in latest.items() if key in order),
        retries_queued=len(retried), retries_done=retries_done, minutes=minutes, minutes_so_far=not ended)


def coverages(sweeps: list[SweepManifest], records: list[Record]) -> list[SweepCoverage]:
    """The coverage of the newest sweep of each host and profile."""
    return [sweep_coverage(m, records) for m in newest_sweeps(sweeps)]


def banner(sweeps: list[SweepManifest], records: list[Record]) -> str:
    """Markdown that opens the report when a sweep is unfinished (empty when every sweep is complete)."""
    lines = []
    for c in coverages(sweeps, records):
        if c.complete:
            continue
        # "running" is what the manifest says until the sweep ends; a killed sweep never rewrites it.
        state = ("has not finished (status running)" if c.status == "running" else
                 "finished, but not every planned run is recorded" if c.status == FINISHED else f"is {c.status}")
        lines.append(
            f"> **Incomplete: sweep `{c.sweep_id}` (profile `{c.profile}`, {c.host}) {state}.** "
            f"{c.done} of {c.planned} planned runs recorded ({c.planned - c.done} not yet run), {c.failed} failed "
            f"or skipped; {c.retries()}; {c.duration()}. The numbers below cover only what was recorded. "
            f"To complete it: {c.command}, which runs what is not yet recorded.")
    return "\n>\n".join(lines)
