"""The first lines of the report: an unfinished sweep first, then the status, the machine, and what was covered."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from ...values import counted, sentence
from .. import answer, coverage
from .base import Section, Text, all_records


def _earlier_sweeps(sweeps: list[dict], c) -> str:
    """What the newest sweep of a profile on a host does not say: the earlier sweeps of it whose records count too
    (the sweep is a level of the statistics)."""
    earlier = sum(m["host"] == c.host and m["profile"] == c.profile for m in sweeps) - 1
    return f" (the newest of {earlier + 1} sweeps of it; every sweep's records count)" if earlier > 0 else ""


def _processes_phrase(configs: pd.DataFrame) -> str:
    if configs.empty:
        return "no processes"
    lo, hi = int(configs["processes"].min()), int(configs["processes"].max())
    return f"{lo} fresh processes" if lo == hi else f"{lo} to {hi} fresh processes"


def header(d) -> str:
    """The report's first lines: an unfinished sweep first, then the status and the machine, one line each (where
    the numbers come from is `provenance`, on page 2)."""
    top = coverage.banner(d.sweeps, all_records(d))
    top = top + "\n\n" if top else ""
    if d.runs.empty:
        note = d.only_distributed()
        return f"{top}Built {_built()}. " + (sentence(note) if note else "No results yet.")
    return f"{top}{answer.short_status(d, all_records(d))} {answer.machine_line(d.records)}"


def _built() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def provenance(d) -> str:
    """When, which profile(s), which machines, how much was covered (coverage from the sweep manifests and records,
    never assumed)."""
    runs, configs = d.runs, d.configs
    if runs.empty:
        return f"Built {_built()}."
    hosts = "; ".join(f"**{h}** ({', '.join(sorted(set(g['hardware'])))})" for h, g in runs.groupby("host"))
    # the counts are the status line's (coverage.runs_text); said once on page 1
    sweeps = "; ".join(f"`{c.profile}` on {c.host}: {'complete' if c.complete else c.status}"
                       f"{_earlier_sweeps(d.sweeps, c)}"
                       for c in coverage.coverages(d.sweeps, all_records(d)))
    dates = sorted(runs["created"].str[:10])
    status = runs["status"].value_counts()
    return (f"{answer.status_line(d, all_records(d))}\n\n"
            f"Built {_built()} from {len(runs)} single-process runs recorded {dates[0]}"
            f"{' to ' + dates[-1] if dates[-1] != dates[0] else ''} on {hosts}; "
            f"sweep(s): {sweeps or 'none (single runs)'}; {counted(len(configs), 'config')}, each measured in "
            f"{_processes_phrase(configs)}; of the {len(runs)} single-process runs "
            f"{int(status.get('error', 0))} failed and {int(status.get('skipped', 0))} were skipped. "
            "Every number was measured by this project unless it is labelled *published*.")


def render(d) -> Section:
    return Section([Text(header(d))])
