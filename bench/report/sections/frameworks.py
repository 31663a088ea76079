"""Every system the source studies compared (and today's choices): measured here, or why not."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pandas as pd

from ..coverage import successful_runs_text
from ..systems import status_rows
from .base import Section, Table, all_records, heading

INTRO = ("Every system the source studies compared, and today's common choices: measured here, or why not and what "
         "succeeds it.")

if TYPE_CHECKING:
    from ...results.record import Record


def frameworks_table(records: list[Record] | None = None) -> pd.DataFrame:
    """Every system the source studies compared (and today's choices): measured here, or why not."""
    counts = None
    if records is not None:
        counts = {}
        for r in records:
            if r.status == "ok":
                version = r.framework_version or "version unrecorded"
                per = counts.setdefault(r.config.framework, Counter())
                per[f"{version} on {r.host}"] += 1
    return pd.DataFrame(status_rows(counts))


def counted_text(records: list[Record]) -> str:
    """What the table's run counts are: every successful run of every kind and sweep, the kinds split as page 1 splits
    them (bench/report/coverage.py)."""
    return (f" Its counts are the successful runs in these results, of every sweep and kind: "
            f"{successful_runs_text(records)}.")


def render(d) -> Section:
    records = all_records(d)  # every kind, as page 1 and the methodology count them
    return Section([heading("Frameworks: measured and not", INTRO + counted_text(records), level=3),
                    Table(frameworks_table(records), "none")])
