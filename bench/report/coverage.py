"""What each sweep planned against what its records show: done, failed, retries and duration, finished or not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..results.record import Record, as_records
from ..results.sweep_manifest import SweepManifest, as_manifests
from ..values import counted

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
    extra: int  # of `planned`, the adaptive plan's extra processes (added while the sweep ran)
    single: int  # of `done`, runs of one process (the single-process statistics' unit), on either kind of data
    distributed: int  # of `done`, distributed runs (a launcher and its ranks: judged by the scaling rules)
    attempts: int  # the sweep's own runs started, retries that ran included
    minutes: float | None  # elapsed; for a running sweep up to the end of its newest run
    minutes_so_far: bool  # True when the sweep had not ended: `minutes` is a lower bound
    files: int = 0  # of `single`, runs on real files (the input-pipeline section's; the rest are on synthetic data)

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

    def runs_text(self) -> str:
        """The sweep's counts, defined once: page 1, the header, the methodology and the terminal summary say this.

        A run is one config at one repetition (what the plan counts); an attempt is one start of a run (a retry of a
        disturbed run is a second attempt of the same run, and the later attempt is the one that counts)."""
        parts = [f"{self.done} of {self.planned} planned runs recorded"]
        detail = []
        if self.extra:
            detail.append(f"{self.planned - self.extra} at the start + {self.extra} extra for undecided comparisons")
        if self.distributed or self.files:
            detail.append(kinds_text(self.single - self.files, self.files, self.distributed))
        if detail:
            parts.append(f"({'; '.join(detail)})")
        retried = self.retries_done
        parts.append(f"in {self.attempts} attempts" + (f" ({retried} {'retry' if retried == 1 else 'retries'})"
                                                       if retried > 0 else ""))
        return " ".join(parts)

    def retries(self) -> str:
        if not self.retries_queued:
            return "no disturbed or jittery run retried"
        return (f"{counted(self.retries_queued, 'retry', 'retries')} of disturbed or jittery runs queued, "
                f"{self.retries_done} run, {self.retries_pending} pending")


SYNTHETIC, FILES, DISTRIBUTED = "synthetic", "files", "distributed"


def run_kind(record: Record) -> str:
    """What kind of run a record is, as every count of the report splits them: a single process on synthetic data
    (the framework comparisons'), a single process on real files (the input pipeline's), or distributed."""
    if record.distributed is not None or record.config.distributed:
        return DISTRIBUTED
    return FILES if record.config.data == "files" else SYNTHETIC


def kinds_text(synthetic: int, files: int = 0, distributed: int = 0) -> str:
    """Runs split by kind in the report's one wording: '60 single-process on synthetic data, 4 on real files, 8
    distributed' (a kind with none is left out)."""
    parts = [f"{synthetic} single-process on synthetic data"] if synthetic or not (files or distributed) else []
    if files:
        parts.append(f"{files} {'on real files' if parts else 'single-process on real files'}")
    if distributed:
        parts.append(f"{distributed} distributed")
    return ", ".join(parts)


def successful_runs_text(records: list[Record]) -> str:
    """The successful runs among `records`, split by kind: what the frameworks table and the methodology count."""
    ok = [r for r in as_records(records) if r.status == "ok"]
    kinds = [run_kind(r) for r in ok]
    return (f"{len(ok)} successful {'run' if len(ok) == 1 else 'runs'} ("
            f"{kinds_text(kinds.count(SYNTHETIC), kinds.count(FILES), kinds.count(DISTRIBUTED))})")


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
    kinds = [run_kind(r) for key, r in latest.items() if key in order]
    distributed = kinds.count(DISTRIBUTED)
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
        retries_queued=len(retried), retries_done=retries_done, minutes=minutes, minutes_so_far=not ended,
        extra=len(manifest.extra_processes or []),
        distributed=distributed, single=manifest.already_done + len(order & set(latest)) - distributed,
        files=kinds.count(FILES),
        # the store keeps the attempt that counts; the manifest's retries say how many attempts came before
        attempts=manifest.already_done + len(order & set(latest)) + retries_done)


def budget_text(manifest: SweepManifest, c: SweepCoverage) -> str:
    """The budget against what the runs took, and how many configs the plan dropped to fit it (one wording)."""
    [m] = as_manifests([manifest])
    if not m.budget_minutes:
        return f"no time budget; {c.duration()}"
    parts = [f"budget {m.budget_minutes:g} min for its runs"]
    if m.estimate_s is not None:
        parts.append(f"estimated {m.estimate_s / 60:.1f} min")
    if m.runs_s is not None:
        parts.append(f"the runs took {m.runs_s / 60:.1f} min ({m.runs_s / 60 / m.budget_minutes - 1:+.0%} against "
                     "the budget)")
    searched = ", largest-batch search" if m.memory_searches else ""
    parts.append(f"the whole sweep (peaks, runs{searched}) {c.duration().removeprefix('took ')}")
    dropped = len(m.dropped or [])
    return ", ".join(parts) + ("; no config dropped to fit the budget" if not dropped else
                               f"; {dropped} {'config' if dropped == 1 else 'configs'} dropped to fit the budget")


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
            f"{c.runs_text()}; {c.planned - c.done} not yet run, {c.failed} failed "
            f"or skipped; {c.retries()}; {c.duration()}. The numbers below cover only what was recorded. "
            f"To complete it: {c.command}, which runs what is not yet recorded.")
    return "\n>\n".join(lines)
