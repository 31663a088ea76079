"""Where a process's seconds go in the latest sweep: the configs that got processes beyond the minimum, and why."""

from __future__ import annotations

import pandas as pd

from ...overhead import extra_processes_text, latest_sweep_overhead
from ..base import Section, Table, Text, all_records, heading

INTRO = ("The latest sweep's processes, per component (medians and totals; `share`: of the processes' wall time), "
         "and the configs that got processes beyond the minimum, with the reason.")


def for_display(table: pd.DataFrame) -> pd.DataFrame:
    """Seconds to one decimal, totals whole, the share as a percentage."""
    if table.empty:
        return table
    return pd.DataFrame({"component": table["component"], "what": table["what"], "processes": table["processes"],
                         "median s": [f"{v:.1f}" for v in table["median_s"]],
                         "total s": [f"{v:.0f}" for v in table["total_s"]],
                         "share": ["" if v is None or v != v else f"{v:.0%}" for v in table["share"]]})


def render(d) -> Section:
    table = for_display(latest_sweep_overhead(all_records(d), d.sweeps))
    return Section([heading("Where a process's seconds go", INTRO),
                    Table(table, "no process of a sweep recorded its start-up timestamps"),
                    Text(extra_processes_text(d.sweeps) or "*No extra processes (a fixed number per config).*")])
