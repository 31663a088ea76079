"""What a sweep did, for the command's summary: runs, retries, extra processes, failures, and time spent."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results.sweep_manifest import SweepManifest


@dataclass
class SweepResult:
    sweep_id: str = ""
    ran: list[str] = field(default_factory=list)  # run labels, one per process (retries included)
    already_done: list[str] = field(default_factory=list)  # "config key/repeat"
    dropped: list[str] = field(default_factory=list)  # labels not run: over budget
    retried: list[str] = field(default_factory=list)  # "label (repeat r): reason"
    extra: list[str] = field(default_factory=list)  # adaptive plan: "label (repeat r): why it got one more process"
    still_disturbed: list[str] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (label, status, reason)
    estimate_s: float = 0.0
    papermill_s: float = 0.0  # wall time inside papermill (kernel start, imports, run)
    measured_s: float = 0.0  # the runs' own duration as recorded (what the harness spent)
    manifest: SweepManifest | None = None  # the sweep manifest as written last
