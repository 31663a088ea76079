"""The hosts in the results, from each one's newest framework run: every sentence about "the machine" (cores, GPUs)
is computed from these, never written for the machine the project was built on."""

from __future__ import annotations

from collections import Counter

from ..adapters import measures_a_framework
from ..results.doctor import read_doctors
from ..results.record import Record, as_records


def newest_runs(records: list[Record]) -> dict[str, Record]:
    """host -> its newest framework run that recorded a manifest (sorted by host)."""
    newest: dict[str, Record] = {}
    for r in sorted(as_records(records), key=lambda r: r.created):
        if r.manifest is not None and measures_a_framework(r.config.framework):
            newest[r.host] = r
    return dict(sorted(newest.items()))


def gpus_of(record: Record) -> str:
    """A host's GPUs counted by model ("8 x NVIDIA H100 80GB HBM3"), "no GPU" where it has none."""
    counts = Counter(g.name or "unnamed GPU" for g in record.manifest.gpus)
    return ", ".join(f"{n} x {name}" for name, n in counts.items()) if counts else "no GPU"


def _each(phrases: dict[str, str]) -> str:
    return "; ".join(f"{host}: {text}" for host, text in phrases.items())


def cores_said(records: list[Record]) -> str:
    """The CPU cores of the hosts in the results ("test-host: 2 cores"), or that no host recorded its machine."""
    hosts = newest_runs(records)
    return _each({h: f"{r.manifest.cpu.physical_cores or 'unknown'} cores" for h, r in hosts.items()}) or \
        "no host recorded its machine"


def gpus_said(records: list[Record]) -> str:
    """The GPUs of the hosts in the results ("gpu-host: 8 x NVIDIA H100 80GB HBM3; test-host: no GPU"), or "no GPU
    in these results" where no host recorded its machine."""
    return _each({h: gpus_of(r) for h, r in newest_runs(records).items()}) or "no GPU in these results"


def doctor_said(results_dir) -> dict[str, str]:
    """host -> the table `bench doctor` last printed there (results/<host>/doctor.json), for hosts where it ran."""
    return read_doctors(results_dir) if results_dir else {}
