"""Every system the source studies compared (and today's choices): measured here, or why not."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pandas as pd

from ..systems import status_rows
from .base import Section, Table, heading

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


def render(d) -> Section:
    return Section([heading("Frameworks: measured and not", INTRO, level=3),
                    Table(frameworks_table(d.records), "none")])
